//! The media type a blob was stored with: a validated newtype.

use std::fmt;

/// Longest media type accepted, in bytes: RFC 6838 allows 127 characters for each of type and
/// subtype; the types Steward stores (`image/jpeg`, `application/pdf`, …) are far shorter.
pub const MEDIA_TYPE_BYTES_MAX: usize = 127;

/// Why a media type was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a media type of the form type/subtype (letters, digits and !#$&^_.+- only, no parameters, at most 127 bytes)"
)]
pub struct MediaTypeError(pub String);

/// A media type such as `image/png`: `type/subtype` of RFC 6838's restricted-name characters,
/// without parameters, stored in lowercase (media types are case-insensitive, and the blob key
/// is derived from this exact text).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct MediaType(String);

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b)
}

fn is_restricted_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.first().is_some_and(|&b| is_name_start(b)) && bytes.iter().all(|&b| is_name_char(b))
}

impl MediaType {
    /// Checks a media type and lowercases it.
    pub fn parse(text: &str) -> Result<Self, MediaTypeError> {
        let refuse = || MediaTypeError(text.chars().take(MEDIA_TYPE_BYTES_MAX).collect());
        if text.len() > MEDIA_TYPE_BYTES_MAX {
            return Err(refuse());
        }
        let (kind, subtype) = text.split_once('/').ok_or_else(refuse)?;
        if !is_restricted_name(kind) || !is_restricted_name(subtype) {
            return Err(refuse());
        }
        Ok(Self(text.to_ascii_lowercase()))
    }

    /// The media type, lowercase.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for MediaType {
    type Error = MediaTypeError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<MediaType> for String {
    fn from(media_type: MediaType) -> Self {
        media_type.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_checked_and_lowercased() {
        for ok in [
            "image/png",
            "application/pdf",
            "image/svg+xml",
            "application/vnd.ms-excel",
        ] {
            assert_eq!(
                MediaType::parse(ok).map(|m| m.as_str().to_owned()),
                Ok(ok.to_owned())
            );
        }
        assert_eq!(
            MediaType::parse("Image/JPEG").map(|m| m.as_str().to_owned()),
            Ok("image/jpeg".to_owned())
        );
        for bad in [
            "",
            "image",
            "image/",
            "/png",
            "image/png; charset=x",
            "image/png\n",
            "image/png/x",
            "image/.png",
            " image/png",
            "imäge/png",
            &format!("image/{}", "a".repeat(127)),
        ] {
            assert!(MediaType::parse(bad).is_err(), "{bad:?}");
        }
    }
}
