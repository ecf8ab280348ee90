//! The AWS SDK configuration DynamoDB, SQS and S3 clients are built from: the environment's
//! region, credentials and endpoint, plus explicit timeouts. A Lambda function reads exactly
//! what Lambda gives it ([`lambda_sdk_config`]); the CLI and `steward serve` use the SDK's full
//! provider chain ([`load_sdk_config`]).
//!
//! The SDK's defaults have a connect timeout but no attempt or operation timeout, so a stalled
//! DynamoDB or SQS request would be bounded only by the Lambda timeout (900 s for the agent),
//! holding a concurrency slot all that time. With these, a stalled attempt is abandoned and
//! retried by the SDK (standard mode: jittered backoff), and a call that cannot succeed fails
//! within seconds with an error the caller reports.

use std::time::Duration;

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;

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

/// Where a Lambda function's region is read, in order: Lambda sets `AWS_REGION`.
const REGION_VARIABLES: [&str; 2] = ["AWS_REGION", "AWS_DEFAULT_REGION"];

/// An endpoint for every service (a local emulator, the stage's fault proxy).
const ENDPOINT_VARIABLE: &str = "AWS_ENDPOINT_URL";

/// The SDK's switches for FIPS and dual-stack endpoints ("true" turns one on).
const FIPS_VARIABLE: &str = "AWS_USE_FIPS_ENDPOINT";
const DUAL_STACK_VARIABLE: &str = "AWS_USE_DUALSTACK_ENDPOINT";

/// Why a Lambda function's SDK configuration cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LambdaSdkError {
    /// Neither region variable is set.
    #[error(
        "AWS_REGION is not set: Lambda sets it for every function; elsewhere set it to the stack's region (e.g. eu-west-1)"
    )]
    NoRegion,
    /// A switch holds something other than true or false.
    #[error("{name} must be true or false, not {value:?}")]
    NotASwitch {
        /// The variable.
        name: &'static str,
        /// What it holds.
        value: String,
    },
}

/// The SDK configuration of a Lambda function, from the variables Lambda gives every function:
/// the region (`AWS_REGION`), the execution role's credentials (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, read at each signing), and optionally
/// `AWS_ENDPOINT_URL`, `AWS_USE_FIPS_ENDPOINT` and `AWS_USE_DUALSTACK_ENDPOINT`; with
/// [`store_timeouts`], standard retries and Steward's HTTP client.
///
/// Not [`load_sdk_config`]'s full provider chain: a function never has a profile file, SSO,
/// a web identity token or instance metadata to consult, and that chain (the STS and SSO
/// clients, profile parsing, the metadata client) was 0.78 MB of the agent's bootstrap
/// (bench/RESULTS.md). The CLI and `steward serve`, run by people on their own machines, keep
/// the full chain. Per-service endpoint variables (`AWS_ENDPOINT_URL_DYNAMODB`, …) are not read.
pub fn lambda_sdk_config() -> Result<SdkConfig, LambdaSdkError> {
    lambda_sdk_config_from(|name| std::env::var(name).ok())
}

fn lambda_sdk_config_from(
    variable: impl Fn(&str) -> Option<String>,
) -> Result<SdkConfig, LambdaSdkError> {
    let set = |name: &str| variable(name).filter(|value| !value.trim().is_empty());
    let switch = |name: &'static str| match set(name) {
        None => Ok(None),
        Some(value) => match value.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(LambdaSdkError::NotASwitch { name, value }),
        },
    };
    let region = REGION_VARIABLES
        .iter()
        .find_map(|name| set(name))
        .ok_or(LambdaSdkError::NoRegion)?;
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region.trim().to_owned()))
        .credentials_provider(SharedCredentialsProvider::new(
            EnvironmentVariableCredentialsProvider::new(),
        ))
        .http_client(steward_net::sdk_http_client())
        .timeout_config(store_timeouts())
        .retry_config(RetryConfig::standard());
    if let Some(endpoint) = set(ENDPOINT_VARIABLE) {
        config = config.endpoint_url(endpoint.trim());
    }
    if let Some(fips) = switch(FIPS_VARIABLE)? {
        config = config.use_fips(fips);
    }
    if let Some(dual_stack) = switch(DUAL_STACK_VARIABLE)? {
        config = config.use_dual_stack(dual_stack);
    }
    Ok(config.build())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use aws_credential_types::provider::ProvideCredentials;

    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<SdkConfig, LambdaSdkError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        lambda_sdk_config_from(|name| vars.get(name).cloned())
    }

    #[test]
    fn a_function_reads_what_lambda_sets() {
        let config = from(&[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
        ])
        .unwrap();
        assert_eq!(config.region().map(|r| r.as_ref()), Some("eu-west-1"));
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:5000"));
        assert_eq!(config.use_fips(), None);
        assert!(config.credentials_provider().is_some());
        assert!(config.http_client().is_some());
        assert_eq!(
            config.timeout_config().and_then(|t| t.operation_timeout()),
            Some(Duration::from_secs(AWS_OPERATION_TIMEOUT_SECS))
        );
        let fallback = from(&[
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_USE_FIPS_ENDPOINT", "TRUE"),
        ])
        .unwrap();
        assert_eq!(fallback.region().map(|r| r.as_ref()), Some("us-east-1"));
        assert_eq!(fallback.endpoint_url(), None);
        assert_eq!(fallback.use_fips(), Some(true));
    }

    #[test]
    fn a_missing_region_or_a_bad_switch_is_named() {
        assert_eq!(
            from(&[("AWS_REGION", " ")]).unwrap_err(),
            LambdaSdkError::NoRegion
        );
        assert!(
            LambdaSdkError::NoRegion
                .to_string()
                .starts_with("AWS_REGION is not set")
        );
        assert_eq!(
            from(&[
                ("AWS_REGION", "eu-west-1"),
                ("AWS_USE_DUALSTACK_ENDPOINT", "yes")
            ])
            .unwrap_err(),
            LambdaSdkError::NotASwitch {
                name: "AWS_USE_DUALSTACK_ENDPOINT",
                value: "yes".to_owned()
            }
        );
    }

    #[tokio::test]
    async fn credentials_are_the_execution_roles_from_the_environment() {
        // The provider reads the process environment when asked; without the variables it
        // says so instead of consulting a profile or instance metadata.
        let config = from(&[("AWS_REGION", "eu-west-1")]).unwrap();
        let provider = config.credentials_provider().unwrap();
        let outcome = provider.provide_credentials().await;
        let has_keys = std::env::var("AWS_ACCESS_KEY_ID").is_ok()
            && std::env::var("AWS_SECRET_ACCESS_KEY").is_ok();
        assert_eq!(outcome.is_ok(), has_keys, "{outcome:?}");
    }

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
