//! The per-token rate limit: a token bucket per caller holding up to a minute's budget,
//! refilled continuously; an empty bucket answers 429 with `Retry-After`.
//!
//! The buckets live in this process's memory. Locally that is the whole server; on Lambda it
//! is per warm instance, so a token spread over N concurrent instances can make up to N times
//! the limit — API Gateway's throttling is the hard ceiling there.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use super::Shared;
use super::auth::{Caller, RateKey};
use super::reply::refuse;

/// Most callers tracked at once; beyond it, callers whose bucket has refilled are forgotten
/// (they are indistinguishable from new ones). Bounds memory whatever the traffic.
const RATE_LIMIT_CALLERS_MAX: usize = 10_000;

/// The window the budget is expressed over.
const WINDOW: Duration = Duration::from_secs(60);

/// Token buckets, one per caller.
#[derive(Debug)]
pub struct RateLimiter {
    per_window: f64,
    buckets: Mutex<HashMap<RateKey, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Calls still allowed right now (fractional while refilling).
    available: f64,
    /// When `available` was last brought up to date.
    updated: Instant,
}

impl RateLimiter {
    /// A limiter allowing `per_minute` calls a minute per caller.
    pub fn new(per_minute: NonZeroU32) -> Self {
        Self {
            per_window: f64::from(per_minute.get()),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one call from `key`'s budget at `now`; `Err(wait)` when it is spent, with the time
    /// until the next call is allowed.
    pub fn check(&self, key: &RateKey, now: Instant) -> Result<(), Duration> {
        let refill_per_sec = self.per_window / WINDOW.as_secs_f64();
        // A poisoned lock only means another request panicked mid-update; the counts still hold.
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= RATE_LIMIT_CALLERS_MAX && !buckets.contains_key(key) {
            buckets.retain(|_, b| now.saturating_duration_since(b.updated) < WINDOW);
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
fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// Middleware (after authentication): 429 with `Retry-After` once the caller's budget is spent.
pub(super) async fn limit(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let verdict = match req.extensions().get::<Caller>() {
        Some(caller) => shared
            .limiter
            .check(&caller.key, Instant::now())
            .map_err(|wait| (caller.user.clone(), retry_after_secs(wait))),
        None => {
            tracing::error!("MCP: rate limit reached without an authenticated caller");
            return refuse(req, StatusCode::INTERNAL_SERVER_ERROR, "Internal error.").await;
        }
    };
    let Err((user, secs)) = verdict else {
        return next.run(req).await;
    };
    tracing::warn!(%user, retry_after = secs, "MCP: rate limit reached");
    let message = format!(
        "Too many calls: this token may make {} calls a minute. Try again in {secs} s.",
        shared.config.calls_per_minute()
    );
    let mut response = refuse(req, StatusCode::TOO_MANY_REQUESTS, &message).await;
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use steward_harness::UserId;

    use super::*;

    fn key(id: &str) -> RateKey {
        RateKey::DevUser(UserId::parse(id).unwrap())
    }

    #[test]
    fn a_minute_budget_then_refill() {
        let limiter = RateLimiter::new(NonZeroU32::new(3).unwrap());
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
    fn idle_callers_are_forgotten_when_full() {
        let limiter = RateLimiter::new(NonZeroU32::new(1).unwrap());
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
