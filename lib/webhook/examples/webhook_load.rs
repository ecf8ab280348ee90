//! Load on the webhook ack path: signature check, parse, durable enqueue to the in-process
//! queue on a SQLite file, 200 — measured over loopback HTTP with concurrent clients, with the
//! server in a child process so its CPU time is its own.
//!
//! ```text
//! cargo run --profile profiling -p steward-webhook --example webhook_load -- [REQUESTS] [CONCURRENCY]
//! ```
//!
//! Defaults: 5,000 requests per phase (after 200 warm-up requests), 32 concurrent clients, at
//! most 60 s per phase (whatever is done by then is reported). Three phases: **new** messages
//! (signed WhatsApp texts with fresh message ids over 200 conversations), then the same
//! deliveries again as **duplicates** (the provider retrying), then the same bodies signed with
//! the wrong secret, **refused** with 401 before any parsing or queue work: the cost of the
//! HTTP exchange and the signature check alone, the floor under the other two. The queue's
//! handler only counts, so the turn itself is not measured.
//!
//! Per phase it prints latency percentiles, throughput and the server's CPU per request: the
//! child's user + system time from `/proc/PID/stat` (all its threads, in clock ticks of 10 ms;
//! with thousands of requests the resolution is a few microseconds per request), over the
//! phase with the queue's deliveries held (the ack path alone), and again once they were
//! released and the queue has drained (acks plus the queue's own work). Linux only.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
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
/// Clock ticks per second of `/proc/PID/stat` times: `USER_HZ`, 100 on every Linux ABI.
const TICKS_PER_SEC: f64 = 100.0;

/// Counts handled messages and does nothing else; while held, each delivery waits.
struct Count {
    handled: AtomicUsize,
    open: tokio::sync::watch::Receiver<bool>,
}

#[async_trait]
impl Handler for Count {
    async fn handle(&self, _message: QueuedMessage) -> Result<(), HandlerError> {
        let _ = self.open.clone().wait_for(|open| *open).await;
        self.handled.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Message `n` and its signature with `secret`.
fn body(n: usize, secret: &str) -> (Vec<u8>, String) {
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
    let signature = whatsapp::sign(&body, secret.as_bytes());
    (body, signature)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The child: the webhook routes over an in-process queue on a SQLite file in `dir`. Prints
/// `READY <url>`, then until stdin closes answers `HANDLED` lines with the handled count, and
/// takes `HOLD` (deliveries wait) and `RELEASE` (they go on).
async fn serve(dir: &str) {
    let table: Arc<dyn Table> =
        Arc::new(SqliteTable::open(std::path::Path::new(dir).join("bench.db")).unwrap());
    let (gate, open) = tokio::sync::watch::channel(true);
    let handled = Arc::new(Count {
        handled: AtomicUsize::new(0),
        open,
    });
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
    println!("READY {url}");
    std::io::stdout().flush().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match line.trim() {
                "HANDLED" => {
                    println!("{}", handled.handled.load(Ordering::Relaxed));
                    std::io::stdout().flush().unwrap();
                }
                "HOLD" => {
                    gate.send_replace(false);
                }
                "RELEASE" => {
                    gate.send_replace(true);
                }
                _ => {}
            }
        }
    });
    lines.await.unwrap();
    queue.shutdown(Duration::from_secs(1)).await;
}

/// The server process and a line-based channel to it.
struct Server {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    url: String,
}

impl Server {
    fn start(dir: &std::path::Path) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .arg("serve")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting the server child");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let url = line
            .strip_prefix("READY ")
            .expect("the child says READY")
            .trim()
            .to_owned();
        Self { child, out, url }
    }

    /// User + system CPU seconds the child has used so far (all threads, live and exited).
    fn cpu_secs(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // Fields after the command name (which is in parentheses and may hold spaces).
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        ticks as f64 / TICKS_PER_SEC
    }

    /// Tells the child `command` (`HOLD` or `RELEASE`).
    fn tell(&mut self, command: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    fn handled(&mut self) -> usize {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "HANDLED").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        line.trim().parse().unwrap()
    }
}

/// One phase's figures.
struct Phase {
    name: &'static str,
    sent: usize,
    /// Responses with the phase's expected status, `answer`.
    answered: usize,
    answer: u16,
    latencies: Vec<Duration>,
    elapsed: Duration,
    cpu_ack: f64,
    cpu_drained: f64,
    drain: Duration,
}

async fn drive(
    client: &reqwest::Client,
    url: &str,
    bodies: Arc<Vec<(Vec<u8>, String)>>,
    range: std::ops::Range<usize>,
    concurrency: usize,
) -> (Vec<(Duration, u16)>, Duration) {
    let next = Arc::new(AtomicUsize::new(range.start));
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..concurrency {
        let (next, client, url, bodies) =
            (next.clone(), client.clone(), url.to_owned(), bodies.clone());
        let end = range.end;
        clients.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end || started.elapsed() > TIME_CAP {
                    return seen;
                }
                let (body, signature) = &bodies[i];
                let sent = Instant::now();
                let status = client
                    .post(&url)
                    .header(whatsapp::SIGNATURE_HEADER, signature)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0);
                seen.push((sent.elapsed(), status));
            }
        }));
    }
    let mut results = Vec::new();
    for c in clients {
        results.extend(c.await.unwrap());
    }
    (results, started.elapsed())
}

fn main() {
    // The runtime the product's processes run on (`steward_edge::runtime`: one thread unless
    // STEWARD_WORKER_THREADS says otherwise), for the server child and the load generator alike.
    let runtime = steward_edge::runtime::build().unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(load());
}

async fn load() {
    let mut args = std::env::args().skip(1);
    let first = args.next();
    if first.as_deref() == Some("serve") {
        serve(&args.next().expect("serve DIR")).await;
        return;
    }
    let requests: usize = first.and_then(|a| a.parse().ok()).unwrap_or(5_000);
    let concurrency: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(32)
        .max(1);

    let dir = std::env::temp_dir().join(format!("webhook-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = Server::start(&dir);
    let url = server.url.clone();
    let signed = |secret: &'static str| -> Arc<Vec<(Vec<u8>, String)>> {
        Arc::new((0..WARM_UP + requests).map(|n| body(n, secret)).collect())
    };
    let bodies = signed(APP_SECRET);
    let forged = signed("not-the-app-secret");
    let client = steward_net::client_builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();

    let (warm, _) = drive(&client, &url, bodies.clone(), 0..WARM_UP, concurrency).await;
    let mut expected = warm.len();
    let mut phases = Vec::new();
    for (name, sent, answer) in [
        ("new", &bodies, 200),
        ("duplicate", &bodies, 200),
        ("refused", &forged, 401),
    ] {
        let range = WARM_UP..WARM_UP + requests;
        // Start each phase with an empty queue.
        let waited = Instant::now();
        while server.handled() < expected && waited.elapsed() < TIME_CAP {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Deliveries wait until the acks are counted, so "CPU µs/req" is the ack path alone
        // and "+drain" adds the queue's own work (dispatch, the handler, the delete).
        server.tell("HOLD");
        let cpu_before = server.cpu_secs();
        let (results, elapsed) = drive(&client, &url, sent.clone(), range, concurrency).await;
        let cpu_ack = server.cpu_secs() - cpu_before;
        server.tell("RELEASE");
        if name == "new" {
            expected += results.len();
        }
        let drain_started = Instant::now();
        while server.handled() < expected && drain_started.elapsed() < TIME_CAP {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let drain = drain_started.elapsed();
        let cpu_drained = server.cpu_secs() - cpu_before;
        let mut latencies: Vec<Duration> = results.iter().map(|(d, _)| *d).collect();
        latencies.sort();
        phases.push(Phase {
            name,
            sent: results.len(),
            answered: results.iter().filter(|(_, s)| *s == answer).count(),
            answer,
            latencies,
            elapsed,
            cpu_ack,
            cpu_drained,
            drain,
        });
    }
    let handled = server.handled();
    drop(server.child.stdin.take());
    let _ = server.child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "webhook ack path: verify + parse + durable enqueue (in-process queue, SQLite file), server in a child process, {concurrency} connections"
    );
    println!(
        "{:<10} {:>8} {:>10} {:>8} {:>8} {:>8} {:>9} {:>11} {:>14} {:>9}",
        "phase",
        "requests",
        "as meant",
        "p50 ms",
        "p99 ms",
        "max ms",
        "req/s",
        "CPU µs/req",
        "+drain µs/req",
        "drain s"
    );
    for p in &phases {
        let per = |cpu: f64| cpu * 1e6 / p.sent.max(1) as f64;
        println!(
            "{:<10} {:>8} {:>10} {:>8.2} {:>8.2} {:>8.2} {:>9.0} {:>11.1} {:>14.1} {:>9.2}",
            p.name,
            p.sent,
            format!("{} {}", p.answered, p.answer),
            ms(percentile(&p.latencies, 50.0)),
            ms(percentile(&p.latencies, 99.0)),
            ms(p.latencies.last().copied().unwrap_or_default()),
            p.sent as f64 / p.elapsed.as_secs_f64(),
            per(p.cpu_ack),
            per(p.cpu_drained),
            p.drain.as_secs_f64()
        );
    }
    println!("handled by the queue: {handled} of {expected} distinct messages");
}
