//! The OpenID Connect client of the deployed web app's sign-in: [`OidcSettings`] from the
//! environment (`settings`), the issuer's discovery document and keys fetched on demand and
//! cached (`provider`), the state/nonce/PKCE flow cookie (`flow`), ID-token signature and claims
//! (`id_token`), and issuer + subject → a Steward account (`account`). The two HTTP routes that
//! drive it are `crate::auth::oidc`.

pub(crate) mod account;
pub(crate) mod flow;
pub(crate) mod id_token;
mod provider;
mod settings;

use axum::http::StatusCode;

pub use account::{OIDC_CHANNEL, identity_of};
use flow::Pending;
use provider::Provider;
pub use settings::{
    ClientSecret, DEFAULT_SCOPES, ENV_OIDC_CLIENT_ID, ENV_OIDC_CLIENT_SECRET, ENV_OIDC_ISSUER,
    ENV_OIDC_REDIRECT_URL, OidcSettings,
};

/// Why a sign-in did not complete. The text is for the log (never tokens); people see
/// [`OidcError::people_message`].
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The issuer could not be reached or answered something unusable.
    #[error("issuer unavailable: {0}")]
    Issuer(String),
    /// The callback request does not belong to a sign-in this browser started.
    #[error("bad callback: {0}")]
    BadRequest(String),
    /// The ID token failed validation.
    #[error("ID token refused: {0}")]
    Rejected(String),
    /// The issuer refused or the person cancelled.
    #[error("issuer refused: {0}")]
    Denied(String),
    /// Steward could not record the sign-in.
    #[error("internal: {0}")]
    Internal(String),
}

impl OidcError {
    /// The HTTP status of the page that reports it.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Issuer(_) => StatusCode::BAD_GATEWAY,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Rejected(_) | Self::Denied(_) => StatusCode::UNAUTHORIZED,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// What the sign-in page says.
    pub fn people_message(&self) -> &'static str {
        match self {
            Self::Issuer(_) => {
                "The sign-in service could not be reached just now. Wait a minute and try again."
            }
            Self::BadRequest(_) => {
                "This sign-in expired or was started in another tab or browser. Start again."
            }
            Self::Rejected(_) => {
                "Steward could not verify this sign-in. Start again; if it keeps happening, \
                 tell whoever runs this Steward."
            }
            Self::Denied(_) => "The sign-in was cancelled or refused by the sign-in service.",
            Self::Internal(_) => {
                "Something went wrong on our side while signing you in. Try again."
            }
        }
    }
}

/// The OIDC client: the settings and the issuer's cached endpoints and keys.
#[derive(Debug)]
pub struct OidcClient {
    settings: OidcSettings,
    provider: Provider,
}

impl OidcClient {
    /// A client for `settings`. Nothing is fetched until the first sign-in.
    pub fn new(settings: OidcSettings) -> Self {
        let provider = Provider::new(&settings);
        Self { settings, provider }
    }

    /// The settings.
    pub fn settings(&self) -> &OidcSettings {
        &self.settings
    }

    /// The URL that starts a sign-in at the issuer for `pending`.
    pub(crate) async fn authorization_url(
        &self,
        pending: &Pending,
        now_ms: i64,
    ) -> Result<String, OidcError> {
        let metadata = self.provider.metadata(&self.settings, now_ms).await?;
        let mut url = reqwest::Url::parse(&metadata.authorization_endpoint)
            .map_err(|e| OidcError::Issuer(format!("authorization_endpoint: {e}")))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", &self.settings.redirect_url)
            .append_pair("scope", &self.settings.scopes)
            .append_pair("state", pending.state.expose())
            .append_pair("nonce", pending.nonce.expose())
            .append_pair("code_challenge", &pending.challenge())
            .append_pair("code_challenge_method", "S256");
        Ok(url.into())
    }

    /// Exchanges `code` and returns the validated claims of the ID token.
    pub(crate) async fn complete(
        &self,
        pending: &Pending,
        code: &str,
        now_ms: i64,
    ) -> Result<id_token::IdClaims, OidcError> {
        let metadata = self.provider.metadata(&self.settings, now_ms).await?;
        let token = self
            .provider
            .exchange(&self.settings, &metadata, code, pending.verifier.expose())
            .await?;
        let (alg, kid) = id_token::header(&token)?;
        let keys = self
            .provider
            .keys_for(&metadata, kid.as_deref(), alg, now_ms)
            .await?;
        let claims = id_token::verify_signature(&token, alg, &keys)?;
        id_token::check_claims(
            &claims,
            &id_token::Expected {
                issuer: &self.settings.issuer,
                client_id: &self.settings.client_id,
                nonce: pending.nonce.expose(),
                now_s: now_ms.div_euclid(1000),
            },
        )?;
        Ok(claims)
    }
}
