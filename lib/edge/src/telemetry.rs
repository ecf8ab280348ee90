//! The one tracing set-up of every Steward process (the four Lambda functions and `steward`):
//! log lines through `tracing-subscriber`'s formatter, and — only when an OTLP endpoint is set —
//! OpenTelemetry traces exported over OTLP/HTTP.
//!
//! * Off unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!   Off means no OpenTelemetry layer is installed at all: spans cost what they cost before.
//! * `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`
//!   (the default) or `http/json`; anything else refuses the start, naming the variable.
//! * Only spans of Steward's own crates are exported, never events: the span fields are ids,
//!   counts, names and kinds chosen where each span is made (`steward_harness::telemetry`),
//!   while log lines may quote what a provider answered.
//! * Export runs on the SDK's batch processor (bounded queue, its own thread), through
//!   [`ReqwestExporterClient`]: the workspace's reqwest on the process's tokio runtime, with a
//!   short timeout. A failed export drops its spans and logs one warning a minute at most.
//! * On Lambda each invocation ends with [`Telemetry::flush`] (see [`FlushAfter`] for the
//!   HTTP functions), because the environment may be frozen right after it returns.
//!
//! The W3C trace context of a queued message is read and written here too:
//! [`current_trace_context`] when enqueueing, [`continue_trace`] when handling.

use std::collections::HashMap;
use std::future::Future;
use std::io::IsTerminal;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use steward_store::{TRACEPARENT, TRACESTATE, TraceContext};
use tracing::{Level, Metadata, Span, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::{FilterFn, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{Layer, Registry};

/// The endpoint of traces alone (a full URL, used as it is).
pub const ENV_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The endpoint of every signal (`/v1/traces` is appended for traces).
pub const ENV_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The protocol of traces alone.
pub const ENV_TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
/// The protocol of every signal.
pub const ENV_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// The `service.name` of the exported spans (default: the process's own name, e.g.
/// `steward-agent`).
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";

/// How long one export may take, connection included. Short, because on Lambda the flush at
/// the end of an invocation waits for it; a collector beside the function (the ADOT layer, a
/// sidecar) answers in milliseconds, and one that does not is treated as down.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// Spans kept while waiting for export; beyond it new spans are dropped, so a slow or dead
/// collector costs bounded memory. A turn makes tens of spans; this is hundreds of turns.
pub const EXPORT_QUEUE_SPANS_MAX: usize = 4096;

/// A failed export is reported at most this often (the rest are dropped quietly), and for
/// this long after a failure the end-of-invocation flush is skipped, so a collector that is
/// down costs at most one [`EXPORT_TIMEOUT`] a minute.
pub const EXPORT_FAILURE_QUIET: Duration = Duration::from_secs(60);

/// Why tracing could not be set up as the environment asks.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The protocol variable names a protocol Steward does not export with.
    #[error(
        "{variable} is \"{value}\": Steward exports traces over OTLP/HTTP only; set it to \
         http/protobuf (the default) or http/json"
    )]
    UnsupportedProtocol {
        /// The variable that was read.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// `RUST_LOG` (or the built-in default) is not a list of `target=level` directives.
    #[error(
        "{variable} is {value:?}, which is not a log filter: give a level (info) or \
         comma-separated target=level directives (warn,steward=debug): {problem}"
    )]
    LogFilter {
        /// `RUST_LOG`, or "the default log filter".
        variable: &'static str,
        /// What it holds.
        value: String,
        /// What the parser said.
        problem: String,
    },
    /// The exporter refused its configuration (e.g. an endpoint that is not a URL).
    #[error(
        "the OTLP trace exporter could not be set up ({ENV_TRACES_ENDPOINT} or {ENV_ENDPOINT}): {0}"
    )]
    Exporter(String),
}

/// The wire format of exported spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportProtocol {
    /// `http/protobuf`.
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

/// What export the environment asks for; `None` from [`ExportSettings::from_lookup`] is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSettings {
    /// The wire format.
    pub protocol: ExportProtocol,
    /// The `service.name` resource attribute.
    pub service_name: String,
}

impl ExportSettings {
    /// Reads the `OTEL_*` variables through `lookup`: `Ok(None)` when no endpoint is set
    /// (blank counts as unset), an error naming the variable when the protocol is not one
    /// Steward exports with. `service` is the default `service.name`.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        service: &str,
    ) -> Result<Option<Self>, TelemetryError> {
        let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        if set(ENV_TRACES_ENDPOINT).is_none() && set(ENV_ENDPOINT).is_none() {
            return Ok(None);
        }
        let protocol = match [ENV_TRACES_PROTOCOL, ENV_PROTOCOL]
            .into_iter()
            .find_map(|name| set(name).map(|v| (name, v)))
        {
            None => ExportProtocol::HttpProtobuf,
            Some((variable, value)) => match value.trim() {
                "http/protobuf" => ExportProtocol::HttpProtobuf,
                "http/json" => ExportProtocol::HttpJson,
                _ => return Err(TelemetryError::UnsupportedProtocol { variable, value }),
            },
        };
        let service_name = set(ENV_SERVICE_NAME).unwrap_or_else(|| service.to_owned());
        Ok(Some(Self {
            protocol,
            service_name,
        }))
    }
}

/// Where log lines go and how they look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object a line on stdout, without time (CloudWatch adds it): the Lambdas.
    LambdaJson,
    /// Human-readable lines on stderr: `steward`.
    Terminal,
}

/// The handle on exported traces a process keeps: flush it before a Lambda invocation
/// returns, shut it down on exit. Cheap to clone; "off" when nothing is exported.
#[derive(Clone, Debug, Default)]
pub struct Telemetry {
    export: Option<Export>,
}

#[derive(Clone, Debug)]
struct Export {
    provider: SdkTracerProvider,
    failures: Arc<FailureNotes>,
}

impl Telemetry {
    /// No export.
    pub fn off() -> Self {
        Self::default()
    }

    /// Whether spans are exported.
    pub fn is_exporting(&self) -> bool {
        self.export.is_some()
    }

    /// Sends every finished span now and waits for the answer (at most [`EXPORT_TIMEOUT`] and
    /// the SDK's own flush bound). Skipped while the collector failed in the last
    /// [`EXPORT_FAILURE_QUIET`]: the invocation is not held up for a collector that is down.
    /// The wait happens on tokio's blocking pool, so the runtime's workers stay free to run
    /// the export itself.
    pub async fn flush(&self) {
        let Some(export) = &self.export else {
            return;
        };
        if export.failures.failed_recently() {
            return;
        }
        let provider = export.provider.clone();
        let flushed = tokio::task::spawn_blocking(move || provider.force_flush()).await;
        if let Ok(Err(e)) = flushed {
            export.failures.report(&e.to_string());
        }
    }

    /// Flushes and stops the exporter (at the end of `steward serve`).
    pub async fn shutdown(&self) {
        let Some(export) = &self.export else {
            return;
        };
        let provider = export.provider.clone();
        let _ = tokio::task::spawn_blocking(move || provider.shutdown()).await;
    }
}

/// Sets up tracing for the process, once: log lines in `format`, filtered by `RUST_LOG`
/// (else `default_filter`), and span export when the environment asks for it
/// ([`ExportSettings::from_lookup`] over the process environment; `service` is the default
/// `service.name`). A second call keeps the first set-up and returns it off.
///
/// Must run inside the tokio runtime the exports will use.
pub fn init(
    format: LogFormat,
    default_filter: &str,
    service: &str,
) -> Result<Telemetry, TelemetryError> {
    let settings = ExportSettings::from_lookup(|name| std::env::var(name).ok(), service)?;
    let (provider, failures) = match settings {
        Some(settings) => {
            let failures = Arc::new(FailureNotes::default());
            let exporter = otlp_exporter(&settings, Arc::clone(&failures))?;
            (Some(batch_provider(exporter, &settings)), Some(failures))
        }
        None => (None, None),
    };
    let filter = log_filter(std::env::var(ENV_LOG).ok(), default_filter)?;
    let subscriber = subscriber(format, filter, provider.as_ref());
    if tracing::subscriber::set_global_default(subscriber).is_err() {
        return Ok(Telemetry::off());
    }
    Ok(Telemetry {
        export: provider
            .zip(failures)
            .map(|(provider, failures)| Export { provider, failures }),
    })
}

/// Which log lines are written: the process's `RUST_LOG`.
pub const ENV_LOG: &str = "RUST_LOG";

/// The log filter from `RUST_LOG`'s value (unset or blank: `default_filter`): a level, or
/// comma-separated `target=level` directives, matched by target prefix. A value that is not
/// one stops the start with one sentence instead of logging with some other filter.
///
/// `Targets`, not `EnvFilter`: the span and field directives `EnvFilter` adds
/// (`[span{field=value}]=debug`) need a regular-expression engine, about 0.4 MB of the agent's
/// bootstrap with what came with it (bench/RESULTS.md), and Steward's logs are filtered by
/// target only.
pub fn log_filter(value: Option<String>, default_filter: &str) -> Result<Targets, TelemetryError> {
    let (variable, value) = match value {
        Some(value) if !value.trim().is_empty() => (ENV_LOG, value),
        _ => ("the default log filter", default_filter.to_owned()),
    };
    value
        .trim()
        .parse::<Targets>()
        .map_err(|e| TelemetryError::LogFilter {
            variable,
            problem: e.to_string(),
            value,
        })
}

/// The subscriber [`init`] installs: the log formatter filtered by `filter`, and, only when
/// `traces` is given, the OpenTelemetry layer exporting Steward's spans to it. Public so tests
/// build exactly this with an in-memory exporter.
pub fn subscriber(
    format: LogFormat,
    filter: Targets,
    traces: Option<&SdkTracerProvider>,
) -> Box<dyn Subscriber + Send + Sync> {
    let log = match format {
        LogFormat::LambdaJson => tracing_subscriber::fmt::layer()
            .json()
            .without_time()
            .with_filter(filter)
            .boxed(),
        LogFormat::Terminal => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(colour_wanted(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
            ))
            .with_filter(filter)
            .boxed(),
    };
    let otel = traces.map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("steward"))
            .with_filter(FilterFn::new(exported))
    });
    Box::new(Registry::default().with(log).with(otel))
}

/// The targets whose DEBUG spans are exported too: the request span of each HTTP surface, and
/// a turn's model calls and sends (`steward_harness::telemetry`). They are DEBUG to keep them
/// out of log lines, whose formatter writes out every enabled span's fields as it is made.
const DEBUG_SPANS_EXPORTED: [&str; 2] = ["steward_edge::request_log", "steward_harness::telemetry"];

/// Which spans are exported: Steward's own at INFO and above, and the DEBUG spans of
/// [`DEBUG_SPANS_EXPORTED`]. Never events: their fields are free text.
fn exported(meta: &Metadata<'_>) -> bool {
    meta.is_span()
        && meta.target().starts_with("steward")
        && (*meta.level() <= Level::INFO || DEBUG_SPANS_EXPORTED.contains(&meta.target()))
}

/// Whether `steward`'s log lines on stderr are coloured: only on a terminal, and never when
/// `NO_COLOR` is set to something (<https://no-color.org>). A log file or a service manager's
/// journal would otherwise get the escape sequences as text, and writing them was part of
/// every enabled span's cost.
fn colour_wanted(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// A tracer provider exporting through the batch processor with a bounded queue.
///
/// Why batch, also on Lambda: the simple processor exports each span as it ends, on the
/// thread that ends it, waiting for the collector — every tool call and model call of a turn
/// would wait for a network round trip, and a collector that is down would hold each one for
/// the whole timeout. The batch processor hands spans to its own thread through a bounded
/// queue (full: the span is dropped, never waited for). What Lambda needs on top — nothing
/// left in the queue when the environment is frozen — is the explicit [`Telemetry::flush`]
/// at the end of each invocation, after the reply was sent.
fn batch_provider<E>(exporter: E, settings: &ExportSettings) -> SdkTracerProvider
where
    E: opentelemetry_sdk::trace::SpanExporter + 'static,
{
    let config = BatchConfigBuilder::default()
        .with_max_queue_size(EXPORT_QUEUE_SPANS_MAX)
        .build();
    SdkTracerProvider::builder()
        .with_span_processor(
            BatchSpanProcessor::builder(exporter)
                .with_batch_config(config)
                .build(),
        )
        .with_resource(
            Resource::builder()
                .with_service_name(settings.service_name.clone())
                .build(),
        )
        .build()
}

fn otlp_exporter(
    settings: &ExportSettings,
    failures: Arc<FailureNotes>,
) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    let protocol = match settings.protocol {
        ExportProtocol::HttpProtobuf => Protocol::HttpBinary,
        ExportProtocol::HttpJson => Protocol::HttpJson,
    };
    let client = ReqwestExporterClient::new(failures)?;
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(client)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))
}

/// When exports last failed, for the once-a-minute warning and the skipped flush.
#[derive(Debug, Default)]
struct FailureNotes {
    last_failure: Mutex<Option<Instant>>,
    last_warning: Mutex<Option<Instant>>,
}

impl FailureNotes {
    fn report(&self, why: &str) {
        let now = Instant::now();
        if let Ok(mut last) = self.last_failure.lock() {
            *last = Some(now);
        }
        let Ok(mut warned) = self.last_warning.lock() else {
            return;
        };
        if warned.is_none_or(|at| now.duration_since(at) >= EXPORT_FAILURE_QUIET) {
            *warned = Some(now);
            tracing::warn!(
                error = %why,
                "OpenTelemetry export failed; these spans are dropped (reported at most once a minute)"
            );
        }
    }

    fn succeeded(&self) {
        if let Ok(mut last) = self.last_failure.lock() {
            *last = None;
        }
    }

    fn failed_recently(&self) -> bool {
        self.last_failure
            .lock()
            .ok()
            .and_then(|last| *last)
            .is_some_and(|at| at.elapsed() < EXPORT_FAILURE_QUIET)
    }
}

/// The OTLP exporter's HTTP client: the workspace's reqwest (rustls), run on the tokio runtime
/// that set tracing up. The SDK calls it from its own export thread, outside any runtime, so
/// each request is spawned onto the runtime and awaited from there. Failures (no answer, or a
/// status other than 2xx) are noted for the once-a-minute warning.
#[derive(Debug, Clone)]
pub struct ReqwestExporterClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    failures: Arc<FailureNotes>,
}

impl ReqwestExporterClient {
    fn new(failures: Arc<FailureNotes>) -> Result<Self, TelemetryError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| TelemetryError::Exporter(format!("no tokio runtime: {e}")))?;
        let client = steward_net::client_builder()
            .timeout(EXPORT_TIMEOUT)
            .connect_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        Ok(Self {
            client,
            runtime,
            failures,
        })
    }

    async fn send(
        client: reqwest::Client,
        request: Request<Bytes>,
    ) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let answer = client.execute(request).await?;
        let mut response = Response::builder().status(answer.status());
        if let Some(headers) = response.headers_mut() {
            *headers = answer.headers().clone();
        }
        let body = answer.bytes().await?;
        Ok(response.body(body)?)
    }
}

#[async_trait::async_trait]
impl HttpClient for ReqwestExporterClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let sent = self
            .runtime
            .spawn(Self::send(self.client.clone(), request))
            .await
            .map_err(|e| -> HttpError { Box::new(e) })
            .and_then(|r| r);
        match &sent {
            Ok(response) if response.status().is_success() => self.failures.succeeded(),
            Ok(response) => self
                .failures
                .report(&format!("the collector answered {}", response.status())),
            Err(e) => self.failures.report(&e.to_string()),
        }
        sent
    }
}

/// The W3C trace context of the current span, to send along with a queued message; empty when
/// no span is exported (tracing off, or outside any span).
pub fn current_trace_context() -> TraceContext {
    let cx = Span::current().context();
    if !cx.span().span_context().is_valid() {
        return TraceContext::none();
    }
    let mut carrier = Carrier::default();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    TraceContext::new(
        carrier.0.get(TRACEPARENT).map(String::as_str),
        carrier.0.get(TRACESTATE).map(String::as_str),
    )
}

/// Makes `span` a child of the trace in `trace` (the enqueuing side's span), so the handling
/// of a queued message continues the trace it came from. A missing or malformed `traceparent`
/// leaves `span` where it is: it starts a new trace (or stays in the current one). Returns
/// whether the remote parent was taken.
pub fn continue_trace(span: &Span, trace: &TraceContext) -> bool {
    let mut carrier = Carrier::default();
    for (name, value) in [
        (TRACEPARENT, trace.traceparent()),
        (TRACESTATE, trace.tracestate()),
    ] {
        if let Some(value) = value {
            carrier.0.insert(name.to_owned(), value.to_owned());
        }
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    if !cx.span().span_context().is_valid() {
        if trace.traceparent().is_some() {
            tracing::debug!("unreadable traceparent on a queued message; starting a new trace");
        }
        return false;
    }
    span.set_parent(cx).is_ok()
}

/// The two header values, as the propagator reads and writes them.
#[derive(Default)]
struct Carrier(HashMap<String, String>);

impl Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// A Lambda HTTP function's service that flushes traces before each invocation returns: the
/// response body is read to the end first (the request's span closes with it), then
/// [`Telemetry::flush`] runs, then the buffered response is handed to the runtime.
#[derive(Clone, Debug)]
pub struct FlushAfter<S> {
    inner: S,
    telemetry: Telemetry,
}

impl<S> FlushAfter<S> {
    /// `inner`, flushing `telemetry` after each response.
    pub fn new(inner: S, telemetry: Telemetry) -> Self {
        Self { inner, telemetry }
    }
}

impl<S, B> tower::Service<axum::http::Request<B>> for FlushAfter<S>
where
    S: tower::Service<axum::http::Request<B>, Response = axum::response::Response>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = axum::response::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        let answer = self.inner.call(request);
        let telemetry = self.telemetry.clone();
        Box::pin(async move {
            let response = answer.await?;
            if !telemetry.is_exporting() {
                return Ok(response);
            }
            let (parts, body) = response.into_parts();
            let body = match axum::body::to_bytes(body, usize::MAX).await {
                Ok(bytes) => axum::body::Body::from(bytes),
                Err(e) => {
                    tracing::error!(error = %e, "response body could not be read");
                    axum::body::Body::empty()
                }
            };
            telemetry.flush().await;
            Ok(axum::response::Response::from_parts(parts, body))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
