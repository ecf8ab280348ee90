//! The W3C trace context a queued message carries from the process that enqueued it to the one
//! that handles it, so one inbound message is one trace across the webhook and the agent.
//!
//! The store carries the two header values and nothing more: it neither parses nor trusts them.
//! It only refuses what could not be a header value (too long, or not visible ASCII), so what
//! it writes to a row or an SQS message attribute stays small and printable. Parsing happens
//! where the context is used (`steward_edge::telemetry`), where a malformed `traceparent`
//! starts a new trace.

/// Name of the W3C `traceparent` value: the SQS message attribute, and the field of a stored
/// in-process message.
pub const TRACEPARENT: &str = "traceparent";

/// Name of the W3C `tracestate` value (SQS message attribute, stored field).
pub const TRACESTATE: &str = "tracestate";

/// Longest `traceparent` carried. Version 00 is exactly 55 characters; later versions may only
/// append fields, and 256 leaves them room without letting a row grow unbounded.
pub const TRACEPARENT_BYTES_MAX: usize = 256;

/// Longest `tracestate` carried: the 512 characters W3C Trace Context asks every system to
/// pass on; a longer one is dropped whole (a cut list could change its meaning).
pub const TRACESTATE_BYTES_MAX: usize = 512;

/// The trace context of a queued message; both parts absent when none was captured (tracing
/// off, or a queue that does not carry it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl TraceContext {
    /// A context from the two header values; a value that is empty, over its bound or not
    /// visible ASCII (space allowed inside `tracestate`) is left out. A `tracestate` without a
    /// `traceparent` means nothing and is left out too.
    pub fn new(traceparent: Option<&str>, tracestate: Option<&str>) -> Self {
        let traceparent = traceparent
            .filter(|v| header_value_ok(v, TRACEPARENT_BYTES_MAX))
            .map(str::to_owned);
        let tracestate = tracestate
            .filter(|_| traceparent.is_some())
            .filter(|v| header_value_ok(v, TRACESTATE_BYTES_MAX))
            .map(str::to_owned);
        Self {
            traceparent,
            tracestate,
        }
    }

    /// No context.
    pub fn none() -> Self {
        Self::default()
    }

    /// The `traceparent` value, when there is one.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// The `tracestate` value, when there is one.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// Whether there is nothing to carry.
    pub fn is_empty(&self) -> bool {
        self.traceparent.is_none()
    }
}

fn header_value_ok(value: &str, max: usize) -> bool {
    !value.trim().is_empty()
        && value.len() <= max
        && value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn keeps_header_values_and_drops_what_could_not_be_one() {
        let cx = TraceContext::new(Some(PARENT), Some("vendor=abc"));
        assert_eq!(cx.traceparent(), Some(PARENT));
        assert_eq!(cx.tracestate(), Some("vendor=abc"));
        assert!(!cx.is_empty());

        let long = "a".repeat(TRACEPARENT_BYTES_MAX + 1);
        assert!(TraceContext::new(Some(&long), None).is_empty());
        assert!(TraceContext::new(Some("00-\u{e9}-x"), None).is_empty());
        assert!(TraceContext::new(Some("  "), None).is_empty());
        assert!(TraceContext::new(Some("a\nb"), None).is_empty());

        let state = "k=".to_owned() + &"v".repeat(TRACESTATE_BYTES_MAX);
        let cx = TraceContext::new(Some(PARENT), Some(&state));
        assert_eq!(cx.traceparent(), Some(PARENT));
        assert_eq!(cx.tracestate(), None);

        // A state alone means nothing.
        assert_eq!(TraceContext::new(None, Some("k=v")), TraceContext::none());
    }
}
