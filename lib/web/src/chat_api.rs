//! (being written)

use axum::Router;

use crate::app::WebState;

/// The web chat API routes.
pub fn routes() -> Router<WebState> {
    Router::new()
}
