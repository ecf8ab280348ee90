//! Waiting, as a port: retry loops and the in-process queue's redelivery schedule wait through
//! a [`Sleeper`], so tests record the waits a schedule asks for instead of taking them.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;

/// Waits for a while.
#[async_trait]
pub trait Sleeper: Send + Sync + Debug {
    /// Returns after `duration` (a test double may return at once and record it).
    async fn sleep(&self, duration: Duration);
}

/// The real wait: [`tokio::time::sleep`].
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioSleeper;

#[async_trait]
impl Sleeper for TokioSleeper {
    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}
