//! [`RecordingQueue`]: a `TurnQueue` that keeps every message it is given (or refuses them all),
//! for tests of what a route enqueues.

use std::sync::Mutex;

use async_trait::async_trait;
use steward_store::{QueueError, TurnQueue};

/// Records every enqueue as (group, dedupe id, body); fails them all when `fail` is set.
#[derive(Debug, Default)]
pub struct RecordingQueue {
    /// What was enqueued, in order: (group, dedupe id, body).
    pub enqueued: Mutex<Vec<(String, String, String)>>,
    /// Refuse every message, as a throttled queue would.
    pub fail: bool,
}

#[async_trait]
impl TurnQueue for RecordingQueue {
    async fn enqueue(&self, group: &str, dedupe_id: &str, body: &str) -> Result<(), QueueError> {
        if self.fail {
            return Err(QueueError::Sqs("throttled".into()));
        }
        self.enqueued
            .lock()
            .expect("the queue's log is not poisoned")
            .push((group.into(), dedupe_id.into(), body.into()));
        Ok(())
    }
}

impl RecordingQueue {
    /// A queue that refuses every message.
    pub fn failing() -> Self {
        Self {
            fail: true,
            ..Self::default()
        }
    }

    /// What was enqueued so far, in order.
    pub fn messages(&self) -> Vec<(String, String, String)> {
        self.enqueued
            .lock()
            .expect("the queue's log is not poisoned")
            .clone()
    }

    /// The (group, dedupe id) of each message so far, in order.
    pub fn groups_and_ids(&self) -> Vec<(String, String)> {
        self.messages()
            .into_iter()
            .map(|(group, dedupe, _)| (group, dedupe))
            .collect()
    }
}
