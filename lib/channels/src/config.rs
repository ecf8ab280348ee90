//! Configuration of the senders: the environment variable names, the HTTP client they share,
//! and reading a config from a lookup function (the process environment, or SSM-resolved
//! secrets on Lambda) without touching global state in tests.

use std::time::Duration;

/// WhatsApp Cloud API access token (a system-user token; never logged).
pub const ENV_WHATSAPP_ACCESS_TOKEN: &str = "WHATSAPP_ACCESS_TOKEN";
/// The business phone number id messages are sent from.
pub const ENV_WHATSAPP_PHONE_NUMBER_ID: &str = "WHATSAPP_PHONE_NUMBER_ID";
/// Graph API root including the version; default [`crate::WHATSAPP_API_BASE_DEFAULT`].
pub const ENV_WHATSAPP_API_BASE: &str = "WHATSAPP_API_BASE";
/// The app secret that signs webhook POSTs (`X-Hub-Signature-256`).
pub const ENV_WHATSAPP_APP_SECRET: &str = "WHATSAPP_APP_SECRET";
/// The token Meta echoes in the webhook verification handshake.
pub const ENV_WHATSAPP_VERIFY_TOKEN: &str = "WHATSAPP_VERIFY_TOKEN";
/// Telegram bot token (it goes in the request path; never logged).
pub const ENV_TELEGRAM_BOT_TOKEN: &str = "TELEGRAM_BOT_TOKEN";
/// The secret Telegram sends in `X-Telegram-Bot-Api-Secret-Token`.
pub const ENV_TELEGRAM_WEBHOOK_SECRET: &str = "TELEGRAM_WEBHOOK_SECRET";
/// Telegram Bot API root; default [`crate::TELEGRAM_API_BASE_DEFAULT`].
pub const ENV_TELEGRAM_API_BASE: &str = "TELEGRAM_API_BASE";

/// Longest a single provider API call may take, in seconds. Sends happen at the end of a turn
/// inside a Lambda invocation; a hung provider must not eat the function's whole timeout.
pub const SEND_TIMEOUT_SECS: u64 = 15;

/// Longest wait to connect to a provider, in seconds.
pub const CONNECT_TIMEOUT_SECS: u64 = 5;

/// A required setting was not provided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The variable is unset or empty.
    #[error("{0} is not set")]
    Missing(&'static str),
}

/// The HTTP client the senders share: rustls, with [`SEND_TIMEOUT_SECS`] and
/// [`CONNECT_TIMEOUT_SECS`]. Build it once per process and clone it (clones share the pool).
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    steward_net::client_builder()
        .timeout(Duration::from_secs(SEND_TIMEOUT_SECS))
        .connect_timeout(Duration::from_secs(CONNECT_TIMEOUT_SECS))
        .build()
}

/// A required value from `lookup`, trimmed; unset or blank is [`ConfigError::Missing`].
pub(crate) fn required(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<String, ConfigError> {
    optional(lookup, name).ok_or(ConfigError::Missing(name))
}

/// An optional value from `lookup`, trimmed; blank counts as unset.
pub(crate) fn optional(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// An API base URL without its trailing slashes.
pub(crate) fn base_url(value: Option<String>, default: &str) -> String {
    value
        .as_deref()
        .unwrap_or(default)
        .trim_end_matches('/')
        .to_owned()
}
