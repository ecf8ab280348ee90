//! What the webhook routes share: their state (the queue and each channel's secrets) and the
//! two answers every channel gives alike (not configured; enqueue everything or 500).

use std::sync::Arc;

use axum::http::StatusCode;
use steward_channels::{InboundMessage, Secret};
use steward_store::TurnQueue;

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

/// The answer of a channel that is not configured.
pub(crate) fn not_configured(channel: &str) -> (StatusCode, String) {
    (
        StatusCode::NOT_FOUND,
        format!("{channel} is not configured on this Steward"),
    )
}

/// Enqueues `messages` in order; a failure stops there and answers 500 (the provider retries
/// the whole delivery, and the queue and the conversation's claim drop what already went in).
pub(crate) async fn enqueue_all(
    queue: &dyn TurnQueue,
    messages: &[InboundMessage],
) -> Result<(), (StatusCode, &'static str)> {
    for message in messages {
        steward_edge::inbound::enqueue(queue, message)
            .await
            .map_err(|e| {
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
