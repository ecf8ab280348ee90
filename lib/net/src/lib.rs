//! The one place an outbound HTTP client starts: [`client_builder`].
//!
//! reqwest runs on rustls without a built-in crypto provider, so that the provider is named in
//! one place (the workspace's `rustls` features: `ring`). Without a provider installed, reqwest
//! panics when a client is built. [`client_builder`] installs `ring` as the process's default
//! provider first, once, so a client built through it works in any order, in binaries and
//! tests alike.
//!
//! With the `aws-sdk` feature, [`sdk_http_client`] is the AWS SDK's HTTP client on top of the
//! same reqwest (the SDK links no client of its own: no HTTP/2, no second TLS connector).

use std::sync::Once;

#[cfg(feature = "aws-sdk")]
mod aws_sdk;
#[cfg(feature = "aws-sdk")]
pub use aws_sdk::sdk_http_client;

/// A `reqwest::ClientBuilder` whose TLS runs on rustls with the `ring` provider (and
/// the Mozilla roots of `webpki-roots`). Use it instead of `reqwest::Client::builder()` or
/// `reqwest::Client::new()`, which panic in this workspace when no provider is installed.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
}

/// Installs `ring` as rustls' process-wide default crypto provider, once; later calls do
/// nothing. [`client_builder`] calls it; code that builds a rustls configuration of its own
/// without naming a provider calls it first.
pub fn install_tls_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An `Err` means a provider was installed already (only code in this process can do
        // that, and the workspace links no other provider): rustls keeps that one, which is
        // just as able to make TLS connections, so there is nothing to handle.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_can_be_made_again_and_again() {
        for _ in 0..3 {
            assert!(client_builder().build().is_ok());
        }
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
