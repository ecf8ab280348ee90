//! The Lambda Runtime API emulator and the function instances it drives.
//!
//! Each instance is one process of a real function binary (`target/debug/<function>`), with
//! `AWS_LAMBDA_RUNTIME_API` pointing at its own loopback server that speaks the Runtime API
//! (`/2018-06-01/runtime/invocation/next`, `…/{id}/response`, `…/{id}/error`, `…/init/error`)
//! exactly as `lambda_runtime` calls it. Like Lambda, an instance runs one invocation at a time;
//! a process that dies (or is killed) fails its invocation and is replaced by a fresh one — a
//! cold start — on a fresh server, so nothing the dead process held can leak into the next.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

/// How long a fresh process may take to ask for its first invocation (a debug build loading
/// its configuration on a busy 2-core machine) before the stage gives up on it.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a running invocation checks whether its process has died.
const EXIT_POLL: Duration = Duration::from_millis(20);

/// One function as the template defines it: binary, timeout, memory and environment.
#[derive(Debug, Clone)]
pub struct FunctionSpec {
    /// The function's name (also its binary's name).
    pub name: &'static str,
    /// The built binary.
    pub binary: PathBuf,
    /// The function's timeout (`Timeout` in template.yaml).
    pub timeout: Duration,
    /// The function's memory (`MemorySize`), for `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`.
    pub memory_mb: u32,
    /// Its environment (the stage's endpoints, secrets and settings).
    pub env: Vec<(String, String)>,
    /// Where its processes' logs go (one file per function, appended).
    pub log: PathBuf,
}

/// Why an invocation did not return a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvokeError {
    /// The handler returned an error (`/invocation/{id}/error`).
    Function(String),
    /// The process exited while the invocation ran.
    Crashed(String),
    /// The stage killed the process (SIGKILL) while the invocation ran.
    Killed,
    /// The invocation outlived the function's timeout; the process was killed.
    Timeout,
}

impl std::fmt::Display for InvokeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Function(m) => write!(f, "function error: {m}"),
            Self::Crashed(m) => write!(f, "process exited: {m}"),
            Self::Killed => f.write_str("killed by the stage"),
            Self::Timeout => f.write_str("timed out"),
        }
    }
}

/// One invocation waiting to be taken by `/next`.
struct Pending {
    id: String,
    body: Vec<u8>,
    deadline_ms: u128,
    arn: String,
    reply: oneshot::Sender<Result<Value, InvokeError>>,
}

/// The Runtime API server's state for one process.
struct Slot {
    next: tokio::sync::Mutex<mpsc::Receiver<Pending>>,
    running: Mutex<HashMap<String, oneshot::Sender<Result<Value, InvokeError>>>>,
    polled: watch::Sender<bool>,
    init_error: Mutex<Option<String>>,
}

/// One running process with its own Runtime API server.
struct Process {
    child: Child,
    server: tokio::task::JoinHandle<()>,
    invocations: mpsc::Sender<Pending>,
    slot: Arc<Slot>,
    /// From its spawn to its first `/next`, and whether it has answered an invocation since.
    ready_after: Duration,
    answered: bool,
}

impl Process {
    /// The process's peak resident memory so far (`VmHWM`), in KiB; `None` once it is gone.
    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.server.abort();
    }
}

/// An error starting a function: names the function and what went wrong.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

/// One warm instance of a function: a process that is restarted (cold start) whenever it dies.
pub struct Instance {
    spec: Arc<FunctionSpec>,
    index: usize,
    process: Process,
    /// Cold starts after the first (restarts after a death).
    pub restarts: u32,
    /// How long each invocation took (response or failure), for the cost model's GB-seconds.
    pub durations: Vec<Duration>,
    /// Each start of its process, from the spawn to its first `/next` (a cold start's init).
    pub cold_starts: Vec<Duration>,
    /// Each start of its process that has been invoked since: its time to the first `/next`
    /// plus its first invocation's (what a request that meets a cold start waits for; the
    /// stage starts instances ahead, so the idle time between is left out).
    pub first_responses: Vec<Duration>,
    /// The highest peak resident memory of its processes that were replaced, in KiB.
    replaced_peak_kib: u64,
}

impl Instance {
    /// Starts instance `index` of `spec` and waits until it asks for work.
    pub async fn start(spec: Arc<FunctionSpec>, index: usize) -> Result<Self, StartError> {
        let (process, ready_after) = spawn(&spec, index).await?;
        Ok(Self {
            spec,
            index,
            process,
            restarts: 0,
            durations: Vec::new(),
            cold_starts: vec![ready_after],
            first_responses: Vec::new(),
            replaced_peak_kib: 0,
        })
    }

    /// The highest peak resident memory (`VmHWM`) of any of its processes, in KiB: what the
    /// function's memory setting must hold.
    pub fn peak_rss_kib(&self) -> u64 {
        self.process
            .peak_rss_kib()
            .unwrap_or(0)
            .max(self.replaced_peak_kib)
    }

    /// Invokes the function with `event`; kills the process after `kill_after` if it is still
    /// running then. A dead process is replaced before this returns.
    pub async fn invoke(
        &mut self,
        event: &Value,
        kill_after: Option<Duration>,
    ) -> Result<Result<Value, InvokeError>, StartError> {
        let started = Instant::now();
        let (reply, answer) = oneshot::channel();
        let id = format!("{}-{}", self.spec.name, ulid_like());
        let deadline = SystemTime::now() + self.spec.timeout;
        let deadline_ms = deadline
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let pending = Pending {
            id,
            body: serde_json::to_vec(event).unwrap_or_default(),
            deadline_ms,
            arn: format!(
                "arn:aws:lambda:eu-west-1:123456789012:function:stage-{}",
                self.spec.name
            ),
            reply,
        };
        if self.process.invocations.send(pending).await.is_err() {
            self.replace().await?;
            return Ok(Err(InvokeError::Crashed("runtime server gone".into())));
        }
        let kill_at = kill_after.map(|d| started + d);
        let timeout_at = started + self.spec.timeout;
        let mut answer = answer;
        let outcome = loop {
            tokio::select! {
                got = &mut answer => {
                    if got.is_ok() && !self.process.answered {
                        self.process.answered = true;
                        self.first_responses.push(self.process.ready_after + started.elapsed());
                    }
                    break got.unwrap_or_else(|_| Err(InvokeError::Crashed("invocation dropped".into())));
                }
                () = tokio::time::sleep(EXIT_POLL) => {}
            }
            if let Ok(Some(status)) = self.process.child.try_wait() {
                break Err(InvokeError::Crashed(status.to_string()));
            }
            let now = Instant::now();
            if kill_at.is_some_and(|at| now >= at) {
                break Err(InvokeError::Killed);
            }
            if now >= timeout_at {
                break Err(InvokeError::Timeout);
            }
        };
        self.durations.push(started.elapsed());
        if matches!(
            outcome,
            Err(InvokeError::Killed | InvokeError::Timeout | InvokeError::Crashed(_))
        ) {
            self.replace().await?;
        }
        Ok(outcome)
    }

    /// Kills the process (SIGKILL) and starts a fresh one.
    async fn replace(&mut self) -> Result<(), StartError> {
        self.replaced_peak_kib = self.peak_rss_kib();
        let _ = self.process.child.kill();
        let _ = self.process.child.wait();
        self.process.server.abort();
        let (process, ready_after) = spawn(&self.spec, self.index).await?;
        self.process = process;
        self.cold_starts.push(ready_after);
        self.restarts += 1;
        Ok(())
    }
}

/// A fixed set of warm instances of one function; callers take one, invoke, give it back.
pub struct Pool {
    name: &'static str,
    idle: tokio::sync::Mutex<mpsc::Receiver<Instance>>,
    back: mpsc::Sender<Instance>,
    size: usize,
}

impl Pool {
    /// Starts `size` instances of `spec`.
    pub async fn start(spec: FunctionSpec, size: usize) -> Result<Arc<Self>, StartError> {
        let spec = Arc::new(spec);
        let (back, idle) = mpsc::channel(size.max(1));
        let starts = (0..size).map(|i| Instance::start(spec.clone(), i));
        for instance in futures_join(starts).await {
            back.send(instance?)
                .await
                .map_err(|_| StartError(format!("{}: pool closed", spec.name)))?;
        }
        Ok(Arc::new(Self {
            name: spec.name,
            idle: tokio::sync::Mutex::new(idle),
            back,
            size,
        }))
    }

    /// Waits for an idle instance.
    pub async fn take(&self) -> Instance {
        let mut idle = self.idle.lock().await;
        // The pool owns `back`, so the channel never closes while `self` lives.
        match idle.recv().await {
            Some(i) => i,
            None => unreachable_pool(self.name),
        }
    }

    /// Gives an instance back.
    pub async fn give(&self, instance: Instance) {
        let _ = self.back.send(instance).await;
    }

    /// Takes every instance back (waiting for running invocations), for the final figures.
    pub async fn drain(&self) -> Vec<Instance> {
        let mut all = Vec::with_capacity(self.size);
        for _ in 0..self.size {
            all.push(self.take().await);
        }
        all
    }

    /// Invokes one idle instance with `event` (no kill).
    pub async fn invoke(&self, event: &Value) -> Result<Result<Value, InvokeError>, StartError> {
        let mut instance = self.take().await;
        let result = instance.invoke(event, None).await;
        self.give(instance).await;
        result
    }
}

fn unreachable_pool(name: &str) -> ! {
    panic!("the {name} pool's channel closed while the pool lives")
}

async fn futures_join<F, T>(futures: impl Iterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        match h.await {
            Ok(v) => out.push(v),
            Err(e) => panic!("a start task failed: {e}"),
        }
    }
    out
}

/// A unique-enough request id (time and a counter).
fn ulid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default();
    format!("{t:x}-{n}")
}

/// Starts a Runtime API server and a process of `spec` talking to it; waits for its first
/// `/next` and says how long that took from the spawn. A process that exits or reports an init
/// error first fails, naming the function.
async fn spawn(spec: &FunctionSpec, index: usize) -> Result<(Process, Duration), StartError> {
    let (invocations, next) = mpsc::channel(1);
    let (polled, mut polled_rx) = watch::channel(false);
    let slot = Arc::new(Slot {
        next: tokio::sync::Mutex::new(next),
        running: Mutex::new(HashMap::new()),
        polled,
        init_error: Mutex::new(None),
    });
    let app = Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next_invocation))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(invocation_response),
        )
        .route(
            "/2018-06-01/runtime/invocation/{id}/error",
            post(invocation_error),
        )
        .route("/2018-06-01/runtime/init/error", post(init_error))
        .with_state(slot.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| StartError(format!("{}: runtime API port: {e}", spec.name)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| StartError(format!("{}: runtime API port: {e}", spec.name)))?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let spawned_at = Instant::now();
    let child = command(spec, index, &addr.to_string())?
        .spawn()
        .map_err(|e| {
            StartError(format!(
                "{}: cannot start {}: {e} (build it with `cargo build -p steward-fn-{}`)",
                spec.name,
                spec.binary.display(),
                spec.name
            ))
        })?;
    let mut process = Process {
        child,
        server,
        invocations,
        slot,
        ready_after: Duration::ZERO,
        answered: false,
    };
    let started = Instant::now();
    loop {
        if *polled_rx.borrow_and_update() {
            let ready_after = spawned_at.elapsed();
            process.ready_after = ready_after;
            return Ok((process, ready_after));
        }
        if let Some(message) = lock(&process.slot.init_error).clone() {
            return Err(StartError(format!(
                "{}: init error: {message} (log: {})",
                spec.name,
                spec.log.display()
            )));
        }
        if let Ok(Some(status)) = process.child.try_wait() {
            return Err(StartError(format!(
                "{}: exited during start-up ({status}); last log lines:\n{}",
                spec.name,
                tail(&spec.log, 20)
            )));
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(StartError(format!(
                "{}: did not ask for an invocation within {START_TIMEOUT:?}; last log lines:\n{}",
                spec.name,
                tail(&spec.log, 20)
            )));
        }
        let _ = tokio::time::timeout(EXIT_POLL * 5, polled_rx.changed()).await;
    }
}

fn command(spec: &FunctionSpec, index: usize, api: &str) -> Result<Command, StartError> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)
        .map_err(|e| StartError(format!("{}: log {}: {e}", spec.name, spec.log.display())))?;
    let mut cmd = Command::new(&spec.binary);
    cmd.env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", api)
        .env("AWS_LAMBDA_FUNCTION_NAME", format!("stage-{}", spec.name))
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            spec.memory_mb.to_string(),
        )
        .env(
            "AWS_LAMBDA_LOG_STREAM_NAME",
            format!("stage/{}/{index}", spec.name),
        )
        .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/stage/{}", spec.name))
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        // OpenTelemetry's settings and the runtime's thread count reach every function, as a
        // stack's environment would: a run with `OTEL_EXPORTER_OTLP_ENDPOINT` set measures
        // tracing on, one with `STEWARD_WORKER_THREADS` (`steward_edge::runtime`) that many
        // threads.
        .envs(
            std::env::vars()
                .filter(|(k, _)| k.starts_with("OTEL_") || k == "STEWARD_WORKER_THREADS"),
        )
        .stdin(Stdio::null())
        .stdout(
            log.try_clone()
                .map_err(|e| StartError(format!("{}: log: {e}", spec.name)))?,
        )
        .stderr(log);
    Ok(cmd)
}

/// The last `n` lines of a log file.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn next_invocation(State(slot): State<Arc<Slot>>) -> Response {
    slot.polled.send_replace(true);
    let mut next = slot.next.lock().await;
    let Some(pending) = next.recv().await else {
        return StatusCode::GONE.into_response();
    };
    lock(&slot.running).insert(pending.id.clone(), pending.reply);
    let mut headers = HeaderMap::new();
    let pairs = [
        ("lambda-runtime-aws-request-id", pending.id.clone()),
        (
            "lambda-runtime-deadline-ms",
            pending.deadline_ms.to_string(),
        ),
        ("lambda-runtime-invoked-function-arn", pending.arn.clone()),
        (
            "lambda-runtime-trace-id",
            format!("Root=1-stage-{}", pending.id),
        ),
        ("content-type", "application/json".to_owned()),
    ];
    for (name, value) in pairs {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    }
    (StatusCode::OK, headers, pending.body).into_response()
}

async fn invocation_response(
    State(slot): State<Arc<Slot>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    let Some(reply) = lock(&slot.running).remove(&id) else {
        return StatusCode::BAD_REQUEST;
    };
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let _ = reply.send(Ok(value));
    StatusCode::ACCEPTED
}

async fn invocation_error(
    State(slot): State<Arc<Slot>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    let Some(reply) = lock(&slot.running).remove(&id) else {
        return StatusCode::BAD_REQUEST;
    };
    let _ = reply.send(Err(InvokeError::Function(
        String::from_utf8_lossy(&body).into_owned(),
    )));
    StatusCode::ACCEPTED
}

async fn init_error(State(slot): State<Arc<Slot>>, body: Bytes) -> StatusCode {
    *lock(&slot.init_error) = Some(String::from_utf8_lossy(&body).into_owned());
    StatusCode::ACCEPTED
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(binary: &str) -> FunctionSpec {
        FunctionSpec {
            name: "agent",
            binary: PathBuf::from(binary),
            timeout: Duration::from_secs(5),
            memory_mb: 128,
            env: Vec::new(),
            log: std::env::temp_dir()
                .join(format!("stage-runtime-test-{}.log", std::process::id())),
        }
    }

    #[tokio::test]
    async fn a_missing_binary_is_named() {
        match Instance::start(Arc::new(spec("/nonexistent/stage/agent")), 0).await {
            Err(e) => assert!(
                e.0.starts_with("agent: cannot start /nonexistent/stage/agent"),
                "{e}"
            ),
            Ok(_) => panic!("a missing binary started"),
        }
    }

    #[tokio::test]
    async fn a_process_that_exits_at_start_up_is_named() {
        match Instance::start(Arc::new(spec("/bin/false")), 0).await {
            Err(e) => assert!(e.0.starts_with("agent: exited during start-up"), "{e}"),
            Ok(_) => panic!("a process that exits counted as started"),
        }
    }
}
