//! Blob keys and their owners: validated newtypes, parsed at the edge.
//!
//! A key is `media/<owner>/<digest>`: the owner is the user the blob belongs to (a user id's
//! alphabet, `[A-Za-z0-9_-]`, 1–64 bytes) and the digest the lowercase hex SHA-256 of the
//! media type, a newline and the bytes. The store derives keys ([`BlobKey::for_content`]); a key
//! from outside (a stored record, a transcript) is parsed by [`BlobKey::parse`], which refuses
//! anything else with a specific [`BlobKeyError`], so no outside text ever becomes a path or an
//! object name. The owner segment is why one tenant cannot name another's blob: every port
//! call takes the caller's [`BlobOwner`] and refuses a key under any other.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::blob::media_type::MediaType;

/// The first segment of every key: what kind of blob this is (only media for now), so other
/// kinds can share a bucket later without ever colliding.
pub const BLOB_KEY_PREFIX: &str = "media";

/// Longest owner id, in bytes: the longest user id the harness accepts (`UserId::BYTES_MAX`).
pub const BLOB_OWNER_BYTES_MAX: usize = 64;

/// Length of a digest segment: SHA-256 in lowercase hex.
pub const BLOB_DIGEST_HEX_LEN: usize = 64;

/// Longest well-formed key: `media/` + the longest owner + `/` + the digest. Anything longer is
/// refused before it is scanned.
pub const BLOB_KEY_BYTES_MAX: usize =
    BLOB_KEY_PREFIX.len() + 1 + BLOB_OWNER_BYTES_MAX + 1 + BLOB_DIGEST_HEX_LEN;

/// Why a key or an owner id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobKeyError {
    /// The text was empty.
    #[error("the blob key is empty")]
    Empty,
    /// Longer than any key the store derives.
    #[error("the blob key is {bytes} bytes, over the {max}-byte limit")]
    TooLong {
        /// Its length.
        bytes: usize,
        /// [`BLOB_KEY_BYTES_MAX`].
        max: usize,
    },
    /// It starts with `/` (an absolute path).
    #[error("the blob key starts with '/'")]
    Absolute,
    /// A `.` or `..` segment (a path that climbs or stays put).
    #[error("the blob key has a '.' or '..' segment")]
    DotSegment,
    /// A character outside `[A-Za-z0-9_/-]`.
    #[error(
        "the blob key has {character:?} at byte {position}; only A-Z, a-z, 0-9, '_', '-' and '/' are allowed"
    )]
    BadCharacter {
        /// Byte offset of the character.
        position: usize,
        /// The character.
        character: char,
    },
    /// Not `media/<owner>/<digest>` (wrong prefix, missing or empty or extra segments).
    #[error("the blob key is not of the form media/<owner>/<sha256 hex>")]
    Shape,
    /// The digest segment is not 64 lowercase hex digits.
    #[error("the blob key's digest is not 64 lowercase hex digits")]
    BadDigest,
    /// An owner id that is empty, too long or outside `[A-Za-z0-9_-]`.
    #[error("the blob owner id {0:?} is not 1 to 64 of A-Z, a-z, 0-9, '_', '-'")]
    BadOwner(String),
}

fn is_owner_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whose blob this is: a user id (the same alphabet and length as the harness's `UserId`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobOwner(String);

impl BlobOwner {
    /// Checks an owner id: 1–[`BLOB_OWNER_BYTES_MAX`] bytes of `[A-Za-z0-9_-]`.
    pub fn parse(text: &str) -> Result<Self, BlobKeyError> {
        if text.is_empty() || text.len() > BLOB_OWNER_BYTES_MAX || !text.chars().all(is_owner_char)
        {
            let shown: String = text.chars().take(BLOB_OWNER_BYTES_MAX).collect();
            return Err(BlobKeyError::BadOwner(shown));
        }
        Ok(Self(text.to_owned()))
    }

    /// The owner id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BlobOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name of one stored blob: `media/<owner>/<sha256 hex>`. Only two ways in: derived from
/// content by the store, or parsed (and so validated) from text.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct BlobKey {
    text: String,
    /// Byte offset of the `/` before the digest.
    digest_at: usize,
}

impl BlobKey {
    /// The key the store files `bytes` of `media_type` under for `owner`: the SHA-256 of the
    /// media type, a newline and the bytes. The same content always gets the same key, so a
    /// second put is harmless; the same bytes under another media type get another key, so a
    /// key always reads back with the media type it was written with.
    pub fn for_content(owner: &BlobOwner, media_type: &MediaType, bytes: &[u8]) -> Self {
        let digest = content_digest(media_type, bytes);
        let text = format!("{BLOB_KEY_PREFIX}/{}/{digest}", owner.as_str());
        let digest_at = text.len() - BLOB_DIGEST_HEX_LEN - 1;
        Self { text, digest_at }
    }

    /// Parses a key from outside; see [`BlobKeyError`] for what is refused.
    pub fn parse(text: &str) -> Result<Self, BlobKeyError> {
        if text.is_empty() {
            return Err(BlobKeyError::Empty);
        }
        if text.len() > BLOB_KEY_BYTES_MAX {
            return Err(BlobKeyError::TooLong {
                bytes: text.len(),
                max: BLOB_KEY_BYTES_MAX,
            });
        }
        if text.starts_with('/') {
            return Err(BlobKeyError::Absolute);
        }
        if text.split('/').any(|s| s == "." || s == "..") {
            return Err(BlobKeyError::DotSegment);
        }
        if let Some((position, character)) = text
            .char_indices()
            .find(|&(_, c)| !(is_owner_char(c) || c == '/'))
        {
            return Err(BlobKeyError::BadCharacter {
                position,
                character,
            });
        }
        let mut segments = text.split('/');
        let (Some(prefix), Some(owner), Some(digest), None) = (
            segments.next(),
            segments.next(),
            segments.next(),
            segments.next(),
        ) else {
            return Err(BlobKeyError::Shape);
        };
        if prefix != BLOB_KEY_PREFIX || owner.is_empty() || owner.len() > BLOB_OWNER_BYTES_MAX {
            return Err(BlobKeyError::Shape);
        }
        if digest.len() != BLOB_DIGEST_HEX_LEN
            || !digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(BlobKeyError::BadDigest);
        }
        Ok(Self {
            text: text.to_owned(),
            digest_at: text.len() - BLOB_DIGEST_HEX_LEN - 1,
        })
    }

    /// The key as text (also the S3 object name).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The owner segment.
    pub fn owner(&self) -> &str {
        &self.text[BLOB_KEY_PREFIX.len() + 1..self.digest_at]
    }

    /// The digest segment (64 lowercase hex digits).
    pub fn digest(&self) -> &str {
        &self.text[self.digest_at + 1..]
    }

    /// Whether this key belongs to `owner`.
    pub fn is_owned_by(&self, owner: &BlobOwner) -> bool {
        self.owner() == owner.as_str()
    }

    /// Whether `media_type` and `bytes` are the content this key was derived from.
    pub fn matches_content(&self, media_type: &MediaType, bytes: &[u8]) -> bool {
        self.digest() == content_digest(media_type, bytes)
    }
}

/// Lowercase hex SHA-256 of the media type, `\n` and the bytes.
fn content_digest(media_type: &MediaType, bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(media_type.as_str().as_bytes());
    hasher.update(b"\n");
    hasher.update(bytes);
    hex::encode(hasher.finalize())
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for BlobKey {
    type Err = BlobKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for BlobKey {
    type Error = BlobKeyError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<BlobKey> for String {
    fn from(key: BlobKey) -> Self {
        key.text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn owner(s: &str) -> BlobOwner {
        BlobOwner::parse(s).expect("valid owner")
    }

    fn png() -> MediaType {
        MediaType::parse("image/png").expect("valid media type")
    }

    #[test]
    fn derived_keys_parse_back_and_name_their_parts() {
        let key = BlobKey::for_content(&owner("u_Abc-1"), &png(), b"pixels");
        assert!(key.as_str().starts_with("media/u_Abc-1/"));
        assert_eq!(key.owner(), "u_Abc-1");
        assert_eq!(key.digest().len(), 64);
        assert_eq!(BlobKey::parse(key.as_str()), Ok(key.clone()));
        assert!(key.matches_content(&png(), b"pixels"));
        assert!(!key.matches_content(&png(), b"pixelz"));
        let jpeg = MediaType::parse("image/jpeg").expect("valid");
        assert!(!key.matches_content(&jpeg, b"pixels"));
        assert!(key.is_owned_by(&owner("u_Abc-1")));
        assert!(!key.is_owned_by(&owner("u_abc-1")));
        let json = serde_json::to_string(&key).expect("serializes");
        assert_eq!(json, format!("\"{key}\""));
        let back: BlobKey = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, key);
        assert!(serde_json::from_str::<BlobKey>("\"media/../etc/passwd\"").is_err());
    }

    #[test]
    fn malformed_keys_are_refused_with_a_specific_error() {
        let d = "a".repeat(64);
        let cases: Vec<(String, BlobKeyError)> = vec![
            (String::new(), BlobKeyError::Empty),
            (
                "x".repeat(BLOB_KEY_BYTES_MAX + 1),
                BlobKeyError::TooLong {
                    bytes: BLOB_KEY_BYTES_MAX + 1,
                    max: BLOB_KEY_BYTES_MAX,
                },
            ),
            (format!("/media/u/{d}"), BlobKeyError::Absolute),
            (format!("media/../{d}"), BlobKeyError::DotSegment),
            (format!("media/u/../{d}"), BlobKeyError::DotSegment),
            (format!("media/./{d}"), BlobKeyError::DotSegment),
            (
                format!("media/u.v/{d}"),
                BlobKeyError::BadCharacter {
                    position: 7,
                    character: '.',
                },
            ),
            (
                format!("media\\u/{d}"),
                BlobKeyError::BadCharacter {
                    position: 5,
                    character: '\\',
                },
            ),
            (
                format!("media/Zoë/{d}"),
                BlobKeyError::BadCharacter {
                    position: 8,
                    character: 'ë',
                },
            ),
            (
                format!("media/u\0/{d}"),
                BlobKeyError::BadCharacter {
                    position: 7,
                    character: '\0',
                },
            ),
            (format!("media/u/{d}/x"), BlobKeyError::Shape),
            (format!("media//{d}"), BlobKeyError::Shape),
            (format!("photos/u/{d}"), BlobKeyError::Shape),
            (format!("media/{d}"), BlobKeyError::Shape),
            ("media/u/ABCDEF".to_string(), BlobKeyError::BadDigest),
            (
                format!("media/u/{}", "A".repeat(64)),
                BlobKeyError::BadDigest,
            ),
            (
                format!("media/u/{}", "a".repeat(63)),
                BlobKeyError::BadDigest,
            ),
            (
                format!("media/u/{}g", "a".repeat(63)),
                BlobKeyError::BadDigest,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(BlobKey::parse(&text), Err(want), "{text:?}");
        }
    }

    #[test]
    fn owners_are_user_ids() {
        assert!(BlobOwner::parse("u_123-abc").is_ok());
        for bad in ["", "a/b", "..", "a.b", "Zoë", " a", &"a".repeat(65)] {
            assert!(
                matches!(BlobOwner::parse(bad), Err(BlobKeyError::BadOwner(_))),
                "{bad:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused_and_parsed_keys_are_safe(text in "\\PC{0,160}") {
            if let Ok(key) = BlobKey::parse(&text) {
                prop_assert!(!key.as_str().starts_with('/'));
                prop_assert!(!key.as_str().contains(".."));
                prop_assert!(!key.as_str().contains('\\'));
                prop_assert_eq!(key.as_str().split('/').count(), 3);
            }
        }

        #[test]
        fn keys_near_the_shape_never_panic(
            owner in "[A-Za-z0-9_./-]{0,70}",
            digest in "[0-9a-fA-F./]{0,70}",
        ) {
            let text = format!("media/{owner}/{digest}");
            if let Ok(key) = BlobKey::parse(&text) {
                prop_assert_eq!(key.owner(), owner.as_str());
                prop_assert_eq!(key.digest(), digest.as_str());
            }
        }

        #[test]
        fn every_derived_key_parses(owner in "[A-Za-z0-9_-]{1,64}", bytes in proptest::collection::vec(any::<u8>(), 1..64)) {
            let owner = BlobOwner::parse(&owner).unwrap();
            let key = BlobKey::for_content(&owner, &MediaType::parse("application/pdf").unwrap(), &bytes);
            prop_assert_eq!(BlobKey::parse(key.as_str()), Ok(key));
        }
    }
}
