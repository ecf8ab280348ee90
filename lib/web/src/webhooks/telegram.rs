//! `POST /webhooks/telegram`: updates carrying the secret token set with `setWebhook`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use steward_channels::{check_body_size, telegram};

use super::{WebhookState, enqueue_all, not_configured};

/// Checks the secret-token header (constant time), parses, enqueues, answers 200.
pub(super) async fn receive(
    State(state): State<Arc<WebhookState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(secret) = &state.telegram else {
        return not_configured("Telegram").into_response();
    };
    if let Err(e) = check_body_size(body.len()) {
        return (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()).into_response();
    }
    let presented = headers
        .get(telegram::SECRET_HEADER)
        .and_then(|v| v.to_str().ok());
    if let Err(e) = telegram::verify_secret(presented, secret.expose()) {
        tracing::warn!(error = %e, "telegram update with a bad secret refused");
        return (StatusCode::UNAUTHORIZED, "bad secret token").into_response();
    }
    let message = match telegram::parse_update(&body) {
        Ok(message) => message,
        Err(e) => {
            tracing::warn!(error = %e, bytes = body.len(), "authenticated telegram update could not be read; acknowledged and dropped");
            return StatusCode::OK.into_response();
        }
    };
    let messages: Vec<_> = message.into_iter().collect();
    match enqueue_all(state.queue.as_ref(), &messages).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(refusal) => refusal.into_response(),
    }
}
