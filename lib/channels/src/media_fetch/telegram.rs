//! Telegram Bot API downloads: `getFile` answers a `file_path` and size for a `file_id`, then
//! `GET {api_base}/file/bot<token>/<file_path>` answers the bytes. Both go to the configured
//! Bot API base only; the `file_path` must be a plain relative path
//! ([`is_safe_file_path`]), so an answer cannot steer the download elsewhere on that server
//! (a local Bot API server's absolute paths are refused for the same reason).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::download::{
    Hop, check_declared_size, media_http_client, read_file, read_json, status_error,
    transport_error, within,
};
use super::limits::{FILE_PATH_BYTES_MAX, MEDIA_FETCH_TIMEOUT, SizeLimit};
use super::sniff::check_bytes;
use super::{FetchError, FetchedMedia, MediaFetcher, before_request};
use crate::secret::Secret;
use crate::{MediaRef, TelegramConfig};

/// Whether `path` is a plain relative path: 1 to [`FILE_PATH_BYTES_MAX`] bytes of ASCII
/// letters, digits, `_`, `-`, `.` and `/`; no leading `/`, no empty, `.` or `..` segment (so no
/// scheme, host, query, escape or climb out of the bot's files).
pub fn is_safe_file_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= FILE_PATH_BYTES_MAX
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
        && path
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
}

/// Downloads Telegram attachments through the Bot API.
#[derive(Clone)]
pub struct TelegramMediaFetcher {
    http: reqwest::Client,
    api_base: String,
    bot_token: Secret,
    deadline: Duration,
}

impl std::fmt::Debug for TelegramMediaFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramMediaFetcher")
            .field("api_base", &self.api_base)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl TelegramMediaFetcher {
    /// A fetcher for `config`'s Bot API base and token, on its own client that never follows
    /// redirects (see [`crate::media_http_client`]), with [`MEDIA_FETCH_TIMEOUT`].
    pub fn new(config: &TelegramConfig) -> Result<Self, reqwest::Error> {
        Ok(Self {
            http: media_http_client()?,
            api_base: config.api_base.trim_end_matches('/').to_owned(),
            bot_token: config.bot_token.clone(),
            deadline: MEDIA_FETCH_TIMEOUT,
        })
    }

    /// This fetcher giving up after `deadline` instead of [`MEDIA_FETCH_TIMEOUT`].
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    async fn fetch_checked(&self, media: &MediaRef) -> Result<FetchedMedia, FetchError> {
        let (file_id, limit) = before_request(media)?;

        let response = self
            .http
            .get(format!(
                "{}/bot{}/getFile",
                self.api_base,
                self.bot_token.expose()
            ))
            .query(&[("file_id", file_id)])
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        // A failure answered without the Bot API's JSON (a proxy's error page) keeps its status.
        let answer = match read_json(response).await {
            Err(FetchError::Provider { .. }) if status >= 300 => {
                return Err(status_error(status, Hop::Lookup));
            }
            answer => answer?,
        };
        let (path, size) = file_of(&answer, status)?;
        check_declared_size(size, limit)?;

        let response = self
            .http
            .get(format!(
                "{}/file/bot{}/{path}",
                self.api_base,
                self.bot_token.expose()
            ))
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        if !response.status().is_success() {
            return Err(status_error(response.status().as_u16(), Hop::Download));
        }
        let (bytes, content_type) = read_file(response, limit).await?;
        let checked = check_bytes(
            media.kind,
            &[media.mime.as_deref(), content_type.as_deref()],
            &bytes,
        )?;
        Ok(FetchedMedia {
            bytes,
            media_type: checked.media_type,
            dimensions: checked.dimensions,
        })
    }
}

#[async_trait]
impl MediaFetcher for TelegramMediaFetcher {
    async fn fetch(&self, media: &MediaRef) -> Result<FetchedMedia, FetchError> {
        within(self.deadline, self.fetch_checked(media)).await
    }
}

/// The `file_path` and `file_size` of a `getFile` answer (HTTP `status`); a refusal is typed
/// by its error code — "file is too big" is Telegram's 20 MB limit for bots.
fn file_of(answer: &Value, status: u16) -> Result<(String, Option<u64>), FetchError> {
    if answer.get("ok").and_then(Value::as_bool) != Some(true) || status >= 300 {
        let too_big = answer
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|d| d.to_ascii_lowercase().contains("file is too big"));
        if too_big {
            return Err(FetchError::TooLarge {
                limit: SizeLimit::TelegramBotApi,
                declared: None,
            });
        }
        let code = answer
            .get("error_code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .filter(|_| status < 300)
            .unwrap_or(status);
        return Err(status_error(code, Hop::Lookup));
    }
    let result = answer.get("result");
    let path = result
        .and_then(|r| r.get("file_path"))
        .and_then(Value::as_str)
        .ok_or(FetchError::Provider {
            status: None,
            reason: "getFile answered no file path",
        })?;
    if !is_safe_file_path(path) {
        return Err(FetchError::BadFilePath);
    }
    let size = result
        .and_then(|r| r.get("file_size"))
        .and_then(Value::as_u64);
    Ok((path.to_owned(), size))
}
