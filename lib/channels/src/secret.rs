//! [`Secret`]: the one wrapper for secret strings across Steward — channel credentials here, and
//! above this crate MCP tokens as shown once (`NewToken`), web sessions' CSRF tokens and the
//! OpenID Connect flow's state, nonce and PKCE verifier. Its `Debug` never prints the value.
//! Also a constant-time comparison for shared secrets.

use subtle::ConstantTimeEq;

/// A secret string. `Debug` prints `Secret(***)`, so a struct holding one can derive `Debug`
/// without leaking; read the value only where it is sent or compared. Serializes as the plain
/// string (for records that must store it, such as a session's CSRF token).
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

/// Compares a presented secret with the expected one in time independent of where they differ.
/// An empty expected secret never matches, so a missing configuration cannot open the door.
pub(crate) fn secrets_match(presented: &str, expected: &str) -> bool {
    if expected.is_empty() {
        return false;
    }
    // `ct_eq` on slices of different lengths returns false at once; the length of a secret is
    // not worth hiding (the content is).
    presented.as_bytes().ct_eq(expected.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::new("EAAG-super-secret");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(s.expose(), "EAAG-super-secret");
    }

    #[test]
    fn comparison() {
        assert!(secrets_match("abc", "abc"));
        assert!(!secrets_match("abd", "abc"));
        assert!(!secrets_match("ab", "abc"));
        assert!(!secrets_match("", ""));
    }
}
