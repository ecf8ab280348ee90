//! (being written)

use axum::Router;

use crate::app::WebState;

pub(super) fn routes() -> Router<WebState> {
    Router::new()
}
