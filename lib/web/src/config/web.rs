//! The web app's configuration from [`Settings`]: sign-in, cookies, the links on the linking
//! page, the public form's rate limit.

use steward_events::EventsConfig;

use super::{ConfigError, ENV_PUBLIC_URL, Settings, model};
use crate::app::{DEFAULT_REGISTRATIONS_PER_MINUTE, WebConfig};
use crate::auth::SignInMode;
use crate::auth::oidc::{ENV_OIDC_CLIENT_SECRET, OidcSettings};

/// The WhatsApp business number people message (digits, with country code), for "open WhatsApp".
pub const ENV_WHATSAPP_NUMBER: &str = "STEWARD_WHATSAPP_NUMBER";

/// The Telegram bot's username, for "open Telegram".
pub const ENV_TELEGRAM_BOT: &str = "STEWARD_TELEGRAM_BOT";

/// Public registrations accepted per client address per minute.
pub const ENV_REGISTRATIONS_PER_MINUTE: &str = "STEWARD_REGISTRATIONS_PER_MINUTE";

/// The secrets the web function reads (each may be given as `NAME_PARAM`).
pub const WEB_SECRETS: [&str; 1] = [ENV_OIDC_CLIENT_SECRET];

/// The configuration of the deployed web app: OpenID Connect sign-in, secure cookies.
pub fn deployed_config(settings: &Settings) -> Result<WebConfig, ConfigError> {
    let oidc = OidcSettings::from_settings(settings)?;
    config(settings, SignInMode::Oidc(oidc), true)
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
    config(settings, mode, secure)
}

fn config(
    settings: &Settings,
    sign_in: SignInMode,
    secure_cookies: bool,
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
    let registrations_per_minute = match settings.get(ENV_REGISTRATIONS_PER_MINUTE) {
        Some(v) => {
            v.parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| ConfigError::Invalid {
                    name: ENV_REGISTRATIONS_PER_MINUTE,
                    problem: format!("\"{v}\" is not a positive whole number"),
                })?
        }
        None => DEFAULT_REGISTRATIONS_PER_MINUTE,
    };
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
    })
}
