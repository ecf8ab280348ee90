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

/// Fewest characters a webhook secret may have. The secret is the only thing authenticating an
/// update, and an update's `from.id` *is* the sender's identity: 32 characters of Telegram's
/// 64-letter set carry far more than the 128 bits nobody can guess (`openssl rand -hex 32`
/// gives 64 hex digits).
pub const WEBHOOK_SECRET_CHARS_MIN: usize = 32;

/// Most characters Telegram accepts for `setWebhook`'s `secret_token`.
pub const WEBHOOK_SECRET_CHARS_MAX: usize = 256;

/// A configured webhook secret Steward refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeakSecret {
    /// Shorter than [`WEBHOOK_SECRET_CHARS_MIN`] (or longer than Telegram allows).
    #[error(
        "it is {chars} characters long; it must be {WEBHOOK_SECRET_CHARS_MIN} to {WEBHOOK_SECRET_CHARS_MAX} characters of A-Z, a-z, 0-9, _ and - (make one with `openssl rand -hex 32`)"
    )]
    Length {
        /// Its length.
        chars: usize,
    },
    /// It holds a character Telegram does not allow in a secret token.
    #[error(
        "it holds characters Telegram does not allow; use only A-Z, a-z, 0-9, _ and - (make one with `openssl rand -hex 32`)"
    )]
    Charset,
}

/// Checks a webhook secret before the server starts: [`WEBHOOK_SECRET_CHARS_MIN`] to
/// [`WEBHOOK_SECRET_CHARS_MAX`] characters of `[A-Za-z0-9_-]`, the set Telegram allows.
pub fn check_webhook_secret(secret: &str) -> Result<(), WeakSecret> {
    let chars = secret.chars().count();
    if !(WEBHOOK_SECRET_CHARS_MIN..=WEBHOOK_SECRET_CHARS_MAX).contains(&chars) {
        return Err(WeakSecret::Length { chars });
    }
    if !secret
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(WeakSecret::Charset);
    }
    Ok(())
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

    #[test]
    fn weak_secrets_are_refused() {
        let hex64 = "0123456789abcdef".repeat(4);
        assert_eq!(check_webhook_secret(&hex64), Ok(()));
        assert_eq!(check_webhook_secret(&"a_-Z9".repeat(7)[..32]), Ok(()));
        assert_eq!(
            check_webhook_secret("any random string"),
            Err(WeakSecret::Length { chars: 17 })
        );
        assert_eq!(
            check_webhook_secret(&"x".repeat(257)),
            Err(WeakSecret::Length { chars: 257 })
        );
        let spaced = format!("{} {}", "a".repeat(20), "b".repeat(20));
        assert_eq!(check_webhook_secret(&spaced), Err(WeakSecret::Charset));
        let err = WeakSecret::Length { chars: 3 }.to_string();
        assert!(err.contains("openssl rand -hex 32"), "{err}");
    }
}
