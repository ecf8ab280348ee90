//! CSRF protection. Signed-in writes (every non-GET under `/app` and `/api`) must echo the
//! session's token — form posts in a hidden `csrf` field, scripts in the `X-CSRF-Token`
//! header — checked by [`guard`] before any handler runs, so no form can forget it. Forms
//! shown before sign-in (the sign-in form, the public registration form) use a double-submit
//! cookie instead: [`FormToken`].

use axum::body::{Body, to_bytes};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum_extra::extract::CookieJar;
use axum_extra::extract::cookie::{Cookie, SameSite};
use maud::{Markup, html};
use subtle::ConstantTimeEq;

use crate::session::{self, SESSION_COOKIE, Session};
use crate::state::WebState;

/// The hidden form field carrying the token.
pub const CSRF_FIELD: &str = "csrf";

/// The header scripts send the token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The double-submit cookie of forms shown before sign-in.
pub const FORM_COOKIE: &str = "steward_form";

/// Largest form body the guard reads (and so the largest any signed-in form may post): forms
/// here carry names and short texts, never files.
pub const FORM_BODY_BYTES_MAX: usize = 64 * 1024;

/// The hidden input every signed-in form carries.
pub fn field(session: &Session) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(session.csrf.expose()); }
}

/// Paths that handle their own CSRF check (no session exists yet).
fn exempt(path: &str) -> bool {
    path == crate::paths::SIGN_IN_PATH || path.starts_with("/e/")
}

fn same(a: &str, b: &str) -> bool {
    !a.is_empty() && a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Middleware: non-GET requests under `/app` and `/api` need a live session and its token.
pub async fn guard(State(state): State<WebState>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let checked = path.starts_with("/app") || path.starts_with("/api");
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !checked || safe || exempt(path) {
        return next.run(req).await;
    }
    let api = path.starts_with("/api");
    let jar = CookieJar::from_headers(req.headers());
    let session = match jar.get(SESSION_COOKIE) {
        Some(c) => {
            match session::load(state.table().as_ref(), state.clock().as_ref(), c.value()).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "session lookup failed");
                    return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response();
                }
            }
        }
        None => None,
    };
    let Some(session) = session else {
        return crate::signed_in::SignInRequired { api }.into_response();
    };
    if let Some(sent) = req.headers().get(CSRF_HEADER) {
        if sent.to_str().is_ok_and(|s| same(s, session.csrf.expose())) {
            return next.run(req).await;
        }
        return forbidden();
    }
    let is_form = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return forbidden();
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, FORM_BODY_BYTES_MAX).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large").into_response();
    };
    let sent = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&bytes)
        .ok()
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == CSRF_FIELD))
        .map(|(_, v)| v);
    if !sent.is_some_and(|s| same(&s, session.csrf.expose())) {
        return forbidden();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn forbidden() -> Response {
    (
        StatusCode::FORBIDDEN,
        "This form has expired or did not come from Steward. Reload the page and try again.",
    )
        .into_response()
}

/// The double-submit token of a form shown before sign-in: the GET handler sets the cookie
/// (keeping an existing one) and puts the same value in a hidden field; the POST handler calls
/// [`FormToken::verify`] with the field.
#[derive(Debug, Clone)]
pub struct FormToken {
    value: String,
    fresh: bool,
}

impl<S: Send + Sync> FromRequestParts<S> for FormToken {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_headers(&parts.headers);
        Ok(match jar.get(FORM_COOKIE).map(|c| c.value().to_owned()) {
            Some(value) if value.len() >= 32 && value.len() <= 128 => Self {
                value,
                fresh: false,
            },
            _ => Self {
                value: session::random_token(),
                fresh: true,
            },
        })
    }
}

impl FormToken {
    /// The token's value (to bind other form data to this browser).
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The hidden input for the form.
    pub fn field(&self) -> Markup {
        html! { input type="hidden" name=(CSRF_FIELD) value=(self.value); }
    }

    /// The cookie to set with the page showing the form (None when the browser has it).
    pub fn cookie(&self, secure: bool) -> Option<Cookie<'static>> {
        self.fresh.then(|| {
            Cookie::build((FORM_COOKIE, self.value.clone()))
                .path("/")
                .http_only(true)
                .secure(secure)
                .same_site(SameSite::Strict)
                .build()
        })
    }

    /// Whether a posted field matches the browser's cookie (a fresh token never matches: the
    /// browser sent no cookie).
    pub fn verify(&self, sent: &str) -> bool {
        !self.fresh && same(sent, &self.value)
    }

    /// The refusal to answer when [`FormToken::verify`] fails.
    pub fn refusal() -> Response {
        forbidden()
    }
}
