//! Any model on Amazon Bedrock through the Converse API, with IAM credentials and no key.
//!
//! Answers are streamed (`ConverseStream`) and assembled ([`crate::converse_stream`]) into the
//! same response a `Converse` call gives: a stall fails after the idle timeout
//! ([`MODEL_STREAM_IDLE_SECS`]) while an answer that keeps coming may run up to the ceiling
//! sized to its output budget ([`model_call_timeout`]).
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
use aws_sdk_bedrockruntime::operation::converse_stream::ConverseStreamError;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_smithy_types::body::SdkBody;

use crate::client::LlmClient;
use crate::converse::{ConverseInput, canonical_json, to_converse};
use crate::converse_stream::StreamAssembler;
use crate::error::LlmError;
use crate::error::body_snippet;
use crate::limits::{
    HTTP_CONNECT_TIMEOUT_SECS, MODEL_RETRY_BACKOFF_MILLIS, MODEL_START_SECS,
    MODEL_STREAM_IDLE_SECS, model_call_timeout,
};
use crate::retry::{Failed, with_one_retry_unless_started};
use crate::wire::{CreateRequest, CreateResponse};

/// Settings of a [`BedrockClient`] beyond what the `SdkConfig` carries.
#[derive(Debug, Clone)]
pub struct BedrockConfig {
    /// Anthropic beta features, sent to Claude models as `anthropic_beta` in the additional
    /// model request fields; none means no field (other models never get it).
    pub betas: Vec<String>,
    /// The ceiling on one whole attempt; `None` (the default) sizes it to each call's
    /// `max_tokens` ([`model_call_timeout`]).
    pub timeout: Option<Duration>,
    /// The longest silence allowed between two events of a streamed answer (default
    /// [`MODEL_STREAM_IDLE_SECS`]).
    pub idle_timeout: Duration,
    /// The pause before the single retry (default [`MODEL_RETRY_BACKOFF_MILLIS`]).
    pub retry_backoff: Duration,
}

impl Default for BedrockConfig {
    fn default() -> Self {
        Self {
            betas: Vec::new(),
            timeout: None,
            idle_timeout: Duration::from_secs(MODEL_STREAM_IDLE_SECS),
            retry_backoff: Duration::from_millis(MODEL_RETRY_BACKOFF_MILLIS),
        }
    }
}

/// Any Bedrock model through `ConverseStream`; the request's `model` is the Bedrock model id,
/// inference-profile id or ARN. Same rules as the HTTP client: one retry on an overload or a
/// 5xx before any output, an idle timeout between events and a ceiling sized to each call's
/// output budget; the SDK's own retries are off and its operation timeouts are ours, so the
/// rules are ours alone.
#[derive(Debug, Clone)]
pub struct BedrockClient {
    client: aws_sdk_bedrockruntime::Client,
    betas: Vec<String>,
    timeout: Option<Duration>,
    idle_timeout: Duration,
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
        // Connecting and the wait for the answer's first byte are bounded here; each attempt
        // as a whole, and the silence between its events, by our own timeouts (an SDK
        // operation timeout would cut a long answer that is still streaming).
        let timeouts = sdk_config
            .timeout_config()
            .map(TimeoutConfig::to_builder)
            .unwrap_or_default()
            .connect_timeout(Duration::from_secs(HTTP_CONNECT_TIMEOUT_SECS))
            .read_timeout(Duration::from_secs(MODEL_START_SECS))
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
            idle_timeout: config.idle_timeout,
            retry_backoff: config.retry_backoff,
        }
    }

    /// One attempt under its ceiling. A failure is retryable only when no content block had
    /// started: once output began, it is being billed.
    async fn attempt(
        &self,
        model: &str,
        input: &ConverseInput,
        ceiling: Duration,
    ) -> Result<CreateResponse, Failed> {
        let mut assembler = StreamAssembler::default();
        let outcome =
            tokio::time::timeout(ceiling, self.exchange(model, input, &mut assembler)).await;
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
        model: &str,
        input: &ConverseInput,
        assembler: &mut StreamAssembler,
    ) -> Result<CreateResponse, LlmError> {
        let call = self
            .client
            .converse_stream()
            .model_id(model)
            .set_system((!input.system.is_empty()).then(|| input.system.clone()))
            .set_messages(Some(input.messages.clone()))
            .set_tool_config(input.tool_config.clone())
            .inference_config(input.inference.clone())
            .set_additional_model_request_fields(input.additional_fields.clone())
            .send();
        // Until the answer's headers arrive: the provider queues and reads the prompt.
        let mut output = tokio::time::timeout(Duration::from_secs(MODEL_START_SECS), call)
            .await
            .map_err(|_| LlmError::Timeout)?
            .map_err(|error| sdk_error(error, model))?;
        let id = match output.request_id() {
            Some(request) => format!("bedrock-{request}"),
            None => "bedrock".to_owned(),
        };
        loop {
            let event = tokio::time::timeout(self.idle_timeout, output.stream.recv())
                .await
                .map_err(|_| LlmError::Timeout)?
                .map_err(|error| sdk_error(error, model))?;
            match event {
                Some(event) => assembler.event(event)?,
                None => break,
            }
        }
        std::mem::take(assembler).finish(model, id)
    }
}

#[async_trait]
impl LlmClient for BedrockClient {
    fn provider_name(&self) -> &'static str {
        "aws.bedrock"
    }

    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        request.ensure_media_resolved()?;
        let input = to_converse(request, &self.betas)?;
        let timeout = self
            .timeout
            .unwrap_or_else(|| model_call_timeout(request.max_tokens));
        with_one_retry_unless_started(self.retry_backoff, || {
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

/// What a Bedrock service exception means, whichever operation or stream raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServiceKind {
    Throttling,
    ModelTimeout,
    Unavailable,
    NotFound,
    Validation,
    AccessDenied,
    /// The model's own failure, with the status it gave (529 and 429 mean what they say).
    Model(Option<i32>),
    Other,
}

/// The exceptions of `Converse`, of `ConverseStream`'s initial answer and of its stream.
trait BedrockServiceError: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static {
    fn kind(&self) -> ServiceKind;
}

impl BedrockServiceError for ConverseError {
    fn kind(&self) -> ServiceKind {
        match self {
            Self::ThrottlingException(_) => ServiceKind::Throttling,
            Self::ModelTimeoutException(_) => ServiceKind::ModelTimeout,
            Self::ServiceUnavailableException(_) | Self::ModelNotReadyException(_) => {
                ServiceKind::Unavailable
            }
            Self::ResourceNotFoundException(_) => ServiceKind::NotFound,
            Self::ValidationException(_) => ServiceKind::Validation,
            Self::AccessDeniedException(_) => ServiceKind::AccessDenied,
            Self::ModelErrorException(inner) => ServiceKind::Model(inner.original_status_code()),
            _ => ServiceKind::Other,
        }
    }
}

impl BedrockServiceError for ConverseStreamError {
    fn kind(&self) -> ServiceKind {
        match self {
            Self::ThrottlingException(_) => ServiceKind::Throttling,
            Self::ModelTimeoutException(_) => ServiceKind::ModelTimeout,
            Self::ServiceUnavailableException(_) | Self::ModelNotReadyException(_) => {
                ServiceKind::Unavailable
            }
            Self::ResourceNotFoundException(_) => ServiceKind::NotFound,
            Self::ValidationException(_) => ServiceKind::Validation,
            Self::AccessDeniedException(_) => ServiceKind::AccessDenied,
            Self::ModelErrorException(inner) => ServiceKind::Model(inner.original_status_code()),
            Self::ModelStreamErrorException(inner) => {
                ServiceKind::Model(inner.original_status_code())
            }
            _ => ServiceKind::Other,
        }
    }
}

impl BedrockServiceError for ConverseStreamOutputError {
    fn kind(&self) -> ServiceKind {
        match self {
            Self::ThrottlingException(_) => ServiceKind::Throttling,
            Self::ServiceUnavailableException(_) => ServiceKind::Unavailable,
            Self::ValidationException(_) => ServiceKind::Validation,
            Self::ModelStreamErrorException(inner) => {
                ServiceKind::Model(inner.original_status_code())
            }
            _ => ServiceKind::Other,
        }
    }
}

/// Maps an SDK failure (of the call, or of an event in its stream) to the shared error type.
fn sdk_error<E: BedrockServiceError, R>(error: SdkError<E, R>, model: &str) -> LlmError
where
    R: RawBody + std::fmt::Debug,
{
    match error {
        // An exception inside a stream arrives after the answer's 200; it stands for a 5xx.
        SdkError::ServiceError(context) if context.raw().in_stream() => {
            service_error(context.err(), 500, model)
        }
        SdkError::ServiceError(context) => {
            let status = context.raw().status();
            if (200..300).contains(&status) {
                // A success status whose body the SDK could not read as an answer.
                let body = context.raw().body_bytes().map(body_snippet);
                return LlmError::MalformedResponse {
                    message: format!(
                        "{}; the body starts: {}",
                        DisplayErrorContext(context.err()),
                        body.unwrap_or_else(|| "(body not available)".to_owned())
                    ),
                };
            }
            service_error(context.err(), status, model)
        }
        SdkError::TimeoutError(_) => LlmError::Timeout,
        SdkError::DispatchFailure(ref failure) if failure.is_timeout() => LlmError::Timeout,
        ref failure @ SdkError::ResponseError(ref context) => {
            let body = context
                .raw()
                .body_bytes()
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

/// The raw side of an SDK failure: an HTTP response (a call) or an event-stream message (a
/// stream's exception).
trait RawBody {
    fn in_stream(&self) -> bool;
    fn status(&self) -> u16;
    fn body_bytes(&self) -> Option<&[u8]>;
}

impl RawBody for aws_sdk_bedrockruntime::config::http::HttpResponse {
    fn in_stream(&self) -> bool {
        false
    }
    fn status(&self) -> u16 {
        self.status().as_u16()
    }
    fn body_bytes(&self) -> Option<&[u8]> {
        self.body().bytes()
    }
}

impl RawBody for aws_smithy_types::event_stream::RawMessage {
    fn in_stream(&self) -> bool {
        true
    }
    fn status(&self) -> u16 {
        // Exceptions in a stream come after the answer's 200.
        200
    }
    fn body_bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Decoded(message) => Some(message.payload().as_ref()),
            Self::Invalid(bytes) => bytes.as_ref().map(|bytes| bytes.as_ref()),
            _ => None,
        }
    }
}

/// Maps a Bedrock service exception. Validation messages go through the same classifier as
/// the Claude API's (Bedrock passes the model's message on).
fn service_error<E: BedrockServiceError>(error: &E, status: u16, model: &str) -> LlmError {
    let message = error.message().unwrap_or_default().to_owned();
    let unavailable = |message: String| LlmError::ModelUnavailable {
        model: model.to_owned(),
        message,
    };
    match error.kind() {
        ServiceKind::Throttling => LlmError::RateLimited { retry_after: None },
        ServiceKind::ModelTimeout => LlmError::Timeout,
        ServiceKind::Unavailable => LlmError::Overloaded,
        ServiceKind::NotFound => unavailable(message),
        ServiceKind::Validation if names_unavailable_model(&message) => unavailable(message),
        ServiceKind::Validation => LlmError::invalid_request(message),
        ServiceKind::AccessDenied if names_unavailable_model(&message) => unavailable(message),
        ServiceKind::AccessDenied => LlmError::Authentication { message },
        ServiceKind::Model(Some(529)) => LlmError::Overloaded,
        ServiceKind::Model(Some(429)) => LlmError::RateLimited { retry_after: None },
        ServiceKind::Model(Some(code)) => LlmError::Api {
            status: u16::try_from(code).unwrap_or(status),
            message,
        },
        ServiceKind::Model(None) => LlmError::Api { status, message },
        ServiceKind::Other if error.code() == Some("ServiceQuotaExceededException") => {
            LlmError::RateLimited { retry_after: None }
        }
        ServiceKind::Other => LlmError::Api { status, message },
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
