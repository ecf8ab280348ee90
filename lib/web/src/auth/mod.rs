//! Who is asking: sign-in (a development sign-in by name when serving locally, OpenID Connect
//! when deployed), the session cookie, the [`SignedIn`] extractor every `/app` and `/api`
//! handler takes, and CSRF protection ([`csrf`]).
//!
//! Identity comes only from here — the session from a validated sign-in — never from a form
//! field or a request body.

pub mod csrf;
mod dev;
pub mod oidc;
pub mod session;

use axum::Json;
use axum::Router;
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum_extra::extract::CookieJar;
use steward_harness::{Actor, Ctx, UserId};

use crate::app::WebState;
pub use session::Session;

/// The sign-in page (GET) and, for the development sign-in, its form (POST).
pub const SIGN_IN_PATH: &str = "/app/sign-in";

/// Signing out (POST, CSRF-checked).
pub const SIGN_OUT_PATH: &str = "/app/sign-out";

/// How people sign in.
#[derive(Debug, Clone)]
pub enum SignInMode {
    /// By name, no password: only for `steward serve` on a loopback address.
    Development,
    /// OpenID Connect authorization-code flow against an issuer (Cognito by default).
    Oidc(oidc::OidcSettings),
}

/// A signed-in request: the user and their session.
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// The session (its CSRF token goes into every form).
    pub session: Session,
}

impl SignedIn {
    /// The user.
    pub fn user(&self) -> &UserId {
        &self.session.user
    }

    /// A service context acting as this user through the web UI (a new action id).
    pub fn ctx(&self, state: &WebState) -> Ctx {
        Ctx::new(
            state.table().clone(),
            state.clock().clone(),
            self.session.user.clone(),
            Actor::User,
        )
    }
}

/// The answer to a request without a live session: the sign-in page for pages, 401 for the API.
#[derive(Debug, Clone, Copy)]
pub struct SignInRequired {
    /// Whether the request was to `/api` (answer JSON, not a redirect).
    pub api: bool,
}

impl IntoResponse for SignInRequired {
    fn into_response(self) -> Response {
        if self.api {
            (
                StatusCode::UNAUTHORIZED,
                Json(serde_json::json!({ "error": "Sign in first." })),
            )
                .into_response()
        } else {
            Redirect::to(SIGN_IN_PATH).into_response()
        }
    }
}

impl FromRequestParts<WebState> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &WebState,
    ) -> Result<Self, Self::Rejection> {
        let api = parts.uri.path().starts_with("/api");
        let jar = CookieJar::from_headers(&parts.headers);
        let Some(cookie) = jar.get(session::SESSION_COOKIE) else {
            return Err(SignInRequired { api }.into_response());
        };
        match session::load(
            state.table().as_ref(),
            state.clock().as_ref(),
            cookie.value(),
        )
        .await
        {
            Ok(Some(session)) => Ok(Self { session }),
            Ok(None) => Err(SignInRequired { api }.into_response()),
            Err(e) => {
                tracing::error!(error = %e, "session lookup failed");
                Err((StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response())
            }
        }
    }
}

/// Starts a session for `user` and answers with its cookie and a redirect to the app. The
/// session the browser held before, if any, is ended: every sign-in gets a new id.
pub(crate) async fn sign_in_as(state: &WebState, jar: CookieJar, user: UserId) -> Response {
    if let Some(old) = jar.get(session::SESSION_COOKIE)
        && let Err(e) = session::end(state.table().as_ref(), old.value()).await
    {
        tracing::error!(error = %e, "could not end the previous session at sign-in");
        return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response();
    }
    match session::start(state.table().as_ref(), state.clock().as_ref(), user).await {
        Ok((id, _)) => (
            jar.add(session::cookie(id, state.config().secure_cookies)),
            Redirect::to(crate::ui::APP_HOME),
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "could not start a session");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}

async fn sign_out(State(state): State<WebState>, jar: CookieJar) -> Response {
    if let Some(cookie) = jar.get(session::SESSION_COOKIE)
        && let Err(e) = session::end(state.table().as_ref(), cookie.value()).await
    {
        tracing::error!(error = %e, "could not end a session");
    }
    (
        jar.add(session::removal(state.config().secure_cookies)),
        Redirect::to(SIGN_IN_PATH),
    )
        .into_response()
}

/// "Sign out everywhere" (POST, CSRF-checked): ends every session of the account.
pub const SIGN_OUT_EVERYWHERE_PATH: &str = "/app/sign-out-everywhere";

async fn sign_out_everywhere(
    State(state): State<WebState>,
    signed_in: SignedIn,
    jar: CookieJar,
) -> Response {
    if let Err(e) = session::end_all(state.table().as_ref(), signed_in.user()).await {
        tracing::error!(error = %e, "could not end every session of an account");
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Could not sign out everywhere; nothing changed. Try again.",
        )
            .into_response();
    }
    tracing::info!(user = %signed_in.user(), "signed out everywhere");
    (
        jar.add(session::removal(state.config().secure_cookies)),
        Redirect::to(SIGN_IN_PATH),
    )
        .into_response()
}

/// The sign-in and sign-out routes (and OIDC's redirect endpoints).
pub fn routes() -> Router<WebState> {
    Router::new()
        .route(SIGN_IN_PATH, get(dev::page).post(dev::submit))
        .route(SIGN_OUT_PATH, post(sign_out))
        .route(SIGN_OUT_EVERYWHERE_PATH, post(sign_out_everywhere))
        .merge(oidc::routes())
}
