//! Any model on Amazon Bedrock through the Converse API, with IAM credentials and no key.
//!
//! Converse covers everything the harness uses (system prompt, tools and their results, cache
//! points, reasoning with signatures, usage with cache reads and writes, every stop reason), and
//! Claude-only request fields (thinking, effort, betas) travel in its
//! `additionalModelRequestFields`, so `InvokeModel` is not used at all. The mapping lives in
//! [`crate::converse`].
//!
//! A model id that Bedrock does not serve here (unknown, not enabled for the account, not in the
//! region, or only reachable through an inference profile) is reported as
//! [`LlmError::ModelUnavailable`] on the first call. That costs nothing at start-up: checking
//! beforehand would need either a paid model call on every cold start or the control-plane API
//! and its extra IAM permissions.

use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_bedrockruntime::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::timeout::TimeoutConfig;
use aws_sdk_bedrockruntime::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_bedrockruntime::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::RequestId;
use aws_sdk_bedrockruntime::operation::converse::ConverseError;
use aws_smithy_types::body::SdkBody;

use crate::client::LlmClient;
use crate::converse::{ConverseInput, canonical_json, from_converse, to_converse};
use crate::error::LlmError;
use crate::error::body_snippet;
use crate::limits::{MODEL_RETRY_BACKOFF_MILLIS, model_call_timeout};
use crate::retry::with_one_retry;
use crate::wire::{CreateRequest, CreateResponse};

/// Settings of a [`BedrockClient`] beyond what the `SdkConfig` carries.
#[derive(Debug, Clone)]
pub struct BedrockConfig {
    /// Anthropic beta features, sent to Claude models as `anthropic_beta` in the additional
    /// model request fields; none means no field (other models never get it).
    pub betas: Vec<String>,
    /// How long one attempt may take; `None` (the default) sizes each call's timeout to its
    /// `max_tokens` ([`model_call_timeout`]).
    pub timeout: Option<Duration>,
    /// The pause before the single retry (default [`MODEL_RETRY_BACKOFF_MILLIS`]).
    pub retry_backoff: Duration,
}

impl Default for BedrockConfig {
    fn default() -> Self {
        Self {
            betas: Vec::new(),
            timeout: None,
            retry_backoff: Duration::from_millis(MODEL_RETRY_BACKOFF_MILLIS),
        }
    }
}

/// Any Bedrock model through `Converse`; the request's `model` is the Bedrock model id,
/// inference-profile id or ARN. Same rules as the HTTP client: one retry on an overload or a
/// 5xx, a timeout sized to each call's output budget; the SDK's own retries are off and its
/// attempt timeout is ours, so the rules are ours alone.
#[derive(Debug, Clone)]
pub struct BedrockClient {
    client: aws_sdk_bedrockruntime::Client,
    betas: Vec<String>,
    timeout: Option<Duration>,
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
        // Keep the SDK's connect timeout; each attempt is bounded by our own timeout.
        let timeouts = sdk_config
            .timeout_config()
            .map(TimeoutConfig::to_builder)
            .unwrap_or_default()
            .disable_operation_attempt_timeout()
            .disable_operation_timeout()
            .build();
        let client_config = aws_sdk_bedrockruntime::config::Builder::from(sdk_config)
            .retry_config(RetryConfig::disabled())
            .timeout_config(timeouts)
            .interceptor(CanonicalJsonBody)
            .build();
        Self {
            client: aws_sdk_bedrockruntime::Client::from_conf(client_config),
            betas: config.betas,
            timeout: config.timeout,
            retry_backoff: config.retry_backoff,
        }
    }

    async fn attempt(
        &self,
        model: &str,
        input: &ConverseInput,
        timeout: Duration,
    ) -> Result<CreateResponse, LlmError> {
        let call = self
            .client
            .converse()
            .model_id(model)
            .set_system((!input.system.is_empty()).then(|| input.system.clone()))
            .set_messages(Some(input.messages.clone()))
            .set_tool_config(input.tool_config.clone())
            .inference_config(input.inference.clone())
            .set_additional_model_request_fields(input.additional_fields.clone())
            .send();
        let output = tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| LlmError::Timeout)?
            .map_err(|error| sdk_error(error, model))?;
        let id = match output.request_id() {
            Some(request) => format!("bedrock-{request}"),
            None => "bedrock".to_owned(),
        };
        from_converse(output, model, id)
    }
}

#[async_trait]
impl LlmClient for BedrockClient {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let input = to_converse(request, &self.betas)?;
        let timeout = self
            .timeout
            .unwrap_or_else(|| model_call_timeout(request.max_tokens));
        with_one_retry(self.retry_backoff, || {
            self.attempt(&request.model, &input, timeout)
        })
        .await
    }
}

/// Rewrites the serialized request with sorted object keys before it is signed, so the same
/// request is the same bytes on every call (see [`canonical_json`]).
#[derive(Debug)]
struct CanonicalJsonBody;

impl Intercept for CanonicalJsonBody {
    fn name(&self) -> &'static str {
        "CanonicalJsonBody"
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let request = context.request_mut();
        let Some(canonical) = request.body().bytes().and_then(canonical_json) else {
            return Ok(());
        };
        let length = canonical.len().to_string();
        *request.body_mut() = SdkBody::from(canonical);
        request.headers_mut().insert("content-length", length);
        Ok(())
    }
}

/// Words in a Bedrock message that say the model id itself is the problem.
const MODEL_UNAVAILABLE_PHRASES: &[&str] = &[
    "model identifier is invalid",
    "on-demand throughput",
    "inference profile",
    "end of its life",
    "access to the model",
    "model not found",
    "not supported in this region",
    "is not available in this region",
];

fn names_unavailable_model(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    MODEL_UNAVAILABLE_PHRASES
        .iter()
        .any(|phrase| lower.contains(phrase))
}

/// Maps an SDK failure to the shared error type.
fn sdk_error(error: SdkError<ConverseError>, model: &str) -> LlmError {
    match error {
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            if (200..300).contains(&status) {
                // A success status whose body the SDK could not read as a Converse answer.
                let body = context.raw().body().bytes().map(body_snippet);
                return LlmError::MalformedResponse {
                    message: format!(
                        "{}; the body starts: {}",
                        DisplayErrorContext(context.err()),
                        body.unwrap_or_else(|| "(body not available)".to_owned())
                    ),
                };
            }
            service_error(context.into_err(), status, model)
        }
        SdkError::TimeoutError(_) => LlmError::Timeout,
        SdkError::DispatchFailure(ref failure) if failure.is_timeout() => LlmError::Timeout,
        ref failure @ SdkError::ResponseError(_) => {
            let body = failure
                .raw_response()
                .and_then(|response| response.body().bytes())
                .map(body_snippet)
                .unwrap_or_else(|| "(body not available)".to_owned());
            LlmError::MalformedResponse {
                message: format!("{}; the body starts: {body}", DisplayErrorContext(failure)),
            }
        }
        ref failure @ SdkError::ConstructionFailure(_) => {
            LlmError::Configuration(DisplayErrorContext(failure).to_string())
        }
        other => LlmError::Transport(DisplayErrorContext(&other).to_string()),
    }
}

/// Maps a Bedrock service exception. Validation messages go through the same classifier as
/// the Claude API's (Bedrock passes the model's message on).
fn service_error(error: ConverseError, status: u16, model: &str) -> LlmError {
    let message = error.message().unwrap_or_default().to_owned();
    let unavailable = |message: String| LlmError::ModelUnavailable {
        model: model.to_owned(),
        message,
    };
    match error {
        ConverseError::ThrottlingException(_) => LlmError::RateLimited { retry_after: None },
        ConverseError::ModelTimeoutException(_) => LlmError::Timeout,
        ConverseError::ServiceUnavailableException(_)
        | ConverseError::ModelNotReadyException(_) => LlmError::Overloaded,
        ConverseError::ResourceNotFoundException(_) => unavailable(message),
        ConverseError::ValidationException(_) if names_unavailable_model(&message) => {
            unavailable(message)
        }
        ConverseError::ValidationException(_) => LlmError::invalid_request(message),
        ConverseError::AccessDeniedException(_) if names_unavailable_model(&message) => {
            unavailable(message)
        }
        ConverseError::AccessDeniedException(_) => LlmError::Authentication { message },
        ConverseError::ModelErrorException(inner) => {
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
        other if other.code() == Some("ServiceQuotaExceededException") => {
            LlmError::RateLimited { retry_after: None }
        }
        _ => LlmError::Api { status, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_about_the_model_id_are_recognised() {
        for message in [
            "The provided model identifier is invalid.",
            "Invocation of model ID anthropic.claude-sonnet-5-5 with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model.",
            "You don't have access to the model with the specified model ID.",
            "This model version has reached the end of its life. Please refer to the AWS documentation for more details.",
        ] {
            assert!(names_unavailable_model(message), "{message}");
        }
        for message in [
            "Input is too long for requested model.",
            "messages.1.content.0: Invalid `signature` in `thinking` block",
            "User: arn:aws:sts::1:assumed-role/x is not authorized to perform: bedrock:InvokeModel",
        ] {
            assert!(!names_unavailable_model(message), "{message}");
        }
    }
}
