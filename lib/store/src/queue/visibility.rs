//! [`MessageVisibility`]: the one thing the agent Lambda asks of SQS besides what the event
//! source mapping does — make received messages invisible for a chosen time. The agent's
//! batch handler uses it to keep the records it works on hidden (a heartbeat) and to bring a
//! failed record back on the redelivery schedule instead of after the queue's visibility
//! timeout. [`SqsQueue`](super::SqsQueue) implements it; tests use a fake.

use std::time::Duration;

use async_trait::async_trait;

/// One change: the message received with `receipt_handle` stays invisible for `timeout` from
/// now (zero: visible again at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibilityChange {
    /// The receipt handle of the receive that delivered the message.
    pub receipt_handle: String,
    /// How long from now it stays invisible.
    pub timeout: Duration,
}

/// Some changes were not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("visibility not changed for {} message(s): {reason}", failed.len())]
pub struct VisibilityError {
    /// The receipt handles whose change failed.
    pub failed: Vec<String>,
    /// What went wrong (the first failure's message).
    pub reason: String,
}

/// Changes how long received messages stay invisible.
#[async_trait]
pub trait MessageVisibility: Send + Sync + std::fmt::Debug {
    /// Applies every change it can; the error lists the ones it could not.
    async fn change_visibility(&self, changes: &[VisibilityChange]) -> Result<(), VisibilityError>;
}
