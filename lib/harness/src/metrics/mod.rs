//! Metrics without extra calls: what each turn did (latency, model calls, tokens, cache-read
//! share, tool errors, held actions) and the failures that do not fail an invocation (a model
//! error becomes a polite reply, a refused send finishes the turn, a dead-lettered message gets
//! an apology), counted where an operator can graph and alarm on them.
//!
//! The turn collects its numbers once, as a [`TurnMetrics`] ([`TurnTally`] adds them up while
//! it runs), and hands them to the process's [`MetricsRecorder`] — the port — at its end. Two
//! adapters: [`emf::EmfRecorder`] (the default; on Lambda, CloudWatch embedded-metric-format
//! lines on stdout, written only when [`ENV_METRICS_NAMESPACE`] names a namespace) and, in
//! `steward serve`, a Prometheus registry scraped on `/metrics` (in the `steward` binary, so
//! no function links it). A process installs its recorder once at start with [`install`].

pub mod emf;
mod tally;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use steward_llm::LlmError;

pub use self::tally::TurnTally;
use crate::ids::{ChannelName, ConversationKey};

/// The environment variable naming the namespace metric lines go to; unset or empty: none.
pub const ENV_METRICS_NAMESPACE: &str = "STEWARD_METRICS_NAMESPACE";
/// Failed model calls, with dimension [`KIND`].
pub const MODEL_FAILURES: &str = "ModelFailures";
/// Replies (or whole messages) that reached nobody, with dimension [`REASON`].
pub const REPLIES_NOT_SENT: &str = "RepliesNotSent";
/// Messages that ended on the dead-letter path (each run of it), with dimension [`CHANNEL`].
pub const DEAD_LETTERS: &str = "DeadLetters";
/// The dimension of [`MODEL_FAILURES`].
pub const KIND: &str = "Kind";
/// The dimension of [`REPLIES_NOT_SENT`].
pub const REASON: &str = "Reason";
/// The dimension of a turn's metrics: the channel's name (a handful of configured words,
/// never a user or conversation id).
pub const CHANNEL: &str = "Channel";

/// The names of a turn's metrics, as CloudWatch shows them (Prometheus uses the snake-case
/// names in the `steward` binary).
pub mod turn_names {
    /// Wall time from the claim of the message to the reply sent (milliseconds).
    pub const LATENCY: &str = "TurnLatency";
    /// Model calls the turn made (answered or failed).
    pub const MODEL_CALLS: &str = "ModelCalls";
    /// Every input token of the turn's answered calls: uncached, cache writes and cache reads.
    pub const INPUT_TOKENS: &str = "InputTokens";
    /// Output tokens, reasoning included.
    pub const OUTPUT_TOKENS: &str = "OutputTokens";
    /// Input tokens read from the prompt cache.
    pub const CACHE_READ_TOKENS: &str = "CacheReadTokens";
    /// Input tokens written to the prompt cache.
    pub const CACHE_WRITE_TOKENS: &str = "CacheWriteTokens";
    /// Cache-read tokens as a percentage of input tokens (only for turns with input).
    pub const CACHE_READ_SHARE: &str = "CacheReadShare";
    /// Tool calls the turn ran or held.
    pub const TOOL_CALLS: &str = "ToolCalls";
    /// Tool results marked as errors, held calls not included.
    pub const TOOL_ERRORS: &str = "ToolErrors";
    /// Tool calls the confirmation gate held for the person's approval.
    pub const HELD_ACTIONS: &str = "HeldActions";
    /// Model calls of the turn that failed (also counted by kind in `ModelFailures`).
    pub const MODEL_FAILURES: &str = "TurnModelFailures";
    /// Turns (one per line, so CloudWatch's SampleCount and Sum agree).
    pub const TURNS: &str = "Turns";
}

/// How a turn's attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The reply was recorded and sent (or the turn was silent); the message is done.
    Replied,
    /// The attempt failed (a store or send error); the queue retries the message.
    Failed,
}

impl TurnEnd {
    /// The value as metrics show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replied => "replied",
            Self::Failed => "failed",
        }
    }
}

/// What one attempt at a turn did, collected once where it ends. The counts are of this
/// attempt: a resumed turn reuses stored steps and does not count them again.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnMetrics {
    /// The channel (the one dimension).
    pub channel: ChannelName,
    /// The conversation (a plain property in logs, never a dimension or a label).
    pub conversation: ConversationKey,
    /// The turn's number in its conversation (a plain property too).
    pub turn: u64,
    /// How the attempt ended.
    pub end: TurnEnd,
    /// Wall time from the claim to the end.
    pub latency: Duration,
    /// Model calls made (answered or failed).
    pub model_calls: u32,
    /// Model calls that failed.
    pub model_failures: u32,
    /// Input tokens that were neither written to nor read from the cache.
    pub uncached_input_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Tool calls run or held.
    pub tool_calls: u32,
    /// Tool results marked as errors, held calls not included.
    pub tool_errors: u32,
    /// Tool calls held for confirmation.
    pub held_actions: u32,
}

impl TurnMetrics {
    /// Every input token: uncached, cache writes and cache reads (what the cache share and
    /// the Usage page divide by).
    pub fn input_tokens(&self) -> u64 {
        self.uncached_input_tokens
            .saturating_add(self.cache_write_tokens)
            .saturating_add(self.cache_read_tokens)
    }

    /// Cache-read tokens over input tokens, from 0 to 1; None when no input was sent.
    pub fn cache_read_share(&self) -> Option<f64> {
        let input = self.input_tokens();
        // Token counts of one turn are far below 2^52, so the conversion is exact.
        (input > 0).then(|| self.cache_read_tokens as f64 / input as f64)
    }
}

/// The port: where a process's metrics go. Recording never fails and never blocks a turn for
/// long (an adapter drops a value rather than wait).
pub trait MetricsRecorder: Send + Sync {
    /// One attempt at a turn ended.
    fn turn(&self, metrics: &TurnMetrics);
    /// One model call failed, of `kind`.
    fn model_failure(&self, kind: ModelFailureKind);
    /// One reply (or message) reached nobody, for `reason`.
    fn reply_not_sent(&self, reason: NotSentReason);
    /// One message ended on the dead-letter path; `channel` is its channel's short name.
    fn dead_letter(&self, channel: &str);
}

static RECORDER: OnceLock<Arc<dyn MetricsRecorder>> = OnceLock::new();

/// Makes `recorder` the process's recorder; false (and nothing changed) when one was already
/// installed or used. Call once at start, before the first turn.
pub fn install(recorder: Arc<dyn MetricsRecorder>) -> bool {
    RECORDER.set(recorder).is_ok()
}

/// The process's recorder: the installed one, else CloudWatch lines ([`emf::EmfRecorder`]
/// from the environment, which writes nothing without a namespace).
fn recorder() -> &'static dyn MetricsRecorder {
    RECORDER
        .get_or_init(|| Arc::new(emf::EmfRecorder::from_env()))
        .as_ref()
}

/// Records one attempt at a turn.
pub fn turn(metrics: &TurnMetrics) {
    recorder().turn(metrics);
}

/// Counts one failed model call of `kind`.
pub fn model_failure(kind: ModelFailureKind) {
    recorder().model_failure(kind);
}

/// Counts one reply (or message) that reached nobody, for `reason`.
pub fn reply_not_sent(reason: NotSentReason) {
    recorder().reply_not_sent(reason);
}

/// Counts one message that ended on the dead-letter path, on `channel` (its short name).
pub fn dead_letter(channel: &str) {
    recorder().dead_letter(channel);
}

/// What kind of failure a model call had, as alarms tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFailureKind {
    /// Credentials refused (a revoked or wrong key, a role without permission).
    Authentication,
    /// The model is not available to this account or region.
    AccessDenied,
    /// Rate limited or overloaded.
    Throttled,
    /// The call did not finish in time.
    Timeout,
    /// The model refused, a filter stopped it, or the request was rejected as invalid.
    Refused,
    /// 5xx or unreachable.
    Unavailable,
    /// Anything else (an unreadable answer, a misconfigured client).
    Other,
}

impl ModelFailureKind {
    /// The kind of `error`.
    pub fn of(error: &LlmError) -> Self {
        match error {
            LlmError::Authentication { .. } => Self::Authentication,
            LlmError::ModelUnavailable { .. } => Self::AccessDenied,
            LlmError::RateLimited { .. } | LlmError::Overloaded => Self::Throttled,
            LlmError::Timeout => Self::Timeout,
            LlmError::InvalidRequest { .. } | LlmError::ContextWindowExceeded { .. } => {
                Self::Refused
            }
            LlmError::Api { status, .. } if *status >= 500 => Self::Unavailable,
            LlmError::Transport(_) => Self::Unavailable,
            LlmError::Api { .. }
            | LlmError::MalformedResponse { .. }
            | LlmError::Configuration(_)
            | LlmError::UnresolvedMedia { .. }
            | LlmError::ScriptExhausted { .. } => Self::Other,
        }
    }

    /// The dimension value (what the template's alarms name).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Authentication => "authentication",
            Self::AccessDenied => "access_denied",
            Self::Throttled => "throttled",
            Self::Timeout => "timeout",
            Self::Refused => "refused",
            Self::Unavailable => "unavailable",
            Self::Other => "other",
        }
    }
}

/// Why a reply (or a queued message) reached nobody.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotSentReason {
    /// The provider refused the reply outright; sending again would fail the same way.
    Refused,
    /// A retryable send failure; the turn fails and is retried through the queue.
    Failed,
    /// WhatsApp's 24-hour window was closed, so nothing was sent.
    OutsideWindow,
    /// No sender is configured for the message's channel.
    NoSender,
    /// A queued message could not be read.
    Unreadable,
}

impl NotSentReason {
    /// The dimension value (what the template's alarms name).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Failed => "failed",
            Self::OutsideWindow => "outside_window",
            Self::NoSender => "no_sender",
            Self::Unreadable => "unreadable",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn model_errors_map_to_the_kinds_the_alarms_watch() {
        let cases = [
            (
                LlmError::Authentication {
                    message: "invalid x-api-key".into(),
                },
                "authentication",
            ),
            (
                LlmError::ModelUnavailable {
                    model: "m".into(),
                    message: "no access".into(),
                },
                "access_denied",
            ),
            (
                LlmError::RateLimited {
                    retry_after: Some(Duration::from_secs(2)),
                },
                "throttled",
            ),
            (LlmError::Overloaded, "throttled"),
            (LlmError::Timeout, "timeout"),
            (
                LlmError::invalid_request("temperature is not supported"),
                "refused",
            ),
            (
                LlmError::Api {
                    status: 503,
                    message: "down".into(),
                },
                "unavailable",
            ),
            (LlmError::Transport("reset".into()), "unavailable"),
            (
                LlmError::MalformedResponse {
                    message: "not json".into(),
                },
                "other",
            ),
        ];
        for (error, kind) in cases {
            assert_eq!(ModelFailureKind::of(&error).as_str(), kind, "{error}");
        }
        assert_eq!(NotSentReason::NoSender.as_str(), "no_sender");
        assert_eq!(NotSentReason::OutsideWindow.as_str(), "outside_window");
    }
}
