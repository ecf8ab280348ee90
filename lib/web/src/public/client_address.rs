//! [`ClientAddress`]: the address a public request came from, the key of the per-address
//! registration limit.
//!
//! `steward serve` accepts connections itself and records the peer ([`ConnectInfo`]); behind
//! API Gateway the Lambda sees the gateway, which appends the real client address as the last
//! entry of `X-Forwarded-For` (earlier entries are whatever the client sent, so they are not
//! trusted).

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;

/// The header proxies append client addresses to.
const FORWARDED_FOR: &str = "x-forwarded-for";

/// Longest address kept from a header: an IPv6 address is at most 45 characters; anything
/// longer is not an address and must not grow the limiter's keys.
const ADDRESS_CHARS_MAX: usize = 64;

/// The key used when no address is known (all such requests share one budget).
pub const UNKNOWN: &str = "unknown";

/// Where a request came from: the connection's peer address when known, else the last entry
/// of `X-Forwarded-For`, else [`UNKNOWN`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddress(pub String);

impl ClientAddress {
    /// The address as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The address of a request's parts.
    pub fn of(parts: &Parts) -> Self {
        if let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            return Self(peer.ip().to_string());
        }
        let forwarded = parts
            .headers
            .get_all(FORWARDED_FOR)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .map(str::trim)
            .filter(|a| !a.is_empty() && a.len() <= ADDRESS_CHARS_MAX);
        Self(forwarded.unwrap_or(UNKNOWN).to_owned())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::of(parts))
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

    #[test]
    fn the_connection_peer_wins_without_its_port() {
        let p = parts(&[(FORWARDED_FOR, "1.2.3.4")], Some("10.0.0.7:51234"));
        assert_eq!(ClientAddress::of(&p).as_str(), "10.0.0.7");
        let p = parts(&[], Some("[::1]:8080"));
        assert_eq!(ClientAddress::of(&p).as_str(), "::1");
    }

    #[test]
    fn else_the_last_forwarded_entry_which_the_gateway_appended() {
        let p = parts(&[(FORWARDED_FOR, "6.6.6.6, 203.0.113.9")], None);
        assert_eq!(ClientAddress::of(&p).as_str(), "203.0.113.9");
        let p = parts(
            &[(FORWARDED_FOR, "6.6.6.6"), (FORWARDED_FOR, "198.51.100.2 ")],
            None,
        );
        assert_eq!(ClientAddress::of(&p).as_str(), "198.51.100.2");
    }

    #[test]
    fn else_unknown() {
        assert_eq!(ClientAddress::of(&parts(&[], None)).as_str(), UNKNOWN);
        let p = parts(&[(FORWARDED_FOR, "1.2.3.4, ")], None);
        assert_eq!(ClientAddress::of(&p).as_str(), UNKNOWN);
        let long = "x".repeat(ADDRESS_CHARS_MAX + 1);
        let p = parts(&[(FORWARDED_FOR, long.as_str())], None);
        assert_eq!(ClientAddress::of(&p).as_str(), UNKNOWN);
    }
}
