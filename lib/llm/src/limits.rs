//! The model-call limits, each in one place with the reason for its value.

use std::time::Duration;

/// Seconds a model call may take before its first output: queueing at the provider, reading a
/// long prompt, starting to reason. Part of [`model_call_timeout`], and the wait for a streamed
/// answer's headers.
pub const MODEL_START_SECS: u64 = 60;

/// The slowest output a model call is allowed, in tokens per second. Current models write
/// 50-100 tokens per second; 40 leaves room for a loaded provider. Part of
/// [`model_call_timeout`].
pub const MODEL_OUTPUT_TOKENS_PER_SEC_MIN: u64 = 40;

/// The ceiling on one model call asking for up to `max_tokens` output tokens, however steadily
/// its answer streams: [`MODEL_START_SECS`] plus `max_tokens` at
/// [`MODEL_OUTPUT_TOKENS_PER_SEC_MIN`] (460 s for [`OUTPUT_TOKENS_MAX`]).
///
/// A fixed short timeout cut off long answers that were still being written, and the retry of
/// the same request was cut off again: two billed generations and no answer. Answers stream, so
/// a stall is caught much sooner by the idle timeout ([`MODEL_STREAM_IDLE_SECS`]); this ceiling
/// only bounds an answer that keeps coming, and a timed-out call is never retried
/// ([`crate::LlmError::is_retryable`]). Clients use a fixed ceiling instead only when their
/// config sets one (tests).
pub fn model_call_timeout(max_tokens: u32) -> Duration {
    Duration::from_secs(
        MODEL_START_SECS + u64::from(max_tokens).div_ceil(MODEL_OUTPUT_TOKENS_PER_SEC_MIN),
    )
}

/// The longest silence, in seconds, between two chunks of a streamed model answer before the
/// call counts as stalled ([`crate::LlmError::Timeout`]).
///
/// A healthy stream is rarely quiet for long: text, reasoning and tool input arrive as many
/// small deltas, and the Claude API sends `ping` events through quiet stretches. The longest
/// honest silence is reasoning whose text is not shown (omitted or redacted thinking), which
/// streams nothing until its signature; 60 s covers a few thousand reasoning tokens at a loaded
/// provider's pace. A stalled connection still fails within a minute instead of holding the
/// turn until the ceiling ([`model_call_timeout`], 460 s for the full output budget).
pub const MODEL_STREAM_IDLE_SECS: u64 = 60;

/// Seconds to open a TCP+TLS connection to a model provider (both HTTP clients).
///
/// A handshake takes milliseconds; 10 s rides out a slow DNS answer or one lost SYN, and an
/// unreachable provider is reported quickly as a transport error.
pub const HTTP_CONNECT_TIMEOUT_SECS: u64 = 10;

/// The longest silence, in seconds, on an OpenAI-compatible server's connection (reqwest's
/// read timeout, reset by every read).
///
/// That client does not stream, so the server sends nothing until the whole answer is
/// written: a read may legitimately wait as long as the ceiling for Steward's output budget
/// ([`model_call_timeout`] of [`OUTPUT_TOKENS_MAX`], 460 s). It is a backstop for a connection
/// that went silent; each call's own ceiling is usually the tighter bound.
pub const OPENAI_READ_TIMEOUT_SECS: u64 =
    MODEL_START_SECS + (OUTPUT_TOKENS_MAX as u64).div_ceil(MODEL_OUTPUT_TOKENS_PER_SEC_MIN);

/// How many times a model call is retried after a transient failure (5xx, overloaded).
///
/// Exactly one: a second attempt rides out a blip, while more attempts only make a person wait
/// minutes for an answer that a friendly "try again in a minute" serves better. Rate limits are
/// never retried here; the harness tells the person instead. Timeouts are not retried either:
/// the provider may have generated (and billed) the whole answer.
pub const MODEL_RETRIES_MAX: u32 = 1;

/// Pause before the single retry, in milliseconds.
///
/// Short: it only has to step past a momentary overload, and the person is waiting.
pub const MODEL_RETRY_BACKOFF_MILLIS: u64 = 500;

/// The `max_tokens` Steward asks for on every model call.
///
/// A chat reply is short, but reasoning and several tool calls share this budget; 16,000 leaves
/// room for both while keeping a runaway answer bounded in cost and time (and below the point
/// where the API insists on streaming).
pub const OUTPUT_TOKENS_MAX: u32 = 16_000;

/// The model used when `STEWARD_MODEL` is not set: Claude Sonnet 5.5 on the Claude API.
///
/// The current Sonnet (released September 2026): the best mix of speed, cost and quality for a
/// texting assistant. It uses adaptive thinking steered by `output_config.effort`; it rejects
/// `thinking.type: "disabled"`, manual `budget_tokens`, forced `tool_choice` and non-default
/// sampling parameters, so the harness sets adaptive thinking and an explicit effort. Amazon
/// Bedrock has its own default, [`DEFAULT_BEDROCK_MODEL`]; OpenAI-compatible servers have none
/// (their model names differ per server, so `STEWARD_MODEL` is required there).
pub const DEFAULT_MODEL: &str = "claude-sonnet-5-5";

/// The model used on Amazon Bedrock when `STEWARD_MODEL` is not set: the same Claude Sonnet 5.5
/// through its global cross-region inference profile.
///
/// Current Claude models on Bedrock are served on demand only through an inference profile
/// (the bare `anthropic.…` model id is refused for on-demand throughput); the `global.` profile
/// is offered in every commercial region and routes to wherever capacity is. Teams bound to a
/// geography pick a regional profile instead (`us.`, `eu.`, `apac.`, `jp.` …).
pub const DEFAULT_BEDROCK_MODEL: &str = "global.anthropic.claude-sonnet-5-5";

/// The Chat Completions API root used when `OPENAI_BASE_URL` is not set (OpenAI's own API).
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// How many times one OpenAI-compatible call asks the model to rewrite tool arguments that were
/// not valid JSON before giving up with [`crate::LlmError::MalformedResponse`].
///
/// One: a model that wrote broken JSON usually fixes it when shown the parser's error, and a
/// second failure means something is wrong with the model or the server, not the wording.
pub const TOOL_ARGUMENT_CORRECTIONS_MAX: u32 = 1;

/// The `anthropic-version` header value for the Claude API (the only version there is).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Claude API root used when no base URL is configured (`ANTHROPIC_BASE_URL`).
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// How much of an unparseable error body is kept in an error message, in characters.
///
/// Enough to recognise an HTML error page or a proxy's message; bounded so a huge body never
/// ends up in a log line.
pub const ERROR_BODY_CHARS_MAX: usize = 500;
