//! The spans of a turn, named and attributed after the OpenTelemetry GenAI semantic
//! conventions (see ARCHITECTURE.md for the version): the turn (`invoke_agent steward`), each
//! model call (`chat {model}`), each tool call (`execute_tool {tool}`) and the reply's send
//! (`send {channel}`). They are ordinary `tracing` spans; `steward_edge::telemetry` exports
//! them when an OTLP endpoint is set, and without it they are the log lines' context as before.
//!
//! Levels: the turn and each tool call are INFO spans, so a log line written inside them names
//! the conversation, the turn and the tool. The model call and the send are DEBUG spans: their
//! attributes are telemetry (model, token counts, buttons), a log line inside them still names
//! its turn, and at the default log level they cost nothing unless traces are exported
//! (`steward_edge::telemetry` exports this module's DEBUG spans too). Each INFO span's fields are
//! written out as text when it is made and when a field is recorded, whether or not a line is
//! ever logged inside it: for the two model calls and the send of a turn that was about 1.3 % of
//! a turn's CPU on `steward serve` (bench/RESULTS.md, sixteenth round).
//!
//! Attributes are ids, counts, names and kinds only — never message text, tool arguments or
//! results, or what a provider answered. A tool name or call id the model made up is not
//! recorded as it is ([`tool_name_or_unknown`], [`ToolUseId`](crate::ids::ToolUseId)).

use opentelemetry::{Array, StringValue, Value};
use steward_llm::{CreateResponse, LlmError};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::ids::{ChannelName, ConversationKey};
use crate::outcome::ToolOutcome;

/// `gen_ai.agent.name` of every turn.
pub const AGENT_NAME: &str = "steward";

/// `steward.tool.outcome`: what the gate and the tool made of one call.
pub const TOOL_OUTCOME: &str = "steward.tool.outcome";

/// What became of one tool call, as [`TOOL_OUTCOME`] records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallOutcome {
    /// Held for the person's confirmation; nothing ran.
    Held,
    /// Ran after the person confirmed it.
    Confirmed,
    /// Ran without needing a confirmation.
    Ran,
    /// Refused before running: unknown tool, arguments that do not fit, or the declaration
    /// said no.
    Refused,
}

impl ToolCallOutcome {
    /// The attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Held => "held",
            Self::Confirmed => "confirmed",
            Self::Ran => "ran",
            Self::Refused => "refused",
        }
    }
}

/// The span of one turn of `conversation` (`invoke_agent`).
pub fn turn_span(conversation: &ConversationKey, turn: u64, resumed: bool) -> Span {
    tracing::info_span!(
        "turn",
        otel.name = concat!("invoke_agent ", "steward"),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = AGENT_NAME,
        gen_ai.conversation.id = %conversation,
        conversation = %conversation,
        turn = i64::try_from(turn).unwrap_or(i64::MAX),
        resumed,
    )
}

/// The span of one model request (`chat`), to be completed by [`record_response`] or
/// [`record_model_error`].
pub fn chat_span(provider: &str, model: &str) -> Span {
    tracing::debug_span!(
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        error.type = Empty,
    )
}

/// Records a response's stop reason and tokens on its [`chat_span`]. The conventions count
/// cached tokens inside `gen_ai.usage.input_tokens`; the Messages API reports them apart, so
/// the three are summed.
pub fn record_response(span: &Span, response: &CreateResponse) {
    let usage = &response.usage;
    let input = usage
        .input_tokens
        .saturating_add(usage.cache_read_input_tokens)
        .saturating_add(usage.cache_creation_input_tokens);
    // Integers go out as i64 (OpenTelemetry has no unsigned type; a `u64` field is exported
    // as a string).
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", int(input));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cache_read_input_tokens),
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int(usage.cache_creation_input_tokens),
    );
    if let Some(reason) = &response.stop_reason {
        // A string array in the conventions, which `tracing` fields cannot carry.
        span.set_attribute(
            "gen_ai.response.finish_reasons",
            Value::Array(Array::String(vec![StringValue::from(
                reason.as_str().to_owned(),
            )])),
        );
    }
}

/// Records a failed model request on its [`chat_span`]: the kind of failure, never its
/// message.
pub fn record_model_error(span: &Span, error: &LlmError) {
    span.record("otel.status_code", "ERROR");
    span.record(
        "error.type",
        crate::metrics::ModelFailureKind::of(error).as_str(),
    );
}

/// The span of one tool call (`execute_tool`): `name` as [`tool_name_or_unknown`] gave it,
/// `call_id` the model's `tool_use` id when it is a usable one.
pub fn tool_span(name: &str, call_id: Option<&str>) -> Span {
    tracing::info_span!(
        "tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.id = call_id,
        steward.tool.outcome = Empty,
        error.type = Empty,
    )
}

/// The name a tool call's span carries: `name` when Steward has such a tool, else `unknown`
/// (a name the model made up is its own text).
pub fn tool_name_or_unknown(name: &str, known: bool) -> &str {
    if known { name } else { "unknown" }
}

/// Records what became of the tool call whose span is current (a no-op outside one, e.g. an
/// MCP or web call through the gate).
pub fn record_tool_outcome(outcome: ToolCallOutcome) {
    Span::current().record(TOOL_OUTCOME, outcome.as_str());
}

/// Records a tool call's failure kind on its [`tool_span`] (nothing for a success).
pub fn record_tool_result(span: &Span, outcome: &ToolOutcome) {
    if let ToolOutcome::Err(error) = outcome {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", error.kind.as_str());
    }
}

/// Records a tool call that could not be finished (the store failed) on its [`tool_span`].
pub fn record_tool_failure(span: &Span) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", "store");
}

/// The span of one reply sent on `channel` (`send`): `buttons` offered with it.
pub fn send_span(channel: &ChannelName, buttons: usize) -> Span {
    tracing::debug_span!(
        "send",
        otel.name = %format_args!("send {}", channel.as_str()),
        otel.kind = "client",
        otel.status_code = Empty,
        steward.channel = channel.as_str(),
        steward.reply.buttons = i64::try_from(buttons).unwrap_or(i64::MAX),
        error.type = Empty,
    )
}

/// Records a failed send on its [`send_span`].
pub fn record_send_failure(span: &Span) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", "send_failed");
}
