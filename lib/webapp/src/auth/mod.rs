//! Signing in and out: the development sign-in by name when serving locally (`dev`), OpenID
//! Connect when deployed ([`oidc`]), and the sign-out routes. The session record is
//! [`crate::session`], the extractor every `/app` and `/api` handler takes
//! [`crate::signed_in::SignedIn`], CSRF protection [`crate::csrf`].
//!
//! Identity comes only from here — the session from a validated sign-in — never from a form
//! field or a request body.

mod dev;
pub mod oidc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum_extra::extract::CookieJar;
use steward_harness::UserId;

pub use crate::paths::{SIGN_IN_PATH, SIGN_OUT_EVERYWHERE_PATH, SIGN_OUT_PATH};
use crate::session;
use crate::signed_in::SignedIn;
use crate::state::WebState;

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
            Redirect::to(crate::paths::APP_HOME),
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
