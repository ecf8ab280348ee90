//! Secrets read once at start. A secret `NAME` comes from the environment variable `NAME`, or —
//! on Lambda, where secrets stay out of the environment — from the SSM SecureString parameter
//! named by `NAME_PARAM` (`ANTHROPIC_API_KEY_PARAM=/steward/anthropic-api-key`), decrypted.
//! Values are never logged.

use std::collections::HashMap;

use async_trait::async_trait;

/// The suffix naming a secret's SSM parameter: `NAME_PARAM`.
pub const PARAM_SUFFIX: &str = "_PARAM";

/// A secret that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Parameter Store refused or failed.
    #[error("reading SSM parameter {parameter} (for {name}) failed: {message}")]
    Store {
        /// The secret's name.
        name: String,
        /// The parameter's name.
        parameter: String,
        /// What went wrong.
        message: String,
    },
    /// The parameter exists but holds nothing.
    #[error("SSM parameter {parameter} (for {name}) is empty")]
    Empty {
        /// The secret's name.
        name: String,
        /// The parameter's name.
        parameter: String,
    },
}

/// Where `NAME_PARAM` parameters are read from.
#[async_trait]
pub trait ParameterStore: Send + Sync {
    /// The decrypted value of `parameter`.
    async fn secure_string(&self, parameter: &str) -> Result<String, String>;
}

/// AWS Systems Manager Parameter Store.
#[derive(Debug, Clone)]
pub struct SsmParameters {
    client: aws_sdk_ssm::Client,
}

impl SsmParameters {
    /// Parameter Store through the SDK configuration `sdk` (`AWS_ENDPOINT_URL` applies).
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Self {
            client: aws_sdk_ssm::Client::new(sdk),
        }
    }
}

#[async_trait]
impl ParameterStore for SsmParameters {
    async fn secure_string(&self, parameter: &str) -> Result<String, String> {
        let out = self
            .client
            .get_parameter()
            .name(parameter)
            .with_decryption(true)
            .send()
            .await
            .map_err(|e| aws_sdk_ssm::error::DisplayErrorContext(e).to_string())?;
        Ok(out.parameter.and_then(|p| p.value).unwrap_or_default())
    }
}

/// Resolves each of `names` from `env`: `NAME_PARAM` (when set) through `store`, else `NAME`
/// itself. Returns the secrets that have a value; a parameter that cannot be read is an error,
/// so a misconfigured function fails at init instead of on its first message.
pub async fn resolve_secrets(
    env: &HashMap<String, String>,
    names: &[&str],
    store: &dyn ParameterStore,
) -> Result<HashMap<String, String>, SecretError> {
    let mut out = HashMap::new();
    for &name in names {
        let param = env
            .get(&format!("{name}{PARAM_SUFFIX}"))
            .map(|p| p.trim())
            .filter(|p| !p.is_empty());
        let value =
            match param {
                Some(parameter) => {
                    let value = store.secure_string(parameter).await.map_err(|message| {
                        SecretError::Store {
                            name: name.to_owned(),
                            parameter: parameter.to_owned(),
                            message,
                        }
                    })?;
                    let value = value.trim().to_owned();
                    if value.is_empty() {
                        return Err(SecretError::Empty {
                            name: name.to_owned(),
                            parameter: parameter.to_owned(),
                        });
                    }
                    tracing::info!(secret = name, parameter, "secret read from SSM");
                    Some(value)
                }
                None => env
                    .get(name)
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty()),
            };
        if let Some(value) = value {
            out.insert(name.to_owned(), value);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake;

    #[async_trait]
    impl ParameterStore for Fake {
        async fn secure_string(&self, parameter: &str) -> Result<String, String> {
            match parameter {
                "/steward/key" => Ok("from-ssm\n".into()),
                "/steward/empty" => Ok(String::new()),
                _ => Err("ParameterNotFound".into()),
            }
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
        let got = resolve_secrets(&e, &["A", "B", "C", "D"], &Fake)
            .await
            .unwrap_or_default();
        assert_eq!(got.get("A").map(String::as_str), Some("from-ssm"));
        assert_eq!(got.get("B").map(String::as_str), Some("b-value"));
        assert!(!got.contains_key("C") && !got.contains_key("D"));
    }

    #[tokio::test]
    async fn unreadable_or_empty_parameters_fail_at_init() {
        let e = env(&[("A_PARAM", "/steward/missing")]);
        let err = resolve_secrets(&e, &["A"], &Fake).await.err();
        assert!(matches!(err, Some(SecretError::Store { .. })), "{err:?}");
        let e = env(&[("A_PARAM", "/steward/empty")]);
        let err = resolve_secrets(&e, &["A"], &Fake).await.err();
        assert!(matches!(err, Some(SecretError::Empty { .. })), "{err:?}");
    }
}
