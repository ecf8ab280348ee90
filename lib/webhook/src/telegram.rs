//! `POST /webhooks/telegram`: updates carrying the secret token set with `setWebhook`.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use steward_channels::{check_body_size, telegram};

use crate::bad_secrets::BadSecrets;
use crate::state::{WebhookState, enqueue_all, not_configured};
use steward_edge::client_address::PeerAddress;
use steward_edge::rate_limit::retry_after_secs;

/// The Telegram route's state: the webhooks' state and the wrong-secret throttle.
#[derive(Debug)]
pub(super) struct TelegramRoute {
    pub(super) webhook: Arc<WebhookState>,
    pub(super) bad_secrets: BadSecrets,
}

/// Refuses a throttled source (429), checks the secret-token header (constant time), parses,
/// enqueues, answers 200.
pub(super) async fn receive(
    State(route): State<Arc<TelegramRoute>>,
    PeerAddress(source): PeerAddress,
    request: Request,
) -> Response {
    let state = &route.webhook;
    let Some(secret) = &state.telegram else {
        return not_configured("Telegram").into_response();
    };
    let source = source.limit_key();
    let source = source.as_str();
    let now = Instant::now();
    if let Err(wait) = route.bad_secrets.check(source, now) {
        tracing::debug!(
            source,
            "telegram webhook caller throttled after wrong secrets"
        );
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, retry_after_secs(wait).to_string())],
            "too many wrong secret tokens; try again later",
        )
            .into_response();
    }
    // The one header read, without axum's copy of the whole header map; the body under the
    // route's cap (`DefaultBodyLimit`), as a `Bytes` argument would be.
    let presented = request.headers().get(telegram::SECRET_HEADER).cloned();
    let body = match Bytes::from_request(request, &()).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    if let Err(e) = check_body_size(body.len()) {
        return (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()).into_response();
    }
    let presented = presented.as_ref().and_then(|v| v.to_str().ok());
    if let Err(e) = telegram::verify_secret(presented, secret.expose()) {
        if route.bad_secrets.record(source, now) {
            tracing::warn!(
                source,
                error = %e,
                "telegram webhook: {} wrong secrets from one source this minute; answering it 429 until the minute is over",
                crate::bad_secrets::BAD_SECRETS_PER_MINUTE
            );
        } else {
            tracing::warn!(source, error = %e, "telegram update with a bad secret refused");
        }
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
