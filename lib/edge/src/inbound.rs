//! The one encoding of an inbound message on the turn queue: group = the conversation key,
//! dedupe id = the provider's message id, body = the message as JSON. The webhooks and the web
//! chat API enqueue with [`enqueue`] (carrying the trace context); the worker reads bodies back
//! with [`decode`].

use steward_channels::InboundMessage;
use steward_store::{QueueError, TurnQueue};

/// Enqueues one message: group = conversation key, dedupe id = the provider's message id,
/// with the trace context of the current span (the request's), so the turn continues its trace.
///
/// A provider's retry the queue already knows it took is answered at once, before the body is
/// built ([`TurnQueue::known_duplicate`]).
pub async fn enqueue(queue: &dyn TurnQueue, message: &InboundMessage) -> Result<(), QueueError> {
    let group = message.conversation_key();
    if queue.known_duplicate(&group, &message.provider_message_id) {
        tracing::debug!(message = %message.provider_message_id, "duplicate message dropped");
        return Ok(());
    }
    let body = serde_json::to_string(message).map_err(|e| QueueError::Invalid(e.to_string()))?;
    queue
        .enqueue_traced(
            &group,
            &message.provider_message_id,
            &body,
            &crate::telemetry::current_trace_context(),
        )
        .await
}

/// The message in a queued `body`, or why it is not one (a body this crate did not write).
pub fn decode(body: &str) -> Result<InboundMessage, serde_json::Error> {
    serde_json::from_str(body)
}
