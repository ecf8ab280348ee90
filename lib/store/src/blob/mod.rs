//! The blob store port: media bytes (photos, PDFs) kept outside the `Table`, which holds only
//! their keys.
//!
//! * [`BlobStore`]: put bytes with a media type under a key the store derives, get them back,
//!   delete them. Adapters: [`FolderBlobStore`] (a folder under `steward serve`'s data
//!   directory) and `S3BlobStore` (feature `s3`, an S3 bucket on Lambda). Both pass one
//!   conformance suite (`tests/blob_conformance.rs`).
//! * Keys are content-addressed and owned ([`BlobKey`]: `media/<owner>/<sha256 hex>`), parsed
//!   at the edge; every call names the caller's [`BlobOwner`] and a key under another owner is
//!   refused before the backend is asked, so one user cannot read or delete another's blob even
//!   with its key in hand.
//! * Every get checks the bytes against the key's digest, so what comes back is exactly what was
//!   put (a replayed model request is byte-identical) or an error.

mod folder;
mod key;
mod media_type;
#[cfg(feature = "s3")]
mod s3;

use async_trait::async_trait;

pub use folder::{BLOB_FOLDER_NAME, FolderBlobStore};
pub use key::{
    BLOB_DIGEST_HEX_LEN, BLOB_KEY_BYTES_MAX, BLOB_KEY_PREFIX, BLOB_OWNER_BYTES_MAX, BlobKey,
    BlobKeyError, BlobOwner,
};
pub use media_type::{MEDIA_TYPE_BYTES_MAX, MediaType, MediaTypeError};
#[cfg(feature = "s3")]
pub use s3::{
    ENV_BLOB_BUCKET, ENV_BLOB_PATH_STYLE, S3_ATTEMPT_TIMEOUT_SECS, S3_OPERATION_TIMEOUT_SECS,
    S3BlobSettings, S3BlobStore, S3SettingsError, s3_timeouts,
};

use crate::limits::BLOB_BYTES_MAX;

/// One stored blob: its bytes and the media type they were put with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The media type given to [`BlobStore::put`].
    pub media_type: MediaType,
    /// The bytes, exactly as put.
    pub bytes: Vec<u8>,
}

/// What can go wrong with a [`BlobStore`]. Both adapters map their failures onto these.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// A malformed key or owner id.
    #[error(transparent)]
    Key(#[from] BlobKeyError),
    /// A malformed media type.
    #[error(transparent)]
    MediaType(#[from] MediaTypeError),
    /// Zero bytes: no media file is empty. Nothing was written.
    #[error("the blob is empty")]
    Empty,
    /// Over [`BLOB_BYTES_MAX`]. Nothing was written.
    #[error("the blob is {bytes} bytes, over the {max}-byte limit")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// [`BLOB_BYTES_MAX`].
        max: usize,
    },
    /// The key belongs to another owner; refused without asking the backend.
    #[error("blob {key} does not belong to the caller")]
    WrongOwner {
        /// The key asked for.
        key: BlobKey,
    },
    /// No blob under this key (never put, deleted, or expired).
    #[error("no blob {key}")]
    NotFound {
        /// The key asked for.
        key: BlobKey,
    },
    /// The folder adapter found a symbolic link on the key's path: it would resolve outside
    /// the folder (or onto another blob), so nothing is read or written through it.
    #[error("blob {key} resolves outside the blob folder")]
    OutsideFolder {
        /// The key asked for.
        key: BlobKey,
    },
    /// What is stored under the key is not what was put (the digest, the media type or the
    /// size does not match). Nothing is returned.
    #[error("blob {key} is corrupt: {reason}")]
    Corrupt {
        /// The key asked for.
        key: BlobKey,
        /// What did not match.
        reason: String,
    },
    /// The backend failed (I/O, network, the service's answer); the call may be retried.
    #[error("blob store backend error: {0}")]
    Backend(String),
}

/// Where media bytes live. Keys are derived from the content ([`BlobKey::for_content`]); every
/// call names the owner whose blob it is, and a key under another owner is refused.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Stores `bytes` of `media_type` for `owner` and returns their key. Idempotent: the same
    /// content gets the same key, and putting it again is harmless. Never leaves part of a
    /// blob readable: a get sees the whole blob or none.
    ///
    /// # Errors
    /// [`BlobError::Empty`] and [`BlobError::TooLarge`] before anything is written; backend
    /// failures as [`BlobError::Backend`].
    async fn put(
        &self,
        owner: &BlobOwner,
        media_type: &MediaType,
        bytes: Vec<u8>,
    ) -> Result<BlobKey, BlobError>;

    /// The blob under `key`, checked against the key's digest.
    ///
    /// # Errors
    /// [`BlobError::WrongOwner`], [`BlobError::NotFound`], [`BlobError::Corrupt`],
    /// [`BlobError::OutsideFolder`] (folder), [`BlobError::Backend`].
    async fn get(&self, owner: &BlobOwner, key: &BlobKey) -> Result<Blob, BlobError>;

    /// Removes the blob under `key`; removing a missing blob is not an error.
    ///
    /// # Errors
    /// [`BlobError::WrongOwner`], [`BlobError::OutsideFolder`] (folder), [`BlobError::Backend`].
    async fn delete(&self, owner: &BlobOwner, key: &BlobKey) -> Result<(), BlobError>;
}

/// The checks every put makes before touching a backend: not empty, not too large. Returns the
/// key the content goes under.
pub(crate) fn key_for_put(
    owner: &BlobOwner,
    media_type: &MediaType,
    bytes: &[u8],
) -> Result<BlobKey, BlobError> {
    if bytes.is_empty() {
        return Err(BlobError::Empty);
    }
    if bytes.len() > BLOB_BYTES_MAX {
        return Err(BlobError::TooLarge {
            bytes: bytes.len(),
            max: BLOB_BYTES_MAX,
        });
    }
    Ok(BlobKey::for_content(owner, media_type, bytes))
}

/// The tenant rule, once: a key is used only by its owner.
pub(crate) fn check_owner(owner: &BlobOwner, key: &BlobKey) -> Result<(), BlobError> {
    if key.is_owned_by(owner) {
        Ok(())
    } else {
        Err(BlobError::WrongOwner { key: key.clone() })
    }
}

/// The check every get makes on what the backend returned.
pub(crate) fn verified(
    key: &BlobKey,
    media_type: MediaType,
    bytes: Vec<u8>,
) -> Result<Blob, BlobError> {
    if !key.matches_content(&media_type, &bytes) {
        return Err(BlobError::Corrupt {
            key: key.clone(),
            reason: format!(
                "{} bytes of {media_type} do not match the key's digest",
                bytes.len()
            ),
        });
    }
    Ok(Blob { media_type, bytes })
}
