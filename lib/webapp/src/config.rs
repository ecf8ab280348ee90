//! The web app's configuration ([`WebConfig`], [`SignInMode`]) and how it is read from
//! [`Settings`]: sign-in, cookies, the hosts it answers for, the links on the linking page, the
//! public form's limits, where client addresses come from, and the model's label.

use steward_edge::client_address::TrustedProxy;
use steward_edge::config::{ConfigError, ENV_PUBLIC_URL, Settings};
use steward_edge::hosts::{self, HostPattern};
use steward_events::EventsConfig;

use crate::oidc::{ENV_OIDC_CLIENT_SECRET, OidcSettings};

/// How people sign in.
#[derive(Debug, Clone)]
pub enum SignInMode {
    /// By name, no password: only for `steward serve` on a loopback address.
    Development,
    /// OpenID Connect authorization-code flow against an issuer (Cognito by default).
    Oidc(OidcSettings),
}

/// How the web app is set up: sign-in, links, and what the pages say about the deployment.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// How people sign in (development sign-in by name locally, OpenID Connect deployed).
    pub sign_in: SignInMode,
    /// Whether cookies are marked `Secure` (true whenever the site is served over HTTPS).
    pub secure_cookies: bool,
    /// The public base URL (`STEWARD_PUBLIC_URL`), used in links shown to people.
    pub public_url: Option<String>,
    /// The WhatsApp business number people message, digits only (`STEWARD_WHATSAPP_NUMBER`),
    /// for the "open WhatsApp" link on the linking page.
    pub whatsapp_number: Option<String>,
    /// The Telegram bot's username without `@` (`STEWARD_TELEGRAM_BOT`), for the "open
    /// Telegram" link.
    pub telegram_bot: Option<String>,
    /// A short description of the configured model, shown on the chat page ("Anthropic
    /// claude-…", "none", "scripted (test replay)").
    pub model_label: String,
    /// Public registrations accepted per client address (IPv6: per /64) per minute, counted
    /// in the table so the limit holds across processes.
    pub registrations_per_minute: u32,
    /// Public registrations accepted per event per hour, from everyone together: what a
    /// flood of fake names can take from a capped event before the organiser notices.
    pub registrations_per_event_per_hour: u32,
    /// The hosts the web app answers for (`Host` and `Origin`): loopback names locally, the
    /// public URL's host, and `STEWARD_ALLOWED_HOSTS`. Anything else gets 421.
    pub allowed_hosts: Vec<HostPattern>,
    /// The header a trusted proxy puts the client's address in (`STEWARD_TRUSTED_PROXY`);
    /// None: no header is believed.
    pub trusted_proxy: Option<TrustedProxy>,
    /// The events domain's settings (public base URL for the links it writes).
    pub events: EventsConfig,
    /// Every user's default monthly budget (`STEWARD_BUDGET_USD`, `STEWARD_BUDGET_TOKENS`),
    /// for the Usage page; the agent enforces the same settings.
    pub budget: steward_harness::budget::Budget,
}

/// Public registrations per address per minute unless configured: generous for a family
/// registering together behind one address, far below what a script would need to flood.
pub const DEFAULT_REGISTRATIONS_PER_MINUTE: u32 = 10;

/// Public registrations per event per hour unless configured: a popular event's rush after
/// the link is shared stays far below it; a script filling a capped event hits it.
pub const DEFAULT_REGISTRATIONS_PER_EVENT_PER_HOUR: u32 = 300;

/// The WhatsApp business number people message (digits, with country code), for "open WhatsApp".
pub const ENV_WHATSAPP_NUMBER: &str = "STEWARD_WHATSAPP_NUMBER";

/// The Telegram bot's username, for "open Telegram".
pub const ENV_TELEGRAM_BOT: &str = "STEWARD_TELEGRAM_BOT";

/// Public registrations accepted per client address per minute.
pub const ENV_REGISTRATIONS_PER_MINUTE: &str = "STEWARD_REGISTRATIONS_PER_MINUTE";

/// Public registrations accepted per event per hour.
pub const ENV_REGISTRATIONS_PER_EVENT_PER_HOUR: &str = "STEWARD_REGISTRATIONS_PER_EVENT_PER_HOUR";

/// More host names (comma-separated: `host`, `host:port`, `*.domain`) the web app answers for,
/// beyond the loopback names (locally) and `STEWARD_PUBLIC_URL`'s host.
pub const ENV_ALLOWED_HOSTS: &str = "STEWARD_ALLOWED_HOSTS";

/// The header a proxy or tunnel in front of Steward puts the client's address in
/// (`X-Forwarded-For`, `CF-Connecting-IP`, …). Unset: no header is believed.
pub const ENV_TRUSTED_PROXY: &str = "STEWARD_TRUSTED_PROXY";

/// The secrets the web function reads (each may be given as `NAME_PARAM`).
pub const WEB_SECRETS: [&str; 1] = [ENV_OIDC_CLIENT_SECRET];

/// The configuration of the deployed web app: OpenID Connect sign-in, secure cookies.
pub fn deployed_config(settings: &Settings) -> Result<WebConfig, ConfigError> {
    let oidc = OidcSettings::from_settings(settings)?;
    let config = config(settings, SignInMode::Oidc(oidc), true, Vec::new())?;
    if config.allowed_hosts.is_empty() {
        return Err(ConfigError::Invalid {
            name: ENV_ALLOWED_HOSTS,
            problem: format!(
                "the web app would answer for no host: set {ENV_PUBLIC_URL} or {ENV_ALLOWED_HOSTS}"
            ),
        });
    }
    Ok(config)
}

/// The configuration of `steward serve` on a loopback address: the development sign-in, and
/// cookies marked `Secure` only when the public URL is HTTPS (a tunnel).
pub fn local_config(settings: &Settings) -> Result<WebConfig, ConfigError> {
    let secure = settings
        .get(ENV_PUBLIC_URL)
        .is_some_and(|u| u.starts_with("https://"));
    let mode = match OidcSettings::from_settings(settings) {
        Ok(oidc) => SignInMode::Oidc(oidc),
        Err(ConfigError::Missing(_)) => SignInMode::Development,
        Err(e) => return Err(e),
    };
    config(settings, mode, secure, hosts::loopback_patterns())
}

/// A positive whole number setting, or `default` when unset.
fn positive(settings: &Settings, name: &'static str, default: u32) -> Result<u32, ConfigError> {
    match settings.get(name) {
        Some(v) => v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ConfigError::Invalid {
                name,
                problem: format!("\"{v}\" is not a positive whole number"),
            }),
        None => Ok(default),
    }
}

/// `base` plus the public URL's host plus [`ENV_ALLOWED_HOSTS`].
fn allowed_hosts(
    settings: &Settings,
    mut base: Vec<HostPattern>,
) -> Result<Vec<HostPattern>, ConfigError> {
    if let Some(url) = settings.get(ENV_PUBLIC_URL) {
        let host = hosts::url_host(&url).ok_or_else(|| ConfigError::Invalid {
            name: ENV_PUBLIC_URL,
            problem: format!("\"{url}\" is not a URL like https://steward.example.org"),
        })?;
        base.push(host);
    }
    for entry in settings
        .get(ENV_ALLOWED_HOSTS)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        base.push(
            HostPattern::parse(entry).ok_or_else(|| ConfigError::Invalid {
                name: ENV_ALLOWED_HOSTS,
                problem: format!("\"{entry}\" is not a host name, host:port or *.domain"),
            })?,
        );
    }
    Ok(base)
}

fn config(
    settings: &Settings,
    sign_in: SignInMode,
    secure_cookies: bool,
    base_hosts: Vec<HostPattern>,
) -> Result<WebConfig, ConfigError> {
    let whatsapp_number = match settings.get(ENV_WHATSAPP_NUMBER) {
        Some(n) => {
            let digits: String = n
                .chars()
                .filter(|c| !matches!(c, '+' | ' ' | '-'))
                .collect();
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(ConfigError::Invalid {
                    name: ENV_WHATSAPP_NUMBER,
                    problem: "give the number with its country code, digits only".into(),
                });
            }
            Some(digits)
        }
        None => None,
    };
    let telegram_bot = settings
        .get(ENV_TELEGRAM_BOT)
        .map(|b| b.trim_start_matches('@').to_owned());
    let registrations_per_minute = positive(
        settings,
        ENV_REGISTRATIONS_PER_MINUTE,
        DEFAULT_REGISTRATIONS_PER_MINUTE,
    )?;
    let registrations_per_event_per_hour = positive(
        settings,
        ENV_REGISTRATIONS_PER_EVENT_PER_HOUR,
        DEFAULT_REGISTRATIONS_PER_EVENT_PER_HOUR,
    )?;
    let trusted_proxy = match settings.get(ENV_TRUSTED_PROXY) {
        Some(v) if !v.trim().is_empty() => {
            Some(TrustedProxy::parse(&v).ok_or_else(|| ConfigError::Invalid {
                name: ENV_TRUSTED_PROXY,
                problem: format!(
                    "\"{v}\" is not a header name such as X-Forwarded-For or CF-Connecting-IP"
                ),
            })?)
        }
        _ => None,
    };
    let allowed_hosts = allowed_hosts(settings, base_hosts)?;
    let budget = steward_harness::budget::Budget::from_settings(
        settings
            .get(steward_harness::budget::ENV_BUDGET_USD)
            .as_deref(),
        settings
            .get(steward_harness::budget::ENV_BUDGET_TOKENS)
            .as_deref(),
    )
    .map_err(ConfigError::Unusable)?;
    let public_url = settings
        .get(ENV_PUBLIC_URL)
        .map(|u| u.trim_end_matches('/').to_owned());
    Ok(WebConfig {
        sign_in,
        secure_cookies,
        events: EventsConfig::with_public_base_url(public_url.clone().unwrap_or_default()),
        public_url,
        whatsapp_number,
        telegram_bot,
        model_label: steward_llm::choice::describe(&settings.lookup()).map_err(|e| {
            ConfigError::Invalid {
                name: e.name,
                problem: e.problem,
            }
        })?,
        registrations_per_minute,
        registrations_per_event_per_hour,
        allowed_hosts,
        trusted_proxy,
        budget,
    })
}
