//! A client built before anything installed a TLS provider (this test binary is its own
//! process, and its only test): it builds, and an `https://` request through it opens with a
//! TLS handshake.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// TLS record type of a handshake record (RFC 8446, 5.1); a ClientHello opens with one.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
/// The legacy major version byte every TLS 1.x record header carries.
const TLS_MAJOR_VERSION: u8 = 0x03;

#[tokio::test]
async fn a_client_built_without_a_prior_install_speaks_tls() {
    assert!(
        rustls::crypto::CryptoProvider::get_default().is_none(),
        "nothing in this process may have installed a provider before the first client"
    );
    let client = steward_net::client_builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a client builds without a provider installed beforehand");
    assert!(rustls::crypto::CryptoProvider::get_default().is_some());

    // A loopback "server" that reads what the client sends first, then hangs up.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut header = [0u8; 5];
        socket
            .read_exact(&mut header)
            .await
            .expect("read the first record header");
        header
    });

    // The server hangs up mid-handshake, so the request itself fails; what matters is that it
    // got as far as a ClientHello.
    let answer = client
        .get(format!("https://127.0.0.1:{port}/"))
        .send()
        .await;
    assert!(answer.is_err(), "a server that hangs up cannot answer");
    let header = server.await.expect("the server task");
    assert_eq!(header[0], TLS_HANDSHAKE_RECORD, "first record: {header:?}");
    assert_eq!(header[1], TLS_MAJOR_VERSION, "first record: {header:?}");
}
