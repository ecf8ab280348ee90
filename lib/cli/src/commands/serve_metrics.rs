//! `steward serve`'s metrics: the Prometheus adapter of the harness's metrics port
//! ([`steward_harness::metrics::MetricsRecorder`]) and the `/metrics` route that serves it.
//!
//! `/metrics` answers only a request straight from this machine: the socket peer is a
//! loopback address *and* the request is a direct loopback one as the development sign-in
//! judges it ([`hosts::is_direct_loopback`]: a loopback `Host`, no proxy or tunnel header —
//! a tunnel connects from loopback too). Anything else gets a plain 404, whatever address
//! `serve` listens on: it fails closed. No user or conversation id is ever a label.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::ExtensionRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use steward_edge::hosts;
use steward_harness::metrics::{
    MetricsRecorder, ModelFailureKind, NotSentReason, TurnEnd, TurnMetrics,
};

/// Where the metrics are served (on `serve`'s own address).
pub const METRICS_PATH: &str = "/metrics";

/// The OpenMetrics text format `prometheus-client` writes (Prometheus reads it natively).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds (seconds) of the turn-latency histogram. A turn answered without the model
/// takes milliseconds, one model call a few seconds, a turn with tool rounds tens of seconds;
/// the last finite bucket is near the model-call ceiling of a long answer, so the buckets
/// separate "instant", "one call", "a few calls" and "stuck".
pub const TURN_LATENCY_BUCKETS_SECONDS: [f64; 11] =
    [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0];

/// Upper bounds of the per-turn cache-read share histogram (0 to 1): tenths, enough to see
/// whether the frozen prefix is being read from the cache (a healthy turn is above 0.8).
pub const CACHE_SHARE_BUCKETS: [f64; 10] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabel {
    channel: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TurnLabels {
    channel: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

fn latency_histogram() -> Histogram {
    Histogram::new(TURN_LATENCY_BUCKETS_SECONDS)
}

fn share_histogram() -> Histogram {
    Histogram::new(CACHE_SHARE_BUCKETS)
}

/// The Prometheus registry of one `steward serve` process and its metric families.
#[derive(Debug)]
pub struct PrometheusRecorder {
    registry: Registry,
    turns: Family<TurnLabels, Counter>,
    latency: Family<ChannelLabel, Histogram, fn() -> Histogram>,
    model_calls: Family<ChannelLabel, Counter>,
    input_tokens: Family<ChannelLabel, Counter>,
    output_tokens: Family<ChannelLabel, Counter>,
    cache_read_tokens: Family<ChannelLabel, Counter>,
    cache_write_tokens: Family<ChannelLabel, Counter>,
    cache_share: Family<ChannelLabel, Histogram, fn() -> Histogram>,
    tool_calls: Family<ChannelLabel, Counter>,
    tool_errors: Family<ChannelLabel, Counter>,
    held_actions: Family<ChannelLabel, Counter>,
    model_failures: Family<KindLabel, Counter>,
    replies_not_sent: Family<ReasonLabel, Counter>,
    dead_letters: Family<ChannelLabel, Counter>,
}

impl Default for PrometheusRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl PrometheusRecorder {
    /// A registry with every family registered (names prefixed `steward_`; counters end in
    /// `_total`).
    pub fn new() -> Self {
        let mut root = Registry::default();
        let registry = root.sub_registry_with_prefix("steward");
        let turns = Family::default();
        registry.register(
            "turns",
            "Turns ended, by channel and outcome",
            turns.clone(),
        );
        let latency: Family<ChannelLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register_with_unit(
            "turn_latency",
            "Wall time of a turn, from the claim of the message to the reply",
            Unit::Seconds,
            latency.clone(),
        );
        let model_calls = Family::default();
        registry.register(
            "model_calls",
            "Model calls made by turns (answered or failed)",
            model_calls.clone(),
        );
        let input_tokens = Family::default();
        registry.register(
            "input_tokens",
            "Input tokens of answered model calls: uncached, cache writes and cache reads",
            input_tokens.clone(),
        );
        let output_tokens = Family::default();
        registry.register(
            "output_tokens",
            "Output tokens of answered model calls, reasoning included",
            output_tokens.clone(),
        );
        let cache_read_tokens = Family::default();
        registry.register(
            "cache_read_tokens",
            "Input tokens read from the prompt cache",
            cache_read_tokens.clone(),
        );
        let cache_write_tokens = Family::default();
        registry.register(
            "cache_write_tokens",
            "Input tokens written to the prompt cache",
            cache_write_tokens.clone(),
        );
        let cache_share: Family<ChannelLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(share_histogram);
        registry.register(
            "turn_cache_read_share",
            "Per turn with input: cache-read tokens over input tokens (0 to 1)",
            cache_share.clone(),
        );
        let tool_calls = Family::default();
        registry.register(
            "tool_calls",
            "Tool calls run or held by turns",
            tool_calls.clone(),
        );
        let tool_errors = Family::default();
        registry.register(
            "tool_errors",
            "Tool results marked as errors (held calls not included)",
            tool_errors.clone(),
        );
        let held_actions = Family::default();
        registry.register(
            "held_actions",
            "Tool calls held by the confirmation gate",
            held_actions.clone(),
        );
        let model_failures = Family::default();
        registry.register(
            "model_failures",
            "Failed model calls, by kind",
            model_failures.clone(),
        );
        let replies_not_sent = Family::default();
        registry.register(
            "replies_not_sent",
            "Replies (or messages) that reached nobody, by reason",
            replies_not_sent.clone(),
        );
        let dead_letters = Family::default();
        registry.register(
            "dead_letters",
            "Messages that ended on the dead-letter path",
            dead_letters.clone(),
        );
        Self {
            registry: root,
            turns,
            latency,
            model_calls,
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            cache_share,
            tool_calls,
            tool_errors,
            held_actions,
            model_failures,
            replies_not_sent,
            dead_letters,
        }
    }

    /// The registry in the OpenMetrics text format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail; an encoding error would be a bug in a family.
        if let Err(e) = encode(&mut text, &self.registry) {
            tracing::error!(error = %e, "the metrics could not be encoded");
        }
        text
    }
}

impl MetricsRecorder for PrometheusRecorder {
    fn turn(&self, m: &TurnMetrics) {
        let channel = ChannelLabel {
            channel: m.channel.as_str().to_owned(),
        };
        self.turns
            .get_or_create(&TurnLabels {
                channel: channel.channel.clone(),
                outcome: match m.end {
                    TurnEnd::Replied => "replied",
                    TurnEnd::Failed => "failed",
                }
                .to_owned(),
            })
            .inc();
        self.latency
            .get_or_create(&channel)
            .observe(m.latency.as_secs_f64());
        self.model_calls
            .get_or_create(&channel)
            .inc_by(u64::from(m.model_calls));
        self.input_tokens
            .get_or_create(&channel)
            .inc_by(m.input_tokens());
        self.output_tokens
            .get_or_create(&channel)
            .inc_by(m.output_tokens);
        self.cache_read_tokens
            .get_or_create(&channel)
            .inc_by(m.cache_read_tokens);
        self.cache_write_tokens
            .get_or_create(&channel)
            .inc_by(m.cache_write_tokens);
        if let Some(share) = m.cache_read_share() {
            self.cache_share.get_or_create(&channel).observe(share);
        }
        self.tool_calls
            .get_or_create(&channel)
            .inc_by(u64::from(m.tool_calls));
        self.tool_errors
            .get_or_create(&channel)
            .inc_by(u64::from(m.tool_errors));
        self.held_actions
            .get_or_create(&channel)
            .inc_by(u64::from(m.held_actions));
    }

    fn model_failure(&self, kind: ModelFailureKind) {
        self.model_failures
            .get_or_create(&KindLabel {
                kind: kind.as_str().to_owned(),
            })
            .inc();
    }

    fn reply_not_sent(&self, reason: NotSentReason) {
        self.replies_not_sent
            .get_or_create(&ReasonLabel {
                reason: reason.as_str().to_owned(),
            })
            .inc();
    }

    fn dead_letter(&self, channel: &str) {
        self.dead_letters
            .get_or_create(&ChannelLabel {
                channel: channel.to_owned(),
            })
            .inc();
    }
}

/// `GET /metrics` over `recorder`, for requests straight from this machine only.
pub fn routes(recorder: Arc<PrometheusRecorder>) -> Router {
    Router::new()
        .route(METRICS_PATH, get(scrape))
        .with_state(recorder)
}

/// Whether a request from `peer` with `uri` and `headers` may read the metrics.
fn is_local(peer: SocketAddr, uri: &Uri, headers: &HeaderMap) -> bool {
    peer.ip().to_canonical().is_loopback() && hosts::is_direct_loopback(uri, headers)
}

async fn scrape(
    State(recorder): State<Arc<PrometheusRecorder>>,
    peer: Result<ConnectInfo<SocketAddr>, ExtensionRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    // No peer address (a router served without connect info) is refused like a stranger.
    let Ok(ConnectInfo(peer)) = peer else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if !is_local(peer, &uri, &headers) {
        tracing::warn!(%peer, "metrics refused to a request not straight from loopback");
        return StatusCode::NOT_FOUND.into_response();
    }
    (
        [
            (header::CONTENT_TYPE, CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        recorder.render(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use axum::body::Body;
    use axum::extract::connect_info::MockConnectInfo;
    use axum::http::Request;
    use steward_harness::{ChannelName, ConversationKey};
    use tower::ServiceExt as _;

    use super::*;

    fn turn_metrics() -> TurnMetrics {
        let channel = ChannelName::parse("web").unwrap();
        TurnMetrics {
            conversation: ConversationKey::new(&channel, "u1").unwrap(),
            channel,
            turn: 1,
            end: TurnEnd::Replied,
            latency: Duration::from_millis(1_500),
            model_calls: 2,
            model_failures: 0,
            uncached_input_tokens: 100,
            cache_write_tokens: 0,
            cache_read_tokens: 300,
            output_tokens: 20,
            tool_calls: 1,
            tool_errors: 0,
            held_actions: 1,
        }
    }

    async fn get_metrics(
        recorder: &Arc<PrometheusRecorder>,
        peer: &str,
        host: &str,
        extra: Option<(&str, &str)>,
    ) -> (StatusCode, String) {
        let app = routes(Arc::clone(recorder))
            .layer(MockConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        let mut request = Request::get(METRICS_PATH).header(header::HOST, host);
        if let Some((name, value)) = extra {
            request = request.header(name, value);
        }
        let res = app
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn a_loopback_scrape_reads_the_turn_in_the_families() {
        let recorder = Arc::new(PrometheusRecorder::new());
        recorder.turn(&turn_metrics());
        recorder.model_failure(ModelFailureKind::Timeout);
        recorder.dead_letter("wa");
        let (status, text) =
            get_metrics(&recorder, "127.0.0.1:50000", "127.0.0.1:8080", None).await;
        assert_eq!(status, StatusCode::OK);
        for line in [
            "steward_turns_total{channel=\"web\",outcome=\"replied\"} 1",
            "steward_model_calls_total{channel=\"web\"} 2",
            "steward_input_tokens_total{channel=\"web\"} 400",
            "steward_cache_read_tokens_total{channel=\"web\"} 300",
            "steward_held_actions_total{channel=\"web\"} 1",
            "steward_turn_latency_seconds_count{channel=\"web\"} 1",
            "steward_turn_latency_seconds_bucket{le=\"2.5\",channel=\"web\"} 1",
            "steward_turn_latency_seconds_bucket{le=\"1.0\",channel=\"web\"} 0",
            "steward_turn_cache_read_share_bucket{le=\"0.8\",channel=\"web\"} 1",
            "steward_model_failures_total{kind=\"timeout\"} 1",
            "steward_dead_letters_total{channel=\"wa\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[tokio::test]
    async fn anything_not_straight_from_loopback_is_refused() {
        let recorder = Arc::new(PrometheusRecorder::new());
        recorder.turn(&turn_metrics());
        // Another machine, even naming a loopback host.
        let (status, body) =
            get_metrics(&recorder, "192.0.2.7:50000", "127.0.0.1:8080", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(!body.contains("steward_"));
        // A tunnel or proxy on this machine: a loopback peer, but forwarded.
        for forwarded in [
            ("x-forwarded-for", "198.51.100.1"),
            ("forwarded", "for=198.51.100.1"),
        ] {
            let (status, _) = get_metrics(
                &recorder,
                "127.0.0.1:50000",
                "127.0.0.1:8080",
                Some(forwarded),
            )
            .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{forwarded:?}");
        }
        // A loopback peer asked by a public name (a tunnel that rewrites nothing else).
        let (status, _) =
            get_metrics(&recorder, "127.0.0.1:50000", "steward.example.org", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // IPv6 loopback is loopback.
        let (status, _) = get_metrics(&recorder, "[::1]:50000", "[::1]:8080", None).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn without_connect_info_the_route_fails_closed() {
        let recorder = Arc::new(PrometheusRecorder::new());
        let res = routes(recorder)
            .oneshot(
                Request::get(METRICS_PATH)
                    .header(header::HOST, "127.0.0.1")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }
}
