//! WhatsApp webhook authenticity: the GET verification handshake Meta performs when the
//! webhook is registered, and the `X-Hub-Signature-256` HMAC on every POST, checked on the raw
//! bytes before any JSON parsing.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::secret::secrets_match;

/// The header carrying the signature of a webhook POST.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// The only `hub.mode` Meta sends when verifying a webhook.
const HANDSHAKE_MODE: &str = "subscribe";

/// The prefix of the signature header's value.
const SIGNATURE_PREFIX: &str = "sha256=";

/// A failed verification handshake: answer 403.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// `hub.mode` was missing or not `subscribe`.
    #[error("hub.mode is not \"subscribe\"")]
    WrongMode,
    /// `hub.verify_token` was missing or did not match the configured token.
    #[error("hub.verify_token does not match")]
    WrongToken,
    /// `hub.challenge` was missing or empty.
    #[error("hub.challenge is missing")]
    MissingChallenge,
}

/// Answers Meta's verification handshake (`GET ?hub.mode=subscribe&hub.verify_token=…&
/// hub.challenge=…`): returns the challenge to echo back with 200, or an error (answer 403).
/// The token is compared in constant time; an empty expected token never matches.
pub fn verify_handshake(
    mode: Option<&str>,
    token: Option<&str>,
    challenge: Option<&str>,
    expected_token: &str,
) -> Result<String, HandshakeError> {
    if mode != Some(HANDSHAKE_MODE) {
        return Err(HandshakeError::WrongMode);
    }
    if !secrets_match(token.unwrap_or_default(), expected_token) {
        return Err(HandshakeError::WrongToken);
    }
    match challenge {
        Some(c) if !c.is_empty() => Ok(c.to_owned()),
        _ => Err(HandshakeError::MissingChallenge),
    }
}

/// A webhook POST whose signature does not prove it came from Meta: answer 401, enqueue nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `X-Hub-Signature-256` header.
    #[error("the X-Hub-Signature-256 header is missing")]
    Missing,
    /// The header is not `sha256=<64 hex digits>`.
    #[error("the X-Hub-Signature-256 header is not sha256=<hex>")]
    Malformed,
    /// The signature does not match the body and the app secret.
    #[error("the X-Hub-Signature-256 signature does not match the body")]
    Mismatch,
    /// No app secret is configured, so nothing can be verified.
    #[error("no WhatsApp app secret is configured")]
    NoSecret,
}

/// Checks `X-Hub-Signature-256: sha256=<hex>` as HMAC-SHA256 of the raw body with the app
/// secret, compared in constant time. Call it on the exact bytes received, before parsing.
pub fn verify_signature(
    raw_body: &[u8],
    header_value: Option<&str>,
    app_secret: &[u8],
) -> Result<(), SignatureError> {
    if app_secret.is_empty() {
        return Err(SignatureError::NoSecret);
    }
    let header = header_value.ok_or(SignatureError::Missing)?.trim();
    let hex_part = header
        .get(..SIGNATURE_PREFIX.len())
        .filter(|p| p.eq_ignore_ascii_case(SIGNATURE_PREFIX))
        .and_then(|_| header.get(SIGNATURE_PREFIX.len()..))
        .ok_or(SignatureError::Malformed)?;
    let expected = hex::decode(hex_part).map_err(|_| SignatureError::Malformed)?;
    let mut mac =
        Hmac::<Sha256>::new_from_slice(app_secret).map_err(|_| SignatureError::NoSecret)?;
    mac.update(raw_body);
    // `verify_slice` compares in constant time and rejects a wrong length.
    mac.verify_slice(&expected)
        .map_err(|_| SignatureError::Mismatch)
}

/// The header value Meta would send for `body` signed with `app_secret`: for tests and for
/// tools that replay captured webhooks.
pub fn sign(body: &[u8], app_secret: &[u8]) -> String {
    let digest = match Hmac::<Sha256>::new_from_slice(app_secret) {
        Ok(mut mac) => {
            mac.update(body);
            hex::encode(mac.finalize().into_bytes())
        }
        // HMAC accepts keys of any length; this arm cannot run.
        Err(_) => String::new(),
    };
    format!("{SIGNATURE_PREFIX}{digest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"test-app-secret";

    #[test]
    fn handshake() {
        assert_eq!(
            verify_handshake(Some("subscribe"), Some("tok"), Some("123"), "tok"),
            Ok("123".to_owned())
        );
        assert_eq!(
            verify_handshake(Some("subscribe"), Some("bad"), Some("123"), "tok"),
            Err(HandshakeError::WrongToken)
        );
        assert_eq!(
            verify_handshake(Some("subscribe"), None, Some("123"), "tok"),
            Err(HandshakeError::WrongToken)
        );
        assert_eq!(
            verify_handshake(Some("subscribe"), Some(""), Some("123"), ""),
            Err(HandshakeError::WrongToken)
        );
        assert_eq!(
            verify_handshake(Some("unsubscribe"), Some("tok"), Some("123"), "tok"),
            Err(HandshakeError::WrongMode)
        );
        assert_eq!(
            verify_handshake(Some("subscribe"), Some("tok"), None, "tok"),
            Err(HandshakeError::MissingChallenge)
        );
    }

    #[test]
    fn signature() {
        let body = br#"{"object":"whatsapp_business_account","entry":[]}"#;
        let header = sign(body, SECRET);
        assert_eq!(verify_signature(body, Some(&header), SECRET), Ok(()));
        // Upper-case hex is still the same signature.
        let upper = format!("sha256={}", header["sha256=".len()..].to_uppercase());
        assert_eq!(verify_signature(body, Some(&upper), SECRET), Ok(()));
        assert_eq!(
            verify_signature(b"{}", Some(&header), SECRET),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(body, Some(&header), b"other"),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(body, None, SECRET),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify_signature(body, Some("sha1=abcd"), SECRET),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify_signature(body, Some("sha256=zz"), SECRET),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify_signature(body, Some("sha256=abcd"), SECRET),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(body, Some(&header), b""),
            Err(SignatureError::NoSecret)
        );
        // A multi-byte character where the prefix would end must not panic.
        assert_eq!(
            verify_signature(body, Some("sha25é"), SECRET),
            Err(SignatureError::Malformed)
        );
    }
}
