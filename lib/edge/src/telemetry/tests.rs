use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};

use super::*;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn export_is_off_unless_an_endpoint_is_set() {
    assert_eq!(
        ExportSettings::from_lookup(env(&[]), "steward").unwrap(),
        None
    );
    assert_eq!(
        ExportSettings::from_lookup(env(&[(ENV_ENDPOINT, "  "), (ENV_PROTOCOL, "grpc")]), "s")
            .unwrap(),
        None,
        "blank is unset, and the protocol is not even read"
    );
    let on = ExportSettings::from_lookup(
        env(&[(ENV_ENDPOINT, "http://127.0.0.1:4318")]),
        "steward-agent",
    )
    .unwrap()
    .unwrap();
    assert_eq!(on.protocol, ExportProtocol::HttpProtobuf);
    assert_eq!(on.service_name, "steward-agent");
    let traces_only = ExportSettings::from_lookup(
        env(&[
            (ENV_TRACES_ENDPOINT, "http://collector/v1/traces"),
            (ENV_PROTOCOL, "http/json"),
            (ENV_SERVICE_NAME, "events-bot"),
        ]),
        "steward",
    )
    .unwrap()
    .unwrap();
    assert_eq!(traces_only.protocol, ExportProtocol::HttpJson);
    assert_eq!(traces_only.service_name, "events-bot");
}

#[test]
fn an_unsupported_protocol_is_refused_naming_the_variable() {
    let err = ExportSettings::from_lookup(
        env(&[(ENV_ENDPOINT, "http://c:4317"), (ENV_PROTOCOL, "grpc")]),
        "s",
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(ENV_PROTOCOL) && text.contains("grpc"),
        "{text}"
    );
    // The traces-specific variable wins, and is the one named.
    let err = ExportSettings::from_lookup(
        env(&[
            (ENV_ENDPOINT, "http://c:4318"),
            (ENV_PROTOCOL, "http/protobuf"),
            (ENV_TRACES_PROTOCOL, "http/xml"),
        ]),
        "s",
    )
    .unwrap_err();
    assert!(matches!(
        err,
        TelemetryError::UnsupportedProtocol {
            variable: ENV_TRACES_PROTOCOL,
            ..
        }
    ));
    let ok = ExportSettings::from_lookup(
        env(&[
            (ENV_ENDPOINT, "http://c:4318"),
            (ENV_PROTOCOL, "grpc"),
            (ENV_TRACES_PROTOCOL, "http/json"),
        ]),
        "s",
    )
    .unwrap()
    .unwrap();
    assert_eq!(ok.protocol, ExportProtocol::HttpJson);
}

fn in_memory() -> (SdkTracerProvider, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (provider, exporter)
}

fn quiet() -> Targets {
    Targets::new()
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!(
            "no span {name} in {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

#[test]
fn with_export_off_no_opentelemetry_layer_is_installed() {
    let subscriber = subscriber(LogFormat::Terminal, quiet(), None);
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("turn");
        let _entered = span.enter();
        assert!(
            !span.context().span().span_context().is_valid(),
            "a span has no OpenTelemetry context without the layer"
        );
        assert!(current_trace_context().is_empty());
    });
    assert!(!Telemetry::off().is_exporting());
}

#[test]
fn a_queued_message_continues_the_trace_it_was_enqueued_in() {
    let (provider, exporter) = in_memory();
    let webhook = subscriber(LogFormat::Terminal, quiet(), Some(&provider));
    let carried = tracing::subscriber::with_default(webhook, || {
        let request = tracing::debug_span!(target: "steward_edge::request_log", "request");
        let _entered = request.enter();
        current_trace_context()
    });
    assert!(!carried.is_empty());
    let agent = subscriber(LogFormat::Terminal, quiet(), Some(&provider));
    tracing::subscriber::with_default(agent, || {
        let process = tracing::info_span!("process");
        assert!(continue_trace(&process, &carried));
        let _entered = process.enter();
        let turn = tracing::info_span!("turn");
        let _turn = turn.enter();
    });
    let spans = exporter.get_finished_spans().unwrap();
    let request = named(&spans, "request");
    let process = named(&spans, "process");
    let turn = named(&spans, "turn");
    let trace = request.span_context.trace_id();
    assert_ne!(trace, TraceId::INVALID);
    assert_eq!(process.span_context.trace_id(), trace);
    assert_eq!(process.parent_span_id, request.span_context.span_id());
    assert_eq!(
        turn.span_context.trace_id(),
        trace,
        "one message, one trace"
    );
    assert_eq!(turn.parent_span_id, process.span_context.span_id());
    assert_eq!(
        carried.traceparent().unwrap(),
        format!("00-{trace}-{}-01", request.span_context.span_id())
    );
}

#[test]
fn a_malformed_traceparent_starts_a_new_trace() {
    let (provider, exporter) = in_memory();
    let subscriber = subscriber(LogFormat::Terminal, quiet(), Some(&provider));
    tracing::subscriber::with_default(subscriber, || {
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736",
            "not a traceparent",
        ] {
            let span = tracing::info_span!("process", bad);
            assert!(
                !continue_trace(&span, &TraceContext::new(Some(bad), None)),
                "{bad}"
            );
            let _entered = span.enter();
        }
    });
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 5);
    let mut traces: Vec<TraceId> = spans.iter().map(|s| s.span_context.trace_id()).collect();
    traces.sort_by_key(|t| t.to_string());
    traces.dedup();
    assert_eq!(traces.len(), 5, "each is a trace of its own");
    for span in &spans {
        assert_eq!(span.parent_span_id, SpanId::INVALID);
        assert_ne!(
            span.span_context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
    }
}

#[test]
fn only_stewards_spans_are_exported_never_events() {
    let (provider, exporter) = in_memory();
    let subscriber = subscriber(LogFormat::Terminal, quiet(), Some(&provider));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("turn", turn = 3);
        let _entered = span.enter();
        tracing::info!(text = "what the person wrote", "an event");
        // A model call's span: DEBUG, out of log lines, and exported.
        let _chat = tracing::debug_span!(target: "steward_harness::telemetry", "chat").entered();
        let _debug = tracing::debug_span!("detail").entered();
        let _other = tracing::info_span!(target: "hyper_util::client", "connect").entered();
    });
    let spans = exporter.get_finished_spans().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["chat", "turn"]);
    assert!(spans[1].events.is_empty(), "{:?}", spans[1].events);
}

#[test]
fn log_lines_are_coloured_only_on_a_terminal_without_no_color() {
    use std::ffi::OsStr;
    assert!(colour_wanted(true, None));
    assert!(colour_wanted(true, Some(OsStr::new(""))), "empty is unset");
    assert!(!colour_wanted(true, Some(OsStr::new("1"))));
    assert!(
        !colour_wanted(false, None),
        "a file or a pipe gets plain text"
    );
}

#[test]
fn failures_are_noted_and_quiet_the_flush() {
    let notes = FailureNotes::default();
    assert!(!notes.failed_recently());
    notes.report("connection refused");
    assert!(notes.failed_recently());
    notes.report("connection refused");
    notes.succeeded();
    assert!(!notes.failed_recently());
}

/// A collector that is down: the export fails fast, is noted, and the next flush is skipped
/// instead of waiting again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_fails_the_export_and_skips_the_next_flush() {
    // A port nothing listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let failures = Arc::new(FailureNotes::default());
    let client = ReqwestExporterClient::new(Arc::clone(&failures)).unwrap();
    let request = Request::builder()
        .method("POST")
        .uri(format!("http://127.0.0.1:{port}/v1/traces"))
        .body(Bytes::from_static(b""))
        .unwrap();
    assert!(client.send_bytes(request).await.is_err());
    assert!(failures.failed_recently());
    let provider = SdkTracerProvider::builder().build();
    let telemetry = Telemetry {
        export: Some(Export { provider, failures }),
    };
    assert!(telemetry.is_exporting());
    telemetry.flush().await;
}

/// The process set-up itself: with no endpoint in the environment, `init` installs the log
/// formatter alone (spans get no OpenTelemetry context) and hands back an "off" handle.
#[test]
fn init_without_an_endpoint_installs_no_opentelemetry_layer() {
    if std::env::var_os(ENV_ENDPOINT).is_some() || std::env::var_os(ENV_TRACES_ENDPOINT).is_some() {
        return;
    }
    let telemetry = init(LogFormat::Terminal, "off", "steward-test").unwrap();
    assert!(!telemetry.is_exporting());
    tracing::dispatcher::get_default(|dispatch| {
        assert!(
            dispatch
                .downcast_ref::<tracing_opentelemetry::OpenTelemetryLayer<
                    Registry,
                    opentelemetry_sdk::trace::SdkTracer,
                >>()
                .is_none()
        );
    });
    let span = tracing::info_span!("turn");
    let _entered = span.enter();
    assert!(!span.context().span().span_context().is_valid());
    assert!(current_trace_context().is_empty());
}

#[test]
fn the_log_filter_is_rust_log_or_the_default_and_a_bad_one_is_named() {
    use tracing::level_filters::LevelFilter;
    let filter = log_filter(Some("warn,steward_harness=debug".to_owned()), "info").unwrap();
    assert!(filter.would_enable("steward_harness::turn", &Level::DEBUG));
    assert!(!filter.would_enable("hyper::proto", &Level::INFO));
    assert!(filter.would_enable("hyper::proto", &Level::WARN));
    let default = log_filter(Some("  ".to_owned()), "warn,steward=info").unwrap();
    assert!(default.would_enable("steward::serve", &Level::INFO));
    assert!(!default.would_enable("reqwest", &Level::INFO));
    assert_eq!(
        log_filter(None, "info").unwrap().default_level(),
        Some(LevelFilter::INFO)
    );
    let err = log_filter(Some("steward=loud".to_owned()), "info").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("RUST_LOG is \"steward=loud\", which is not a log filter: "),
        "{err}"
    );
    assert!(log_filter(None, "everything=loud").is_err());
}
