//! Wall-clock time as the store sees it: used to decide whether an item's `ttl` has passed.
//! Tests share a [`ManualClock`] between the store and the layers above so expiry is
//! deterministic.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in epoch seconds and milliseconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;

    /// Seconds since the Unix epoch (the unit of an item's `ttl`).
    fn now_secs(&self) -> i64 {
        self.now_millis().div_euclid(1000)
    }
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to; cheap to clone, all clones share one time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock standing at `millis` since the epoch.
    pub fn at_millis(millis: i64) -> Self {
        Self(Arc::new(AtomicI64::new(millis)))
    }

    /// Moves the clock forward (or back, with a negative amount) by `millis`.
    pub fn advance_millis(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the clock to `millis` since the epoch.
    pub fn set_millis(&self, millis: i64) {
        self.0.store(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
