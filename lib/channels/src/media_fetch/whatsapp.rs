//! WhatsApp Cloud API downloads, in two hops: `GET {api_base}/{media-id}` with the access token
//! answers the file's URL, type and size; `GET` that URL with the same token answers the bytes.
//!
//! The second URL comes from Meta's answer, not from the message, but the access token goes
//! with it, so it is only followed to the configured API base's own origin (a proxy, or the
//! test fake on loopback) or, over https on the default port, to Meta's media hosts
//! ([`WHATSAPP_MEDIA_HOST_SUFFIXES`]). Anything else — another host, plain http, user info in
//! the URL — is [`FetchError::ForeignUrl`] and is never requested. Redirects are not followed.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::download::{
    Hop, check_declared_size, media_http_client, read_file, read_json, status_error,
    transport_error, within,
};
use super::limits::{MEDIA_FETCH_TIMEOUT, SizeLimit};
use super::sniff::{Declared, check_bytes};
use super::{FetchError, FetchedMedia, MediaFetcher, before_request};
use crate::secret::Secret;
use crate::{MediaRef, WhatsappConfig};

/// The hosts (and their subdomains) Meta serves WhatsApp media from: `lookaside.fbsbx.com` is
/// the documented download host; the CDN hosts are kept for when it hands out a CDN URL.
pub const WHATSAPP_MEDIA_HOST_SUFFIXES: &[&str] = &["fbsbx.com", "fbcdn.net", "whatsapp.net"];

/// Whether the access token may be sent to `url`: it parses, carries no user info, and is
/// either on `api_base`'s origin (scheme, host and port) or https on the default port to one
/// of [`WHATSAPP_MEDIA_HOST_SUFFIXES`] or a subdomain of one.
pub fn is_allowed_download_url(url: &str, api_base: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    if !url.username().is_empty() || url.password().is_some() {
        return false;
    }
    if reqwest::Url::parse(api_base).is_ok_and(|base| base.origin() == url.origin()) {
        return true;
    }
    url.scheme() == "https"
        && url.port().is_none()
        && url.domain().is_some_and(|host| {
            WHATSAPP_MEDIA_HOST_SUFFIXES.iter().any(|suffix| {
                host == *suffix
                    || host
                        .strip_suffix(suffix)
                        .is_some_and(|rest| rest.ends_with('.'))
            })
        })
}

/// Downloads WhatsApp attachments through the Cloud API.
#[derive(Debug, Clone)]
pub struct WhatsappMediaFetcher {
    http: reqwest::Client,
    api_base: String,
    access_token: Secret,
    deadline: Duration,
}

impl WhatsappMediaFetcher {
    /// A fetcher for `config`'s API base and access token, on its own client that never follows
    /// redirects (see [`crate::media_http_client`]), with [`MEDIA_FETCH_TIMEOUT`].
    pub fn new(config: &WhatsappConfig) -> Result<Self, reqwest::Error> {
        Ok(Self {
            http: media_http_client()?,
            api_base: config.api_base.trim_end_matches('/').to_owned(),
            access_token: config.access_token.clone(),
            deadline: MEDIA_FETCH_TIMEOUT,
        })
    }

    /// This fetcher giving up after `deadline` instead of [`MEDIA_FETCH_TIMEOUT`].
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    async fn fetch_checked(&self, media: &MediaRef) -> Result<FetchedMedia, FetchError> {
        let (id, mut limit) = before_request(media)?;

        let response = self
            .http
            .get(format!("{}/{id}", self.api_base))
            .bearer_auth(self.access_token.expose())
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        if !response.status().is_success() {
            return Err(status_error(response.status().as_u16(), Hop::Lookup));
        }
        let answer = read_json(response).await?;
        let about = MediaAnswer::read(&answer, id)?;
        let provider_said = Declared::parse(about.mime.as_deref());
        provider_said.refuse_other()?;
        limit = tighter(limit, provider_said.cap(media.kind));
        check_declared_size(about.size, limit)?;
        if !is_allowed_download_url(&about.url, &self.api_base) {
            return Err(FetchError::ForeignUrl);
        }

        let response = self
            .http
            .get(&about.url)
            .bearer_auth(self.access_token.expose())
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        if !response.status().is_success() {
            return Err(status_error(response.status().as_u16(), Hop::Download));
        }
        let (bytes, content_type) = read_file(response, limit).await?;
        let checked = check_bytes(
            media.kind,
            &[
                media.mime.as_deref(),
                about.mime.as_deref(),
                content_type.as_deref(),
            ],
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
impl MediaFetcher for WhatsappMediaFetcher {
    async fn fetch(&self, media: &MediaRef) -> Result<FetchedMedia, FetchError> {
        within(self.deadline, self.fetch_checked(media)).await
    }
}

/// The smaller of two limits.
pub(crate) fn tighter(a: SizeLimit, b: SizeLimit) -> SizeLimit {
    if b.bytes() < a.bytes() { b } else { a }
}

/// What the Graph API says about a media id.
struct MediaAnswer {
    url: String,
    mime: Option<String>,
    size: Option<u64>,
}

impl MediaAnswer {
    /// Reads `{"url", "mime_type", "file_size", "id", …}`; an answer without a URL, or about
    /// another id, is a provider failure.
    fn read(answer: &Value, id: &str) -> Result<Self, FetchError> {
        let failed = |reason| FetchError::Provider {
            status: None,
            reason,
        };
        if answer
            .get("id")
            .and_then(Value::as_str)
            .is_some_and(|answered| answered != id)
        {
            return Err(failed("answer about another media id"));
        }
        let url = answer
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or(failed("answer without a URL"))?;
        // Meta documents `file_size` as a number; a numeric string is read the same.
        let size = match answer.get("file_size") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        Ok(Self {
            url: url.to_owned(),
            mime: answer
                .get("mime_type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            size,
        })
    }
}
