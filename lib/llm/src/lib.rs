//! `steward-llm`: how Steward talks to a model.
//!
//! - [`LlmClient`] (`client`): the one-method seam the harness depends on.
//! - `wire`: the Anthropic Messages API types, lossless on replay and deterministic to
//!   serialize, plus [`text_of`], [`tool_uses`] and [`strip_reasoning`].
//! - [`AnthropicClient`] (`http`): the Claude API over HTTPS, streamed; `messages_stream`
//!   assembles its server-sent events into the non-streamed response.
//! - [`BedrockClient`] (`bedrock`): any model on Amazon Bedrock through the Converse API, with
//!   IAM credentials, streamed; `converse` maps requests and responses and knows what each model
//!   family takes ([`ConverseFeatures`]); `converse_stream` assembles the streamed events.
//! - [`OpenAiClient`] (`openai`): any OpenAI-compatible server through Chat Completions;
//!   `chat_completions` holds the wire format and its mapping.
//! - [`ScriptedClient`] (`scripted`): a canned script for tests, recording every request.
//! - [`ReplayClient`] (`replay`): replays a scripted conversation from a JSON file, for demos
//!   and browser tests without the network.
//! - `choice`: which model the settings name ([`choice::ModelProvider`]), without a client.
//! - `media`: images and documents kept as blob-store references ([`STORED_SOURCE_TYPE`]) and
//!   their resolution to the same base64 bytes before every call.
//! - [`LlmError`] (`error`): typed failures shared by all clients; `limits`: the named limits.
//!
//! Architecture invariant: this crate knows nothing about conversations, tools or storage; it
//! moves one request and one response.

#[cfg(feature = "bedrock")]
pub mod bedrock;
#[cfg(feature = "http")]
pub mod chat_completions;
pub mod choice;
pub mod client;
#[cfg(feature = "bedrock")]
pub mod converse;
#[cfg(feature = "bedrock")]
mod converse_stream;
pub mod error;
#[cfg(feature = "http")]
pub mod http;
pub mod limits;
pub mod media;
#[cfg(feature = "http")]
mod message_json;
#[cfg(feature = "http")]
mod messages_stream;
#[cfg(feature = "http")]
pub mod openai;
pub mod pricing;
pub mod replay;
#[cfg(feature = "http")]
mod request_body;
#[cfg(any(feature = "http", feature = "bedrock"))]
mod retry;
pub mod scripted;
#[cfg(feature = "testing")]
pub mod testing;
pub mod wire;

#[cfg(feature = "bedrock")]
pub use bedrock::{BedrockClient, BedrockConfig};
#[cfg(feature = "http")]
pub use chat_completions::DROPPED_FEATURES as OPENAI_DROPPED_FEATURES;
pub use client::LlmClient;
#[cfg(feature = "bedrock")]
pub use converse::ConverseFeatures;
pub use error::{InvalidKind, LlmError};
#[cfg(feature = "http")]
pub use http::{AnthropicClient, AnthropicConfig, ApiKey};
pub use limits::{
    DEFAULT_BEDROCK_MODEL, DEFAULT_MODEL, DEFAULT_OPENAI_BASE_URL, MODEL_OUTPUT_TOKENS_PER_SEC_MIN,
    MODEL_START_SECS, MODEL_STREAM_IDLE_SECS, OUTPUT_TOKENS_MAX, model_call_timeout,
};
pub use media::{MissingMedia, STORED_SOURCE_TYPE, resolve_stored_media, stored_media_keys};
#[cfg(feature = "http")]
pub use openai::{OpenAiClient, OpenAiConfig};
pub use replay::{ReplayClient, ReplayError};
pub use scripted::ScriptedClient;
pub use wire::{
    CacheControl, ContentBlock, CreateRequest, CreateResponse, DocumentBlock, DocumentSource,
    Effort, Extra, ImageBlock, ImageSource, Message, OutputConfig, RedactedThinkingBlock, Role,
    StopReason, SystemBlock, TextBlock, ThinkingBlock, ThinkingConfig, ThinkingDisplay,
    ToolResultBlock, ToolResultContent, ToolSpec, ToolUseBlock, Usage, strip_reasoning, text_of,
    tool_uses,
};
