//! `GET /webhooks/whatsapp` (Meta's verification handshake) and `POST /webhooks/whatsapp`
//! (signed notifications: messages, statuses, …).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use steward_channels::{check_body_size, whatsapp};

use crate::state::{WebhookState, enqueue_all, not_configured};

/// Echoes `hub.challenge` when `hub.verify_token` matches; 403 otherwise.
pub(super) async fn handshake(
    State(state): State<Arc<WebhookState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(secrets) = &state.whatsapp else {
        return not_configured("WhatsApp").into_response();
    };
    let param = |name: &str| query.get(name).map(String::as_str);
    match whatsapp::verify_handshake(
        param("hub.mode"),
        param("hub.verify_token"),
        param("hub.challenge"),
        secrets.verify_token.expose(),
    ) {
        Ok(challenge) => (StatusCode::OK, challenge).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "whatsapp verification handshake refused");
            (StatusCode::FORBIDDEN, "verification failed").into_response()
        }
    }
}

/// Verifies the signature on the raw body, parses, enqueues every message, answers 200.
///
/// Takes the whole request and reads the one header it needs: axum's `HeaderMap` extractor
/// would copy every header of every delivery.
pub(super) async fn receive(State(state): State<Arc<WebhookState>>, request: Request) -> Response {
    let Some(secrets) = &state.whatsapp else {
        return not_configured("WhatsApp").into_response();
    };
    let signature = request.headers().get(whatsapp::SIGNATURE_HEADER).cloned();
    // The body cap (`DefaultBodyLimit`) applies here as it does to a `Bytes` argument.
    let body = match Bytes::from_request(request, &()).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    if let Err(e) = check_body_size(body.len()) {
        return (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()).into_response();
    }
    let signature = signature.as_ref().and_then(|v| v.to_str().ok());
    if let Err(e) =
        whatsapp::verify_signature(&body, signature, secrets.app_secret.expose().as_bytes())
    {
        tracing::warn!(error = %e, "whatsapp webhook with a bad signature refused");
        return (StatusCode::UNAUTHORIZED, "bad signature").into_response();
    }
    let messages = match whatsapp::parse_webhook(&body) {
        Ok(messages) => messages,
        Err(e) => {
            tracing::warn!(error = %e, bytes = body.len(), "signed whatsapp webhook could not be read; acknowledged and dropped");
            return StatusCode::OK.into_response();
        }
    };
    match enqueue_all(state.queue.as_ref(), &messages).await {
        Ok(()) => {
            tracing::debug!(messages = messages.len(), "whatsapp webhook accepted");
            StatusCode::OK.into_response()
        }
        Err(refusal) => refusal.into_response(),
    }
}
