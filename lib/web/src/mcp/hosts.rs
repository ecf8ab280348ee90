//! DNS-rebinding protection: a request is served only when its `Host` (and its `Origin`, when a
//! browser sent one) names a host on the allow-list. It runs before authentication, so a page
//! on a rebound domain learns nothing, not even whether a token would be accepted.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::Response;

use super::Shared;
use super::reply::refuse;

/// One allow-list entry: an exact host (any port), an exact `host:port`, or `*.domain` (any
/// subdomain of `domain`, any port — for API Gateway's generated names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostName,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostName {
    Exact(String),
    /// The suffix including its leading dot (`.example.org`).
    Subdomains(String),
}

impl HostPattern {
    /// Parses `host`, `host:port`, `[v6]`, `[v6]:port`, a bare IPv6 address or `*.domain`;
    /// None for anything else (a URL, a path, blanks).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Some(domain) = text.strip_prefix("*.") {
            let authority = parse_authority(domain)?;
            return Some(Self {
                host: HostName::Subdomains(format!(".{}", authority.host)),
                port: authority.port,
            });
        }
        if text.contains(':') && !text.contains('[') && text.parse::<std::net::Ipv6Addr>().is_ok() {
            return Some(Self {
                host: HostName::Exact(text.to_ascii_lowercase()),
                port: None,
            });
        }
        let authority = parse_authority(text)?;
        Some(Self {
            host: HostName::Exact(authority.host),
            port: authority.port,
        })
    }

    /// Whether `host` (lowercase, IPv6 without brackets) on `port` matches.
    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        let host_ok = match &self.host {
            HostName::Exact(h) => h == host,
            HostName::Subdomains(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
        };
        host_ok && self.port.is_none_or(|p| port == Some(p))
    }
}

/// A host and optional port, normalised: lowercase, IPv6 without brackets.
#[derive(Debug, PartialEq, Eq)]
struct HostPort {
    host: String,
    port: Option<u16>,
}

impl HostPort {
    fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

fn parse_authority(text: &str) -> Option<HostPort> {
    if text.is_empty() || text.contains(['/', '@', '?', '#']) {
        return None;
    }
    let authority = text.parse::<Authority>().ok()?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    Some(HostPort {
        host,
        port: authority.port_u16(),
    })
}

/// The request's host: the `Host` header, else the URI's authority (HTTP/2).
fn request_host(uri: &Uri, headers: &HeaderMap) -> Option<HostPort> {
    match headers.get(HOST) {
        Some(value) => parse_authority(value.to_str().ok()?),
        None => uri.authority().and_then(|a| parse_authority(a.as_str())),
    }
}

/// The `Origin` header's host, `Ok(None)` when there is no `Origin`, `Err` when it is
/// unreadable or `null` (sandboxed pages; MCP clients send no `Origin` at all).
fn origin_host(headers: &HeaderMap) -> Result<Option<HostPort>, ()> {
    let Some(value) = headers.get(ORIGIN) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| ())?;
    let uri = text.parse::<Uri>().map_err(|_| ())?;
    // An origin is `scheme://host[:port]`; `null` and other schemeless values are not.
    if uri.scheme().is_none() {
        return Err(());
    }
    let authority = uri.authority().ok_or(())?;
    parse_authority(authority.as_str()).map(Some).ok_or(())
}

fn allowed(patterns: &[HostPattern], host: &HostPort) -> bool {
    patterns.iter().any(|p| p.matches(&host.host, host.port))
}

/// Whether the request's `Host` is a loopback name (the dev user applies only then).
pub(super) fn is_loopback_request(uri: &Uri, headers: &HeaderMap) -> bool {
    request_host(uri, headers).is_some_and(|h| h.is_loopback())
}

/// Middleware: 403 unless `Host` (and `Origin`, if any) is allowed.
pub(super) async fn guard(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let patterns = shared.config.allowed_hosts();
    let host = request_host(req.uri(), req.headers());
    let host_ok = host.as_ref().is_some_and(|h| allowed(patterns, h));
    let origin_ok = match origin_host(req.headers()) {
        Ok(None) => true,
        Ok(Some(origin)) => allowed(patterns, &origin),
        Err(()) => false,
    };
    if host_ok && origin_ok {
        return next.run(req).await;
    }
    tracing::warn!(
        host = ?req.headers().get(HOST),
        origin = ?req.headers().get(ORIGIN),
        "MCP: refused a request for a host that is not allowed (possible DNS rebinding)"
    );
    refuse(
        req,
        StatusCode::FORBIDDEN,
        "This server does not answer for that Host or Origin.",
    )
    .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn hp(host: &str, port: Option<u16>) -> HostPort {
        HostPort {
            host: host.into(),
            port,
        }
    }

    fn allows(pattern: &str, host: &str) -> bool {
        let p = HostPattern::parse(pattern).unwrap();
        let h = parse_authority(host).unwrap();
        p.matches(&h.host, h.port)
    }

    #[test]
    fn patterns_match_hosts_and_ports() {
        assert!(allows("localhost", "localhost:8080"));
        assert!(allows("LocalHost", "localhost"));
        assert!(allows("api.example.org:443", "api.example.org:443"));
        assert!(!allows("api.example.org:443", "api.example.org:8443"));
        assert!(!allows("api.example.org:443", "api.example.org"));
        assert!(allows("::1", "[::1]:9000"));
        assert!(allows("[::1]", "[::1]"));
        assert!(allows(
            "*.execute-api.eu-west-1.amazonaws.com",
            "abc123.execute-api.eu-west-1.amazonaws.com"
        ));
        assert!(!allows("*.example.org", "example.org"));
        assert!(!allows("*.example.org", "evilexample.org"));
        assert!(!allows("localhost", "evil.example.com"));
        assert!(!allows("127.0.0.1", "127.0.0.1.evil.com"));
    }

    #[test]
    fn junk_is_not_a_pattern() {
        for bad in ["", "  ", "http://x.org", "x.org/path", "user@x.org", "*."] {
            assert!(HostPattern::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn origins_and_loopback() {
        let mut headers = HeaderMap::new();
        assert_eq!(origin_host(&headers), Ok(None));
        headers.insert(ORIGIN, "http://evil.example.com:8080".parse().unwrap());
        assert_eq!(
            origin_host(&headers),
            Ok(Some(hp("evil.example.com", Some(8080))))
        );
        headers.insert(ORIGIN, "null".parse().unwrap());
        assert!(origin_host(&headers).is_err());

        let mut headers = HeaderMap::new();
        headers.insert(HOST, "127.0.0.1:3000".parse().unwrap());
        assert!(is_loopback_request(&Uri::from_static("/mcp"), &headers));
        headers.insert(HOST, "[::1]:3000".parse().unwrap());
        assert!(is_loopback_request(&Uri::from_static("/mcp"), &headers));
        headers.insert(HOST, "tunnel.example.net".parse().unwrap());
        assert!(!is_loopback_request(&Uri::from_static("/mcp"), &headers));
    }
}
