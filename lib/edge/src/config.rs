//! Configuration of the binaries, read once at start: the environment names every surface
//! shares, [`Settings`] (the environment with its secrets resolved, see [`crate::secrets`]),
//! [`ConfigError`], and [`init_tracing`]. Each surface crate reads its own settings from
//! [`Settings`] (the webhook secrets, the model, the web app, MCP) and lists what its function
//! needs to start (see [`crate::startup`]).

use std::collections::HashMap;

use crate::secrets::{self, ParameterStore, SecretError, SsmParameters};

/// The DynamoDB table name.
pub const ENV_TABLE: &str = "STEWARD_TABLE";
/// The SQS FIFO turn queue URL.
pub const ENV_QUEUE_URL: &str = "STEWARD_QUEUE_URL";
/// The public base URL used in links.
pub const ENV_PUBLIC_URL: &str = "STEWARD_PUBLIC_URL";

/// Configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required setting is missing.
    #[error("{0} is not set")]
    Missing(&'static str),
    /// A required setting is missing, with how to give it (see [`crate::startup::Need`]).
    #[error("{name} is not set: {fix}")]
    Required {
        /// The setting.
        name: &'static str,
        /// How to give it.
        fix: &'static str,
    },
    /// Some of the settings that only work together are set, not all.
    #[error(
        "{what} is half configured: {missing} is not set while {set}; set {missing} too (on AWS, its template parameter), or unset them all to turn {what} off"
    )]
    HalfConfigured {
        /// What the settings configure.
        what: &'static str,
        /// The first one missing.
        missing: &'static str,
        /// The ones set, as a clause: "A is set", "A and B are set".
        set: String,
    },
    /// A setting a surface refused; the message names it and says what to change.
    #[error("{0}")]
    Unusable(String),
    /// A setting has a value that cannot be used.
    #[error("{name}: {problem}")]
    Invalid {
        /// The setting.
        name: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A secret could not be read.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// A client could not be built.
    #[error("{what} could not be built: {message}")]
    Client {
        /// Which client.
        what: &'static str,
        /// Why.
        message: String,
    },
}

impl ConfigError {
    /// A setting a surface refused, from its own error (whose message names the setting).
    pub fn unusable(error: impl std::fmt::Display) -> Self {
        Self::Unusable(error.to_string())
    }
}

/// The process environment with its secrets resolved; read once at start, then passed around.
/// `Debug` shows names only.
#[derive(Clone, Default)]
pub struct Settings {
    env: HashMap<String, String>,
    secrets: HashMap<String, String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut secrets: Vec<&String> = self.secrets.keys().collect();
        secrets.sort();
        f.debug_struct("Settings")
            .field("secrets", &secrets)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// Reads the process environment and resolves `secret_names` (from SSM for each
    /// `NAME_PARAM` that is set, through `sdk`).
    pub async fn load(
        sdk: &aws_config::SdkConfig,
        secret_names: &[&str],
    ) -> Result<Self, ConfigError> {
        let env: HashMap<String, String> = std::env::vars().collect();
        Self::resolve(env, secret_names, &SsmParameters::new(sdk)).await
    }

    /// Settings from `env`, resolving `secret_names` through `store`.
    pub async fn resolve(
        env: HashMap<String, String>,
        secret_names: &[&str],
        store: &dyn ParameterStore,
    ) -> Result<Self, ConfigError> {
        let secrets = secrets::resolve_secrets(&env, secret_names, store).await?;
        Ok(Self { env, secrets })
    }

    /// The process environment as it is, with no secret resolution (local runs: secrets are
    /// plain environment variables there).
    pub fn from_process_env() -> Self {
        Self {
            env: std::env::vars().collect(),
            secrets: HashMap::new(),
        }
    }

    /// The same settings with `name` set to `value` unless it is already set.
    pub fn with_default(mut self, name: &str, value: impl Into<String>) -> Self {
        if self.get(name).is_none() {
            self.env.insert(name.to_owned(), value.into());
        }
        self
    }

    /// Settings from literal pairs, secrets included as plain values (tests, local runs).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            env: pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            secrets: HashMap::new(),
        }
    }

    /// The value of `name` (a resolved secret, else the environment), trimmed; blank is unset.
    pub fn get(&self, name: &str) -> Option<String> {
        self.secrets
            .get(name)
            .or_else(|| self.env.get(name))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The value of a required setting.
    pub fn require(&self, name: &'static str) -> Result<String, ConfigError> {
        self.get(name).ok_or(ConfigError::Missing(name))
    }

    /// [`Settings::get`] as a lookup function, for `from_lookup` constructors.
    pub fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |name| self.get(name)
    }
}

/// Starts JSON logging to stdout (CloudWatch), filtered by `RUST_LOG` (default `info`; one that
/// does not parse is refused), and
/// span export when an OTLP endpoint is set ([`crate::telemetry`]); `function` names the
/// Lambda (`service.name` `steward-<function>` unless `OTEL_SERVICE_NAME` is set). Calling it
/// twice keeps the first set-up. An unusable `OTEL_*` setting is refused with its name.
pub fn init_tracing(function: &str) -> Result<crate::telemetry::Telemetry, ConfigError> {
    crate::telemetry::init(
        crate::telemetry::LogFormat::LambdaJson,
        "info",
        &format!("steward-{function}"),
    )
    .map_err(ConfigError::unusable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_is_unset_and_debug_hides_values() {
        let s = Settings::from_pairs([("A", " x "), ("B", "  ")]);
        assert_eq!(s.get("A").as_deref(), Some("x"));
        assert_eq!(s.get("B"), None);
        assert!(matches!(s.require("B"), Err(ConfigError::Missing("B"))));
        assert!(!format!("{s:?}").contains('x'));
    }
}
