//! Telegram webhook authenticity: the secret set with `setWebhook(secret_token=…)` comes back
//! in the `X-Telegram-Bot-Api-Secret-Token` header of every update.

use crate::secret::secrets_match;

/// The header carrying the webhook secret.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// An update that does not carry the right secret: answer 401, enqueue nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// No secret header.
    #[error("the X-Telegram-Bot-Api-Secret-Token header is missing")]
    Missing,
    /// The header does not match the configured secret.
    #[error("the X-Telegram-Bot-Api-Secret-Token header does not match")]
    Mismatch,
    /// No secret is configured, so nothing can be verified.
    #[error("no Telegram webhook secret is configured")]
    NoSecret,
}

/// Checks the `X-Telegram-Bot-Api-Secret-Token` header against the configured secret, in
/// constant time.
pub fn verify_secret(header: Option<&str>, expected: &str) -> Result<(), SecretError> {
    if expected.is_empty() {
        return Err(SecretError::NoSecret);
    }
    let presented = header.ok_or(SecretError::Missing)?;
    if secrets_match(presented, expected) {
        Ok(())
    } else {
        Err(SecretError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret() {
        assert_eq!(verify_secret(Some("s3cret"), "s3cret"), Ok(()));
        assert_eq!(
            verify_secret(Some("s3cret "), "s3cret"),
            Err(SecretError::Mismatch)
        );
        assert_eq!(
            verify_secret(Some(""), "s3cret"),
            Err(SecretError::Mismatch)
        );
        assert_eq!(verify_secret(None, "s3cret"), Err(SecretError::Missing));
        assert_eq!(verify_secret(Some(""), ""), Err(SecretError::NoSecret));
    }
}
