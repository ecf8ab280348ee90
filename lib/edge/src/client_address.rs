//! [`ClientAddress`]: the address a public request came from, the key of the per-address
//! registration limit.
//!
//! Where it comes from, in order:
//! 1. a header named by the trusted-proxy setting (`STEWARD_TRUSTED_PROXY`, [`TrustedProxy`]),
//!    when the operator runs Steward behind a proxy or tunnel that sets it — without that
//!    setting no header is believed, because any client can send one;
//! 2. on Lambda, the API Gateway request context's source address (API Gateway's own view of
//!    the TCP peer, not a header);
//! 3. the connection's peer address (`steward serve`);
//! 4. else [`ClientAddress::Unknown`] (all such requests share one budget).
//!
//! The limit is keyed by [`ClientAddress::limit_key`]: an IPv4 address, or an IPv6 address's
//! /64 network — one subscriber usually holds a whole /64, so per-address IPv6 limits would
//! give each of them 2^64 budgets.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderName;
use axum::http::request::Parts;

/// The header proxies append client addresses to.
const FORWARDED_FOR: &str = "x-forwarded-for";

/// Longest header value read for an address: an IPv6 address is at most 45 characters; a
/// forwarding chain of a few hops fits easily. Anything longer is not believed.
const ADDRESS_HEADER_CHARS_MAX: usize = 512;

/// How many leading bits of an IPv6 address identify one client (a subscriber's network).
const IPV6_CLIENT_PREFIX_BITS: u32 = 64;

/// The header a trusted proxy in front of Steward puts the client's address in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedProxy(HeaderName);

impl TrustedProxy {
    /// Parses the setting: a header name such as `X-Forwarded-For` (its last entry, which the
    /// nearest proxy appended, is used) or `CF-Connecting-IP` (its value). None when blank or
    /// not a header name.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        HeaderName::from_bytes(text.to_ascii_lowercase().as_bytes())
            .ok()
            .map(Self)
    }

    /// The header's name.
    pub fn header(&self) -> &HeaderName {
        &self.0
    }

    /// The client address this header carries in `parts`, when it holds one.
    fn address(&self, parts: &Parts) -> Option<IpAddr> {
        let value = parts
            .headers
            .get_all(&self.0)
            .iter()
            .next_back()?
            .to_str()
            .ok()
            .filter(|v| v.len() <= ADDRESS_HEADER_CHARS_MAX)?;
        let entry = if self.0 == FORWARDED_FOR {
            value.rsplit(',').next()?
        } else {
            value
        };
        parse_ip(entry)
    }
}

/// An address as a header writes it: `1.2.3.4`, `2001:db8::1`, `[2001:db8::1]:443`,
/// `1.2.3.4:5678`.
fn parse_ip(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    text.parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

/// Where a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAddress {
    /// A known address.
    Ip(IpAddr),
    /// No address could be established.
    Unknown,
}

impl ClientAddress {
    /// The address of a request's parts; `trusted` is the trusted-proxy setting.
    pub fn of(parts: &Parts, trusted: Option<&TrustedProxy>) -> Self {
        if let Some(ip) = trusted.and_then(|t| t.address(parts)) {
            return Self::Ip(ip);
        }
        if let Some(ip) = lambda_source(parts) {
            return Self::Ip(ip);
        }
        if let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            return Self::Ip(peer.ip());
        }
        Self::Unknown
    }

    /// What the per-address limit counts against: the IPv4 address, or the /64 network of an
    /// IPv6 address (an IPv4 address mapped into IPv6 counts as that IPv4 address).
    pub fn limit_key(&self) -> String {
        match self {
            Self::Ip(IpAddr::V4(v4)) => v4.to_string(),
            Self::Ip(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => {
                    let mask = u128::MAX << (128 - IPV6_CLIENT_PREFIX_BITS);
                    let network = Ipv6Addr::from(u128::from(*v6) & mask);
                    format!("{network}/{IPV6_CLIENT_PREFIX_BITS}")
                }
            },
            Self::Unknown => "unknown".to_owned(),
        }
    }
}

/// The source address API Gateway saw, from the request context `lambda_http` attaches.
fn lambda_source(parts: &Parts) -> Option<IpAddr> {
    use lambda_http::request::RequestContext;
    let text = match parts.extensions.get::<RequestContext>()? {
        RequestContext::ApiGatewayV2(ctx) => ctx.http.source_ip.as_deref(),
        // The only event shape Steward's routes deliver (the `lambda_http` features in the
        // workspace's Cargo.toml); the enum is non-exhaustive.
        _ => None,
    }?;
    parse_ip(text)
}

/// The address a request came from without believing any forwarding header: the Lambda
/// request context or the socket peer. For routes with no web-app settings (the webhooks),
/// which only use it to throttle a misbehaving source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddress(pub ClientAddress);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(ClientAddress::of(parts, None)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::http::Request;

    use super::*;

    fn parts(headers: &[(&str, &str)], peer: Option<&str>) -> Parts {
        let mut req = Request::builder().uri("/e/x/register");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let (mut parts, ()) = req.body(()).unwrap().into_parts();
        if let Some(peer) = peer {
            parts
                .extensions
                .insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        }
        parts
    }

    fn key(parts: &Parts, trusted: Option<&str>) -> String {
        let trusted = trusted.map(|t| TrustedProxy::parse(t).unwrap());
        ClientAddress::of(parts, trusted.as_ref()).limit_key()
    }

    #[test]
    fn without_a_trusted_proxy_headers_are_ignored_and_the_peer_counts() {
        let p = parts(
            &[(FORWARDED_FOR, "1.2.3.4"), ("cf-connecting-ip", "5.6.7.8")],
            Some("127.0.0.1:51234"),
        );
        assert_eq!(key(&p, None), "127.0.0.1");
        let p = parts(&[(FORWARDED_FOR, "1.2.3.4")], None);
        assert_eq!(key(&p, None), "unknown");
    }

    #[test]
    fn a_trusted_proxy_header_names_the_client() {
        let peer = Some("127.0.0.1:40000");
        let p = parts(&[(FORWARDED_FOR, "6.6.6.6, 203.0.113.9")], peer);
        assert_eq!(key(&p, Some("X-Forwarded-For")), "203.0.113.9");
        let p = parts(
            &[(FORWARDED_FOR, "6.6.6.6"), (FORWARDED_FOR, "198.51.100.2 ")],
            peer,
        );
        assert_eq!(key(&p, Some("x-forwarded-for")), "198.51.100.2");
        let p = parts(&[("cf-connecting-ip", "198.51.100.7")], peer);
        assert_eq!(key(&p, Some("CF-Connecting-IP")), "198.51.100.7");
        // Missing or junk: the peer.
        let p = parts(&[(FORWARDED_FOR, "not an address")], peer);
        assert_eq!(key(&p, Some("X-Forwarded-For")), "127.0.0.1");
        let long = format!("1.2.3.4{}", " ".repeat(ADDRESS_HEADER_CHARS_MAX));
        let p = parts(&[(FORWARDED_FOR, long.as_str())], peer);
        assert_eq!(key(&p, Some("X-Forwarded-For")), "127.0.0.1");
    }

    #[test]
    fn ipv6_clients_are_counted_per_64_network() {
        let a = parts(&[], Some("[2001:db8:1:2:aaaa::1]:443"));
        let b = parts(&[], Some("[2001:db8:1:2:ffff:1:2:3]:443"));
        let c = parts(&[], Some("[2001:db8:1:3::1]:443"));
        assert_eq!(key(&a, None), "2001:db8:1:2::/64");
        assert_eq!(key(&a, None), key(&b, None));
        assert_ne!(key(&a, None), key(&c, None));
        let mapped = parts(&[], Some("[::ffff:192.0.2.1]:80"));
        assert_eq!(key(&mapped, None), "192.0.2.1");
    }

    #[test]
    fn junk_trusted_proxy_settings_are_none() {
        assert!(TrustedProxy::parse("").is_none());
        assert!(TrustedProxy::parse("bad header").is_none());
    }
}
