//! `GET /healthz`: 200 `ok`, no state, no I/O — for load balancers and smoke checks.

use axum::Router;
use axum::routing::get;

/// The health route.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route("/healthz", get(|| async { "ok" }))
}
