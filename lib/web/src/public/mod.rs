//! (being written)

use axum::Router;

use crate::app::WebState;

/// The public event pages.
pub fn routes() -> Router<WebState> {
    Router::new()
}
