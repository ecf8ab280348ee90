//! The single retry every real client makes after a transient failure.

use std::future::Future;
use std::time::Duration;

use crate::error::LlmError;
use crate::limits::MODEL_RETRIES_MAX;

/// A failed attempt, and whether it may be retried.
#[derive(Debug)]
pub(crate) struct Failed {
    /// What went wrong.
    pub error: LlmError,
    /// False when the error kind is not retryable, or when a streamed answer had already begun
    /// (its output is billed; a second attempt would pay for it again).
    pub retryable: bool,
}

impl From<LlmError> for Failed {
    fn from(error: LlmError) -> Self {
        Self {
            retryable: error.is_retryable(),
            error,
        }
    }
}

/// Runs `attempt`, and once more after `backoff` if it failed with a retryable error
/// ([`LlmError::is_retryable`]: overloaded, 5xx). Never more than
/// [`MODEL_RETRIES_MAX`] retries: the second failure is returned as it is. (For clients that
/// do not stream; the OpenAI-compatible one.)
#[cfg(feature = "http")]
pub(crate) async fn with_one_retry<T, F, Fut>(
    backoff: Duration,
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    with_one_retry_unless_started(backoff, || {
        let attempt = attempt();
        async move { attempt.await.map_err(Failed::from) }
    })
    .await
}

/// [`with_one_retry`] for attempts that say themselves whether they may be retried
/// ([`Failed::retryable`]): a streamed answer that failed after its output began is not.
pub(crate) async fn with_one_retry_unless_started<T, F, Fut>(
    backoff: Duration,
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failed>>,
{
    let mut retries = 0;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(Failed {
                error,
                retryable: true,
            }) if retries < MODEL_RETRIES_MAX => {
                retries += 1;
                tracing::warn!(%error, retry = retries, "model call failed; retrying once");
                tokio::time::sleep(backoff).await;
            }
            Err(failed) => return Err(failed.error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn retries_a_transient_failure_exactly_once() {
        let calls = AtomicUsize::new(0);
        let outcome: Result<(), LlmError> = with_one_retry(Duration::ZERO, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(LlmError::Overloaded) }
        })
        .await;
        assert_eq!(outcome, Err(LlmError::Overloaded));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn does_not_retry_a_permanent_failure() {
        let calls = AtomicUsize::new(0);
        let outcome: Result<(), LlmError> = with_one_retry(Duration::ZERO, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(LlmError::RateLimited { retry_after: None }) }
        })
        .await;
        assert!(outcome.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn does_not_retry_a_timeout_so_a_long_answer_is_never_paid_twice() {
        let calls = AtomicUsize::new(0);
        let outcome: Result<(), LlmError> = with_one_retry(Duration::ZERO, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(LlmError::Timeout) }
        })
        .await;
        assert_eq!(outcome, Err(LlmError::Timeout));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_timeout_grows_with_the_output_budget() {
        use crate::limits::{OUTPUT_TOKENS_MAX, model_call_timeout};
        assert_eq!(model_call_timeout(0), Duration::from_secs(60));
        assert_eq!(model_call_timeout(4_000), Duration::from_secs(160));
        assert_eq!(
            model_call_timeout(OUTPUT_TOKENS_MAX),
            Duration::from_secs(460)
        );
        // 16,000 tokens at a typical 50-100 tokens per second fit, with room.
        assert!(model_call_timeout(OUTPUT_TOKENS_MAX) > Duration::from_secs(16_000 / 50 + 60));
    }

    #[tokio::test]
    async fn a_failure_after_the_output_began_is_not_retried() {
        let calls = AtomicUsize::new(0);
        let outcome: Result<(), LlmError> = with_one_retry_unless_started(Duration::ZERO, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Err(Failed {
                    error: LlmError::Overloaded,
                    retryable: false,
                })
            }
        })
        .await;
        assert_eq!(outcome, Err(LlmError::Overloaded));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_success_after_one_failure_is_returned() {
        let calls = AtomicUsize::new(0);
        let outcome = with_one_retry(Duration::ZERO, || {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if call == 0 {
                    Err(LlmError::Overloaded)
                } else {
                    Ok(call)
                }
            }
        })
        .await;
        assert_eq!(outcome, Ok(1));
    }
}
