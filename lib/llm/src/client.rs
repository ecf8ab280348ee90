//! The seam between the harness and a model provider: one method, `create`.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::LlmError;
use crate::wire::{CreateRequest, CreateResponse};

/// Something that answers a Messages API request: the Claude API, Bedrock, or a test script.
///
/// One method on purpose: everything a turn needs (system prompt, tools, history, reasoning
/// settings) travels in the request, so clients stay interchangeable and trivially faked.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// Sends one request and returns the model's complete response (the real clients stream
    /// it and hand back the assembled whole, the same as a non-streamed call would).
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError>;

    /// Who answers, as OpenTelemetry's `gen_ai.provider.name` names it (`anthropic`,
    /// `aws.bedrock`, `openai`); for telemetry only, never for behaviour.
    fn provider_name(&self) -> &'static str {
        "unknown"
    }
}

#[async_trait]
impl<T: LlmClient + ?Sized> LlmClient for Arc<T> {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        (**self).create(request).await
    }

    fn provider_name(&self) -> &'static str {
        (**self).provider_name()
    }
}
