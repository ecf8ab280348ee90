//! The one error type of the storage ports.

/// What can go wrong talking to a [`crate::Table`]. Both adapters map their backend's failures
/// onto exactly these variants, so callers can match on them without knowing the backend.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The condition of operation `op_index` (0-based, in the order given to `write`) did not
    /// hold. Nothing in the transaction was written.
    #[error("condition failed on operation {op_index} of the transaction")]
    ConditionFailed {
        /// Index of the failing operation.
        op_index: usize,
    },
    /// An item is over DynamoDB's 400 KB limit. Nothing was written.
    #[error("item {pk} / {sk} is {bytes} bytes, over the {max}-byte item limit")]
    ItemTooLarge {
        /// Partition key of the item.
        pk: String,
        /// Sort key of the item.
        sk: String,
        /// Its size as DynamoDB counts it.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The transaction itself is malformed (empty, too many operations, one item named twice,
    /// an empty or over-long key). Nothing was written.
    #[error("invalid transaction: {0}")]
    InvalidTransaction(String),
    /// The backend asked us to slow down and its own retries did not help; safe to retry later.
    #[error("throttled by the store: {0}")]
    Throttled(String),
    /// Anything else: I/O, a corrupt row, an unexpected backend answer.
    #[error("store backend error: {0}")]
    Backend(String),
}

impl StoreError {
    /// Whether trying the same call again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Throttled(_))
    }

    /// The failing operation's index when this is a failed condition.
    pub fn failed_op(&self) -> Option<usize> {
        match self {
            StoreError::ConditionFailed { op_index } => Some(*op_index),
            _ => None,
        }
    }
}
