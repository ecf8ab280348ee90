//! The HTTP half both fetchers share: a deadline over the whole fetch, a body read chunk by
//! chunk that stops as soon as it passes its cap (never buffering an unbounded body), and the
//! mapping of statuses and transport failures to [`FetchError`]s.

use std::future::Future;
use std::time::Duration;

use super::FetchError;
use super::limits::{MEDIA_FETCH_TIMEOUT, META_ANSWER_BYTES_MAX, SizeLimit};
use super::sniff::Declared;
use crate::config::CONNECT_TIMEOUT_SECS;

/// The HTTP client the media fetchers use: the senders' connect timeout
/// ([`CONNECT_TIMEOUT_SECS`]), a request timeout of [`MEDIA_FETCH_TIMEOUT`] (the fetchers also
/// hold one deadline over the whole fetch), and no redirects — a redirect could carry the access
/// token, or the request, somewhere the host rule never saw; a 3xx answer is a provider failure.
pub fn media_http_client() -> Result<reqwest::Client, reqwest::Error> {
    steward_net::client_builder()
        .timeout(MEDIA_FETCH_TIMEOUT)
        .connect_timeout(Duration::from_secs(CONNECT_TIMEOUT_SECS))
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// Which request of a fetch an answer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hop {
    /// Asking about the file (WhatsApp's media id, Telegram's `getFile`): a 400 means the id
    /// is refused (another business account's media, another bot's `file_id`).
    Lookup,
    /// Downloading the bytes.
    Download,
}

/// Runs `fetch` within `deadline`; past it, [`FetchError::Timeout`] (the requests are dropped,
/// which closes their connections).
pub(crate) async fn within<T>(
    deadline: Duration,
    fetch: impl Future<Output = Result<T, FetchError>>,
) -> Result<T, FetchError> {
    tokio::time::timeout(deadline, fetch)
        .await
        .unwrap_or(Err(FetchError::Timeout))
}

/// A transport failure. The reqwest error is dropped, not kept: its URL may hold a bot token.
pub(crate) fn transport_error(error: &reqwest::Error) -> FetchError {
    if error.is_timeout() {
        FetchError::Timeout
    } else {
        FetchError::Provider {
            status: None,
            reason: "connection failed",
        }
    }
}

/// The error for a non-success `status` of `hop`.
pub(crate) fn status_error(status: u16, hop: Hop) -> FetchError {
    match (status, hop) {
        (404 | 410, _) => FetchError::NotFound { status },
        (401 | 403, _) | (400, Hop::Lookup) => FetchError::Refused { status },
        _ => FetchError::Provider {
            status: Some(status),
            reason: "unexpected status",
        },
    }
}

/// Refuses a declared size over `limit` before anything is downloaded.
pub(crate) fn check_declared_size(size: Option<u64>, limit: SizeLimit) -> Result<(), FetchError> {
    match size {
        Some(size) if size > limit.bytes() => Err(FetchError::TooLarge {
            limit,
            declared: Some(size),
        }),
        _ => Ok(()),
    }
}

/// The body went past its cap.
struct Overflow;

/// Reads `response`'s body, stopping with [`Overflow`] as soon as it is over `cap` bytes
/// (the rest is never read: dropping the response closes the connection).
async fn read_body(
    mut response: reqwest::Response,
    cap: u64,
) -> Result<Result<Vec<u8>, Overflow>, FetchError> {
    let expected = response.content_length().unwrap_or(0).min(cap);
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        if (bytes.len() + chunk.len()) as u64 > cap {
            return Ok(Err(Overflow));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Ok(bytes))
}

/// Downloads a file's bytes from a successful `response`: refused before reading when its
/// `Content-Type` names a type Steward does not read or its `Content-Length` is over `limit`;
/// stopped as soon as the body passes `limit`.
pub(crate) async fn read_file(
    response: reqwest::Response,
    limit: SizeLimit,
) -> Result<(Vec<u8>, Option<String>), FetchError> {
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Declared::parse(content_type.as_deref()).refuse_other()?;
    check_declared_size(response.content_length(), limit)?;
    match read_body(response, limit.bytes()).await? {
        Ok(bytes) => Ok((bytes, content_type)),
        Err(Overflow) => Err(FetchError::TooLarge {
            limit,
            declared: None,
        }),
    }
}

/// Reads a provider's JSON answer about a file (at most [`META_ANSWER_BYTES_MAX`] bytes).
pub(crate) async fn read_json(
    response: reqwest::Response,
) -> Result<serde_json::Value, FetchError> {
    let malformed = FetchError::Provider {
        status: None,
        reason: "malformed answer",
    };
    match read_body(response, META_ANSWER_BYTES_MAX).await? {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|_| malformed),
        Err(Overflow) => Err(malformed),
    }
}
