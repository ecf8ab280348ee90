//! The S3 adapter (feature `s3`): each blob is one object named by its key, with the media
//! type as the object's `Content-Type` and server-side encryption (SSE-S3, AES-256) requested
//! on every put. S3's PUT is atomic (an object appears whole or not at all) and putting the
//! same key twice stores the same bytes again. The bucket's lifecycle rule expires objects
//! after `BLOB_RETENTION_DAYS` (`template.yaml`).

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use std::time::Duration;

use super::{
    Blob, BlobError, BlobKey, BlobOwner, BlobStore, MediaType, check_owner, key_for_put, verified,
};
use crate::aws::{AWS_CONNECT_TIMEOUT_SECS, load_sdk_config};
use crate::limits::BLOB_BYTES_MAX;

/// The bucket's name (required for the S3 adapter; the template sets it for the agent).
pub const ENV_BLOB_BUCKET: &str = "STEWARD_BLOB_BUCKET";

/// `1` or `true` for path-style addressing (`endpoint/bucket/key`), which emulators such as
/// moto and MinIO need; unset or `0`/`false` for AWS's virtual-hosted style.
pub const ENV_BLOB_PATH_STYLE: &str = "STEWARD_BLOB_PATH_STYLE";

/// Seconds one S3 request attempt may take. DynamoDB's and SQS's 3 s (`crate::aws`) are sized
/// for answers of a few kilobytes; a blob is up to 20 MB, which at a slow 2 MB/s takes 10 s.
/// 15 s leaves room for that and still abandons a stalled transfer well inside the agent's
/// 900 s timeout.
pub const S3_ATTEMPT_TIMEOUT_SECS: u64 = 15;

/// Seconds one S3 call may take with its retries: two full attempts and the SDK's backoff.
pub const S3_OPERATION_TIMEOUT_SECS: u64 = 40;

const _: () = assert!(S3_ATTEMPT_TIMEOUT_SECS * 2 <= S3_OPERATION_TIMEOUT_SECS);

/// Why the S3 adapter's settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum S3SettingsError {
    /// `STEWARD_BLOB_BUCKET` is unset or empty.
    #[error("{ENV_BLOB_BUCKET} is not set: name the S3 bucket media is stored in")]
    MissingBucket,
    /// Not a valid S3 bucket name.
    #[error(
        "{ENV_BLOB_BUCKET} is {0:?}, not an S3 bucket name (3-63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)"
    )]
    BadBucket(String),
    /// `STEWARD_BLOB_PATH_STYLE` is neither a yes nor a no.
    #[error("{ENV_BLOB_PATH_STYLE} is {0:?}; use 1/true or 0/false")]
    BadPathStyle(String),
}

/// What the S3 adapter needs besides the SDK configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3BlobSettings {
    /// The bucket.
    pub bucket: String,
    /// Path-style addressing (emulators).
    pub path_style: bool,
}

impl S3BlobSettings {
    /// From `STEWARD_BLOB_BUCKET` and `STEWARD_BLOB_PATH_STYLE`.
    ///
    /// # Errors
    /// A missing or malformed bucket name, an unreadable path-style flag.
    pub fn from_env() -> Result<Self, S3SettingsError> {
        Self::from_values(
            std::env::var(ENV_BLOB_BUCKET).ok().as_deref(),
            std::env::var(ENV_BLOB_PATH_STYLE).ok().as_deref(),
        )
    }

    /// From the two variables' values (None: unset).
    ///
    /// # Errors
    /// As [`S3BlobSettings::from_env`].
    pub fn from_values(
        bucket: Option<&str>,
        path_style: Option<&str>,
    ) -> Result<Self, S3SettingsError> {
        let bucket = bucket.unwrap_or_default();
        if bucket.is_empty() {
            return Err(S3SettingsError::MissingBucket);
        }
        let edge_ok =
            |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !(3..=63).contains(&bucket.len())
            || !bucket
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
            || !edge_ok(bucket.chars().next())
            || !edge_ok(bucket.chars().last())
        {
            return Err(S3SettingsError::BadBucket(bucket.to_owned()));
        }
        let path_style = match path_style.map(str::trim) {
            None | Some("" | "0" | "false") => false,
            Some("1" | "true") => true,
            Some(other) => return Err(S3SettingsError::BadPathStyle(other.to_owned())),
        };
        Ok(Self {
            bucket: bucket.to_owned(),
            path_style,
        })
    }
}

/// The timeouts of S3 calls: the store's connect timeout, and attempt and operation bounds
/// sized for 20 MB bodies.
pub fn s3_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(AWS_CONNECT_TIMEOUT_SECS))
        .operation_attempt_timeout(Duration::from_secs(S3_ATTEMPT_TIMEOUT_SECS))
        .operation_timeout(Duration::from_secs(S3_OPERATION_TIMEOUT_SECS))
        .build()
}

/// A [`BlobStore`] in an S3 bucket.
#[derive(Debug, Clone)]
pub struct S3BlobStore {
    client: aws_sdk_s3::Client,
    bucket: String,
}

impl S3BlobStore {
    /// The adapter over an existing client and bucket.
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    /// An S3 client from `sdk` (region, credentials, endpoint) with [`s3_timeouts`], path-style
    /// addressing when asked.
    pub fn client(sdk: &SdkConfig, path_style: bool) -> aws_sdk_s3::Client {
        let config = aws_sdk_s3::config::Builder::from(sdk)
            .timeout_config(s3_timeouts())
            .force_path_style(path_style)
            .build();
        aws_sdk_s3::Client::from_conf(config)
    }

    /// The adapter for `settings` on `sdk`.
    pub fn from_settings(sdk: &SdkConfig, settings: &S3BlobSettings) -> Self {
        Self::new(Self::client(sdk, settings.path_style), &settings.bucket)
    }

    /// The adapter the environment describes: [`crate::aws::load_sdk_config`] and
    /// [`S3BlobSettings::from_env`]. The one line a function's wiring needs.
    ///
    /// # Errors
    /// As [`S3BlobSettings::from_env`].
    pub async fn from_env() -> Result<Self, S3SettingsError> {
        let settings = S3BlobSettings::from_env()?;
        Ok(Self::from_settings(&load_sdk_config().await, &settings))
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

fn backend<E: std::error::Error>(what: &str, key: &BlobKey, e: E) -> BlobError {
    BlobError::Backend(format!("S3 {what} {key}: {}", DisplayErrorContext(e)))
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn put(
        &self,
        owner: &BlobOwner,
        media_type: &MediaType,
        bytes: Vec<u8>,
    ) -> Result<BlobKey, BlobError> {
        let key = key_for_put(owner, media_type, &bytes)?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .content_type(media_type.as_str())
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| backend("PutObject", &key, e))?;
        Ok(key)
    }

    async fn get(&self, owner: &BlobOwner, key: &BlobKey) -> Result<Blob, BlobError> {
        check_owner(owner, key)?;
        let corrupt = |reason: String| BlobError::Corrupt {
            key: key.clone(),
            reason,
        };
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => {
                return Err(BlobError::NotFound { key: key.clone() });
            }
            Err(e) => return Err(backend("GetObject", key, e)),
        };
        let media_type = out
            .content_type
            .as_deref()
            .and_then(|t| MediaType::parse(t).ok())
            .ok_or_else(|| corrupt(format!("content type {:?}", out.content_type)))?;
        let declared = out.content_length.unwrap_or(0);
        if usize::try_from(declared).map_or(true, |n| n > BLOB_BYTES_MAX) {
            return Err(corrupt(format!("{declared} bytes, over any blob's size")));
        }
        // Read with a cap as well: the declared length is the service's word, not a bound.
        let mut body = out.body;
        let mut bytes = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| backend("GetObject body of", key, e))?;
            if bytes.len() + chunk.len() > BLOB_BYTES_MAX {
                return Err(corrupt("longer than any blob".into()));
            }
            bytes.extend_from_slice(&chunk);
        }
        verified(key, media_type, bytes)
    }

    async fn delete(&self, owner: &BlobOwner, key: &BlobKey) -> Result<(), BlobError> {
        check_owner(owner, key)?;
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await
            .map_err(|e| backend("DeleteObject", key, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_need_a_bucket_and_read_the_path_style_flag() {
        assert_eq!(
            S3BlobSettings::from_values(None, None),
            Err(S3SettingsError::MissingBucket)
        );
        assert_eq!(
            S3BlobSettings::from_values(Some(""), None),
            Err(S3SettingsError::MissingBucket)
        );
        for bad in [
            "ab",
            "Media",
            "media_bucket",
            "-media",
            "media-",
            &"a".repeat(64),
        ] {
            assert_eq!(
                S3BlobSettings::from_values(Some(bad), None),
                Err(S3SettingsError::BadBucket(bad.to_owned())),
            );
        }
        let s = S3BlobSettings::from_values(Some("steward-media-1"), None);
        assert_eq!(
            s,
            Ok(S3BlobSettings {
                bucket: "steward-media-1".into(),
                path_style: false
            })
        );
        for (flag, want) in [
            ("1", true),
            ("true", true),
            ("0", false),
            ("false", false),
            ("", false),
        ] {
            assert_eq!(
                S3BlobSettings::from_values(Some("bucket"), Some(flag)).map(|s| s.path_style),
                Ok(want)
            );
        }
        assert_eq!(
            S3BlobSettings::from_values(Some("bucket"), Some("yes please")),
            Err(S3SettingsError::BadPathStyle("yes please".into()))
        );
    }

    #[test]
    fn s3_calls_have_attempt_and_operation_bounds() {
        let t = s3_timeouts();
        assert_eq!(
            t.operation_attempt_timeout(),
            Some(Duration::from_secs(S3_ATTEMPT_TIMEOUT_SECS))
        );
        assert_eq!(
            t.operation_timeout(),
            Some(Duration::from_secs(S3_OPERATION_TIMEOUT_SECS))
        );
    }
}
