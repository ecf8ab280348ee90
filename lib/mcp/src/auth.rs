//! Bearer-token authentication: `Authorization: Bearer <token>` → the harness token store → the
//! account the request acts for. Missing, unknown or revoked tokens get 401 with
//! `WWW-Authenticate: Bearer`. The identity comes only from here, never from the request body.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::Response;
use steward_harness::tokens;
use steward_harness::{TokenId, UserId};

use super::Shared;
use super::reply::refuse;
use steward_edge::hosts::is_direct_loopback;

/// Who a request acts for, put in the request's extensions by [`authenticate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The account, from the token (or the local dev user).
    pub user: UserId,
    /// What the rate limit counts against.
    pub key: RateKey,
}

/// What a rate limit is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RateKey {
    /// A token, by its public id.
    Token(TokenId),
    /// The insecure dev user (local tests only).
    DevUser(UserId),
}

/// The `WWW-Authenticate` challenge, per RFC 6750.
const CHALLENGE: &str = "Bearer realm=\"steward-mcp\"";
/// The challenge for a token that was presented but is not (or no longer) valid.
const CHALLENGE_INVALID: &str = "Bearer realm=\"steward-mcp\", error=\"invalid_token\"";

/// What the `Authorization` header holds.
#[derive(Debug, PartialEq, Eq)]
enum Presented<'a> {
    Nothing,
    Bearer(&'a str),
    Unusable,
}

fn presented(headers: &HeaderMap) -> Presented<'_> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Presented::Nothing;
    };
    let Ok(text) = value.to_str() else {
        return Presented::Unusable;
    };
    match text.trim().split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Presented::Bearer(token.trim())
        }
        _ => Presented::Unusable,
    }
}

/// Why a request is refused before it reaches the MCP handler.
struct Refusal {
    status: StatusCode,
    challenge: Option<&'static str>,
    message: &'static str,
}

impl Refusal {
    fn unauthorized(challenge: &'static str, message: &'static str) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            challenge: Some(challenge),
            message,
        }
    }
}

/// The caller of a request, from its token or (locally) the dev user.
async fn resolve(shared: &Shared, uri: &Uri, headers: &HeaderMap) -> Result<Caller, Refusal> {
    match presented(headers) {
        Presented::Bearer(token) => {
            match tokens::authenticate(shared.table.as_ref(), shared.clock.as_ref(), token).await {
                Ok(Some(record)) => Ok(Caller {
                    user: record.user,
                    key: RateKey::Token(record.id),
                }),
                Ok(None) => Err(Refusal::unauthorized(
                    CHALLENGE_INVALID,
                    "The bearer token is unknown or was revoked. Create a new one in Steward (or with `steward token create USER_ID`).",
                )),
                Err(error) => {
                    tracing::error!(%error, "MCP: the token store failed during authentication");
                    Err(Refusal {
                        status: StatusCode::INTERNAL_SERVER_ERROR,
                        challenge: None,
                        message: "Internal error while checking the token; try again later.",
                    })
                }
            }
        }
        Presented::Nothing => match shared.config.insecure_dev_user() {
            Some(user) if is_direct_loopback(uri, headers) => Ok(Caller {
                user: user.clone(),
                key: RateKey::DevUser(user.clone()),
            }),
            _ => Err(Refusal::unauthorized(
                CHALLENGE,
                "Missing bearer token: send `Authorization: Bearer <token>` with a Steward MCP token.",
            )),
        },
        Presented::Unusable => Err(Refusal::unauthorized(
            CHALLENGE_INVALID,
            "The Authorization header must be `Bearer <token>`.",
        )),
    }
}

/// Middleware: resolves the [`Caller`] or answers 401 (500 when the token store fails).
pub(super) async fn authenticate(
    State(shared): State<Arc<Shared>>,
    mut req: Request,
    next: Next,
) -> Response {
    match resolve(&shared, req.uri(), req.headers()).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(refusal) => {
            let mut response = refuse(req, refusal.status, refusal.message).await;
            if let Some(challenge) = refusal.challenge {
                response
                    .headers_mut()
                    .insert(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
            }
            response
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn bearer_tokens_are_read_case_insensitively() {
        assert_eq!(presented(&HeaderMap::new()), Presented::Nothing);
        assert_eq!(
            presented(&headers("Bearer stw_x")),
            Presented::Bearer("stw_x")
        );
        assert_eq!(
            presented(&headers("bearer  stw_x ")),
            Presented::Bearer("stw_x")
        );
        assert_eq!(
            presented(&headers("Basic dXNlcjpwdw==")),
            Presented::Unusable
        );
        assert_eq!(presented(&headers("Bearer ")), Presented::Unusable);
        assert_eq!(presented(&headers("stw_x")), Presented::Unusable);
    }
}
