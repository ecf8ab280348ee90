//! One sign-in in progress: its `state`, `nonce` and PKCE verifier, kept in a short-lived
//! cookie between the redirect to the issuer and the callback.
//!
//! Why a cookie and not a table record: nothing is written for a visitor who has not
//! authenticated yet (following the sign-in link again and again cannot fill the table), any
//! Lambda instance can finish a sign-in another started, and the cookie is what binds the
//! callback to the browser that started it — a `state` from someone else's sign-in does not
//! match this browser's cookie. The cookie is `HttpOnly`, `Secure` when served over HTTPS,
//! `SameSite=Lax` (sent on the issuer's top-level redirect back, not on cross-site
//! sub-requests), scoped to the callback's path, and removed by the callback whatever happens.
//! Replaying it gains nothing: the issuer accepts each code once.

use axum_extra::extract::cookie::{Cookie, SameSite};
use base64::Engine;
use sha2::{Digest, Sha256};
use steward_channels::Secret;
use subtle::ConstantTimeEq;

use crate::session::random_token;

/// The cookie's name.
pub(crate) const FLOW_COOKIE: &str = "steward_oidc";

/// The cookie's path: only the callback needs it.
const FLOW_COOKIE_PATH: &str = "/app/auth";

/// How long a sign-in may take at the issuer: time to type a password and answer a second
/// factor, short enough that a forgotten half-done sign-in does not linger.
pub(crate) const FLOW_LIFETIME_SECS: i64 = 10 * 60;

/// Longest cookie value read (four fields of ~43 characters each).
const FLOW_COOKIE_BYTES_MAX: usize = 512;

/// A sign-in in progress. Its `Debug` shows none of the three secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// Echoed by the issuer to the callback; must match.
    pub state: Secret,
    /// Goes into the ID token; must match.
    pub nonce: Secret,
    /// PKCE: its SHA-256 goes to the issuer, itself to the token endpoint.
    pub verifier: Secret,
    /// When the sign-in started, epoch seconds.
    pub started_s: i64,
}

impl Pending {
    /// A fresh sign-in starting at `now_s`: three independent 256-bit random values.
    pub fn new(now_s: i64) -> Self {
        Self {
            state: Secret::new(random_token()),
            nonce: Secret::new(random_token()),
            verifier: Secret::new(random_token()),
            started_s: now_s,
        }
    }

    /// The PKCE `S256` challenge: base64url(SHA-256(verifier)).
    pub fn challenge(&self) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(self.verifier.expose().as_bytes()))
    }

    /// The cookie carrying this sign-in.
    pub fn cookie(&self, secure: bool) -> Cookie<'static> {
        let value = format!(
            "{}.{}.{}.{}",
            self.state.expose(),
            self.nonce.expose(),
            self.verifier.expose(),
            self.started_s
        );
        Cookie::build((FLOW_COOKIE, value))
            .path(FLOW_COOKIE_PATH)
            .http_only(true)
            .secure(secure)
            .same_site(SameSite::Lax)
            .max_age(cookie::time::Duration::seconds(FLOW_LIFETIME_SECS))
            .build()
    }

    /// The cookie that removes it.
    pub fn removal(secure: bool) -> Cookie<'static> {
        Cookie::build((FLOW_COOKIE, ""))
            .path(FLOW_COOKIE_PATH)
            .http_only(true)
            .secure(secure)
            .same_site(SameSite::Lax)
            .max_age(cookie::time::Duration::ZERO)
            .build()
    }

    /// The sign-in in a cookie value, if it is well formed and not older than
    /// [`FLOW_LIFETIME_SECS`] at `now_s`.
    pub fn parse(value: &str, now_s: i64) -> Option<Self> {
        if value.len() > FLOW_COOKIE_BYTES_MAX {
            return None;
        }
        let mut parts = value.split('.');
        let (state, nonce, verifier, started) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || [state, nonce, verifier].iter().any(|p| p.len() < 32) {
            return None;
        }
        let started_s: i64 = started.parse().ok()?;
        if now_s < started_s || now_s - started_s > FLOW_LIFETIME_SECS {
            return None;
        }
        Some(Self {
            state: Secret::new(state),
            nonce: Secret::new(nonce),
            verifier: Secret::new(verifier),
            started_s,
        })
    }

    /// Whether `state` from the callback is this sign-in's (constant time).
    pub fn state_matches(&self, state: &str) -> bool {
        bool::from(self.state.expose().as_bytes().ct_eq(state.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_cookie_round_trips_until_it_expires() {
        let p = Pending::new(1_000);
        let c = p.cookie(true);
        assert!(c.http_only().unwrap() && c.secure().unwrap());
        assert_eq!(c.same_site(), Some(SameSite::Lax));
        assert_eq!(Pending::parse(c.value(), 1_000 + 60), Some(p.clone()));
        assert_eq!(
            Pending::parse(c.value(), 1_000 + FLOW_LIFETIME_SECS + 1),
            None
        );
        assert_eq!(Pending::parse(c.value(), 999), None);
        assert!(p.state_matches(p.state.expose()));
        assert!(!p.state_matches(p.nonce.expose()));
        let shown = format!("{p:?}");
        for secret in [&p.state, &p.nonce, &p.verifier] {
            assert!(!shown.contains(secret.expose()), "{shown}");
        }
    }

    #[test]
    fn malformed_values_are_refused() {
        for bad in ["", "a.b.c.1", "x", &"a".repeat(600)] {
            assert_eq!(Pending::parse(bad, 1), None, "{bad}");
        }
    }

    #[test]
    fn the_challenge_is_s256_of_the_verifier() {
        // RFC 7636 appendix B.
        let p = Pending {
            state: Secret::new(""),
            nonce: Secret::new(""),
            verifier: Secret::new("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            started_s: 0,
        };
        assert_eq!(p.challenge(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }
}
