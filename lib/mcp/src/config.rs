//! What the MCP endpoint allows: the hosts it answers for (DNS-rebinding protection), the
//! per-token rate limit, and the two test-only settings — the insecure dev user and the
//! conformance fixtures — which only a constructor given a loopback bound address can set.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use steward_edge::hosts::{self, HostPattern};
use steward_harness::UserId;
use steward_store::TurnQueue;

use super::elicitation::{ENV_MCP_STATE_KEY, StateKey, StateKeyError};

/// Host names (comma-separated) clients use to reach `/mcp`, e.g. the API Gateway domain
/// (`*.execute-api.eu-west-1.amazonaws.com`) or a custom domain. Required on Lambda; added to
/// the loopback names locally.
pub const ENV_MCP_ALLOWED_HOSTS: &str = "STEWARD_MCP_ALLOWED_HOSTS";

/// Calls a minute each token may make (default [`MCP_CALLS_PER_MINUTE_DEFAULT`]).
pub const ENV_MCP_CALLS_PER_MINUTE: &str = "STEWARD_MCP_CALLS_PER_MINUTE";

/// Tests only: token-less MCP requests act as this user. Honoured only by a local server bound
/// to a loopback address ([`McpConfig::local_from_lookup`]); the Lambda function never reads it.
pub const ENV_MCP_INSECURE_DEV_USER: &str = "STEWARD_MCP_INSECURE_DEV_USER";

/// Tests only: `1` adds the conformance suite's fixture tools (`test_simple_text`, …) to
/// `tools/list`. Same rule as [`ENV_MCP_INSECURE_DEV_USER`]: loopback only, never on Lambda.
pub const ENV_MCP_CONFORMANCE_FIXTURES: &str = "STEWARD_MCP_CONFORMANCE_FIXTURES";

/// Default calls a minute per token: two a second on average is far beyond what a person's AI
/// client needs for event planning, yet stops a runaway agent loop from hammering the store
/// (and the bill) before anyone notices. Bursts up to the whole minute's budget are allowed.
pub const MCP_CALLS_PER_MINUTE_DEFAULT: u32 = 120;

/// The host names a local server always answers for.
pub use steward_edge::hosts::LOOPBACK_HOSTS;

/// A configuration that cannot be used; each message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    /// No allowed host was given where one is required.
    #[error(
        "{ENV_MCP_ALLOWED_HOSTS} is not set: list the host names MCP clients use to reach /mcp (e.g. \"*.execute-api.eu-west-1.amazonaws.com\" or your custom domain)"
    )]
    NoAllowedHosts,
    /// An allowed-host entry is not a host name, `host:port` or `*.suffix`.
    #[error("{ENV_MCP_ALLOWED_HOSTS}: {entry:?} is not a host name, host:port or *.domain")]
    BadHost {
        /// The entry as given.
        entry: String,
    },
    /// The calls-per-minute setting is not a positive whole number.
    #[error("{ENV_MCP_CALLS_PER_MINUTE}: {value:?} is not a positive whole number")]
    BadRate {
        /// The value as given.
        value: String,
    },
    /// The dev user's id is not a valid user id.
    #[error("{ENV_MCP_INSECURE_DEV_USER}: {value:?} is not a user id ({reason})")]
    BadDevUser {
        /// The value as given.
        value: String,
        /// Why it is not a user id.
        reason: String,
    },
    /// The conformance fixture tools were asked for, but this build does not have them (they
    /// exist only with the `conformance` cargo feature, which only the test scripts enable).
    #[error(
        "{ENV_MCP_CONFORMANCE_FIXTURES} is set, but this build has no conformance fixture tools; unset it, or build with the `conformance` feature (infra/serve.sh does)"
    )]
    FixturesNotBuilt,
    /// The request-state key is too short.
    #[error(transparent)]
    BadStateKey(#[from] StateKeyError),
    /// A test-only setting was asked for on a server not bound to a loopback address.
    #[error(
        "{setting} is for local tests only and is honoured only by a server bound to a loopback address, but this one is bound to {bound}; unset it or bind to 127.0.0.1"
    )]
    NotLoopback {
        /// The setting's environment name.
        setting: &'static str,
        /// The address the server is bound to.
        bound: SocketAddr,
    },
}

/// How the MCP endpoint behaves. Build it with [`McpConfig::new`] or
/// [`McpConfig::from_lookup`] (Lambda), or [`McpConfig::loopback`] /
/// [`McpConfig::local_from_lookup`] (local server).
#[derive(Debug, Clone)]
pub struct McpConfig {
    allowed_hosts: Vec<HostPattern>,
    calls_per_minute: NonZeroU32,
    insecure_dev_user: Option<UserId>,
    conformance_fixtures: bool,
    state_key: Option<StateKey>,
    notices: Option<Arc<dyn TurnQueue>>,
}

impl McpConfig {
    /// A production configuration answering for `allowed_hosts` (`host`, `host:port` or
    /// `*.domain`; at least one), with the default rate limit and no test-only settings.
    pub fn new<I, H>(allowed_hosts: I) -> Result<Self, McpConfigError>
    where
        I: IntoIterator<Item = H>,
        H: AsRef<str>,
    {
        let allowed_hosts = parse_hosts(allowed_hosts)?;
        if allowed_hosts.is_empty() {
            return Err(McpConfigError::NoAllowedHosts);
        }
        Ok(Self {
            allowed_hosts,
            calls_per_minute: default_rate(),
            insecure_dev_user: None,
            conformance_fixtures: false,
            state_key: None,
            notices: None,
        })
    }

    /// A configuration answering only for the loopback names ([`LOOPBACK_HOSTS`]), sealing
    /// request states with a random key of this process.
    pub fn loopback() -> Self {
        Self {
            allowed_hosts: hosts::loopback_patterns(),
            calls_per_minute: default_rate(),
            insecure_dev_user: None,
            conformance_fixtures: false,
            state_key: Some(StateKey::random()),
            notices: None,
        }
    }

    /// The Lambda configuration from the environment: [`ENV_MCP_ALLOWED_HOSTS`] (required),
    /// [`ENV_MCP_CALLS_PER_MINUTE`] and the secret [`ENV_MCP_STATE_KEY`] (without it, clients
    /// are never asked in-protocol). Never reads the test-only settings.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, McpConfigError> {
        let hosts = lookup(ENV_MCP_ALLOWED_HOSTS).unwrap_or_default();
        let config = Self::new(split_list(&hosts))?.with_rate_from(&lookup)?;
        match non_blank(lookup(ENV_MCP_STATE_KEY)) {
            Some(key) => config.with_state_key(key.as_bytes()),
            None => {
                tracing::warn!(
                    "MCP: {ENV_MCP_STATE_KEY} is not set; held calls are never confirmed in-protocol, only on the Approvals page or in a linked chat"
                );
                Ok(config)
            }
        }
    }

    /// The local server's configuration (`steward serve`, tests): the loopback names plus
    /// [`ENV_MCP_ALLOWED_HOSTS`], [`ENV_MCP_CALLS_PER_MINUTE`], and the test-only
    /// [`ENV_MCP_INSECURE_DEV_USER`] and [`ENV_MCP_CONFORMANCE_FIXTURES`], which are refused
    /// unless `bound` (the address the server listens on) is a loopback address.
    pub fn local_from_lookup(
        bound: SocketAddr,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, McpConfigError> {
        let mut config = Self::loopback().with_rate_from(&lookup)?;
        if let Some(key) = non_blank(lookup(ENV_MCP_STATE_KEY)) {
            config = config.with_state_key(key.as_bytes())?;
        }
        let extra = lookup(ENV_MCP_ALLOWED_HOSTS).unwrap_or_default();
        config
            .allowed_hosts
            .extend(parse_hosts(split_list(&extra))?);
        if let Some(value) = non_blank(lookup(ENV_MCP_INSECURE_DEV_USER)) {
            let user = UserId::parse(&value).map_err(|e| McpConfigError::BadDevUser {
                value: value.clone(),
                reason: e.to_string(),
            })?;
            config = config.with_insecure_dev_user(bound, user)?;
        }
        if non_blank(lookup(ENV_MCP_CONFORMANCE_FIXTURES)).is_some_and(|v| v != "0") {
            config = config.with_conformance_fixtures(bound)?;
        }
        Ok(config)
    }

    /// The same configuration with `per_minute` calls a minute per token.
    pub fn with_calls_per_minute(mut self, per_minute: NonZeroU32) -> Self {
        self.calls_per_minute = per_minute;
        self
    }

    /// Tests only: token-less requests act as `user`. Refused unless `bound`, the address the
    /// server listens on, is a loopback address; even then it applies only to requests whose
    /// `Host` is a loopback name, so a tunnel to the port does not open the account.
    pub fn with_insecure_dev_user(
        mut self,
        bound: SocketAddr,
        user: UserId,
    ) -> Result<Self, McpConfigError> {
        require_loopback(bound, ENV_MCP_INSECURE_DEV_USER)?;
        tracing::warn!(%user, %bound, "MCP: token-less requests act as the insecure dev user");
        self.insecure_dev_user = Some(user);
        Ok(self)
    }

    /// Tests only: serve the conformance suite's fixture tools next to the registry's.
    /// Refused unless `bound` is a loopback address, and in a build without the `conformance`
    /// feature (every production build).
    pub fn with_conformance_fixtures(mut self, bound: SocketAddr) -> Result<Self, McpConfigError> {
        require_loopback(bound, ENV_MCP_CONFORMANCE_FIXTURES)?;
        if !cfg!(feature = "conformance") {
            return Err(McpConfigError::FixturesNotBuilt);
        }
        tracing::warn!(%bound, "MCP: serving the conformance fixture tools");
        self.conformance_fixtures = true;
        Ok(self)
    }

    /// The same configuration sealing request states with `secret` (at least 32 bytes; the same
    /// on every instance, so any instance opens what another sealed).
    pub fn with_state_key(mut self, secret: &[u8]) -> Result<Self, McpConfigError> {
        self.state_key = Some(StateKey::new(secret)?);
        Ok(self)
    }

    /// The same configuration without a request-state key: no client is asked in-protocol.
    pub fn without_state_key(mut self) -> Self {
        self.state_key = None;
        self
    }

    /// The same configuration queueing, for each held call, a notice the worker sends to the
    /// person's linked chats (Approve / Decline buttons).
    pub fn with_notices(mut self, queue: Arc<dyn TurnQueue>) -> Self {
        self.notices = Some(queue);
        self
    }

    /// The key that seals request states, when clients may be asked in-protocol.
    pub fn state_key(&self) -> Option<&StateKey> {
        self.state_key.as_ref()
    }

    /// Where held calls' chat notices are queued, when they are.
    pub fn notices(&self) -> Option<&Arc<dyn TurnQueue>> {
        self.notices.as_ref()
    }

    /// The host patterns requests must name in `Host` (and `Origin`, when present).
    pub fn allowed_hosts(&self) -> &[HostPattern] {
        &self.allowed_hosts
    }

    /// Calls a minute each token may make.
    pub fn calls_per_minute(&self) -> NonZeroU32 {
        self.calls_per_minute
    }

    /// The user token-less requests act as (local tests only).
    pub fn insecure_dev_user(&self) -> Option<&UserId> {
        self.insecure_dev_user.as_ref()
    }

    /// Whether the conformance fixture tools are served (local tests only).
    pub fn conformance_fixtures(&self) -> bool {
        self.conformance_fixtures
    }

    fn with_rate_from(
        self,
        lookup: &impl Fn(&str) -> Option<String>,
    ) -> Result<Self, McpConfigError> {
        match non_blank(lookup(ENV_MCP_CALLS_PER_MINUTE)) {
            None => Ok(self),
            Some(value) => {
                let rate = value
                    .parse::<NonZeroU32>()
                    .map_err(|_| McpConfigError::BadRate { value })?;
                Ok(self.with_calls_per_minute(rate))
            }
        }
    }
}

fn default_rate() -> NonZeroU32 {
    NonZeroU32::new(MCP_CALLS_PER_MINUTE_DEFAULT).unwrap_or(NonZeroU32::MIN)
}

fn require_loopback(bound: SocketAddr, setting: &'static str) -> Result<(), McpConfigError> {
    if bound.ip().is_loopback() {
        Ok(())
    } else {
        Err(McpConfigError::NotLoopback { setting, bound })
    }
}

fn non_blank(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

fn split_list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn parse_hosts<I, H>(hosts: I) -> Result<Vec<HostPattern>, McpConfigError>
where
    I: IntoIterator<Item = H>,
    H: AsRef<str>,
{
    hosts
        .into_iter()
        .map(|h| {
            HostPattern::parse(h.as_ref()).ok_or_else(|| McpConfigError::BadHost {
                entry: h.as_ref().to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn lambda_config_needs_hosts_and_never_reads_test_settings() {
        assert_eq!(
            McpConfig::from_lookup(lookup(&[])).unwrap_err(),
            McpConfigError::NoAllowedHosts
        );
        let config = McpConfig::from_lookup(lookup(&[
            (
                ENV_MCP_ALLOWED_HOSTS,
                "api.example.org, *.execute-api.eu-west-1.amazonaws.com",
            ),
            (ENV_MCP_CALLS_PER_MINUTE, "30"),
            (ENV_MCP_INSECURE_DEV_USER, "u1"),
            (ENV_MCP_CONFORMANCE_FIXTURES, "1"),
        ]))
        .unwrap();
        assert_eq!(config.allowed_hosts().len(), 2);
        assert_eq!(config.calls_per_minute().get(), 30);
        assert!(config.insecure_dev_user().is_none());
        assert!(!config.conformance_fixtures());
    }

    #[test]
    fn bad_values_are_named() {
        let err = McpConfig::from_lookup(lookup(&[
            (ENV_MCP_ALLOWED_HOSTS, "x.org"),
            (ENV_MCP_CALLS_PER_MINUTE, "0"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains(ENV_MCP_CALLS_PER_MINUTE));
        let err = McpConfig::new(["http://x.org/"]).unwrap_err();
        assert!(matches!(err, McpConfigError::BadHost { .. }));
    }

    #[test]
    fn dev_user_and_fixtures_only_on_loopback() {
        let dev_user = lookup(&[(ENV_MCP_INSECURE_DEV_USER, "u1")]);
        let local = McpConfig::local_from_lookup(addr("127.0.0.1:8080"), &dev_user).unwrap();
        assert_eq!(local.insecure_dev_user().unwrap().as_str(), "u1");
        let v6 = McpConfig::local_from_lookup(addr("[::1]:8080"), &dev_user).unwrap();
        assert!(v6.insecure_dev_user().is_some());
        let fixtures = McpConfig::loopback().with_conformance_fixtures(addr("127.0.0.1:8080"));
        if cfg!(feature = "conformance") {
            assert!(fixtures.unwrap().conformance_fixtures());
        } else {
            // A production build refuses the setting outright instead of ignoring it.
            assert_eq!(fixtures.unwrap_err(), McpConfigError::FixturesNotBuilt);
        }

        let env = lookup(&[
            (ENV_MCP_INSECURE_DEV_USER, "u1"),
            (ENV_MCP_CONFORMANCE_FIXTURES, "1"),
        ]);

        let err = McpConfig::local_from_lookup(addr("0.0.0.0:8080"), &env).unwrap_err();
        assert!(matches!(
            err,
            McpConfigError::NotLoopback {
                setting: ENV_MCP_INSECURE_DEV_USER,
                ..
            }
        ));
        assert!(err.to_string().contains("0.0.0.0:8080"));
        let user = UserId::parse("u1").unwrap();
        assert!(
            McpConfig::loopback()
                .with_insecure_dev_user(addr("192.168.1.5:80"), user)
                .is_err()
        );
        assert!(
            McpConfig::loopback()
                .with_conformance_fixtures(addr("10.0.0.1:80"))
                .is_err()
        );
    }

    #[test]
    fn local_config_without_test_settings_binds_anywhere() {
        let config = McpConfig::local_from_lookup(
            addr("0.0.0.0:8080"),
            lookup(&[(ENV_MCP_ALLOWED_HOSTS, "steward.lan")]),
        )
        .unwrap();
        assert_eq!(config.allowed_hosts().len(), LOOPBACK_HOSTS.len() + 1);
        assert!(config.insecure_dev_user().is_none());
        let bad = McpConfig::local_from_lookup(
            addr("127.0.0.1:8080"),
            lookup(&[(ENV_MCP_INSECURE_DEV_USER, "not a user")]),
        );
        assert!(matches!(bad, Err(McpConfigError::BadDevUser { .. })));
    }
}
