//! Request logging that records the method and the path only — never the query string, which
//! carries secrets on some routes (OpenID Connect's `code` and `state` on the callback,
//! WhatsApp's `hub.verify_token` on the webhook check). Use [`layer`] wherever requests are
//! traced.

use axum::http::Request;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{MakeSpan, TraceLayer};
use tracing::Span;

/// Makes each request's span from its method and path.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathOnly;

impl<B> MakeSpan<B> for PathOnly {
    fn make_span(&mut self, request: &Request<B>) -> Span {
        tracing::debug_span!(
            "request",
            method = %request.method(),
            path = %request.uri().path(),
        )
    }
}

/// The HTTP trace layer with [`PathOnly`] spans.
pub fn layer() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>, PathOnly> {
    TraceLayer::new_for_http().make_span_with(PathOnly)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// Collects everything written by the formatting layer.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn spans_carry_the_path_and_never_the_query() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .with_span_events(tracing_subscriber::fmt::format::FmtSpan::NEW),
        );
        tracing::subscriber::with_default(subscriber, || {
            let req = Request::get(
                "/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=VERIFY-SECRET&hub.challenge=1",
            )
            .body(())
            .unwrap();
            let span = PathOnly.make_span(&req);
            let _entered = span.enter();
            tracing::debug!("handled");
            let req = Request::get("/app/auth/callback?code=OIDC-CODE&state=STATE")
                .body(())
                .unwrap();
            let _span = PathOnly.make_span(&req);
        });
        let logged = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(logged.contains("/webhooks/whatsapp"), "{logged}");
        for secret in ["VERIFY-SECRET", "OIDC-CODE", "STATE", "hub.challenge"] {
            assert!(!logged.contains(secret), "{secret} in {logged}");
        }
    }
}
