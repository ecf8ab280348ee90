//! The endpoint's own HTTP error replies (before a request reaches the MCP service): a JSON-RPC
//! error object, with the request's id when it had one, so MCP clients can show the message.

use axum::Json;
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Most of a refused request's body read to find its id: a request's `id` comes first in
/// every client seen, and a refusal (foreign host, no token, rate limit) must not cost the
/// server a full body's read and parse. Past this the refusal carries no id.
pub const REFUSAL_BODY_BYTES_MAX: usize = 4 * 1024;

/// JSON-RPC error code of refusals made by the HTTP layer (the implementation-defined server
/// error range); the HTTP status says which refusal it is.
pub const HTTP_REFUSAL_CODE: i64 = -32000;

/// Refuses `req` with `status`: `{"jsonrpc":"2.0","id":…,"error":{"code":-32000,"message":…}}`,
/// the id echoed from the request body when it has one (omitted otherwise, as the protocol
/// allows when the id is unknown).
pub(super) async fn refuse(req: Request, status: StatusCode, message: &str) -> Response {
    let id = request_id(req.into_body()).await;
    let mut body = json!({
        "jsonrpc": "2.0",
        "error": {"code": HTTP_REFUSAL_CODE, "message": message},
    });
    if let Some(id) = id {
        body["id"] = id;
    }
    (status, Json(body)).into_response()
}

/// The JSON-RPC id of a request body, when it is a readable request with a string or number id.
async fn request_id(body: Body) -> Option<Value> {
    let bytes = axum::body::to_bytes(body, REFUSAL_BODY_BYTES_MAX)
        .await
        .ok()?;
    let message: Value = serde_json::from_slice(&bytes).ok()?;
    match message.get("id")? {
        id @ (Value::String(_) | Value::Number(_)) => Some(id.clone()),
        _ => None,
    }
}
