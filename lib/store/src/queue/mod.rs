//! The `TurnQueue` port: inbound messages delivered one at a time per conversation, in order,
//! with duplicates (same dedupe id within five minutes) dropped, as SQS FIFO does it.

mod in_process;
mod recent;
mod removals;
mod schedule;
#[cfg(feature = "sqs")]
mod sqs;
mod trace;
mod visibility;

use async_trait::async_trait;

use crate::StoreError;

pub use in_process::{DeadLetter, InProcessQueue, QueueConfig};
pub use schedule::{
    RECEIVES_MAX, REDELIVERY_FIRST, REDELIVERY_LATER, REDELIVERY_SCHEDULE, REDELIVERY_SECOND,
    REDELIVERY_THIRD, redelivery_delay, redelivery_wait_total,
};
#[cfg(feature = "sqs")]
pub use sqs::{SqsQueue, dedupe_id_in_group, sqs_safe_id};
pub use trace::{
    TRACEPARENT, TRACEPARENT_BYTES_MAX, TRACESTATE, TRACESTATE_BYTES_MAX, TraceContext,
};
pub use visibility::{MessageVisibility, VisibilityChange, VisibilityError};

/// Largest message body either queue takes (the in-process queue applies the SQS adapter's
/// bound, so what fits locally fits deployed). SQS accepts up to 1 MiB now, but a queued turn
/// carries one chat message; anything near this is a bug upstream, and 256 KiB works on every
/// account.
pub const SQS_BODY_BYTES_MAX: usize = 256 * 1024;

/// How long a dedupe id suppresses a repeat: SQS FIFO's deduplication interval.
pub const DEDUPE_WINDOW_SECS: i64 = 5 * 60;

/// Accepts messages for per-conversation, in-order processing.
#[async_trait]
pub trait TurnQueue: Send + Sync + std::fmt::Debug + 'static {
    /// Queues `body` for the conversation `group`. Returns once the message is durably
    /// accepted; a repeat of `dedupe_id` within [`DEDUPE_WINDOW_SECS`] is accepted and dropped.
    async fn enqueue(&self, group: &str, dedupe_id: &str, body: &str) -> Result<(), QueueError>;

    /// [`TurnQueue::enqueue`] with the W3C trace context of the enqueuing span, which the
    /// handler's side continues ([`QueuedMessage::trace`]). Both adapters carry it (an SQS
    /// message attribute, a field of the stored in-process message); the default, for queues
    /// that have nowhere to put it (test doubles), drops it: a lost context only starts a new
    /// trace, it never loses the message.
    async fn enqueue_traced(
        &self,
        group: &str,
        dedupe_id: &str,
        body: &str,
        trace: &TraceContext,
    ) -> Result<(), QueueError> {
        let _ = trace;
        self.enqueue(group, dedupe_id, body).await
    }

    /// Whether this queue knows, without asking its store, that `dedupe_id` of `group` was
    /// accepted within the dedupe window: an enqueue of it now would be accepted and dropped.
    /// Lets a caller answer a provider's retry before building the body. `false` means only
    /// "not known here" (the enqueue's own deduplication still applies); the default knows
    /// nothing.
    fn known_duplicate(&self, group: &str, dedupe_id: &str) -> bool {
        let _ = (group, dedupe_id);
        false
    }
}

/// What both adapters refuse before enqueuing: an empty group or deduplication id, or a body
/// over [`SQS_BODY_BYTES_MAX`] (the in-process queue keeps SQS's limit, so what works locally
/// works deployed).
fn check_message(group: &str, dedupe_id: &str, body: &str) -> Result<(), QueueError> {
    if group.is_empty() || dedupe_id.is_empty() {
        return Err(QueueError::Invalid(
            "group and dedupe id must not be empty".into(),
        ));
    }
    if body.len() > SQS_BODY_BYTES_MAX {
        return Err(QueueError::Invalid(format!(
            "body is {} bytes, over {SQS_BODY_BYTES_MAX}",
            body.len()
        )));
    }
    Ok(())
}

/// A message handed to a [`Handler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMessage {
    /// The conversation key the message is grouped under.
    pub group: String,
    /// The dedupe id it was enqueued with (the provider's message id).
    pub dedupe_id: String,
    /// The payload, as enqueued.
    pub body: String,
    /// 1 on first delivery, then 2, 3, … on retries.
    pub attempt: u32,
    /// The trace context it was enqueued with (empty when none was carried).
    pub trace: TraceContext,
}

/// Why a handler did not finish a message; the queue retries it on the redelivery schedule
/// ([`REDELIVERY_SCHEDULE`]), then dead-letters it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HandlerError(pub String);

/// Processes one message. Called with at most one message per group at a time.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Handles `message`; an error (or a panic) counts as a failed attempt.
    async fn handle(&self, message: QueuedMessage) -> Result<(), HandlerError>;

    /// Called once `message` failed its last attempt with `error`, just before it is parked as
    /// a dead letter (again, when a re-driven message fails again). The default does nothing;
    /// the turn worker tells the person ([`HandlerError`]s here are not retried).
    async fn dead_lettered(&self, message: QueuedMessage, error: &str) {
        let _ = (message, error);
    }
}

/// What can go wrong enqueueing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum QueueError {
    /// The durable store refused the write.
    #[error("queue store: {0}")]
    Store(#[from] StoreError),
    /// SQS refused the message.
    #[error("sqs: {0}")]
    Sqs(String),
    /// The group or dedupe id is empty or the body too large.
    #[error("invalid message: {0}")]
    Invalid(String),
    /// The queue has been shut down.
    #[error("the queue is shut down")]
    Closed,
}
