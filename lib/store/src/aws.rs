//! The AWS SDK configuration every function builds its DynamoDB and SQS clients from: the
//! environment's region, credentials and endpoint, plus explicit timeouts.
//!
//! The SDK's defaults have a connect timeout but no attempt or operation timeout, so a stalled
//! DynamoDB or SQS request would be bounded only by the Lambda timeout (900 s for the agent),
//! holding a concurrency slot all that time. With these, a stalled attempt is abandoned and
//! retried by the SDK (standard mode: jittered backoff), and a call that cannot succeed fails
//! within seconds with an error the caller reports.

use std::time::Duration;

use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};

/// Seconds to open a connection to DynamoDB or SQS. A handshake takes milliseconds; 3 s (about
/// the SDK's own default) rides out one lost packet.
pub const AWS_CONNECT_TIMEOUT_SECS: u64 = 3;

/// Seconds one DynamoDB or SQS request attempt may take. These answer in milliseconds, even a
/// 100-item transaction or a 1 MB query page; 3 s is far past their slowest normal answers, so
/// an attempt this slow has stalled and is better retried.
pub const AWS_ATTEMPT_TIMEOUT_SECS: u64 = 3;

/// Seconds one DynamoDB or SQS call may take with all its retries. Below the webhook's 10 s
/// Lambda timeout, so even there a failing call ends in an error the function logs and answers,
/// not in the platform killing the invocation.
pub const AWS_OPERATION_TIMEOUT_SECS: u64 = 8;

// A retry must fit inside the operation's bound, or the SDK could never retry a stalled attempt.
const _: () = assert!(AWS_ATTEMPT_TIMEOUT_SECS * 2 <= AWS_OPERATION_TIMEOUT_SECS);

/// The timeouts above, as the SDK takes them.
pub fn store_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(AWS_CONNECT_TIMEOUT_SECS))
        .operation_attempt_timeout(Duration::from_secs(AWS_ATTEMPT_TIMEOUT_SECS))
        .operation_timeout(Duration::from_secs(AWS_OPERATION_TIMEOUT_SECS))
        .build()
}

/// The SDK configuration from the environment (`AWS_REGION`, credentials, `AWS_ENDPOINT_URL`…)
/// with [`store_timeouts`], on Steward's HTTP client (`steward_net::sdk_http_client`: the
/// SDK links no client of its own). Clients that need other bounds (the model's streamed
/// answer, Parameter Store at init) set their own on top.
pub async fn load_sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(steward_net::sdk_http_client())
        .timeout_config(store_timeouts())
        .load()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_has_an_attempt_and_an_operation_bound() {
        let timeouts = store_timeouts();
        assert_eq!(
            timeouts.connect_timeout(),
            Some(Duration::from_secs(AWS_CONNECT_TIMEOUT_SECS))
        );
        assert_eq!(
            timeouts.operation_attempt_timeout(),
            Some(Duration::from_secs(AWS_ATTEMPT_TIMEOUT_SECS))
        );
        assert_eq!(
            timeouts.operation_timeout(),
            Some(Duration::from_secs(AWS_OPERATION_TIMEOUT_SECS))
        );
    }
}
