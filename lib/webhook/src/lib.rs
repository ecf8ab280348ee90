//! The provider webhooks: `GET`/`POST /webhooks/whatsapp` and `POST /webhooks/telegram`.
//!
//! The ack path does the minimum, because providers punish slowness by retrying: cap the body
//! (413), verify the signature on the raw bytes (401, nothing enqueued), parse into
//! `InboundMessage`s (malformed JSON → 200 and a log line, since a retry would send the same
//! bytes), enqueue each to the `TurnQueue` — group = the conversation key, dedupe id = the
//! provider's message id, body = the message as JSON — and answer 200. An enqueue failure is a
//! 500 so the provider retries. No database and no model on this path.
//!
//! A source that keeps presenting a wrong Telegram secret is answered 429 for the rest of the
//! minute, before any check ([`bad_secrets`]).

pub mod bad_secrets;
pub mod config;
pub mod state;
mod telegram;
mod whatsapp;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use steward_channels::WEBHOOK_BODY_BYTES_MAX;

pub use config::{WEBHOOK_NEEDS, WEBHOOK_SECRETS, check_webhook_config, webhook_state};
pub use state::{WebhookState, WhatsappSecrets};

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
