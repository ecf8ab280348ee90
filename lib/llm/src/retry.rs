//! The single retry every real client makes after a transient failure.

use std::future::Future;
use std::time::Duration;

use crate::error::LlmError;
use crate::limits::MODEL_RETRIES_MAX;

/// Runs `attempt`, and once more after `backoff` if it failed with a retryable error
/// ([`LlmError::is_retryable`]: timeout, overloaded, 5xx). Never more than
/// [`MODEL_RETRIES_MAX`] retries: the second failure is returned as it is.
pub(crate) async fn with_one_retry<T, F, Fut>(
    backoff: Duration,
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    let mut retries = 0;
    loop {
        match attempt().await {
            Err(error) if error.is_retryable() && retries < MODEL_RETRIES_MAX => {
                retries += 1;
                tracing::warn!(%error, retry = retries, "model call failed; retrying once");
                tokio::time::sleep(backoff).await;
            }
            outcome => return outcome,
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
    async fn a_success_after_one_failure_is_returned() {
        let calls = AtomicUsize::new(0);
        let outcome = with_one_retry(Duration::ZERO, || {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if call == 0 {
                    Err(LlmError::Timeout)
                } else {
                    Ok(call)
                }
            }
        })
        .await;
        assert_eq!(outcome, Ok(1));
    }
}
