//! OpenID Connect sign-in's two routes (authorization code with PKCE), for the deployed web
//! app; the client itself (settings, discovery, keys, tokens) is [`crate::oidc`].
//!
//! [`START_PATH`] sends the browser to the issuer with a fresh `state`, `nonce` and PKCE
//! challenge (kept in a short-lived cookie, see `crate::oidc::flow`); the issuer sends it back to
//! [`CALLBACK_PATH`], which checks `state`, exchanges the code, validates the ID token (the
//! signature against the issuer's published keys, then issuer, audience, times and nonce
//! against Steward's clock), finds or creates the account for (issuer, `sub`), and starts a
//! session. The issuer's endpoints and keys are fetched on first use and cached (`crate::oidc::provider`).
//!
//! Every failure is a readable page and one log line that never contains a token or a code.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum_extra::extract::CookieJar;
use maud::html;
use serde::Deserialize;

use crate::layout;
use crate::oidc::flow::{FLOW_COOKIE, Pending};
use crate::oidc::{OidcClient, OidcError, account};
pub use crate::paths::{OIDC_CALLBACK_PATH as CALLBACK_PATH, OIDC_START_PATH as START_PATH};
use crate::state::WebState;

/// Longest authorization code accepted, in bytes: real codes are well under this, and nothing
/// longer is sent on to the token endpoint.
const CODE_BYTES_MAX: usize = 4096;

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
        &client.settings().issuer,
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
