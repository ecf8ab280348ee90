//! Standard security headers on every web response (UI, chat API, public pages).
//!
//! The content security policy allows only this origin's own scripts and styles: the pages
//! carry no inline script, so an injected `<script>` would not run even if escaping failed.
//!
//! Every response under `/app` and `/api` (signed-in pages: attendee names and e-mails, tokens,
//! linking codes) and every answer to the public registration form (the registrant's own name
//! and address) is `Cache-Control: no-store`, so no browser or shared cache keeps a copy. The
//! one stylesheet and script set their own caching and keep it.

use axum::extract::Request;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, STRICT_TRANSPORT_SECURITY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;

/// The content security policy of every page.
pub const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// Whether the answer to a request may carry personal data and must not be stored.
fn personal(method: &Method, path: &str) -> bool {
    path == "/app"
        || path.starts_with("/app/")
        || path.starts_with("/api/")
        || (path.starts_with("/e/") && method != Method::GET && method != Method::HEAD)
}

/// Adds the security headers (kept when a handler already set one).
pub async fn headers(req: Request, next: Next) -> Response {
    let no_store = personal(req.method(), req.uri().path());
    let mut response = next.run(req).await;
    let h = response.headers_mut();
    if no_store {
        h.entry(CACHE_CONTROL)
            .or_insert(HeaderValue::from_static("no-store"));
    }
    let defaults = [
        (
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
        ),
        (X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (REFERRER_POLICY, HeaderValue::from_static("same-origin")),
        // Browsers ignore it over plain HTTP (local runs), so it is safe to always send.
        (
            STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        ),
        (
            axum::http::header::HeaderName::from_static("permissions-policy"),
            HeaderValue::from_static("camera=(), microphone=(), geolocation=()"),
        ),
    ];
    for (name, value) in defaults {
        h.entry(name).or_insert(value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personal_pages_are_the_app_the_api_and_form_answers() {
        assert!(personal(&Method::GET, "/app"));
        assert!(personal(&Method::GET, "/app/events/e_1/attendees"));
        assert!(personal(&Method::GET, "/api/chat/messages"));
        assert!(personal(&Method::POST, "/e/summer/register"));
        assert!(!personal(&Method::GET, "/e/summer"));
        assert!(!personal(&Method::GET, "/application"));
    }
}
