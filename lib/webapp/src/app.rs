//! The web application — UI pages, the web chat API and the public event pages — as one
//! router over one shared state ([`WebState`], in `state.rs`). `steward serve` merges it with the webhook, MCP and health
//! routes; the web Lambda serves it alone.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::Redirect;
use axum::routing::get;
use steward_edge::{hosts, security};

use crate::state::WebState;
use crate::{auth, chat_api, csrf, paths, public, ui};

/// The web app's routes: `/` (to the app), `/app/…` (signed in, CSRF-checked), `/api/chat/…`
/// and the public pages `/e/{slug}`, all with the security headers, all behind the Host/Origin
/// allow-list (421 for another host).
pub fn routes(state: WebState) -> Router {
    let allowed = Arc::new(state.config().allowed_hosts.clone());
    Router::new()
        .route("/", get(|| async { Redirect::to(paths::APP_HOME) }))
        .merge(auth::routes())
        .merge(ui::routes())
        .merge(chat_api::routes())
        .merge(public::routes())
        .with_state(state.clone())
        .layer(axum::middleware::from_fn_with_state(state, csrf::guard))
        .layer(DefaultBodyLimit::max(csrf::FORM_BODY_BYTES_MAX))
        .layer(axum::middleware::from_fn(security::headers))
        .layer(axum::middleware::from_fn_with_state(allowed, hosts::guard))
}
