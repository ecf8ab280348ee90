//! Registration limits that hold across every process: a counter row per (scope, key, fixed
//! window) in the `Table`, raised with a conditional write, gone by TTL once its window has
//! passed. Every Lambda instance and `steward serve` share the same rows, so spreading a flood
//! over instances gains nothing.
//!
//! Used by the public registration form per client address and per event, before the domain is
//! asked for anything: a refused attempt never reaches the event's capacity counter.

use serde::{Deserialize, Serialize};
use steward_store::{Clock, Item, StoreError, Table, WriteOp};

/// Attempts at raising a counter when concurrent requests raise it too. Past these the request
/// is refused as limited (fail closed): that many collisions mean a burst anyway.
const THROTTLE_RETRIES_MAX: usize = 8;

/// A limit: at most `limit` attempts per fixed window of `window_secs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// What is counted (part of the row key, e.g. `reg-address`).
    pub scope: &'static str,
    /// Attempts allowed per window.
    pub limit: u32,
    /// The window's length in seconds.
    pub window_secs: i64,
}

/// An attempt past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("limit {scope} reached; the window ends in {retry_after_secs} s")]
pub struct Limited {
    /// Which limit.
    pub scope: &'static str,
    /// Seconds until the window ends (at least 1).
    pub retry_after_secs: u64,
}

/// Why an attempt was not counted.
#[derive(Debug, thiserror::Error)]
pub enum ThrottleError {
    /// The limit is reached.
    #[error(transparent)]
    Limited(#[from] Limited),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Counter {
    count: u32,
}

impl Limit {
    /// Counts one attempt by `key` now; [`ThrottleError::Limited`] (and nothing written) when
    /// the window's budget is spent.
    pub async fn take(
        &self,
        table: &dyn Table,
        clock: &dyn Clock,
        key: &str,
    ) -> Result<(), ThrottleError> {
        let window_secs = self.window_secs.max(1);
        let now_s = clock.now_millis().div_euclid(1000);
        let window = now_s.div_euclid(window_secs);
        let window_end = (window + 1) * window_secs;
        let limited = Limited {
            scope: self.scope,
            retry_after_secs: u64::try_from(window_end - now_s).unwrap_or(1).max(1),
        };
        let pk = format!("THROTTLE#{}#{key}", self.scope);
        let sk = window.to_string();
        for _ in 0..THROTTLE_RETRIES_MAX {
            let current = table.get(&pk, &sk).await?;
            let (count, version) = match &current {
                Some(item) => (
                    item.parse::<Counter>().map(|c| c.count).unwrap_or(u32::MAX),
                    Some(item.version),
                ),
                None => (0, None),
            };
            if count >= self.limit {
                return Err(limited.into());
            }
            let next = Item::from_value(&pk, &sk, &Counter { count: count + 1 })
                .map_err(|e| StoreError::Backend(format!("throttle counter: {e}")))?
                // Kept one window past its end, then gone: nothing to clean up.
                .with_ttl(window_end + window_secs);
            let op = match version {
                Some(v) => WriteOp::put_if_version(next.with_version(v + 1), v),
                None => WriteOp::put_if_absent(next),
            };
            match table.write(vec![op]).await {
                Ok(()) => return Ok(()),
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(limited.into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use steward_store::{ManualClock, SqliteTable};

    use super::*;

    #[tokio::test]
    async fn a_window_budget_per_key_shared_by_every_process() {
        let clock = Arc::new(ManualClock::at_millis(1_780_304_400_000));
        let table = SqliteTable::in_memory_with_clock(clock.clone()).unwrap();
        let limit = Limit {
            scope: "test",
            limit: 2,
            window_secs: 60,
        };
        limit.take(&table, clock.as_ref(), "a").await.unwrap();
        limit.take(&table, clock.as_ref(), "a").await.unwrap();
        let Err(ThrottleError::Limited(l)) = limit.take(&table, clock.as_ref(), "a").await else {
            panic!("the third attempt must be limited");
        };
        assert_eq!(l.retry_after_secs, 60);
        // Another key has its own budget.
        limit.take(&table, clock.as_ref(), "b").await.unwrap();
        // The next window starts afresh.
        clock.advance_millis(60_000);
        limit.take(&table, clock.as_ref(), "a").await.unwrap();
    }
}
