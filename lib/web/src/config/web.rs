//! The web app's configuration from [`Settings`]: sign-in, cookies, the hosts it answers for,
//! the links on the linking page, the public form's limits and where client addresses come
//! from.

use steward_events::EventsConfig;

use super::{ConfigError, ENV_PUBLIC_URL, Settings, model};
use crate::app::{
    DEFAULT_REGISTRATIONS_PER_EVENT_PER_HOUR, DEFAULT_REGISTRATIONS_PER_MINUTE, WebConfig,
};
use crate::auth::SignInMode;
use crate::auth::oidc::{ENV_OIDC_CLIENT_SECRET, OidcSettings};
use crate::hosts::{self, HostPattern};
use crate::public::client_address::TrustedProxy;

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
        model_label: model::describe(settings)?,
        registrations_per_minute,
        registrations_per_event_per_hour,
        allowed_hosts,
        trusted_proxy,
    })
}
