//! The other deployment: `steward serve` (one process, its in-process queue, a SQLite file),
//! started the way `infra/serve.sh` starts it, on a fixed loopback port so a restart answers at
//! the same address. The stage kills it with `SIGKILL` at random points — a webhook delivery is
//! followed by a kill within the kill window on the kill rate's share of deliveries — and starts
//! it again at once; deliveries that meet a dead server are retried as Telegram retries them.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rand::RngExt;
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// How long `steward serve` may take to answer `/healthz` after a start (a debug build on a
/// loaded machine opens its store and migrations in well under this).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the killer looks for new deliveries.
const KILLER_TICK: Duration = Duration::from_millis(20);

/// How to start the server.
pub struct ServeSpec {
    /// The `steward` binary.
    pub binary: PathBuf,
    /// Its environment (the store, the address, the fakes).
    pub env: Vec<(String, String)>,
    /// Its log (stderr, appended across restarts).
    pub log: PathBuf,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
}

/// A running `steward serve`, restarted after each kill.
pub struct Serve {
    spec: ServeSpec,
    child: Mutex<Option<Child>>,
    http: reqwest::Client,
    /// Webhook deliveries sent to it (each may be followed by a kill).
    pub deliveries: AtomicU64,
    /// Kills (`SIGKILL`).
    pub kills: AtomicU64,
    /// When each kill was sent.
    kill_times: Mutex<Vec<Instant>>,
    /// Set to stop the killer.
    pub stop: AtomicBool,
}

/// A free loopback port (bound and released; serve binds it next).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

impl Serve {
    /// Starts the server and waits until it answers.
    pub async fn start(spec: ServeSpec) -> anyhow::Result<Arc<Self>> {
        let serve = Arc::new(Self {
            spec,
            child: Mutex::new(None),
            http: steward_net::client_builder()
                .timeout(Duration::from_secs(30))
                .build()?,
            deliveries: AtomicU64::new(0),
            kills: AtomicU64::new(0),
            kill_times: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        serve.spawn().await?;
        Ok(serve)
    }

    async fn spawn(&self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.spec.log)
            .with_context(|| format!("opening {}", self.spec.log.display()))?;
        let child = Command::new(&self.spec.binary)
            .arg("serve")
            .envs(self.spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} serve", self.spec.binary.display()))?;
        *self.child.lock().await = Some(child);
        let started = Instant::now();
        loop {
            if let Ok(a) = self
                .http
                .get(format!("{}/healthz", self.spec.url))
                .send()
                .await
                && a.status().is_success()
            {
                return Ok(());
            }
            if let Some(child) = self.child.lock().await.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                bail!(
                    "steward serve exited ({status}) before answering; its log: {}",
                    self.spec.log.display()
                );
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "steward serve did not answer /healthz within {} s; its log: {}",
                    START_TIMEOUT.as_secs(),
                    self.spec.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// When each kill so far was sent.
    pub async fn kill_times(&self) -> Vec<Instant> {
        self.kill_times.lock().await.clone()
    }

    /// The running server's process id.
    pub async fn pid(&self) -> Option<u32> {
        self.child.lock().await.as_ref().and_then(Child::id)
    }

    /// Kills the server with `SIGKILL` and starts it again.
    async fn kill_and_restart(&self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.lock().await.take() {
            // `Child::kill` sends SIGKILL on Unix.
            let _ = child.kill().await;
        }
        self.kill_times.lock().await.push(Instant::now());
        self.kills.fetch_add(1, Ordering::Relaxed);
        self.spawn().await
    }

    /// Stops the server for good (`SIGTERM`, as a user stops it; `SIGKILL` after 10 s).
    pub async fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(mut child) = self.child.lock().await.take() {
            if let Some(pid) = child.id() {
                let _ = Command::new("kill").arg(pid.to_string()).status().await;
            }
            if tokio::time::timeout(Duration::from_secs(10), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }

    /// Kills the server after a share `kill_rate` of webhook deliveries, within `window` of the
    /// delivery, until [`Serve::stop`]; an error when it cannot be started again.
    pub async fn killer(self: Arc<Self>, kill_rate: f64, window: Duration) -> anyhow::Result<()> {
        let mut seen = 0;
        let window_ms = u64::try_from(window.as_millis()).unwrap_or(1).max(1);
        while !self.stop.load(Ordering::Relaxed) {
            tokio::time::sleep(KILLER_TICK).await;
            let now = self.deliveries.load(Ordering::Relaxed);
            let fresh = now.saturating_sub(seen);
            seen = now;
            let after = {
                let mut rng = rand::rng();
                let kill =
                    (0..fresh).any(|_| kill_rate > 0.0 && rng.random_bool(kill_rate.min(1.0)));
                kill.then(|| Duration::from_millis(rng.random_range(0..window_ms)))
            };
            if let Some(after) = after {
                tokio::time::sleep(after).await;
                if self.stop.load(Ordering::Relaxed) {
                    break;
                }
                self.kill_and_restart().await?;
            }
        }
        Ok(())
    }

    /// Sends one request; `None` when the server did not answer (down or killed mid-request).
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Option<(u16, String)> {
        if path.starts_with("/webhooks/") {
            self.deliveries.fetch_add(1, Ordering::Relaxed);
        }
        let method = reqwest::Method::from_bytes(method.as_bytes()).ok()?;
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.spec.url))
            .body(body.to_owned());
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let answer = request.send().await.ok()?;
        let status = answer.status().as_u16();
        Some((status, answer.text().await.unwrap_or_default()))
    }
}
