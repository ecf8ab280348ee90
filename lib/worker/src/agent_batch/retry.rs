//! Transient failures retried inside one delivery: a throttle, a provider's 5xx or a dropped
//! connection usually clears within seconds, so the worker tries the message again at once,
//! with a short capped backoff and jitter, before it gives the message back to the queue
//! (whose next delivery is at least [`REDELIVERY_FIRST`](steward_store::REDELIVERY_FIRST)
//! away). Re-running a message is safe: the turn resumes from its stored steps, and a
//! stored reply is sent again without a new model call.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use steward_store::Sleeper;
use tokio::time::Instant;

/// Attempts of one message within one delivery, the first included.
///
/// Four: three retries after about 0.5, 1 and 2 s ride out a throttle burst or a provider's
/// brief 5xx; a failure that outlasts them needs the queue's longer schedule.
pub const RETRY_ATTEMPTS_MAX: u32 = 4;

/// Backoff before the first retry (its ceiling; see [`RetryPolicy::backoff`]).
///
/// Half a second: long enough to step past a momentary throttle, short for a waiting person.
pub const RETRY_BACKOFF_FIRST: Duration = Duration::from_millis(500);

/// Longest backoff between two attempts; each retry doubles the last up to this.
///
/// Four seconds: beyond it the queue's own first redelivery (5 s) is as quick.
pub const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(4);

/// No retry starts when its wait would end more than this after the first attempt began.
///
/// Twenty seconds: a person waits for the reply meanwhile, and the function keeps most of its
/// time for the turn itself; the invocation's deadline caps it further.
pub const RETRY_BUDGET: Duration = Duration::from_secs(20);

/// How one delivery retries transient failures. The defaults are the constants above; tests
/// may change them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts, the first included.
    pub attempts_max: u32,
    /// The ceiling of the first backoff.
    pub backoff_first: Duration,
    /// The largest ceiling.
    pub backoff_max: Duration,
    /// Time from the first attempt's start within which every retry's wait must end.
    pub budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts_max: RETRY_ATTEMPTS_MAX,
            backoff_first: RETRY_BACKOFF_FIRST,
            backoff_max: RETRY_BACKOFF_MAX,
            budget: RETRY_BUDGET,
        }
    }
}

impl RetryPolicy {
    /// The backoff ceiling before retry `retry` (1-based): the first backoff doubled per
    /// retry, at most `backoff_max`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let doublings = retry.saturating_sub(1).min(31);
        self.backoff_first
            .saturating_mul(1_u32 << doublings)
            .min(self.backoff_max)
    }

    /// The wait before retry `retry`: at random between half the ceiling and the ceiling, so
    /// instances retrying the same throttle spread out, yet every retry pauses a little.
    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = u64::try_from(self.ceiling(retry).as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::random_range(ceiling / 2..=ceiling))
    }
}

/// Runs `attempt` until it succeeds, fails with an error `is_transient` rejects, or the
/// policy is spent: no more attempts, or the next wait would end past the budget or past
/// `give_up_at`. Returns the last outcome; waits go through `sleeper`.
pub async fn retry_transient<T, E, F, Fut>(
    policy: &RetryPolicy,
    sleeper: &dyn Sleeper,
    give_up_at: Option<Instant>,
    is_transient: impl Fn(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: Display,
{
    let started = Instant::now();
    let mut made = 1_u32;
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        if !is_transient(&error) || made >= policy.attempts_max.max(1) {
            return Err(error);
        }
        let wait = policy.backoff(made);
        let resume_at = Instant::now() + wait;
        if resume_at.duration_since(started) > policy.budget
            || give_up_at.is_some_and(|at| resume_at >= at)
        {
            tracing::warn!(
                attempts = made,
                %error,
                "transient failure, but the retry budget is spent; the queue retries later"
            );
            return Err(error);
        }
        tracing::warn!(
            attempt = made,
            retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            %error,
            "transient failure; retrying within this delivery"
        );
        sleeper.sleep(wait).await;
        made += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use steward_store::TokioSleeper;
    use steward_store::testing::RecordingSleeper;

    use super::*;

    #[derive(Debug, PartialEq)]
    enum Failure {
        Transient,
        Permanent,
    }

    impl Display for Failure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }

    fn transient(e: &Failure) -> bool {
        *e == Failure::Transient
    }

    /// An attempt failing transiently `fails` times, then succeeding; counts its calls.
    fn flaky(
        fails: u32,
        calls: &AtomicU32,
    ) -> impl FnMut() -> std::future::Ready<Result<u32, Failure>> {
        move || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            std::future::ready(if n <= fails {
                Err(Failure::Transient)
            } else {
                Ok(n)
            })
        }
    }

    fn assert_jittered(waits: &[Duration], policy: &RetryPolicy) {
        for (i, wait) in waits.iter().enumerate() {
            let ceiling = policy.ceiling(u32::try_from(i).unwrap_or(0) + 1);
            assert!(
                *wait >= ceiling / 2 && *wait <= ceiling,
                "wait {i} is {wait:?}, outside {:?}..={ceiling:?}",
                ceiling / 2
            );
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_with_jitter_below_the_ceiling() {
        let p = RetryPolicy::default();
        let ms = |r| p.ceiling(r).as_millis();
        assert_eq!(
            [ms(1), ms(2), ms(3), ms(4), ms(9)],
            [500, 1000, 2000, 4000, 4000]
        );
        assert_eq!(p.ceiling(u32::MAX), RETRY_BACKOFF_MAX, "no overflow");
        for retry in 1..6 {
            for _ in 0..50 {
                let wait = p.backoff(retry);
                assert!(wait >= p.ceiling(retry) / 2 && wait <= p.ceiling(retry));
            }
        }
    }

    #[tokio::test]
    async fn a_transient_failure_is_retried_after_a_short_jittered_wait() {
        let sleeper = RecordingSleeper::new();
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy::default();
        let out =
            retry_transient(&policy, sleeper.as_ref(), None, transient, flaky(2, &calls)).await;
        assert_eq!(out, Ok(3));
        assert_eq!(sleeper.waits().len(), 2);
        assert_jittered(&sleeper.waits(), &policy);
    }

    #[tokio::test]
    async fn attempts_are_bounded_and_the_last_error_is_returned() {
        let sleeper = RecordingSleeper::new();
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy::default();
        let out = retry_transient(
            &policy,
            sleeper.as_ref(),
            None,
            transient,
            flaky(99, &calls),
        )
        .await;
        assert_eq!(out, Err(Failure::Transient));
        assert_eq!(calls.load(Ordering::SeqCst), RETRY_ATTEMPTS_MAX);
        assert_eq!(sleeper.waits().len(), RETRY_ATTEMPTS_MAX as usize - 1);
        assert_jittered(&sleeper.waits(), &policy);
    }

    #[tokio::test]
    async fn a_permanent_failure_is_not_retried() {
        let sleeper = RecordingSleeper::new();
        let calls = AtomicU32::new(0);
        let out = retry_transient(
            &RetryPolicy::default(),
            sleeper.as_ref(),
            None,
            transient,
            || {
                calls.fetch_add(1, Ordering::SeqCst);
                std::future::ready(Err::<(), _>(Failure::Permanent))
            },
        )
        .await;
        assert_eq!(out, Err(Failure::Permanent));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(sleeper.waits().is_empty());
    }

    #[tokio::test]
    async fn no_retry_waits_past_the_deadline() {
        let sleeper = RecordingSleeper::new();
        let calls = AtomicU32::new(0);
        // Even the shortest first wait (250 ms) would end past this.
        let give_up_at = Instant::now() + Duration::from_millis(200);
        let out = retry_transient(
            &RetryPolicy::default(),
            sleeper.as_ref(),
            Some(give_up_at),
            transient,
            flaky(1, &calls),
        )
        .await;
        assert_eq!(out, Err(Failure::Transient));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(sleeper.waits().is_empty());
    }

    /// Paused tokio time: the attempts themselves take (virtual) time, which counts against
    /// the budget.
    #[tokio::test(start_paused = true)]
    async fn no_retry_starts_once_the_budget_is_spent() {
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy {
            attempts_max: 100,
            ..RetryPolicy::default()
        };
        let out = retry_transient(&policy, &TokioSleeper, None, transient, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_secs(7)).await;
                Err::<(), _>(Failure::Transient)
            }
        })
        .await;
        assert_eq!(out, Err(Failure::Transient));
        // 7 s per attempt: the second retry's wait ends by 15.5 s, but the third attempt ends
        // after 21 s, so no third retry.
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
