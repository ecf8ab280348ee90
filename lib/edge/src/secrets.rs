//! Secrets read once at start. A secret `NAME` comes from the environment variable `NAME`, or —
//! on Lambda, where secrets stay out of the environment — from the SSM SecureString parameter
//! named by `NAME_PARAM` (`ANTHROPIC_API_KEY_PARAM=/steward/anthropic-api-key`), decrypted.
//! Values are never logged.
//!
//! All parameters are fetched together: one `GetParameters` call for up to
//! [`GET_PARAMETERS_MAX`] names (Steward's functions need at most a handful), instead of one
//! `GetParameter` per secret, so a wave of cold starts spends one request of the account's
//! shared Parameter Store quota per function instead of several. Every parameter that is
//! missing, unreadable or empty is reported in one error, naming each variable and parameter.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use async_trait::async_trait;

/// The suffix naming a secret's SSM parameter: `NAME_PARAM`.
pub const PARAM_SUFFIX: &str = "_PARAM";

/// The most names one `GetParameters` call takes (the API's own limit); more are fetched in
/// further calls of this size.
pub const GET_PARAMETERS_MAX: usize = 10;

/// Seconds to connect to Parameter Store. A handshake takes milliseconds; 3 s rides out one lost
/// packet, and an unreachable endpoint fails the start quickly with a clear error.
pub const SSM_CONNECT_TIMEOUT_SECS: u64 = 3;

/// Seconds one Parameter Store attempt may take (connect, KMS decryption, answer). The call
/// normally answers in tens of milliseconds; 3 s covers a slow KMS decrypt, and a stalled
/// attempt is retried by the SDK (with jittered backoff) instead of holding the cold start.
pub const SSM_ATTEMPT_TIMEOUT_SECS: u64 = 3;

/// Seconds all attempts of one Parameter Store call may take together, retries included. A
/// Lambda function's init phase has 10 s; 8 s leaves room to report the failure clearly
/// instead of being cut off by the platform.
pub const SSM_OPERATION_TIMEOUT_SECS: u64 = 8;

/// A secret parameter that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterProblem {
    /// The environment variable naming the parameter (`NAME_PARAM`).
    pub variable: String,
    /// The parameter's name.
    pub parameter: String,
    /// What is wrong: it does not exist (or this role may not read it), or it is empty.
    pub problem: String,
}

/// Secrets that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Parameter Store refused or failed the call itself.
    #[error("reading SSM parameters {} failed: {message}", list(.parameters))]
    Store {
        /// `NAME_PARAM=parameter` for each parameter the failed call asked for.
        parameters: Vec<String>,
        /// What went wrong.
        message: String,
    },
    /// Some parameters are missing, unreadable or empty; every one is named.
    #[error("{}", describe(.0))]
    Unusable(Vec<ParameterProblem>),
}

fn list(parameters: &[String]) -> String {
    parameters.join(", ")
}

fn describe(problems: &[ParameterProblem]) -> String {
    let parts: Vec<String> = problems
        .iter()
        .map(|p| format!("{}={} {}", p.variable, p.parameter, p.problem))
        .collect();
    format!(
        "{} SSM parameter(s) cannot be used: {} (create each as a SecureString, or correct the variable)",
        problems.len(),
        parts.join("; ")
    )
}

/// What Parameter Store returned for one batch of names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Decrypted values, by parameter name.
    pub values: HashMap<String, String>,
    /// Names the store does not have (or this role may not read).
    pub invalid: Vec<String>,
}

/// Where `NAME_PARAM` parameters are read from.
#[async_trait]
pub trait ParameterStore: Send + Sync {
    /// The decrypted values of `parameters` (at most [`GET_PARAMETERS_MAX`] names) in one
    /// request; names it does not have are listed in [`Fetched::invalid`]. `Err` is a failure
    /// of the request itself.
    async fn secure_strings(&self, parameters: &[String]) -> Result<Fetched, String>;
}

/// AWS Systems Manager Parameter Store.
#[derive(Debug, Clone)]
pub struct SsmParameters {
    client: aws_sdk_ssm::Client,
}

impl SsmParameters {
    /// Parameter Store through the SDK configuration `sdk` (`AWS_ENDPOINT_URL` applies), with
    /// its own connect, attempt and operation timeouts.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(SSM_CONNECT_TIMEOUT_SECS))
            .operation_attempt_timeout(Duration::from_secs(SSM_ATTEMPT_TIMEOUT_SECS))
            .operation_timeout(Duration::from_secs(SSM_OPERATION_TIMEOUT_SECS))
            .build();
        let config = aws_sdk_ssm::config::Builder::from(sdk)
            .timeout_config(timeouts)
            .build();
        Self {
            client: aws_sdk_ssm::Client::from_conf(config),
        }
    }
}

#[async_trait]
impl ParameterStore for SsmParameters {
    async fn secure_strings(&self, parameters: &[String]) -> Result<Fetched, String> {
        let out = self
            .client
            .get_parameters()
            .set_names(Some(parameters.to_vec()))
            .with_decryption(true)
            .send()
            .await
            .map_err(|e| aws_sdk_ssm::error::DisplayErrorContext(e).to_string())?;
        let values = out
            .parameters
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| Some((p.name?, p.value.unwrap_or_default())))
            .collect();
        Ok(Fetched {
            values,
            invalid: out.invalid_parameters.unwrap_or_default(),
        })
    }
}

/// Resolves each of `names` from `env`: `NAME_PARAM` (when set) through `store`, else `NAME`
/// itself. Returns the secrets that have a value. Every parameter is fetched in one
/// `GetParameters` call (batches of [`GET_PARAMETERS_MAX`]); any that is missing, unreadable or
/// empty is an error naming all of them, so a misconfigured function fails at init with the
/// whole list instead of on its first message, one fix at a time.
pub async fn resolve_secrets(
    env: &HashMap<String, String>,
    names: &[&str],
    store: &dyn ParameterStore,
) -> Result<HashMap<String, String>, SecretError> {
    let mut out = HashMap::new();
    let mut wanted: Vec<(&str, String)> = Vec::new();
    for &name in names {
        let param = env
            .get(&format!("{name}{PARAM_SUFFIX}"))
            .map(|p| p.trim())
            .filter(|p| !p.is_empty());
        match param {
            Some(parameter) => wanted.push((name, parameter.to_owned())),
            None => {
                if let Some(value) = env
                    .get(name)
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                {
                    out.insert(name.to_owned(), value);
                }
            }
        }
    }
    if wanted.is_empty() {
        return Ok(out);
    }

    // Two secrets may share one parameter; ask for each name once, in a stable order.
    let unique: Vec<String> = wanted
        .iter()
        .map(|(_, parameter)| parameter.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut fetched = Fetched::default();
    for batch in unique.chunks(GET_PARAMETERS_MAX) {
        let answer = store
            .secure_strings(batch)
            .await
            .map_err(|message| SecretError::Store {
                parameters: wanted
                    .iter()
                    .filter(|(_, parameter)| batch.contains(parameter))
                    .map(|(name, parameter)| format!("{name}{PARAM_SUFFIX}={parameter}"))
                    .collect(),
                message,
            })?;
        fetched.values.extend(answer.values);
        fetched.invalid.extend(answer.invalid);
    }

    let mut problems = Vec::new();
    for (name, parameter) in wanted {
        let variable = format!("{name}{PARAM_SUFFIX}");
        let value = fetched.values.get(&parameter).map(|v| v.trim().to_owned());
        match value {
            Some(value) if !value.is_empty() => {
                tracing::info!(secret = name, parameter, "secret read from SSM");
                out.insert(name.to_owned(), value);
            }
            Some(_) => problems.push(ParameterProblem {
                variable,
                parameter,
                problem: "is empty".to_owned(),
            }),
            None => problems.push(ParameterProblem {
                variable,
                parameter,
                problem: "does not exist or cannot be read by this function's role".to_owned(),
            }),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(SecretError::Unusable(problems))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A fake Parameter Store recording each request's names.
    #[derive(Default)]
    struct Fake {
        calls: Mutex<Vec<Vec<String>>>,
        fail: bool,
    }

    impl Fake {
        fn calls(&self) -> Vec<Vec<String>> {
            self.calls.lock().map(|c| c.clone()).unwrap_or_default()
        }
    }

    #[async_trait]
    impl ParameterStore for Fake {
        async fn secure_strings(&self, parameters: &[String]) -> Result<Fetched, String> {
            if let Ok(mut calls) = self.calls.lock() {
                calls.push(parameters.to_vec());
            }
            if self.fail {
                return Err("ThrottlingException: Rate exceeded".into());
            }
            assert!(
                parameters.len() <= GET_PARAMETERS_MAX,
                "the API takes 10 names"
            );
            let mut fetched = Fetched::default();
            for parameter in parameters {
                match parameter.as_str() {
                    "/steward/key" => {
                        fetched
                            .values
                            .insert(parameter.clone(), "from-ssm\n".into());
                    }
                    "/steward/empty" => {
                        fetched.values.insert(parameter.clone(), String::new());
                    }
                    p if p.starts_with("/steward/n") => {
                        fetched.values.insert(parameter.clone(), format!("v{p}"));
                    }
                    _ => fetched.invalid.push(parameter.clone()),
                }
            }
            Ok(fetched)
        }
    }

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[tokio::test]
    async fn param_wins_over_the_plain_variable() {
        let e = env(&[
            ("A", "plain"),
            ("A_PARAM", "/steward/key"),
            ("B", " b-value "),
            ("C", ""),
        ]);
        let store = Fake::default();
        let got = resolve_secrets(&e, &["A", "B", "C", "D"], &store)
            .await
            .unwrap_or_default();
        assert_eq!(got.get("A").map(String::as_str), Some("from-ssm"));
        assert_eq!(got.get("B").map(String::as_str), Some("b-value"));
        assert!(!got.contains_key("C") && !got.contains_key("D"));
        assert_eq!(store.calls(), vec![vec!["/steward/key".to_owned()]]);
    }

    #[tokio::test]
    async fn all_secrets_come_in_one_request() {
        let e = env(&[
            ("A_PARAM", "/steward/key"),
            ("B_PARAM", "/steward/n1"),
            ("C_PARAM", "/steward/n2"),
            // Shares A's parameter: asked for once.
            ("D_PARAM", "/steward/key"),
        ]);
        let store = Fake::default();
        let got = resolve_secrets(&e, &["A", "B", "C", "D"], &store)
            .await
            .unwrap_or_default();
        assert_eq!(got.len(), 4);
        assert_eq!(got.get("C").map(String::as_str), Some("v/steward/n2"));
        assert_eq!(got.get("D").map(String::as_str), Some("from-ssm"));
        assert_eq!(
            store.calls(),
            vec![vec![
                "/steward/key".to_owned(),
                "/steward/n1".to_owned(),
                "/steward/n2".to_owned()
            ]]
        );
    }

    #[tokio::test]
    async fn more_than_ten_parameters_go_in_batches_of_ten() {
        let names: Vec<String> = (0..12).map(|i| format!("S{i:02}")).collect();
        let pairs: Vec<(String, String)> = names
            .iter()
            .map(|n| (format!("{n}_PARAM"), format!("/steward/n{n}")))
            .collect();
        let e: HashMap<String, String> = pairs.into_iter().collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let store = Fake::default();
        let got = resolve_secrets(&e, &refs, &store).await.unwrap_or_default();
        assert_eq!(got.len(), 12);
        let sizes: Vec<usize> = store.calls().iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![10, 2]);
    }

    #[tokio::test]
    async fn every_unusable_parameter_is_named_in_one_error() {
        let e = env(&[
            ("A_PARAM", "/steward/missing"),
            ("B_PARAM", "/steward/key"),
            ("C_PARAM", "/steward/empty"),
            ("D_PARAM", "/steward/also-missing"),
        ]);
        let store = Fake::default();
        let err = resolve_secrets(&e, &["A", "B", "C", "D"], &store)
            .await
            .err();
        let Some(SecretError::Unusable(problems)) = &err else {
            panic!("expected every problem at once, got {err:?}");
        };
        let named: Vec<(&str, &str)> = problems
            .iter()
            .map(|p| (p.variable.as_str(), p.parameter.as_str()))
            .collect();
        assert_eq!(
            named,
            vec![
                ("A_PARAM", "/steward/missing"),
                ("C_PARAM", "/steward/empty"),
                ("D_PARAM", "/steward/also-missing")
            ]
        );
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("A_PARAM=/steward/missing does not exist"),
            "{message}"
        );
        assert!(
            message.contains("C_PARAM=/steward/empty is empty"),
            "{message}"
        );
        assert!(
            !message.contains("from-ssm"),
            "values never shown: {message}"
        );
        assert_eq!(store.calls().len(), 1, "one request found them all");
    }

    #[tokio::test]
    async fn a_failed_request_names_its_parameters() {
        let e = env(&[("A_PARAM", "/steward/key"), ("B", "plain")]);
        let store = Fake {
            fail: true,
            ..Fake::default()
        };
        let err = resolve_secrets(&e, &["A", "B"], &store).await.err();
        let message = err.as_ref().map(|e| e.to_string()).unwrap_or_default();
        assert!(matches!(err, Some(SecretError::Store { .. })), "{err:?}");
        assert!(message.contains("A_PARAM=/steward/key"), "{message}");
        assert!(message.contains("Rate exceeded"), "{message}");
    }
}
