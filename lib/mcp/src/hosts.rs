//! `/mcp`'s DNS-rebinding guard: the shared allow-list check of [`steward_edge::hosts`], answered in
//! JSON-RPC so MCP clients can show the message. It runs before authentication, so a page on a
//! rebound domain learns nothing, not even whether a token would be accepted.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::{HOST, ORIGIN};
use axum::middleware::Next;
use axum::response::Response;

use super::Shared;
use super::reply::refuse;
use steward_edge::hosts::request_allowed;

/// Middleware: 403 unless `Host` (and `Origin`, if any) is allowed.
pub(super) async fn guard(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    if request_allowed(shared.config.allowed_hosts(), req.uri(), req.headers()) {
        return next.run(req).await;
    }
    tracing::warn!(
        host = ?req.headers().get(HOST),
        origin = ?req.headers().get(ORIGIN),
        "MCP: refused a request for a host that is not allowed (possible DNS rebinding)"
    );
    refuse(
        req,
        StatusCode::FORBIDDEN,
        "This server does not answer for that Host or Origin.",
    )
    .await
}
