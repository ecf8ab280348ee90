//! Metric log lines: the failures that do not fail an invocation (a model error becomes a
//! polite reply, a refused send finishes the turn) counted where CloudWatch can alarm on them.
//!
//! Each count is one line on stdout in CloudWatch's embedded metric format: a JSON object whose
//! `_aws` member names the namespace, the metric and its one dimension. Lambda hands the line to
//! CloudWatch Logs, which turns it into a metric; no API call is made. Lines are written only
//! when [`ENV_METRICS_NAMESPACE`] names a namespace (the stack sets `Steward/<stack>`); locally
//! the `tracing` lines beside them say the same.

use std::io::Write as _;
use std::sync::OnceLock;

use steward_llm::LlmError;

/// The environment variable naming the namespace metric lines go to; unset or empty: none.
pub const ENV_METRICS_NAMESPACE: &str = "STEWARD_METRICS_NAMESPACE";
/// Failed model calls, with dimension [`KIND`].
pub const MODEL_FAILURES: &str = "ModelFailures";
/// Replies (or whole messages) that reached nobody, with dimension [`REASON`].
pub const REPLIES_NOT_SENT: &str = "RepliesNotSent";
/// The dimension of [`MODEL_FAILURES`].
pub const KIND: &str = "Kind";
/// The dimension of [`REPLIES_NOT_SENT`].
pub const REASON: &str = "Reason";

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

/// Counts one failed model call of `kind`.
pub fn model_failure(kind: ModelFailureKind) {
    emit(MODEL_FAILURES, KIND, kind.as_str());
}

/// Counts one reply (or message) that reached nobody, for `reason`.
pub fn reply_not_sent(reason: NotSentReason) {
    emit(REPLIES_NOT_SENT, REASON, reason.as_str());
}

fn namespace() -> Option<&'static str> {
    static NAMESPACE: OnceLock<Option<String>> = OnceLock::new();
    NAMESPACE
        .get_or_init(|| {
            std::env::var(ENV_METRICS_NAMESPACE)
                .ok()
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
        })
        .as_deref()
}

fn emit(metric: &str, dimension: &str, value: &str) {
    let Some(namespace) = namespace() else {
        return;
    };
    let line = metric_line(namespace, metric, dimension, value, now_millis());
    // One write of the whole line, so concurrent turns never interleave inside it. A failed
    // write (stdout closed) loses one count and nothing else.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// One embedded-metric-format line counting 1 of `metric` with `dimension` = `value`.
pub fn metric_line(
    namespace: &str,
    metric: &str,
    dimension: &str,
    value: &str,
    at_millis: i64,
) -> String {
    let mut line = serde_json::Map::new();
    line.insert(
        "_aws".into(),
        serde_json::json!({
            "Timestamp": at_millis,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [[dimension]],
                "Metrics": [{ "Name": metric, "Unit": "Count" }],
            }],
        }),
    );
    line.insert(dimension.into(), value.into());
    line.insert(metric.into(), 1.into());
    serde_json::Value::Object(line).to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_line_is_one_count_in_embedded_metric_format() {
        let line = metric_line(
            "Steward/prod",
            MODEL_FAILURES,
            KIND,
            "timeout",
            1_700_000_000_000,
        );
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(v["_aws"]["Timestamp"], 1_700_000_000_000_i64);
        let directive = &v["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Steward/prod");
        assert_eq!(directive["Dimensions"], serde_json::json!([["Kind"]]));
        assert_eq!(directive["Metrics"][0]["Name"], "ModelFailures");
        assert_eq!(directive["Metrics"][0]["Unit"], "Count");
        assert_eq!(v["Kind"], "timeout");
        assert_eq!(v["ModelFailures"], 1);
    }

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
