//! Any OpenAI-compatible server (OpenAI, vLLM, Ollama, LM Studio, LiteLLM, hosted compatible
//! APIs): `POST {base}/chat/completions` over reqwest (rustls), non-streaming. The wire format
//! and its mapping live in [`crate::chat_completions`]. Each attempt is bounded by the ceiling
//! sized to its output budget; the connection also has a connect timeout
//! ([`HTTP_CONNECT_TIMEOUT_SECS`]) and a read timeout ([`OPENAI_READ_TIMEOUT_SECS`]).
//!
//! Tool arguments that are not a JSON object never reach the harness: the client shows the
//! model its own call with the parser's error as the tool result and asks again, at most
//! [`TOOL_ARGUMENT_CORRECTIONS_MAX`] times within the same `create`, so no broken call is ever
//! stored. The usage of every attempt is added up.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;

use crate::chat_completions::{ChatRequest, correction_messages, read_response, to_chat};
use crate::client::LlmClient;
use crate::error::body_snippet;
use crate::error::{InvalidKind, LlmError};
use crate::http::{ApiKey, retry_after, transport_error};
use crate::limits::{
    DEFAULT_OPENAI_BASE_URL, HTTP_CONNECT_TIMEOUT_SECS, MODEL_RETRY_BACKOFF_MILLIS,
    OPENAI_READ_TIMEOUT_SECS, TOOL_ARGUMENT_CORRECTIONS_MAX, model_call_timeout,
};
use crate::retry::with_one_retry;
use crate::wire::{CreateRequest, CreateResponse, Usage};

/// Settings of an [`OpenAiClient`]. Start from [`OpenAiConfig::new`] and adjust with the
/// `with_` methods.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// The API key, sent as `Authorization: Bearer …`; none sends no header (local servers).
    pub api_key: Option<ApiKey>,
    /// The API root including `/v1` (default [`DEFAULT_OPENAI_BASE_URL`]; the binary passes
    /// `OPENAI_BASE_URL` here).
    pub base_url: String,
    /// How long one attempt may take; `None` (the default) sizes each call's timeout to its
    /// `max_tokens` ([`model_call_timeout`]).
    pub timeout: Option<Duration>,
    /// The pause before the single retry (default [`MODEL_RETRY_BACKOFF_MILLIS`]).
    pub retry_backoff: Duration,
}

impl OpenAiConfig {
    /// The default configuration with this key (or none, for a local server without one).
    pub fn new(api_key: Option<String>) -> Self {
        Self {
            api_key: api_key.map(ApiKey::new),
            base_url: DEFAULT_OPENAI_BASE_URL.to_owned(),
            timeout: None,
            retry_backoff: Duration::from_millis(MODEL_RETRY_BACKOFF_MILLIS),
        }
    }

    /// Uses another API root, such as `http://localhost:11434/v1` for Ollama.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Uses a fixed per-attempt timeout instead of one sized to each call's output budget.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Uses another pause before the retry.
    pub fn with_retry_backoff(mut self, retry_backoff: Duration) -> Self {
        self.retry_backoff = retry_backoff;
        self
    }
}

/// The Chat Completions API of an OpenAI-compatible server, with one retry on a 5xx or
/// overload and a timeout sized to each call's output budget.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    endpoint: String,
    timeout: Option<Duration>,
    retry_backoff: Duration,
}

impl OpenAiClient {
    /// Builds a client. Fails if the key cannot be sent as an HTTP header, the base URL is not
    /// an http(s) URL, or the HTTP stack cannot start.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    LlmError::Configuration(
                        "the API key contains characters an HTTP header cannot carry".to_owned(),
                    )
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let http = steward_net::client_builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(HTTP_CONNECT_TIMEOUT_SECS))
            .read_timeout(Duration::from_secs(OPENAI_READ_TIMEOUT_SECS))
            .build()
            .map_err(|error| {
                LlmError::Configuration(format!("could not start the HTTP client: {error}"))
            })?;
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let url = reqwest::Url::parse(&endpoint).map_err(|error| {
            LlmError::Configuration(format!(
                "the base URL {:?} is not a URL: {error}",
                config.base_url
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::Configuration(format!(
                "the base URL {:?} is not an http(s) URL",
                config.base_url
            )));
        }
        Ok(Self {
            http,
            endpoint,
            timeout: config.timeout,
            retry_backoff: config.retry_backoff,
        })
    }

    /// One attempt. `body` is shared with the retry, not copied for each attempt.
    async fn attempt(
        &self,
        body: &Bytes,
        model: &str,
        timeout: Duration,
    ) -> Result<Bytes, LlmError> {
        let started = Instant::now();
        let response = self
            .http
            .post(&self.endpoint)
            .timeout(timeout)
            .body(body.clone())
            .send()
            .await
            .map_err(transport_error)?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let bytes = response.bytes().await.map_err(transport_error)?;
        tracing::debug!(
            status,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "model call answered"
        );
        if (200..300).contains(&status) {
            Ok(bytes)
        } else {
            Err(status_error(status, retry_after, &bytes, model))
        }
    }

    async fn send(&self, request: &ChatRequest, timeout: Duration) -> Result<Bytes, LlmError> {
        let body = serde_json::to_vec(request).map_err(|error| LlmError::InvalidRequest {
            message: format!("could not encode the request: {error}"),
            kind: InvalidKind::Other,
        })?;
        let body = Bytes::from(body);
        with_one_retry(self.retry_backoff, || {
            self.attempt(&body, &request.model, timeout)
        })
        .await
    }
}

#[async_trait]
impl LlmClient for OpenAiClient {
    fn provider_name(&self) -> &'static str {
        "openai"
    }

    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let mut chat = to_chat(request)?;
        let timeout = self
            .timeout
            .unwrap_or_else(|| model_call_timeout(request.max_tokens));
        let mut spent = Usage::default();
        let mut corrections = 0;
        loop {
            let body = self.send(&chat, timeout).await?;
            let read = read_response(&body, &request.model)?;
            add_usage(&mut spent, &read.response.usage);
            if read.broken.is_empty() {
                let mut response = read.response;
                response.usage = spent;
                return Ok(response);
            }
            if corrections >= TOOL_ARGUMENT_CORRECTIONS_MAX {
                let problems: Vec<String> = read
                    .broken
                    .iter()
                    .map(|b| format!("{}: {}", b.name, b.problem))
                    .collect();
                return Err(LlmError::MalformedResponse {
                    message: format!(
                        "the model kept writing unreadable tool arguments ({}); nothing was kept",
                        problems.join("; ")
                    ),
                });
            }
            corrections += 1;
            tracing::info!(
                calls = read.broken.len(),
                "the model wrote unreadable tool arguments; asking it to correct them"
            );
            let replies = correction_messages(&read.raw_assistant, &read.broken);
            chat.messages.push(read.raw_assistant);
            chat.messages.extend(replies);
        }
    }
}

fn add_usage(total: &mut Usage, more: &Usage) {
    total.input_tokens += more.input_tokens;
    total.output_tokens += more.output_tokens;
    total.cache_creation_input_tokens += more.cache_creation_input_tokens;
    total.cache_read_input_tokens += more.cache_read_input_tokens;
    for (key, value) in &more.extra {
        let sum =
            total.extra.get(key).and_then(Value::as_u64).unwrap_or(0) + value.as_u64().unwrap_or(0);
        total.extra.insert(key.clone(), Value::from(sum));
    }
}

/// The error envelope's message and code, whichever of the common shapes the server used:
/// `{"error":{"message","type","code"}}` (OpenAI, vLLM, LiteLLM), `{"error":"…"}` (Ollama),
/// `{"message":"…"}` or `{"detail":"…"}`; otherwise the start of the body.
fn error_details(body: &[u8]) -> (String, String) {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return (body_snippet(body), String::new());
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let error = value.get("error");
    let message = text(error.and_then(|e| e.get("message")))
        .or_else(|| text(error))
        .or_else(|| text(value.get("message")))
        .or_else(|| text(value.get("detail")))
        .unwrap_or_else(|| body_snippet(body));
    let code = text(error.and_then(|e| e.get("code")))
        .or_else(|| text(error.and_then(|e| e.get("type"))))
        .unwrap_or_default();
    (message, code)
}

/// The typed error for a non-success status.
fn status_error(status: u16, retry_after: Option<Duration>, body: &[u8], model: &str) -> LlmError {
    let (message, code) = error_details(body);
    let lower = message.to_ascii_lowercase();
    match (status, code.as_str()) {
        // An exhausted prepaid quota is not a passing rate limit.
        (429, "insufficient_quota") => LlmError::Api { status, message },
        (429, _) => LlmError::RateLimited { retry_after },
        (401 | 403, _) => LlmError::Authentication { message },
        (_, "model_not_found") => LlmError::ModelUnavailable {
            model: model.to_owned(),
            message,
        },
        (404, _) if lower.contains("model") => LlmError::ModelUnavailable {
            model: model.to_owned(),
            message,
        },
        (_, "context_length_exceeded") => LlmError::ContextWindowExceeded { message },
        (400 | 413 | 422, _) => LlmError::invalid_request(message),
        (408 | 504, _) => LlmError::Timeout,
        (503 | 529, _) => LlmError::Overloaded,
        _ => LlmError::Api { status, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_statuses_map_to_typed_errors() {
        let openai = |message: &str, kind: &str, code: &str| {
            serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
                .to_string()
        };
        assert_eq!(
            status_error(
                429,
                Some(Duration::from_secs(2)),
                openai(
                    "Rate limit reached for gpt-5-mini",
                    "requests",
                    "rate_limit_exceeded"
                )
                .as_bytes(),
                "m"
            ),
            LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        assert!(matches!(
            status_error(
                429,
                None,
                openai(
                    "You exceeded your current quota",
                    "insufficient_quota",
                    "insufficient_quota"
                )
                .as_bytes(),
                "m"
            ),
            LlmError::Api { status: 429, .. }
        ));
        assert!(matches!(
            status_error(
                401,
                None,
                openai(
                    "Incorrect API key provided",
                    "invalid_request_error",
                    "invalid_api_key"
                )
                .as_bytes(),
                "m"
            ),
            LlmError::Authentication { .. }
        ));
        assert_eq!(
            status_error(
                404,
                None,
                openai(
                    "The model `gpt-9` does not exist or you do not have access to it.",
                    "invalid_request_error",
                    "model_not_found"
                )
                .as_bytes(),
                "gpt-9"
            ),
            LlmError::ModelUnavailable {
                model: "gpt-9".to_owned(),
                message: "The model `gpt-9` does not exist or you do not have access to it."
                    .to_owned()
            }
        );
        assert!(matches!(
            status_error(
                404,
                None,
                br#"{"error":"model 'llama9' not found"}"#,
                "llama9"
            ),
            LlmError::ModelUnavailable { .. }
        ));
        assert!(matches!(
            status_error(400, None, openai("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "invalid_request_error", "context_length_exceeded").as_bytes(), "m"),
            LlmError::ContextWindowExceeded { .. }
        ));
        assert!(matches!(
            status_error(
                400,
                None,
                openai(
                    "Unsupported parameter: 'temperature' is not supported with this model.",
                    "invalid_request_error",
                    "unsupported_parameter"
                )
                .as_bytes(),
                "m"
            ),
            LlmError::InvalidRequest {
                kind: InvalidKind::OptionalFeatureRejected,
                ..
            }
        ));
        assert_eq!(
            status_error(503, None, b"upstream overloaded", "m"),
            LlmError::Overloaded
        );
        assert_eq!(status_error(504, None, b"", "m"), LlmError::Timeout);
        assert_eq!(
            status_error(502, None, b"<html>bad gateway</html>", "m"),
            LlmError::Api {
                status: 502,
                message: "<html>bad gateway</html>".to_owned()
            }
        );
        assert_eq!(
            status_error(500, None, br#"{"detail":"engine crashed"}"#, "m"),
            LlmError::Api {
                status: 500,
                message: "engine crashed".to_owned()
            }
        );
    }

    #[test]
    fn the_key_never_shows_and_the_base_url_is_checked() {
        let config = OpenAiConfig::new(Some("sk-proj-very-secret".to_owned()));
        assert!(!format!("{config:?}").contains("very-secret"));
        let client = OpenAiClient::new(config).expect("client");
        assert!(!format!("{client:?}").contains("very-secret"));
        assert!(matches!(
            OpenAiClient::new(OpenAiConfig::new(None).with_base_url("localhost:11434/v1")),
            Err(LlmError::Configuration(_))
        ));
        assert!(matches!(
            OpenAiClient::new(OpenAiConfig::new(Some("bad\nkey".to_owned()))),
            Err(LlmError::Configuration(_))
        ));
    }
}
