//! Load on the webhook ack path: signature check, parse, enqueue to the in-process queue over
//! SQLite, 200 — measured over loopback HTTP with concurrent clients.
//!
//! ```text
//! cargo run --release -p steward-webhook --example webhook_load -- [REQUESTS] [CONCURRENCY]
//! ```
//!
//! Defaults: 5,000 requests (after 200 warm-up requests), 32 concurrent clients, at most 60 s
//! (whatever is done by then is reported). Each request is a signed WhatsApp text message with
//! a fresh message id, over 200 conversations. The queue's handler does nothing, so only the
//! ack path is measured; the turn itself is not. Loopback only; prints latency percentiles and
//! throughput.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde_json::json;
use steward_channels::{Secret, whatsapp};
use steward_store::{
    Handler, HandlerError, InProcessQueue, QueueConfig, QueuedMessage, SqliteTable, Table,
};
use steward_webhook::{self as webhooks, WebhookState, WhatsappSecrets};

const APP_SECRET: &str = "bench-app-secret";
const WARM_UP: usize = 200;
const CONVERSATIONS: usize = 200;
const TIME_CAP: Duration = Duration::from_secs(60);

/// Counts handled messages and does nothing else.
#[derive(Default)]
struct Count(AtomicUsize);

#[async_trait]
impl Handler for Count {
    async fn handle(&self, _message: QueuedMessage) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn body(n: usize) -> (Vec<u8>, String) {
    let from = format!("1555{:07}", n % CONVERSATIONS);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let body = serde_json::to_vec(&json!({
        "object": "whatsapp_business_account",
        "entry": [{ "id": "1", "changes": [{ "field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": { "display_phone_number": "15550783881", "phone_number_id": "1" },
            "contacts": [{ "profile": { "name": "Bench" }, "wa_id": from }],
            "messages": [{ "from": from, "id": format!("wamid.bench.{n}"),
                           "timestamp": now.to_string(), "type": "text",
                           "text": { "body": "Set up my event for Saturday, two tracks" } }]
        }}]}]
    }))
    .unwrap();
    let signature = whatsapp::sign(&body, APP_SECRET.as_bytes());
    (body, signature)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5_000);
    let concurrency: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(32)
        .max(1);

    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory().unwrap());
    let handled = Arc::new(Count::default());
    let queue = InProcessQueue::start(table, handled.clone(), QueueConfig::default())
        .await
        .unwrap();
    let app = webhooks::routes(WebhookState {
        queue: Arc::new(queue.clone()),
        whatsapp: Some(WhatsappSecrets {
            app_secret: Secret::new(APP_SECRET),
            verify_token: Secret::new("unused"),
        }),
        telegram: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/webhooks/whatsapp",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let bodies: Arc<Vec<(Vec<u8>, String)>> = Arc::new((0..WARM_UP + requests).map(body).collect());
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();
    let post = move |i: usize| {
        let (client, url, bodies) = (client.clone(), url.clone(), bodies.clone());
        async move {
            let (body, signature) = &bodies[i];
            let started = Instant::now();
            let status = client
                .post(&url)
                .header(whatsapp::SIGNATURE_HEADER, signature)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0);
            (started.elapsed(), status)
        }
    };
    for i in 0..WARM_UP {
        post(i).await;
    }

    let next = Arc::new(AtomicUsize::new(WARM_UP));
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..concurrency {
        let (next, post) = (next.clone(), post.clone());
        clients.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= WARM_UP + requests || started.elapsed() > TIME_CAP {
                    return seen;
                }
                seen.push(post(i).await);
            }
        }));
    }
    let mut results = Vec::new();
    for c in clients {
        results.extend(c.await.unwrap());
    }
    let elapsed = started.elapsed();
    let ok = results.iter().filter(|(_, s)| *s == 200).count();
    let mut latencies: Vec<Duration> = results.iter().map(|(d, _)| *d).collect();
    latencies.sort();

    // The queue drains in the background; report how long it took to catch up.
    let total = WARM_UP + results.len();
    let drain_started = Instant::now();
    while handled.0.load(Ordering::Relaxed) < total && drain_started.elapsed() < TIME_CAP {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("webhook ack path (verify + parse + enqueue to the in-process queue over SQLite)");
    println!(
        "requests: {} ({} answered 200), concurrency: {concurrency}",
        results.len(),
        ok
    );
    println!(
        "latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
        ms(percentile(&latencies, 50.0)),
        ms(percentile(&latencies, 90.0)),
        ms(percentile(&latencies, 99.0)),
        ms(latencies.last().copied().unwrap_or_default())
    );
    println!(
        "throughput: {:.0} requests/s over {:.2} s",
        results.len() as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    println!(
        "handled by the queue: {} of {total} ({:.2} s after the last ack)",
        handled.0.load(Ordering::Relaxed),
        drain_started.elapsed().as_secs_f64()
    );
    queue.shutdown(Duration::from_secs(1)).await;
}
