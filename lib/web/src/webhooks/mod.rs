//! The provider webhooks: `GET`/`POST /webhooks/whatsapp` and `POST /webhooks/telegram`.
//!
//! The ack path does the minimum, because providers punish slowness by retrying: cap the body
//! (413), verify the signature on the raw bytes (401, nothing enqueued), parse into
//! [`InboundMessage`]s (malformed JSON → 200 and a log line, since a retry would send the same
//! bytes), enqueue each to the [`TurnQueue`] — group = the conversation key, dedupe id = the
//! provider's message id, body = the message as JSON — and answer 200. An enqueue failure is a
//! 500 so the provider retries. No database and no model on this path.
//!
//! A source that keeps presenting a wrong Telegram secret is answered 429 for the rest of the
//! minute, before any check ([`bad_secrets`]).

pub mod bad_secrets;
mod telegram;
mod whatsapp;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use steward_channels::{InboundMessage, Secret, WEBHOOK_BODY_BYTES_MAX};
use steward_store::{QueueError, TurnQueue};

/// The WhatsApp app's secrets.
#[derive(Debug, Clone)]
pub struct WhatsappSecrets {
    /// The app secret that signs every POST (`X-Hub-Signature-256`).
    pub app_secret: Secret,
    /// The token Meta echoes in the verification handshake.
    pub verify_token: Secret,
}

/// What the webhook routes need: the queue, and each channel's secrets (a channel without
/// them answers 404: it is not served here).
#[derive(Debug, Clone)]
pub struct WebhookState {
    /// Where parsed messages go.
    pub queue: Arc<dyn TurnQueue>,
    /// WhatsApp's secrets, when WhatsApp is configured.
    pub whatsapp: Option<WhatsappSecrets>,
    /// Telegram's webhook secret token, when Telegram is configured.
    pub telegram: Option<Secret>,
}

/// The webhook routes over `state`, with the body cap of [`WEBHOOK_BODY_BYTES_MAX`] (413 above it).
pub fn routes(state: WebhookState) -> Router {
    let state = Arc::new(state);
    let telegram = telegram::TelegramRoute {
        webhook: Arc::clone(&state),
        bad_secrets: bad_secrets::BadSecrets::new(),
    };
    Router::new()
        .route(
            "/webhooks/whatsapp",
            get(whatsapp::handshake).post(whatsapp::receive),
        )
        .with_state(state)
        .merge(
            Router::new()
                .route("/webhooks/telegram", post(telegram::receive))
                .with_state(Arc::new(telegram)),
        )
        .layer(DefaultBodyLimit::max(WEBHOOK_BODY_BYTES_MAX))
}

/// The answer of a channel that is not configured.
fn not_configured(channel: &str) -> (StatusCode, String) {
    (
        StatusCode::NOT_FOUND,
        format!("{channel} is not configured on this Steward"),
    )
}

/// Enqueues `messages` in order; a failure stops there and answers 500 (the provider retries
/// the whole delivery, and the queue and the conversation's claim drop what already went in).
async fn enqueue_all(
    queue: &dyn TurnQueue,
    messages: &[InboundMessage],
) -> Result<(), (StatusCode, &'static str)> {
    for message in messages {
        enqueue(queue, message).await.map_err(|e| {
            tracing::error!(
                error = %e,
                channel = %message.channel,
                message = %message.provider_message_id,
                "enqueue failed; answering 500 so the provider retries"
            );
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "could not accept the message",
            )
        })?;
    }
    Ok(())
}

/// Enqueues one message: group = conversation key, dedupe id = the provider's message id.
pub async fn enqueue(queue: &dyn TurnQueue, message: &InboundMessage) -> Result<(), QueueError> {
    let body = serde_json::to_string(message).map_err(|e| QueueError::Invalid(e.to_string()))?;
    queue
        .enqueue(
            &message.conversation_key(),
            &message.provider_message_id,
            &body,
        )
        .await
}
