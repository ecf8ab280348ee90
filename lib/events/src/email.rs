//! [`Email`]: an e-mail address that looks deliverable.

use std::fmt;

use serde::{Deserialize, Serialize};
use steward_harness::ServiceError;

/// Longest address, in bytes (RFC 5321's path limit).
const EMAIL_BYTES_MAX: usize = 254;

/// Longest local part (before the `@`), in bytes.
const LOCAL_BYTES_MAX: usize = 64;

/// An e-mail address: one `@`, a non-empty local part, a domain with a dot, no spaces or
/// control characters. Kept as written (trimmed); compared without case via [`Email::key`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Email(String);

impl Email {
    /// Checks an address; errors name the field `email`.
    pub fn parse(text: &str) -> Result<Self, ServiceError> {
        let text = text.trim();
        let bad = |problem: &str| {
            ServiceError::invalid(
                "email",
                format!("{problem}; write it like name@example.org"),
            )
        };
        if text.is_empty() {
            return Err(bad("it is empty"));
        }
        if text.len() > EMAIL_BYTES_MAX {
            return Err(bad("it is too long"));
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("it contains spaces or control characters"));
        }
        if steward_harness::display_text::hidden_format_char(text).is_some() {
            return Err(bad("it contains an invisible formatting character"));
        }
        let Some((local, domain)) = text.rsplit_once('@') else {
            return Err(bad("it has no @"));
        };
        if local.is_empty() || local.len() > LOCAL_BYTES_MAX || local.contains('@') {
            return Err(bad("the part before the @ is not valid"));
        }
        let labels: Vec<&str> = domain.split('.').collect();
        let domain_ok = labels.len() >= 2
            && labels.iter().all(|l| {
                !l.is_empty()
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.chars().all(|c| c.is_alphanumeric() || c == '-')
            });
        if !domain_ok {
            return Err(bad("the part after the @ is not a domain"));
        }
        Ok(Self(text.to_owned()))
    }

    /// The address as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The address for comparisons: lowercase, with `%` and `#` escaped so it can be part of
    /// a key (`#` separates key parts and is legal in a local part).
    pub fn key(&self) -> String {
        self.0
            .to_lowercase()
            .replace('%', "%25")
            .replace('#', "%23")
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked() {
        assert_eq!(
            Email::parse(" Dana@Example.org ").unwrap().as_str(),
            "Dana@Example.org"
        );
        for bad in [
            "",
            "dana",
            "dana@",
            "@example.org",
            "dana@example",
            "da na@example.org",
            "dana@exa_mple.org",
            "dana@.org",
        ] {
            let err = Email::parse(bad).unwrap_err();
            assert!(
                err.to_string().starts_with("Invalid email: "),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn keys_ignore_case_and_escape_separators() {
        let a = Email::parse("Dana#1@Example.org").unwrap();
        assert_eq!(a.key(), "dana%231@example.org");
        assert!(!a.key().contains('#'));
        assert_eq!(
            Email::parse("x@y.io").unwrap().key(),
            Email::parse("X@Y.IO").unwrap().key()
        );
    }
}
