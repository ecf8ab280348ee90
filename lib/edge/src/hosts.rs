//! Which hosts Steward answers for, and whether a request came straight from this machine.
//!
//! One implementation shared by the web app ([`guard`]) and `/mcp` (its own guard, which answers
//! in JSON-RPC): a request is served only when its `Host` (and its `Origin`, when a browser sent
//! one) names a host on the allow-list. This is the DNS-rebinding defence: a page on a rebound
//! domain reaches the server with its own name in `Host` and is refused before anything runs.
//!
//! [`is_direct_loopback`] is the stricter test of the development sign-in: a loopback `Host`
//! *and* no header a proxy or tunnel adds, because a tunnel (`cloudflared`, `ngrok`) connects
//! from loopback and would otherwise make every Internet visitor look local.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The host names a local server always answers for.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Headers a proxy, load balancer or tunnel adds to say whom it forwards for. A request
/// carrying any of them did not come straight from a browser on this machine. Compared
/// case-insensitively; every `X-Forwarded-*` header counts too (see [`is_forwarded`]).
pub const FORWARDING_HEADERS: [&str; 9] = [
    "forwarded",
    "x-real-ip",
    "cf-connecting-ip",
    "cf-ray",
    "true-client-ip",
    "fly-client-ip",
    "x-client-ip",
    "x-cluster-client-ip",
    "via",
];

/// Whether a proxy or tunnel forwarded the request (one of [`FORWARDING_HEADERS`] or any
/// `X-Forwarded-*` header is present).
pub fn is_forwarded(headers: &HeaderMap) -> bool {
    headers.keys().any(|name| {
        let name = name.as_str();
        name.starts_with("x-forwarded-") || FORWARDING_HEADERS.contains(&name)
    })
}

/// Whether the request came straight from this machine as far as HTTP can tell: its `Host` is
/// a loopback name and no proxy header is present. The development sign-in exists only then.
pub fn is_direct_loopback(uri: &Uri, headers: &HeaderMap) -> bool {
    is_loopback_request(uri, headers) && !is_forwarded(headers)
}

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

/// Whether `host` matches one of `patterns`.
fn allowed(patterns: &[HostPattern], host: &HostPort) -> bool {
    patterns.iter().any(|p| p.matches(&host.host, host.port))
}

/// Whether the request's `Host` is a loopback name.
pub fn is_loopback_request(uri: &Uri, headers: &HeaderMap) -> bool {
    request_host(uri, headers).is_some_and(|h| h.is_loopback())
}

/// Whether `Host` (and `Origin`, if any) of a request is on `patterns`.
pub fn request_allowed(patterns: &[HostPattern], uri: &Uri, headers: &HeaderMap) -> bool {
    let host = request_host(uri, headers);
    let host_ok = host.as_ref().is_some_and(|h| allowed(patterns, h));
    let origin_ok = match origin_host(headers) {
        Ok(None) => true,
        Ok(Some(origin)) => allowed(patterns, &origin),
        Err(()) => false,
    };
    host_ok && origin_ok
}

/// The hosts the loopback names stand for, as patterns.
pub fn loopback_patterns() -> Vec<HostPattern> {
    LOOPBACK_HOSTS
        .iter()
        .filter_map(|h| HostPattern::parse(h))
        .collect()
}

/// The host of a URL such as `STEWARD_PUBLIC_URL` (`https://x.example.org/`), as a pattern
/// matching that host on any port; None when the URL has no host.
pub fn url_host(url: &str) -> Option<HostPattern> {
    let uri = url.trim().parse::<Uri>().ok()?;
    uri.scheme()?;
    let host = uri.host()?;
    HostPattern::parse(host)
}

/// The sentence a refused host gets.
pub const FOREIGN_HOST_TEXT: &str =
    "This server does not answer for that Host or Origin. Use the address Steward was set up with.";

/// Web-app middleware: 421 Misdirected Request unless `Host` (and `Origin`, if any) is allowed.
pub async fn guard(
    State(patterns): State<Arc<Vec<HostPattern>>>,
    req: Request,
    next: Next,
) -> Response {
    if request_allowed(&patterns, req.uri(), req.headers()) {
        return next.run(req).await;
    }
    tracing::warn!(
        host = ?req.headers().get(HOST),
        origin = ?req.headers().get(ORIGIN),
        path = req.uri().path(),
        "web: refused a request for a host that is not allowed (possible DNS rebinding)"
    );
    (StatusCode::MISDIRECTED_REQUEST, FOREIGN_HOST_TEXT).into_response()
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

    #[test]
    fn forwarding_headers_make_a_loopback_host_not_direct() {
        let uri = Uri::from_static("/app/sign-in");
        let mut headers = HeaderMap::new();
        headers.insert(HOST, "localhost:8080".parse().unwrap());
        assert!(is_direct_loopback(&uri, &headers));
        for name in [
            "X-Forwarded-For",
            "x-forwarded-host",
            "X-Forwarded-Proto",
            "Forwarded",
            "CF-Connecting-IP",
            "X-Real-IP",
            "True-Client-IP",
            "Fly-Client-IP",
            "X-Client-IP",
        ] {
            let mut h = headers.clone();
            h.insert(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                "203.0.113.5".parse().unwrap(),
            );
            assert!(!is_direct_loopback(&uri, &h), "{name}");
        }
    }

    #[test]
    fn public_url_hosts() {
        let p = url_host("https://Steward.Example.org/").unwrap();
        assert!(p.matches("steward.example.org", Some(443)));
        assert!(p.matches("steward.example.org", None));
        assert!(url_host("steward.example.org").is_none());
        assert!(url_host("").is_none());
    }
}
