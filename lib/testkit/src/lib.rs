//! `steward-testkit`: test support several crates' tests share, kept once. A dev-dependency
//! only (the layering check refuses it as a normal dependency).
//!
//! * [`fake_api`]: a fake provider API on 127.0.0.1 that records every request and answers
//!   from a script (the channels' senders, the worker's spine).
//! * [`fake_media`]: a fake WhatsApp and Telegram media API serving files and injecting
//!   failures; [`media`]: tiny media files built in code.
//! * [`webhooks`]: provider webhook payloads and the test secrets that sign them.
//! * [`queue`]: a turn queue that records what routes enqueue.
//! * [`samples`]: the sample Lambda events of `events/`.
//! * [`startup`]: a function binary started with only the settings a test names.

pub mod fake_api;
pub mod fake_media;
pub mod media;
pub mod queue;
pub mod samples;
pub mod startup;

/// Serves `app` on a free loopback port in the background; returns `http://127.0.0.1:<port>`.
///
/// # Panics
/// When no loopback port can be bound (a test failure).
pub async fn serve_loopback(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port to bind");
    let addr = listener.local_addr().expect("the bound address");
    tokio::spawn(async move {
        axum::serve(listener, app)
            .await
            .expect("the fake API serves");
    });
    format!("http://{addr}")
}
pub mod webhooks;
