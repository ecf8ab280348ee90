//! What can go wrong on a model call, typed so the harness can answer each case well.

use std::fmt;
use std::time::Duration;

/// A failed model call.
///
/// Every client (HTTP, Bedrock, scripted) reports failures with these variants, so the turn
/// loop handles a provider the same way whichever one it has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// Too many requests or tokens; `retry_after` is the provider's hint when it gave one.
    #[error("the model provider is rate limiting us{}", retry_after_suffix(*.retry_after))]
    RateLimited {
        /// How long the provider asked us to wait (the `retry-after` header), if it said.
        retry_after: Option<Duration>,
    },
    /// The provider is temporarily overloaded (HTTP 529 / `overloaded_error`, Bedrock
    /// `ServiceUnavailableException` or `ModelNotReadyException`).
    #[error("the model provider is overloaded")]
    Overloaded,
    /// The call took longer than the configured timeout (or the provider timed out).
    #[error("the model call timed out")]
    Timeout,
    /// The credentials were missing, wrong or not allowed to use the model (401/403).
    #[error("the model provider rejected our credentials: {message}")]
    Authentication {
        /// The provider's explanation.
        message: String,
    },
    /// The provider refused the request as invalid (HTTP 400, Bedrock `ValidationException`).
    #[error("the model provider rejected the request ({kind}): {message}")]
    InvalidRequest {
        /// The provider's explanation, verbatim.
        message: String,
        /// Which kind of rejection it is, for the harness's recovery paths.
        kind: InvalidKind,
    },
    /// The conversation no longer fits the model's context window ("prompt is too long").
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextWindowExceeded {
        /// The provider's explanation.
        message: String,
    },
    /// The provider does not serve the configured model id here: unknown id, not enabled for
    /// the account, not offered in the region, or only reachable through an inference profile.
    /// The operator must choose another `STEWARD_MODEL`; retrying cannot help.
    #[error(
        "the model {model:?} is not available from this provider (choose another with STEWARD_MODEL): {message}"
    )]
    ModelUnavailable {
        /// The model id that was asked for.
        model: String,
        /// The provider's explanation.
        message: String,
    },
    /// Any other error status from the provider (5xx, an unknown route…).
    #[error("the model provider answered with status {status}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The provider's explanation, or the start of the body.
        message: String,
    },
    /// The provider answered success but the body is not a Messages API response.
    #[error("the model provider's answer could not be read: {message}")]
    MalformedResponse {
        /// What was wrong, with the start of the body.
        message: String,
    },
    /// The provider could not be reached (connection refused, TLS, DNS…).
    #[error("could not reach the model provider: {0}")]
    Transport(String),
    /// The client could not be set up (an API key or header value that HTTP cannot carry, a
    /// bad base URL).
    #[error("the model client is misconfigured: {0}")]
    Configuration(String),
    /// The request still holds a reference to stored media (an image or document kept as a
    /// blob key) instead of its bytes. Clients refuse it before any network call: the caller
    /// must resolve references first ([`crate::CreateRequest::with_stored_media_resolved`]).
    #[error("a stored media reference was not resolved before the model call: {key:?}")]
    UnresolvedMedia {
        /// The blob key of the first unresolved reference.
        key: String,
    },
    /// A scripted client was called more times than it had outcomes (a test's script is short).
    #[error(
        "the scripted model was called more times than scripted: this is call {call}, the script had {scripted} outcome(s)"
    )]
    ScriptExhausted {
        /// Which call this was, counting from 1.
        call: usize,
        /// How many outcomes the script held in all.
        scripted: usize,
    },
}

fn retry_after_suffix(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!(" (retry after {}s)", wait.as_secs_f64()),
        None => String::new(),
    }
}

impl LlmError {
    /// True for the failures a client retries once by itself: an overloaded provider, or a
    /// 5xx. Rate limits are not retried (waiting is the person's call), nor timeouts: the call's
    /// timeout is sized to its output budget, so it stalled, and the provider may have billed
    /// the whole generation already.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Overloaded => true,
            Self::Api { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The error for a request the provider refused as invalid, given its message: a full
    /// context window is recognised as such, anything else is classified by [`InvalidKind`].
    pub fn invalid_request(message: impl Into<String>) -> Self {
        let message = message.into();
        if is_context_window_message(&message) {
            return Self::ContextWindowExceeded { message };
        }
        let kind = InvalidKind::classify(&message);
        Self::InvalidRequest { message, kind }
    }
}

/// Which kind of invalid request the provider refused; the harness recovers differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InvalidKind {
    /// A replayed `thinking` block's signature was rejected ("Invalid `signature` in
    /// `thinking` block"): retry once with reasoning stripped from the history.
    ThinkingSignatureRejected,
    /// A beta header value or an optional field (effort/`output_config`, the `thinking`
    /// config, `temperature`) was rejected: switch to lean mode and carry on.
    OptionalFeatureRejected,
    /// Any other invalid request: a bug on our side.
    Other,
}

impl fmt::Display for InvalidKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ThinkingSignatureRejected => "thinking signature rejected",
            Self::OptionalFeatureRejected => "optional feature rejected",
            Self::Other => "invalid request",
        })
    }
}

/// Top-level request fields (and header names) that Steward sends only as optional extras;
/// a rejection naming one of them means "this model or account does not take that feature".
const OPTIONAL_FEATURES: &[&str] = &[
    "output_config",
    "effort",
    "thinking",
    "temperature",
    "anthropic-beta",
    "anthropic_beta",
];

/// Request fields that are always sent; a message about one of them is never about an optional
/// feature, even if it mentions thinking ("messages.3.content.0.type: Expected `thinking`…").
const REQUIRED_FIELDS: &[&str] = &[
    "messages",
    "system",
    "tools",
    "model",
    "max_tokens",
    "tool_choice",
];

/// Words that, next to an optional feature's name, say the feature itself is not accepted.
const REJECTION_WORDS: &[&str] = &[
    "extra inputs are not permitted",
    "not supported",
    "does not support",
    "unsupported",
    "not available",
    "unexpected value",
    "input should be",
    "input tag",
    "invalid beta",
    "deprecated",
];

impl InvalidKind {
    /// Classifies a provider's invalid-request message (the same text on the Claude API and
    /// Bedrock).
    ///
    /// - Signature: the message names a `signature` and a `thinking` block, as in
    ///   "messages.1.content.0: Invalid `signature` in `thinking` block".
    /// - Optional feature: the message is about a beta header ("Unexpected value(s) `…` for
    ///   the `anthropic-beta` header", Bedrock's "invalid beta flag"), or its field path starts
    ///   with one of our optional fields ("output_config: Extra inputs are not permitted",
    ///   "thinking.type: Input tag 'adaptive' found…"), or it says such a feature is not
    ///   supported ("This model does not support the effort parameter").
    /// - Anything else is [`InvalidKind::Other`], including errors about the shape of
    ///   `messages` that merely mention thinking blocks.
    pub fn classify(message: &str) -> Self {
        let lower = message.to_ascii_lowercase();
        // Beta first: a beta's name may itself mention thinking ("interleaved-thinking-…").
        if lower.contains("anthropic-beta")
            || lower.contains("anthropic_beta")
            || lower.contains("beta flag")
            || lower.contains("beta header")
        {
            return Self::OptionalFeatureRejected;
        }
        if lower.contains("signature") && lower.contains("thinking") {
            return Self::ThinkingSignatureRejected;
        }
        // Validation messages start with the offending field's path: "output_config.effort: …".
        if let Some((path, _)) = lower.split_once(": ")
            && !path.contains(char::is_whitespace)
        {
            let root = path.split(['.', '[']).next().unwrap_or(path);
            if OPTIONAL_FEATURES.contains(&root) {
                return Self::OptionalFeatureRejected;
            }
            if REQUIRED_FIELDS.contains(&root) {
                return Self::Other;
            }
        }
        let names_feature =
            OPTIONAL_FEATURES.iter().any(|name| lower.contains(name)) || lower.contains("adaptive");
        let says_rejected = REJECTION_WORDS.iter().any(|words| lower.contains(words));
        if names_feature && says_rejected {
            Self::OptionalFeatureRejected
        } else {
            Self::Other
        }
    }
}

/// "prompt is too long: 215000 tokens > 200000 maximum" (Claude API), "Input is too long for
/// requested model." (Bedrock), "This model's maximum context length is 128000 tokens…"
/// (OpenAI-compatible servers).
fn is_context_window_message(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("prompt is too long")
        || lower.contains("input is too long")
        || lower.contains("context window")
        || lower.contains("context length")
        || lower.contains("too many input tokens")
}

/// The start of a body, for error messages (lossy UTF-8, bounded).
#[cfg(any(feature = "http", feature = "bedrock"))]
pub(crate) fn body_snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut snippet: String = text
        .chars()
        .take(crate::limits::ERROR_BODY_CHARS_MAX)
        .collect();
    if text.chars().count() > crate::limits::ERROR_BODY_CHARS_MAX {
        snippet.push('…');
    }
    if snippet.is_empty() {
        snippet.push_str("(empty body)");
    }
    snippet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejected_thinking_signature_is_recognised() {
        for message in [
            "messages.1.content.0: Invalid `signature` in `thinking` block",
            "***.***.content.0: Invalid `signature` in `thinking` block",
        ] {
            assert_eq!(
                InvalidKind::classify(message),
                InvalidKind::ThinkingSignatureRejected,
                "{message}"
            );
        }
    }

    #[test]
    fn a_rejected_optional_feature_is_recognised() {
        for message in [
            "Unexpected value(s) `effort-2025-11-24` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.",
            "invalid beta flag",
            "Unexpected value(s) `interleaved-thinking-2025-05-14` for the `anthropic-beta` header.",
            "output_config: Extra inputs are not permitted",
            "output_config.effort: Input should be 'low', 'medium' or 'high'",
            "thinking.type: Input tag 'adaptive' found using 'type' does not match any of the expected tags: 'disabled', 'enabled'",
            "thinking: Extra inputs are not permitted",
            "temperature: temperature is not supported for this model",
            "This model does not support the effort parameter.",
            "adaptive thinking is not supported on this model",
        ] {
            assert_eq!(
                InvalidKind::classify(message),
                InvalidKind::OptionalFeatureRejected,
                "{message}"
            );
        }
    }

    #[test]
    fn other_invalid_requests_stay_other() {
        for message in [
            "messages.3.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.",
            "max_tokens: 99999 > 64000, which is the maximum allowed number of output tokens",
            "messages: roles must alternate between \"user\" and \"assistant\"",
            "tools.0.custom.strict: Extra inputs are not permitted",
            "",
        ] {
            assert_eq!(
                InvalidKind::classify(message),
                InvalidKind::Other,
                "{message}"
            );
        }
    }

    #[test]
    fn a_full_context_window_is_its_own_error() {
        assert!(matches!(
            LlmError::invalid_request("prompt is too long: 215000 tokens > 200000 maximum"),
            LlmError::ContextWindowExceeded { .. }
        ));
        assert!(matches!(
            LlmError::invalid_request("Input is too long for requested model."),
            LlmError::ContextWindowExceeded { .. }
        ));
    }

    #[test]
    fn only_transient_server_failures_are_retryable() {
        assert!(!LlmError::Timeout.is_retryable(), "never paid twice");
        assert!(LlmError::Overloaded.is_retryable());
        assert!(
            LlmError::Api {
                status: 502,
                message: String::new()
            }
            .is_retryable()
        );
        assert!(!LlmError::RateLimited { retry_after: None }.is_retryable());
        assert!(
            !LlmError::Api {
                status: 404,
                message: String::new()
            }
            .is_retryable()
        );
        assert!(!LlmError::invalid_request("nope").is_retryable());
    }

    #[test]
    fn messages_read_well() {
        let error = LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
        };
        assert_eq!(
            error.to_string(),
            "the model provider is rate limiting us (retry after 7s)"
        );
        let error = LlmError::ScriptExhausted {
            call: 3,
            scripted: 2,
        };
        assert!(
            error
                .to_string()
                .contains("the scripted model was called more times than scripted")
        );
    }
}
