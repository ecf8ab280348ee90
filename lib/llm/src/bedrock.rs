//! Claude on Amazon Bedrock: `InvokeModel` with the Messages API body, IAM credentials, no key.

use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::timeout::TimeoutConfig;
use aws_sdk_bedrockruntime::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::invoke_model::InvokeModelError;
use aws_sdk_bedrockruntime::primitives::Blob;
use serde_json::Value;

use crate::client::LlmClient;
use crate::error::{InvalidKind, LlmError};
use crate::limits::{
    BEDROCK_ANTHROPIC_VERSION, ERROR_BODY_CHARS_MAX, MODEL_RETRY_BACKOFF_MILLIS, MODEL_TIMEOUT_SECS,
};
use crate::retry::with_one_retry;
use crate::wire::{CreateRequest, CreateResponse};

/// Settings of a [`BedrockClient`] beyond what the `SdkConfig` carries.
#[derive(Debug, Clone)]
pub struct BedrockConfig {
    /// Beta features, sent as the body's `anthropic_beta` list; none means no field.
    pub betas: Vec<String>,
    /// How long one attempt may take (default [`MODEL_TIMEOUT_SECS`]).
    pub timeout: Duration,
    /// The pause before the single retry (default [`MODEL_RETRY_BACKOFF_MILLIS`]).
    pub retry_backoff: Duration,
}

impl Default for BedrockConfig {
    fn default() -> Self {
        Self {
            betas: Vec::new(),
            timeout: Duration::from_secs(MODEL_TIMEOUT_SECS),
            retry_backoff: Duration::from_millis(MODEL_RETRY_BACKOFF_MILLIS),
        }
    }
}

/// Claude on Bedrock through `InvokeModel`; the request's `model` is the Bedrock model id (or
/// inference profile). Same retry rule as the HTTP client: one retry on a timeout, an overload
/// or a 5xx; the SDK's own retries are off so the rule is ours alone.
#[derive(Debug, Clone)]
pub struct BedrockClient {
    client: aws_sdk_bedrockruntime::Client,
    betas: Vec<String>,
    retry_backoff: Duration,
}

impl BedrockClient {
    /// A client with the default [`BedrockConfig`], using the region, credentials and endpoint
    /// of `sdk_config` (so `AWS_ENDPOINT_URL` and friends apply).
    pub fn new(sdk_config: &SdkConfig) -> Self {
        Self::with_config(sdk_config, BedrockConfig::default())
    }

    /// A client with explicit settings.
    pub fn with_config(sdk_config: &SdkConfig, config: BedrockConfig) -> Self {
        // Keep the SDK's connect timeout; bound each attempt by our model timeout.
        let timeouts = sdk_config
            .timeout_config()
            .map(TimeoutConfig::to_builder)
            .unwrap_or_default()
            .operation_attempt_timeout(config.timeout)
            .build();
        let client_config = aws_sdk_bedrockruntime::config::Builder::from(sdk_config)
            .retry_config(RetryConfig::disabled())
            .timeout_config(timeouts)
            .build();
        Self {
            client: aws_sdk_bedrockruntime::Client::from_conf(client_config),
            betas: config.betas,
            retry_backoff: config.retry_backoff,
        }
    }

    async fn attempt(&self, model_id: &str, body: &[u8]) -> Result<CreateResponse, LlmError> {
        let output = self
            .client
            .invoke_model()
            .model_id(model_id)
            .content_type("application/json")
            .accept("application/json")
            .body(Blob::new(body.to_vec()))
            .send()
            .await
            .map_err(sdk_error)?;
        let bytes = output.body().as_ref();
        serde_json::from_slice(bytes).map_err(|error| LlmError::MalformedResponse {
            message: format!(
                "{error}; the body starts: {}",
                String::from_utf8_lossy(bytes)
                    .chars()
                    .take(ERROR_BODY_CHARS_MAX)
                    .collect::<String>()
            ),
        })
    }
}

#[async_trait]
impl LlmClient for BedrockClient {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let body = bedrock_body(request, &self.betas)?;
        with_one_retry(self.retry_backoff, || self.attempt(&request.model, &body)).await
    }
}

/// The Bedrock body: the Messages API request without `model` (it is in the path), plus
/// `anthropic_version` and, when betas are set, `anthropic_beta`.
pub fn bedrock_body(request: &CreateRequest, betas: &[String]) -> Result<Vec<u8>, LlmError> {
    let encode_error = |error: serde_json::Error| LlmError::InvalidRequest {
        message: format!("could not encode the request: {error}"),
        kind: InvalidKind::Other,
    };
    let mut body = match serde_json::to_value(request).map_err(encode_error)? {
        Value::Object(map) => map,
        other => {
            return Err(LlmError::InvalidRequest {
                message: format!("the request encoded to a non-object: {other}"),
                kind: InvalidKind::Other,
            });
        }
    };
    body.remove("model");
    body.insert(
        "anthropic_version".to_owned(),
        Value::String(BEDROCK_ANTHROPIC_VERSION.to_owned()),
    );
    if !betas.is_empty() {
        body.insert(
            "anthropic_beta".to_owned(),
            Value::Array(betas.iter().cloned().map(Value::String).collect()),
        );
    }
    serde_json::to_vec(&body).map_err(encode_error)
}

/// Maps an SDK failure to the shared error type.
fn sdk_error(error: SdkError<InvokeModelError>) -> LlmError {
    match error {
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            service_error(context.into_err(), status)
        }
        SdkError::TimeoutError(_) => LlmError::Timeout,
        SdkError::DispatchFailure(ref failure) if failure.is_timeout() => LlmError::Timeout,
        ref failure @ SdkError::ResponseError(_) => LlmError::MalformedResponse {
            message: DisplayErrorContext(failure).to_string(),
        },
        ref failure @ SdkError::ConstructionFailure(_) => {
            LlmError::Configuration(DisplayErrorContext(failure).to_string())
        }
        other => LlmError::Transport(DisplayErrorContext(&other).to_string()),
    }
}

/// Maps a Bedrock service exception. Validation messages go through the same classifier as
/// the Claude API's (Bedrock passes the model's message on).
fn service_error(error: InvokeModelError, status: u16) -> LlmError {
    let message = error.message().unwrap_or_default().to_owned();
    match error {
        InvokeModelError::ThrottlingException(_)
        | InvokeModelError::ServiceQuotaExceededException(_) => {
            LlmError::RateLimited { retry_after: None }
        }
        InvokeModelError::ModelTimeoutException(_) => LlmError::Timeout,
        InvokeModelError::ServiceUnavailableException(_)
        | InvokeModelError::ModelNotReadyException(_) => LlmError::Overloaded,
        InvokeModelError::ValidationException(_) => LlmError::invalid_request(message),
        InvokeModelError::AccessDeniedException(_) => LlmError::Authentication { message },
        InvokeModelError::ModelErrorException(inner) => {
            // The model's own status, passed through: 529 and 429 mean what they say.
            match inner.original_status_code() {
                Some(529) => LlmError::Overloaded,
                Some(429) => LlmError::RateLimited { retry_after: None },
                Some(code) => LlmError::Api {
                    status: u16::try_from(code).unwrap_or(status),
                    message,
                },
                None => LlmError::Api { status, message },
            }
        }
        _ => LlmError::Api { status, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Message;

    #[test]
    fn the_body_drops_model_and_adds_the_bedrock_fields() {
        let request = CreateRequest::new(
            "anthropic.claude-sonnet-5-5",
            100,
            vec![Message::user_text("hi")],
        );
        let body: Value =
            serde_json::from_slice(&bedrock_body(&request, &[]).expect("body")).expect("json");
        assert_eq!(
            body,
            serde_json::json!({
                "anthropic_version": "bedrock-2023-05-31",
                "max_tokens": 100,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
            })
        );
        let body: Value = serde_json::from_slice(
            &bedrock_body(&request, &["context-1m-2025-08-07".to_owned()]).expect("body"),
        )
        .expect("json");
        assert_eq!(
            body["anthropic_beta"],
            serde_json::json!(["context-1m-2025-08-07"])
        );
    }
}
