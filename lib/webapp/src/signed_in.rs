//! [`SignedIn`]: the extractor every `/app` and `/api` handler takes — the session from a
//! validated sign-in, never a form field or a request body — and [`SignInRequired`], the
//! answer without one.

use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::CookieJar;
use steward_harness::{Actor, Ctx, UserId};

use crate::paths::SIGN_IN_PATH;
use crate::session::{self, Session};
use crate::state::WebState;

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
