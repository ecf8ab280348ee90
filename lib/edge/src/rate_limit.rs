//! Per-caller rate limits: a token bucket per key holding up to a minute's budget, refilled
//! continuously. Used by MCP (per token); the public registration form counts in the table
//! instead (`public::throttle`), so its limits hold across Lambda instances.
//!
//! The buckets live in this process's memory. Locally that is the whole server; on Lambda it
//! is per warm instance, so a caller spread over N concurrent instances can make up to N times
//! the limit — API Gateway's throttling is the hard ceiling there.

use std::collections::HashMap;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most callers tracked at once, a hard bound on the map whatever the traffic: a new caller
/// when it is full first drops every caller whose bucket has refilled (indistinguishable from
/// new ones), then, if none had, the caller seen longest ago.
const RATE_LIMIT_CALLERS_MAX: usize = 10_000;

/// The window the budget is expressed over.
const WINDOW: Duration = Duration::from_secs(60);

/// Token buckets, one per caller key.
#[derive(Debug)]
pub struct RateLimiter<K = String> {
    per_window: f64,
    buckets: Mutex<HashMap<K, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Calls still allowed right now (fractional while refilling).
    available: f64,
    /// When `available` was last brought up to date.
    updated: Instant,
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// A limiter allowing `per_minute` calls a minute per caller.
    pub fn new(per_minute: NonZeroU32) -> Self {
        Self {
            per_window: f64::from(per_minute.get()),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// A limiter allowing `per_minute` calls a minute per caller (0 is read as 1).
    pub fn per_minute(per_minute: u32) -> Self {
        Self::new(NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN))
    }

    /// The budget per minute.
    pub fn budget(&self) -> u32 {
        self.per_window as u32
    }
    /// Takes one call from `key`'s budget at `now`; `Err(wait)` when it is spent, with the time
    /// until the next call is allowed.
    pub fn check(&self, key: &K, now: Instant) -> Result<(), Duration> {
        let refill_per_sec = self.per_window / WINDOW.as_secs_f64();
        // A poisoned lock only means another request panicked mid-update; the counts still hold.
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= RATE_LIMIT_CALLERS_MAX && !buckets.contains_key(key) {
            buckets.retain(|_, b| now.saturating_duration_since(b.updated) < WINDOW);
            while buckets.len() >= RATE_LIMIT_CALLERS_MAX {
                let Some(oldest) = buckets
                    .iter()
                    .min_by_key(|(_, b)| b.updated)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                buckets.remove(&oldest);
            }
        }
        let bucket = buckets.entry(key.clone()).or_insert(Bucket {
            available: self.per_window,
            updated: now,
        });
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.available = (bucket.available + elapsed * refill_per_sec).min(self.per_window);
        bucket.updated = now;
        if bucket.available >= 1.0 {
            bucket.available -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.available) / refill_per_sec;
            Err(Duration::try_from_secs_f64(wait).unwrap_or(WINDOW))
        }
    }
}

/// Whole seconds to tell the client to wait: rounded up, at least one.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(id: &str) -> String {
        id.to_owned()
    }

    #[test]
    fn a_minute_budget_then_refill() {
        let limiter = RateLimiter::<String>::new(NonZeroU32::new(3).unwrap());
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check(&key("a"), t0).is_ok());
        }
        let wait = limiter.check(&key("a"), t0).unwrap_err();
        assert_eq!(retry_after_secs(wait), 20);
        // Another caller has its own budget.
        assert!(limiter.check(&key("b"), t0).is_ok());
        // One call comes back every 20 s.
        assert!(
            limiter
                .check(&key("a"), t0 + Duration::from_secs(19))
                .is_err()
        );
        assert!(
            limiter
                .check(&key("a"), t0 + Duration::from_secs(21))
                .is_ok()
        );
        assert!(
            limiter
                .check(&key("a"), t0 + Duration::from_secs(22))
                .is_err()
        );
        // Never more than a minute's budget, however long the pause.
        let later = t0 + Duration::from_secs(3_600);
        for _ in 0..3 {
            assert!(limiter.check(&key("a"), later).is_ok());
        }
        assert!(limiter.check(&key("a"), later).is_err());
    }

    #[test]
    fn retry_after_is_whole_seconds_at_least_one() {
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1_500)), 2);
    }

    #[test]
    fn the_map_never_grows_past_its_bound() {
        let limiter = RateLimiter::<String>::new(NonZeroU32::new(1).unwrap());
        let t0 = Instant::now();
        for i in 0..RATE_LIMIT_CALLERS_MAX {
            limiter
                .check(&key(&format!("u{i}")), t0 + Duration::from_millis(i as u64))
                .unwrap();
        }
        // All still active: the oldest goes, the newcomer is tracked.
        let later = t0 + Duration::from_millis(RATE_LIMIT_CALLERS_MAX as u64);
        limiter.check(&key("late"), later).unwrap();
        let buckets = limiter.buckets.lock().unwrap();
        assert_eq!(buckets.len(), RATE_LIMIT_CALLERS_MAX);
        assert!(!buckets.contains_key("u0"));
        assert!(buckets.contains_key("u1") && buckets.contains_key("late"));
    }

    #[test]
    fn idle_callers_are_forgotten_when_full() {
        let limiter = RateLimiter::<String>::new(NonZeroU32::new(1).unwrap());
        let t0 = Instant::now();
        for i in 0..RATE_LIMIT_CALLERS_MAX {
            limiter.check(&key(&format!("u{i}")), t0).unwrap();
        }
        limiter
            .check(&key("late"), t0 + Duration::from_secs(61))
            .unwrap();
        assert_eq!(limiter.buckets.lock().unwrap().len(), 1);
    }
}
