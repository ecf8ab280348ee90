//! OpenID Connect sign-in (authorization code with PKCE), for the deployed web app.
//!
//! [`START_PATH`] sends the browser to the issuer with a fresh `state`, `nonce` and PKCE
//! challenge (kept in a short-lived cookie, see [`flow`]); the issuer sends it back to
//! [`CALLBACK_PATH`], which checks `state`, exchanges the code, validates the ID token (the
//! signature against the issuer's published keys, then issuer, audience, times and nonce
//! against Steward's clock), finds or creates the account for (issuer, `sub`), and starts a
//! session. The issuer's endpoints and keys are fetched on first use and cached ([`provider`]).
//!
//! Every failure is a readable page and one log line that never contains a token or a code.

mod account;
mod flow;
mod id_token;
mod provider;
mod settings;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum_extra::extract::CookieJar;
use maud::html;
use serde::Deserialize;

use crate::app::WebState;
use crate::ui::layout;
pub use account::{OIDC_CHANNEL, identity_of};
use flow::{FLOW_COOKIE, Pending};
use provider::Provider;
pub use settings::{
    ClientSecret, DEFAULT_SCOPES, ENV_OIDC_CLIENT_ID, ENV_OIDC_CLIENT_SECRET, ENV_OIDC_ISSUER,
    ENV_OIDC_REDIRECT_URL, OidcSettings,
};

/// Where the sign-in button points: redirects to the issuer.
pub const START_PATH: &str = "/app/sign-in/oidc";

/// Where the issuer sends people back to (the path of the default redirect URL).
pub const CALLBACK_PATH: &str = "/app/auth/callback";

/// Longest authorization code accepted, in bytes: real codes are well under this, and nothing
/// longer is sent on to the token endpoint.
const CODE_BYTES_MAX: usize = 4096;

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
    fn status(&self) -> StatusCode {
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
    async fn authorization_url(&self, pending: &Pending, now_ms: i64) -> Result<String, OidcError> {
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
    async fn complete(
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

/// The issuer's answer on the callback.
#[derive(Debug, Default, Deserialize)]
struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

async fn start(State(state): State<WebState>, jar: CookieJar) -> Response {
    let Some(client) = state.oidc() else {
        return (
            StatusCode::NOT_FOUND,
            "Sign-in with OpenID Connect is not configured.",
        )
            .into_response();
    };
    let now_ms = state.clock().now_millis();
    let pending = Pending::new(now_ms.div_euclid(1000));
    match client.authorization_url(&pending, now_ms).await {
        Ok(url) => (
            jar.add(pending.cookie(state.config().secure_cookies)),
            Redirect::to(&url),
        )
            .into_response(),
        Err(e) => failure(jar, &e),
    }
}

async fn callback(
    State(state): State<WebState>,
    jar: CookieJar,
    query: Result<Query<Callback>, QueryRejection>,
) -> Response {
    let Some(client) = state.oidc() else {
        return (
            StatusCode::NOT_FOUND,
            "Sign-in with OpenID Connect is not configured.",
        )
            .into_response();
    };
    let params = query.map(|Query(q)| q).unwrap_or_default();
    let now_ms = state.clock().now_millis();
    let pending = jar
        .get(FLOW_COOKIE)
        .and_then(|c| Pending::parse(c.value(), now_ms.div_euclid(1000)));
    // The sign-in in progress is used up whatever happens next.
    let jar = jar.add(Pending::removal(state.config().secure_cookies));
    match finish(&state, client, pending, params, now_ms).await {
        Ok(user) => super::sign_in_as(&state, jar, user).await,
        Err(e) => failure(jar, &e),
    }
}

async fn finish(
    state: &WebState,
    client: &OidcClient,
    pending: Option<Pending>,
    params: Callback,
    now_ms: i64,
) -> Result<steward_harness::UserId, OidcError> {
    if let Some(error) = params.error {
        let error: String = error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        return Err(OidcError::Denied(format!("error={error}")));
    }
    let pending = pending.ok_or_else(|| {
        OidcError::BadRequest("no sign-in in progress (its cookie is missing or expired)".into())
    })?;
    if !params.state.is_some_and(|s| pending.state_matches(&s)) {
        return Err(OidcError::BadRequest("state does not match".into()));
    }
    let code = params
        .code
        .filter(|c| !c.is_empty() && c.len() <= CODE_BYTES_MAX)
        .ok_or_else(|| OidcError::BadRequest("no usable code".into()))?;
    let claims = client.complete(&pending, &code, now_ms).await?;
    account::user_for(
        state.table().as_ref(),
        state.clock().as_ref(),
        &client.settings.issuer,
        &claims,
    )
    .await
    .map_err(|e| OidcError::Internal(format!("account for the sign-in: {e}")))
}

/// The sign-in page with what went wrong, and one log line.
fn failure(jar: CookieJar, e: &OidcError) -> Response {
    match e {
        OidcError::Issuer(_) | OidcError::Internal(_) => {
            tracing::error!(error = %e, "OIDC sign-in failed");
        }
        _ => tracing::warn!(error = %e, "OIDC sign-in refused"),
    }
    let body = html! {
        h1 { "Sign in" }
        p.error role="alert" { (e.people_message()) }
        p { a.button href=(START_PATH) { "Sign in again" } }
    };
    (e.status(), jar, layout::bare_page("Sign-in failed", body)).into_response()
}

/// The OIDC routes: the start of a sign-in and the issuer's callback (both 404 unless sign-in
/// is by OIDC).
pub fn routes() -> Router<WebState> {
    Router::new()
        .route(START_PATH, get(start))
        .route(CALLBACK_PATH, get(callback))
}
