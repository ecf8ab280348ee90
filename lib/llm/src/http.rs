//! The Claude API client: `POST {base}/v1/messages` over reqwest (rustls), streamed.
//!
//! Every call asks for a streamed answer (`"stream": true`, server-sent events) and assembles
//! it ([`crate::messages_stream`]) into the same [`CreateResponse`] a non-streamed call returns.
//! Streaming lets a stall be told apart from a long answer: the call fails with
//! [`LlmError::Timeout`] when no bytes arrive for the idle timeout
//! ([`MODEL_STREAM_IDLE_SECS`]), while an answer that keeps arriving may run up to the ceiling
//! sized to its output budget ([`model_call_timeout`]). A success body sent as plain JSON (a
//! proxy that does not stream) is read as the whole answer, under the same timeouts.

use std::fmt;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::Value;
use sse_stream::SseStream;

use crate::client::LlmClient;
use crate::error::LlmError;
use crate::error::body_snippet;
use crate::limits::{
    ANTHROPIC_VERSION, DEFAULT_ANTHROPIC_BASE_URL, HTTP_CONNECT_TIMEOUT_SECS,
    MODEL_RETRY_BACKOFF_MILLIS, MODEL_START_SECS, MODEL_STREAM_IDLE_SECS, model_call_timeout,
};
use crate::messages_stream::{Assembler, Progress};
use crate::request_body::BodyEncoder;
use crate::retry::{Failed, with_one_retry_unless_started};
use crate::wire::{CreateRequest, CreateResponse};

/// An Anthropic API key. Its `Debug` never shows the key, so it cannot leak into a log.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (read once at start from the environment or SSM).
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Settings of an [`AnthropicClient`]. Start from [`AnthropicConfig::new`], which sets the
/// defaults, and adjust with the `with_` methods.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// The API key, sent as `x-api-key`.
    pub api_key: ApiKey,
    /// The API root without `/v1` (default `https://api.anthropic.com`; the binary passes
    /// `ANTHROPIC_BASE_URL` here).
    pub base_url: String,
    /// Values for the `anthropic-beta` header; none means no header.
    pub betas: Vec<String>,
    /// The ceiling on one whole attempt; `None` (the default) sizes it to each call's
    /// `max_tokens` ([`model_call_timeout`]).
    pub timeout: Option<Duration>,
    /// The longest silence allowed between two chunks of a streamed answer (default
    /// [`MODEL_STREAM_IDLE_SECS`]).
    pub idle_timeout: Duration,
    /// The pause before the single retry (default [`MODEL_RETRY_BACKOFF_MILLIS`]).
    pub retry_backoff: Duration,
}

impl AnthropicConfig {
    /// The default configuration for the given API key.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            api_key: ApiKey::new(api_key),
            base_url: DEFAULT_ANTHROPIC_BASE_URL.to_owned(),
            betas: Vec::new(),
            timeout: None,
            idle_timeout: Duration::from_secs(MODEL_STREAM_IDLE_SECS),
            retry_backoff: Duration::from_millis(MODEL_RETRY_BACKOFF_MILLIS),
        }
    }

    /// Uses another API root (a proxy, or a local fake server in tests).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sends these `anthropic-beta` values (joined with commas).
    pub fn with_betas(mut self, betas: Vec<String>) -> Self {
        self.betas = betas;
        self
    }

    /// Uses a fixed ceiling per attempt instead of one sized to each call's output budget.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Uses another idle timeout between the chunks of a streamed answer (tests use a short
    /// one).
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// Uses another pause before the retry.
    pub fn with_retry_backoff(mut self, retry_backoff: Duration) -> Self {
        self.retry_backoff = retry_backoff;
        self
    }
}

/// The Claude Messages API over HTTPS, streamed, with one retry on a 5xx or overload before any
/// output, an idle timeout between chunks and a ceiling sized to each call's output budget.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: reqwest::Client,
    endpoint: String,
    timeout: Option<Duration>,
    idle_timeout: Duration,
    retry_backoff: Duration,
    /// Request bodies, with the frozen prefix encoded once (`request_body.rs`).
    body: BodyEncoder,
}

/// Why reading a streamed body stopped early; carried through the SSE parser as its body error.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// No chunk arrived within the idle timeout.
    #[error("no data for {0:?}")]
    Idle(Duration),
    /// The connection failed mid-body.
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
}

impl AnthropicClient {
    /// Builds a client. Fails if the key or a beta value cannot be sent as an HTTP header, or
    /// the HTTP stack cannot start.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let mut headers = HeaderMap::new();
        let mut key = HeaderValue::from_str(&config.api_key.0).map_err(|_| {
            LlmError::Configuration(
                "the API key contains characters an HTTP header cannot carry".to_owned(),
            )
        })?;
        key.set_sensitive(true);
        headers.insert("x-api-key", key);
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if !config.betas.is_empty() {
            let betas = HeaderValue::from_str(&config.betas.join(",")).map_err(|_| {
                LlmError::Configuration(format!(
                    "the anthropic-beta values {:?} cannot be sent as an HTTP header",
                    config.betas
                ))
            })?;
            headers.insert("anthropic-beta", betas);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let http = steward_net::client_builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(HTTP_CONNECT_TIMEOUT_SECS))
            .build()
            .map_err(|error| {
                LlmError::Configuration(format!("could not start the HTTP client: {error}"))
            })?;
        let endpoint = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
        reqwest::Url::parse(&endpoint).map_err(|error| {
            LlmError::Configuration(format!(
                "the base URL {:?} is not a URL: {error}",
                config.base_url
            ))
        })?;
        Ok(Self {
            http,
            endpoint,
            timeout: config.timeout,
            idle_timeout: config.idle_timeout,
            retry_backoff: config.retry_backoff,
            body: BodyEncoder::default(),
        })
    }

    /// One attempt under its ceiling. A failure is retryable only when nothing of the answer
    /// had been streamed yet: once output started, it is being billed.
    /// `body` is shared with the retry, not copied for each attempt.
    async fn attempt(&self, body: &Bytes, ceiling: Duration) -> Result<CreateResponse, Failed> {
        let mut assembler = Assembler::default();
        let outcome = tokio::time::timeout(ceiling, self.exchange(body, &mut assembler)).await;
        match outcome {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(Failed {
                retryable: error.is_retryable() && !assembler.output_started(),
                error,
            }),
            Err(_) => Err(Failed::from(LlmError::Timeout)),
        }
    }

    async fn exchange(
        &self,
        body: &Bytes,
        assembler: &mut Assembler,
    ) -> Result<CreateResponse, LlmError> {
        let started = Instant::now();
        // Until the answer's headers arrive: the provider queues and reads the prompt.
        let send = self.http.post(&self.endpoint).body(body.clone()).send();
        let response = tokio::time::timeout(Duration::from_secs(MODEL_START_SECS), send)
            .await
            .map_err(|_| LlmError::Timeout)?
            .map_err(transport_error)?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        tracing::debug!(
            status,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "model call answering"
        );
        if !(200..300).contains(&status) {
            let bytes = self.read_whole(response).await?;
            return Err(status_error(status, retry_after, &bytes));
        }
        if is_json {
            let bytes = self.read_whole(response).await?;
            return serde_json::from_slice(&bytes).map_err(|error| LlmError::MalformedResponse {
                message: format!("{error}; the body starts: {}", body_snippet(&bytes)),
            });
        }
        let idle = self.idle_timeout;
        let chunks = futures::stream::unfold(Some(response), move |state| async move {
            let mut response = state?;
            match tokio::time::timeout(idle, response.chunk()).await {
                Err(_) => Some((Err(ReadError::Idle(idle)), None)),
                Ok(Err(error)) => Some((Err(ReadError::Transport(error)), None)),
                Ok(Ok(Some(bytes))) => Some((Ok(bytes), Some(response))),
                Ok(Ok(None)) => None,
            }
        });
        let mut events = std::pin::pin!(SseStream::from_bytes_stream(chunks));
        while let Some(event) = events.next().await {
            let event = event.map_err(sse_error)?;
            // An event without data (a comment, a bare `retry:`) carries nothing.
            let Some(data) = event.data else { continue };
            if assembler.event(&data, stream_error)? == Progress::Done {
                break;
            }
        }
        let response = std::mem::take(assembler).finish()?;
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "model call streamed"
        );
        Ok(response)
    }

    /// A whole (error or unstreamed) body, each chunk within the idle timeout.
    async fn read_whole(&self, mut response: reqwest::Response) -> Result<Vec<u8>, LlmError> {
        let mut bytes = Vec::new();
        while let Some(chunk) = tokio::time::timeout(self.idle_timeout, response.chunk())
            .await
            .map_err(|_| LlmError::Timeout)?
            .map_err(transport_error)?
        {
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

#[async_trait]
impl LlmClient for AnthropicClient {
    fn provider_name(&self) -> &'static str {
        "anthropic"
    }

    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        request.ensure_media_resolved()?;
        // The request's own fields, then `"stream":true`. The prompt cache keys on the
        // prompt's content, and the stored transcript holds answers, not request bytes.
        let body = self
            .body
            .streamed(request)
            .map(Bytes::from)
            .map_err(|error| LlmError::InvalidRequest {
                message: format!("could not encode the request: {error}"),
                kind: crate::error::InvalidKind::Other,
            })?;
        let ceiling = self
            .timeout
            .unwrap_or_else(|| model_call_timeout(request.max_tokens));
        with_one_retry_unless_started(self.retry_backoff, || self.attempt(&body, ceiling)).await
    }
}

/// A failure of the event-stream parser: an idle stall or a broken connection underneath, or
/// bytes that are not server-sent events.
fn sse_error(error: sse_stream::Error) -> LlmError {
    match error {
        sse_stream::Error::Body(inner) => match inner.downcast::<ReadError>() {
            Ok(read) => match *read {
                ReadError::Idle(_) => LlmError::Timeout,
                ReadError::Transport(error) => transport_error(error),
            },
            Err(other) => LlmError::Transport(other.to_string()),
        },
        other => LlmError::MalformedResponse {
            message: format!("the answer is not a valid event stream: {other}"),
        },
    }
}

/// A streamed `error` event, as the same error its HTTP status would have given.
fn stream_error(event: &Value) -> LlmError {
    let kind = event["error"]["type"].as_str().unwrap_or_default();
    let message = event["error"]["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| body_snippet(event.to_string().as_bytes()));
    classify(kind, status_of_kind(kind), None, message)
}

/// The HTTP status the API uses for each error type (its documented pairs), for errors that
/// arrive inside a stream, after the 200.
fn status_of_kind(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        // `api_error` and anything new: an internal error on the provider's side.
        _ => 500,
    }
}

/// A reqwest failure: a timeout (connect, send or body read) or a transport problem.
pub(crate) fn transport_error(error: reqwest::Error) -> LlmError {
    if error.is_timeout() {
        return LlmError::Timeout;
    }
    // reqwest's own message is terse ("error sending request"); the cause chain says why.
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    LlmError::Transport(message)
}

/// The `retry-after` header as a duration, when it holds a number of seconds.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// The API's error envelope: `{"type":"error","error":{"type":…,"message":…}}`.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// The typed error for a non-success status, from the error type when the body has one and
/// from the status otherwise.
fn status_error(status: u16, retry_after: Option<Duration>, body: &[u8]) -> LlmError {
    let (kind, message) = match serde_json::from_slice::<ErrorEnvelope>(body) {
        Ok(envelope) => (envelope.error.kind, envelope.error.message),
        Err(_) => (String::new(), body_snippet(body)),
    };
    classify(&kind, status, retry_after, message)
}

/// The typed error for an API error type and status.
fn classify(kind: &str, status: u16, retry_after: Option<Duration>, message: String) -> LlmError {
    match (kind, status) {
        ("rate_limit_error", _) | (_, 429) => LlmError::RateLimited { retry_after },
        ("overloaded_error", _) | (_, 529) => LlmError::Overloaded,
        ("authentication_error" | "permission_error", _) | (_, 401 | 403) => {
            LlmError::Authentication { message }
        }
        ("timeout_error", _) | (_, 504) => LlmError::Timeout,
        ("invalid_request_error", _) | (_, 400) => LlmError::invalid_request(message),
        _ => LlmError::Api { status, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::ERROR_BODY_CHARS_MAX;

    #[test]
    fn the_api_key_never_shows_in_debug_output() {
        let config = AnthropicConfig::new("sk-ant-very-secret");
        assert!(!format!("{config:?}").contains("very-secret"));
        let client = AnthropicClient::new(config).expect("client");
        assert!(!format!("{client:?}").contains("very-secret"));
    }

    #[test]
    fn a_key_that_cannot_be_a_header_is_a_configuration_error() {
        let error = AnthropicClient::new(AnthropicConfig::new("bad\nkey")).expect_err("must fail");
        assert!(matches!(error, LlmError::Configuration(_)));
        assert!(!error.to_string().contains("bad\nkey"));
    }

    #[test]
    fn error_statuses_map_to_typed_errors() {
        let body = |kind: &str, message: &str| {
            serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
                .to_string()
        };
        assert_eq!(
            status_error(529, None, body("overloaded_error", "Overloaded").as_bytes()),
            LlmError::Overloaded
        );
        assert_eq!(
            status_error(500, None, body("overloaded_error", "Overloaded").as_bytes()),
            LlmError::Overloaded
        );
        assert!(matches!(
            status_error(403, None, body("permission_error", "no").as_bytes()),
            LlmError::Authentication { .. }
        ));
        assert_eq!(
            status_error(504, None, b"gateway timeout"),
            LlmError::Timeout
        );
        assert_eq!(
            status_error(404, None, body("not_found_error", "model: nope").as_bytes()),
            LlmError::Api {
                status: 404,
                message: "model: nope".to_owned()
            }
        );
        assert!(matches!(
            status_error(
                400,
                None,
                body("invalid_request_error", "prompt is too long: 1 > 0").as_bytes()
            ),
            LlmError::ContextWindowExceeded { .. }
        ));
        assert_eq!(
            status_error(502, None, b"<html>bad gateway</html>"),
            LlmError::Api {
                status: 502,
                message: "<html>bad gateway</html>".to_owned()
            }
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_ignores_the_rest() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("12"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(12)));
        headers.insert("retry-after", HeaderValue::from_static("1.5"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2026 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("-3"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn long_bodies_are_cut_in_error_messages() {
        let body = "x".repeat(ERROR_BODY_CHARS_MAX * 3);
        let snippet = body_snippet(body.as_bytes());
        assert_eq!(snippet.chars().count(), ERROR_BODY_CHARS_MAX + 1);
        assert_eq!(body_snippet(b""), "(empty body)");
    }
}
