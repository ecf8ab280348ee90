//! What the end-to-end tests of `steward serve` share: the server under test (killed on drop),
//! a browser with cookies by hand, and a fake model API on loopback answering from a plan.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use serde_json::{Value, json};

/// How long any one wait may take before the test fails (a debug build on a busy machine).
pub const WAIT: Duration = Duration::from_secs(60);

/// How often a wait looks again.
pub const POLL: Duration = Duration::from_millis(50);

/// A fake model API: answers request n with the plan's n-th JSON body (200), anything after
/// the plan with 400; keeps every request's path and JSON body.
pub struct FakeModel {
    pub base: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl FakeModel {
    pub async fn start(plan: Vec<Value>) -> Self {
        let requests: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let seen = Arc::clone(&requests);
        let app = Router::new().fallback(move |uri: Uri, body: Bytes| {
            let seen = Arc::clone(&seen);
            let plan = plan.clone();
            async move {
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let n = {
                    let mut seen = seen.lock().unwrap();
                    seen.push((uri.path().to_owned(), body));
                    seen.len() - 1
                };
                let (status, answer) = match plan.get(n) {
                    Some(answer) => (StatusCode::OK, answer.clone()),
                    None => (
                        StatusCode::BAD_REQUEST,
                        json!({"message": format!("unplanned request {n}")}),
                    ),
                };
                // Bedrock's answers stream (`ConverseStream`): the same answer as event frames.
                if status == StatusCode::OK && uri.path().ends_with("/converse-stream") {
                    return (
                        status,
                        [("content-type", "application/vnd.amazon.eventstream")],
                        steward_llm::testing::converse_stream_body(&answer),
                    );
                }
                (
                    status,
                    [("content-type", "application/json")],
                    answer.to_string().into_bytes(),
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { base, requests }
    }

    /// Every request so far: (path, JSON body).
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

/// A running `steward serve`, killed on drop.
pub struct Server {
    child: Child,
    pub base: String,
    pub model_label: String,
    log: PathBuf,
}

impl Server {
    /// Serves `db` with only the settings in `env` (the process environment is cleared).
    pub async fn start(db: &Path, env: &[(&str, &str)]) -> Self {
        let log = db.with_extension("log");
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_steward"))
            .arg("serve")
            .env_clear()
            .env("STEWARD_DB", db)
            .env("STEWARD_ADDR", "127.0.0.1:0")
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Keep draining even when nobody listens, so the child never blocks.
                let _ = tx.send(line);
            }
        });
        let mut server = Self {
            child,
            base: String::new(),
            model_label: String::new(),
            log,
        };
        let found = tokio::time::timeout(WAIT, async {
            let mut base = None;
            while let Some(line) = rx.recv().await {
                if let Some(rest) = line.strip_prefix("Steward is running at ") {
                    base = Some(rest.trim_end_matches('/').to_owned());
                }
                if let Some(label) = line.strip_prefix("  model: ") {
                    return base.map(|b| (b, label.to_owned()));
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some((base, label))) => {
                server.base = base;
                server.model_label = label;
            }
            _ => panic!("steward serve did not start\n{}", server.log()),
        }
        server
    }

    pub fn log(&self) -> String {
        format!(
            "--- server log ---\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        )
    }

    pub fn check_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("steward serve exited: {status}\n{}", self.log());
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser: cookies by hand, no redirects followed.
pub struct Browser {
    http: reqwest::Client,
    cookies: HashMap<String, String>,
    csrf: String,
}

impl Browser {
    pub fn new() -> Self {
        Self {
            http: steward_net::client_builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: HashMap::new(),
            csrf: String::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn keep_cookies(&mut self, res: &reqwest::Response) {
        for set in res.headers().get_all(reqwest::header::SET_COOKIE) {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                self.cookies.insert(k.to_owned(), v.to_owned());
            }
        }
    }

    pub async fn get(&mut self, url: &str) -> (StatusCode, String) {
        let res = self
            .http
            .get(url)
            .header(reqwest::header::COOKIE, self.cookie_header())
            .send()
            .await
            .unwrap();
        self.keep_cookies(&res);
        let status = StatusCode::from_u16(res.status().as_u16()).unwrap();
        (status, res.text().await.unwrap())
    }

    /// The development sign-in as `name`, then the chat page's CSRF token.
    pub async fn sign_in(&mut self, base: &str, name: &str) {
        let (status, page) = self.get(&format!("{base}/app/sign-in")).await;
        assert_eq!(status, StatusCode::OK);
        let token = value_after(&page, "name=\"csrf\" value=\"");
        let res = self
            .http
            .post(format!("{base}/app/sign-in"))
            .header(reqwest::header::COOKIE, self.cookie_header())
            .form(&[("csrf", token.as_str()), ("name", name)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 303, "signed in");
        self.keep_cookies(&res);
        let (status, page) = self.get(&format!("{base}/app/chat")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        self.csrf = value_after(&page, "<meta name=\"csrf-token\" content=\"");
    }

    pub async fn post_chat(&mut self, base: &str, id: &str, text: &str) -> StatusCode {
        let res = self
            .http
            .post(format!("{base}/api/chat/messages"))
            .header(reqwest::header::COOKIE, self.cookie_header())
            .header("X-CSRF-Token", &self.csrf)
            .json(&json!({"id": id, "text": text}))
            .send()
            .await
            .unwrap();
        StatusCode::from_u16(res.status().as_u16()).unwrap()
    }

    pub async fn transcript(&mut self, base: &str) -> Value {
        let (status, body) = self.get(&format!("{base}/api/chat/messages?after=0")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Polls the transcript until a reply is there and no turn is running.
    pub async fn wait_for_reply(&mut self, server: &mut Server) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let t = self.transcript(&server.base).await;
            if !assistant_texts(&t).is_empty() && t["working"] == false {
                return t;
            }
            server.check_alive();
            assert!(Instant::now() < deadline, "no reply: {t}\n{}", server.log());
            tokio::time::sleep(POLL).await;
        }
    }
}

fn value_after(page: &str, marker: &str) -> String {
    let at = page
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not in {page}"))
        + marker.len();
    page[at..].split('"').next().unwrap().to_owned()
}

/// The assistant's texts in a chat API transcript.
pub fn assistant_texts(transcript: &Value) -> Vec<String> {
    transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A fresh directory for one test's store file; returns the file's path.
pub fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("steward-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("steward.db")
}
