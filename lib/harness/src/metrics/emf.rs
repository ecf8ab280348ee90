//! The Lambda adapter of [`super::MetricsRecorder`]: CloudWatch embedded-metric-format lines.
//!
//! Each line is one JSON object on stdout whose `_aws` member names the namespace, the
//! metrics with their units and the dimension set; Lambda hands stdout to CloudWatch Logs,
//! which turns the line into metrics, so no API call is made. A turn is one line carrying all
//! its metrics under the one dimension [`CHANNEL`]; the conversation and turn ids ride along as
//! plain properties (searchable in Logs Insights, never dimensions, so the number of metrics
//! stays bounded). A failure count is one line with its one dimension, as the stack's alarms
//! expect. Nothing is written without a namespace ([`ENV_METRICS_NAMESPACE`]); locally the
//! `tracing` lines beside them say the same.

use std::io::Write;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use super::{
    CHANNEL, DEAD_LETTERS, ENV_METRICS_NAMESPACE, KIND, MODEL_FAILURES, MetricsRecorder,
    ModelFailureKind, NotSentReason, REASON, REPLIES_NOT_SENT, TurnMetrics, turn_names as name,
};

/// CloudWatch's unit names used here (the spec's `Unit` values).
mod unit {
    /// A number of things.
    pub const COUNT: &str = "Count";
    /// Milliseconds.
    pub const MILLISECONDS: &str = "Milliseconds";
    /// A percentage, 0 to 100.
    pub const PERCENT: &str = "Percent";
}

/// Writes embedded-metric-format lines to stdout (or, in tests, to any writer).
pub struct EmfRecorder {
    namespace: Option<String>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for EmfRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmfRecorder")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl EmfRecorder {
    /// Lines to stdout under the namespace [`ENV_METRICS_NAMESPACE`] names; none when it is
    /// unset or blank.
    pub fn from_env() -> Self {
        let namespace = std::env::var(ENV_METRICS_NAMESPACE)
            .ok()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        Self::new(namespace, Box::new(std::io::stdout()))
    }

    /// Lines under `namespace` (None: no lines) to `out`.
    pub fn new(namespace: Option<String>, out: Box<dyn Write + Send>) -> Self {
        Self {
            namespace,
            out: Mutex::new(out),
        }
    }

    fn write(&self, line: impl FnOnce(&str) -> String) {
        let Some(namespace) = self.namespace.as_deref() else {
            return;
        };
        let mut text = line(namespace);
        text.push('\n');
        // One write of the whole line under the lock, so concurrent turns never interleave
        // inside it. A poisoned lock or a failed write (stdout closed) loses this line only.
        if let Ok(mut out) = self.out.lock() {
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }
}

impl MetricsRecorder for EmfRecorder {
    fn turn(&self, metrics: &TurnMetrics) {
        self.write(|ns| turn_line(ns, metrics, now_millis()));
    }

    fn model_failure(&self, kind: ModelFailureKind) {
        self.write(|ns| metric_line(ns, MODEL_FAILURES, (KIND, kind.as_str()), now_millis()));
    }

    fn reply_not_sent(&self, reason: NotSentReason) {
        self.write(|ns| {
            metric_line(
                ns,
                REPLIES_NOT_SENT,
                (REASON, reason.as_str()),
                now_millis(),
            )
        });
    }

    fn dead_letter(&self, channel: &str) {
        self.write(|ns| metric_line(ns, DEAD_LETTERS, (CHANNEL, channel), now_millis()));
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The `_aws` metadata of a line: one directive over `metrics` (name, unit) with the one
/// dimension set `dimensions`.
fn metadata(
    namespace: &str,
    dimensions: &[&str],
    metrics: &[(&str, &str)],
    at_millis: i64,
) -> Value {
    let metrics: Vec<Value> = metrics
        .iter()
        .map(|(name, unit)| json!({ "Name": name, "Unit": unit }))
        .collect();
    json!({
        "Timestamp": at_millis,
        "CloudWatchMetrics": [{
            "Namespace": namespace,
            "Dimensions": [dimensions],
            "Metrics": metrics,
        }],
    })
}

/// One line counting 1 of `metric`, with its one dimension `(name, value)`.
pub fn metric_line(
    namespace: &str,
    metric: &str,
    (dimension, value): (&str, &str),
    at_millis: i64,
) -> String {
    let mut line = Map::new();
    line.insert(
        "_aws".into(),
        metadata(namespace, &[dimension], &[(metric, unit::COUNT)], at_millis),
    );
    line.insert(dimension.into(), value.into());
    line.insert(metric.into(), 1.into());
    Value::Object(line).to_string()
}

/// One line carrying every metric of one attempt at a turn, with the dimension [`CHANNEL`].
pub fn turn_line(namespace: &str, m: &TurnMetrics, at_millis: i64) -> String {
    let latency_ms = u64::try_from(m.latency.as_millis()).unwrap_or(u64::MAX);
    let mut values: Vec<(&str, &str, Value)> = vec![
        (name::TURNS, unit::COUNT, 1.into()),
        (name::LATENCY, unit::MILLISECONDS, latency_ms.into()),
        (name::MODEL_CALLS, unit::COUNT, m.model_calls.into()),
        (name::MODEL_FAILURES, unit::COUNT, m.model_failures.into()),
        (name::INPUT_TOKENS, unit::COUNT, m.input_tokens().into()),
        (name::OUTPUT_TOKENS, unit::COUNT, m.output_tokens.into()),
        (
            name::CACHE_READ_TOKENS,
            unit::COUNT,
            m.cache_read_tokens.into(),
        ),
        (
            name::CACHE_WRITE_TOKENS,
            unit::COUNT,
            m.cache_write_tokens.into(),
        ),
        (name::TOOL_CALLS, unit::COUNT, m.tool_calls.into()),
        (name::TOOL_ERRORS, unit::COUNT, m.tool_errors.into()),
        (name::HELD_ACTIONS, unit::COUNT, m.held_actions.into()),
    ];
    // A share of nothing is no sample (a turn without a model call), not a 0 % that would
    // drag the average down.
    if let Some(share) = m.cache_read_share() {
        values.push((name::CACHE_READ_SHARE, unit::PERCENT, json!(share * 100.0)));
    }
    let definitions: Vec<(&str, &str)> = values.iter().map(|(n, u, _)| (*n, *u)).collect();
    let mut line = Map::new();
    line.insert(
        "_aws".into(),
        metadata(namespace, &[CHANNEL], &definitions, at_millis),
    );
    line.insert(CHANNEL.into(), m.channel.as_str().into());
    for (metric, _, value) in values {
        line.insert(metric.into(), value);
    }
    line.insert("outcome".into(), m.end.as_str().into());
    line.insert("conversation".into(), m.conversation.as_str().into());
    line.insert("turn".into(), m.turn.into());
    Value::Object(line).to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::ids::{ChannelName, ConversationKey};
    use crate::metrics::TurnEnd;

    /// Every unit CloudWatch accepts in a metric definition (the embedded metric format spec's
    /// `Unit` list, the same as `StandardUnit` of PutMetricData).
    const CLOUDWATCH_UNITS: [&str; 27] = [
        "Seconds",
        "Microseconds",
        "Milliseconds",
        "Bytes",
        "Kilobytes",
        "Megabytes",
        "Gigabytes",
        "Terabytes",
        "Bits",
        "Kilobits",
        "Megabits",
        "Gigabits",
        "Terabits",
        "Percent",
        "Count",
        "Bytes/Second",
        "Kilobytes/Second",
        "Megabytes/Second",
        "Gigabytes/Second",
        "Terabytes/Second",
        "Bits/Second",
        "Kilobits/Second",
        "Megabits/Second",
        "Gigabits/Second",
        "Terabits/Second",
        "Count/Second",
        "None",
    ];

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn lines(&self) -> Vec<Value> {
            let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
            String::from_utf8(bytes)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
                .collect()
        }
    }

    fn sample() -> TurnMetrics {
        let channel = ChannelName::parse("wa").unwrap_or_else(|e| panic!("{e}"));
        TurnMetrics {
            conversation: ConversationKey::new(&channel, "447700900123")
                .unwrap_or_else(|e| panic!("{e}")),
            channel,
            turn: 7,
            end: TurnEnd::Replied,
            latency: Duration::from_millis(1_234),
            model_calls: 3,
            model_failures: 1,
            uncached_input_tokens: 200,
            cache_write_tokens: 300,
            cache_read_tokens: 1_500,
            output_tokens: 90,
            tool_calls: 4,
            tool_errors: 1,
            held_actions: 2,
        }
    }

    /// Checks `line` against the spec's structure and returns its one directive: an `_aws`
    /// object with a number `Timestamp` and `CloudWatchMetrics`; each directive's namespace,
    /// dimension sets (arrays of at most 30 names, each a string member of the root) and
    /// metric definitions (at most 100, a known unit, each a number member of the root).
    fn check_spec(line: &Value) -> Value {
        let aws = &line["_aws"];
        assert!(aws["Timestamp"].is_i64(), "{line}");
        let directives = aws["CloudWatchMetrics"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(directives.len(), 1, "{line}");
        let directive = directives[0].clone();
        let namespace = directive["Namespace"].as_str().unwrap_or_default();
        assert!(!namespace.is_empty() && namespace.len() <= 255);
        for set in directive["Dimensions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let names = set.as_array().cloned().unwrap_or_default();
            assert!(names.len() <= 30);
            for name in names {
                let name = name.as_str().unwrap_or_default();
                assert!(
                    line[name].is_string(),
                    "dimension {name} has no string value: {line}"
                );
            }
        }
        let metrics = directive["Metrics"].as_array().cloned().unwrap_or_default();
        assert!(!metrics.is_empty() && metrics.len() <= 100);
        for metric in &metrics {
            let name = metric["Name"].as_str().unwrap_or_default();
            let unit = metric["Unit"].as_str().unwrap_or_default();
            assert!(CLOUDWATCH_UNITS.contains(&unit), "{name}: unit {unit}");
            assert!(
                line[name].is_number(),
                "metric {name} has no number value: {line}"
            );
        }
        directive
    }

    fn unit_of<'a>(directive: &'a Value, metric: &str) -> &'a str {
        directive["Metrics"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["Name"] == metric))
            .and_then(|m| m["Unit"].as_str())
            .unwrap_or_else(|| panic!("{metric} is not defined in {directive}"))
    }

    #[test]
    fn a_turn_is_one_line_with_all_its_metrics_under_the_channel_only() {
        let out = Captured::default();
        let recorder = EmfRecorder::new(Some("Steward/prod".into()), Box::new(out.clone()));
        recorder.turn(&sample());
        let lines = out.lines();
        assert_eq!(lines.len(), 1, "one line per turn");
        let line = &lines[0];
        let directive = check_spec(line);
        assert_eq!(directive["Namespace"], "Steward/prod");
        assert_eq!(directive["Dimensions"], json!([["Channel"]]));
        assert_eq!(line["Channel"], "wa");
        assert_eq!(unit_of(&directive, "TurnLatency"), "Milliseconds");
        assert_eq!(line["TurnLatency"], 1_234);
        assert_eq!(unit_of(&directive, "CacheReadShare"), "Percent");
        assert_eq!(line["CacheReadShare"], 75.0);
        assert_eq!(line["InputTokens"], 2_000);
        for (metric, value) in [
            ("Turns", 1),
            ("ModelCalls", 3),
            ("TurnModelFailures", 1),
            ("OutputTokens", 90),
            ("CacheReadTokens", 1_500),
            ("CacheWriteTokens", 300),
            ("ToolCalls", 4),
            ("ToolErrors", 1),
            ("HeldActions", 2),
        ] {
            assert_eq!(unit_of(&directive, metric), "Count", "{metric}");
            assert_eq!(line[metric], value, "{metric}");
        }
        // The ids are plain properties: present, but never a dimension.
        assert_eq!(line["conversation"], "wa:447700900123");
        assert_eq!(line["turn"], 7);
        assert_eq!(line["outcome"], "replied");
        let text = line.to_string();
        assert!(
            !directive["Dimensions"].to_string().contains("conversation"),
            "{text}"
        );
    }

    #[test]
    fn a_turn_without_input_has_no_cache_share_sample() {
        let mut m = sample();
        m.model_calls = 0;
        m.uncached_input_tokens = 0;
        m.cache_write_tokens = 0;
        m.cache_read_tokens = 0;
        let line: Value =
            serde_json::from_str(&turn_line("Steward/prod", &m, 1)).unwrap_or(Value::Null);
        let directive = check_spec(&line);
        assert!(line.get("CacheReadShare").is_none());
        assert!(!directive["Metrics"].to_string().contains("CacheReadShare"));
    }

    #[test]
    fn failure_counts_are_one_line_each_with_their_one_dimension() {
        let out = Captured::default();
        let recorder = EmfRecorder::new(Some("Steward/prod".into()), Box::new(out.clone()));
        recorder.model_failure(ModelFailureKind::Timeout);
        recorder.reply_not_sent(NotSentReason::OutsideWindow);
        recorder.dead_letter("tg");
        let lines = out.lines();
        assert_eq!(lines.len(), 3);
        let expected = [
            ("ModelFailures", json!([["Kind"]]), ("Kind", "timeout")),
            (
                "RepliesNotSent",
                json!([["Reason"]]),
                ("Reason", "outside_window"),
            ),
            ("DeadLetters", json!([["Channel"]]), ("Channel", "tg")),
        ];
        for (line, (metric, dimensions, (name, value))) in lines.iter().zip(expected) {
            let directive = check_spec(line);
            assert_eq!(directive["Dimensions"], dimensions, "{line}");
            assert_eq!(unit_of(&directive, metric), "Count");
            assert_eq!(line[metric], 1);
            assert_eq!(line[name], value);
        }
    }

    #[test]
    fn without_a_namespace_nothing_is_written() {
        let out = Captured::default();
        let recorder = EmfRecorder::new(None, Box::new(out.clone()));
        recorder.turn(&sample());
        recorder.model_failure(ModelFailureKind::Other);
        recorder.dead_letter("wa");
        assert!(out.lines().is_empty());
    }
}
