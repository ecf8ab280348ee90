//! The per-token rate limit of MCP calls: an empty bucket answers 429 with `Retry-After`
//! (see [`steward_edge::rate_limit`] for the buckets).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use super::Shared;
use super::auth::Caller;
use super::reply::refuse;
use steward_edge::rate_limit::retry_after_secs;

/// Middleware (after authentication): 429 with `Retry-After` once the caller's budget is spent.
pub(super) async fn limit(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let verdict = match req.extensions().get::<Caller>() {
        Some(caller) => shared
            .limiter
            .check(&caller.key, Instant::now())
            .map_err(|wait| (caller.user.clone(), retry_after_secs(wait))),
        None => {
            tracing::error!("MCP: rate limit reached without an authenticated caller");
            return refuse(req, StatusCode::INTERNAL_SERVER_ERROR, "Internal error.").await;
        }
    };
    let Err((user, secs)) = verdict else {
        return next.run(req).await;
    };
    tracing::warn!(%user, retry_after = secs, "MCP: rate limit reached");
    let message = format!(
        "Too many calls: this token may make {} calls a minute. Try again in {secs} s.",
        shared.config.calls_per_minute()
    );
    let mut response = refuse(req, StatusCode::TOO_MANY_REQUESTS, &message).await;
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs));
    response
}
