//! (being written) OpenID Connect sign-in.

use axum::Router;

use crate::app::WebState;
use crate::config::{ConfigError, Settings};

/// The issuer URL (its `/.well-known/openid-configuration` is read at start).
pub const ENV_OIDC_ISSUER: &str = "STEWARD_OIDC_ISSUER";

/// The OAuth client id registered with the issuer.
pub const ENV_OIDC_CLIENT_ID: &str = "STEWARD_OIDC_CLIENT_ID";

/// The client secret, when the client has one (a secret: may be given as `…_PARAM`).
pub const ENV_OIDC_CLIENT_SECRET: &str = "STEWARD_OIDC_CLIENT_SECRET";

/// Where the sign-in button points: redirects to the issuer.
pub const START_PATH: &str = "/app/sign-in/oidc";

/// The issuer and client.
#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// The issuer URL.
    pub issuer: String,
}

/// The OIDC client.
#[derive(Debug)]
pub struct OidcClient {
    settings: OidcSettings,
}

impl OidcSettings {
    /// The settings from the environment; `Missing` when no issuer is configured.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        Ok(Self {
            issuer: settings.require(ENV_OIDC_ISSUER)?,
        })
    }
}

impl OidcClient {
    /// A client for `settings`.
    pub fn new(settings: OidcSettings) -> Self {
        Self { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &OidcSettings {
        &self.settings
    }
}

/// The OIDC routes.
pub fn routes() -> Router<WebState> {
    Router::new()
}
