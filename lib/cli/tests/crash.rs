//! The crash test: `steward serve` is killed (SIGKILL) while a web chat turn waits on the
//! model, then started again on the same store file. The turn must complete once: the person
//! gets one reply, and the event the model asked for exists once.
//!
//! The model is a fake Anthropic Messages API on loopback that holds a chosen request open
//! (the process is killed while it waits) and answers the others from a plan. Every wait polls
//! with a deadline; servers are killed on drop so a failing test leaves no process behind.

#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};
use steward_harness::{Actor, Ctx, UserId};
use steward_store::{SqliteTable, SystemClock, Table};

/// How long any one wait may take before the test fails (a debug build starting up on a busy
/// CI machine is slow; a correct run takes a second or two).
const WAIT: Duration = Duration::from_secs(60);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);

const TEXT: &str = "create an event called Spring Meetup on 2030-09-14";

// ---------------------------------------------------------------------------------------
// The fake model.

/// What the fake does with request number n.
#[derive(Clone)]
enum Step {
    /// Keeps the request open and never answers (the server is killed meanwhile).
    Hold,
    /// Answers with this Messages API response.
    Answer(Value),
}

struct FakeModel {
    plan: Vec<Step>,
    requests: Mutex<Vec<Value>>,
}

impl FakeModel {
    async fn start(plan: Vec<Step>) -> (Arc<Self>, String) {
        let fake = Arc::new(Self {
            plan,
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/messages", post(answer))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        (fake, base)
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    async fn wait_for_requests(&self, n: usize, server: &mut Server) {
        let deadline = Instant::now() + WAIT;
        while self.requests().len() < n {
            server.check_alive();
            assert!(
                Instant::now() < deadline,
                "the model got {} request(s), expected {n}\n{}",
                self.requests().len(),
                server.log()
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Answers as the Messages API does when it does not stream: a JSON body labelled as such (the
/// client reads an `application/json` answer whole and parses anything else as a stream).
async fn answer(
    State(fake): State<Arc<FakeModel>>,
    body: String,
) -> (StatusCode, axum::Json<Value>) {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let n = {
        let mut requests = fake.requests.lock().unwrap();
        requests.push(body);
        requests.len() - 1
    };
    match fake.plan.get(n).cloned() {
        Some(Step::Answer(response)) => (StatusCode::OK, axum::Json(response)),
        Some(Step::Hold) => std::future::pending().await,
        None => (
            StatusCode::BAD_REQUEST,
            axum::Json(
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": format!("unplanned request {n}")}}),
            ),
        ),
    }
}

fn tool_call(n: usize) -> Step {
    Step::Answer(json!({
        "id": format!("msg_fake_{n}"),
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [{
            "type": "tool_use",
            "id": "toolu_fake_create",
            "name": "create_event",
            "input": {"name": "Spring Meetup", "dates": ["2030-09-14"]}
        }],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    }))
}

fn final_text(n: usize) -> Step {
    Step::Answer(json!({
        "id": format!("msg_fake_{n}"),
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [{"type": "text", "text": "Done: Spring Meetup is on 14 September 2030."}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    }))
}

// ---------------------------------------------------------------------------------------
// The server under test.

/// A running `steward serve`, killed on drop.
struct Server {
    child: Child,
    base: String,
    model_label: String,
    log: PathBuf,
}

impl Server {
    /// Serves `db` with the model at the fake Anthropic API at `model_base`.
    async fn start(db: &Path, model_base: &str) -> Self {
        Self::start_with(
            db,
            &[
                ("STEWARD_MODEL_PROVIDER", "anthropic"),
                ("ANTHROPIC_API_KEY", "test-key"),
                ("ANTHROPIC_BASE_URL", model_base),
            ],
        )
        .await
    }

    /// Serves `db` with the model settings `model_env`.
    async fn start_with(db: &Path, model_env: &[(&str, &str)]) -> Self {
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
            .envs(model_env.iter().copied())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        // Read stdout on a thread (it must keep draining), handing lines over.
        let stdout = child.stdout.take().unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    // Nobody listens any more; keep draining so the child never blocks.
                    continue;
                }
            }
        });
        let mut server = Self {
            child,
            base: String::new(),
            model_label: String::new(),
            log,
        };
        // The start-up lines: the address first, the model's label a few lines later.
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

    fn log(&self) -> String {
        format!(
            "--- server log ---\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        )
    }

    fn check_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("steward serve exited: {status}\n{}", self.log());
        }
    }

    /// SIGKILL: no shutdown handler runs.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------------------
// A browser: cookies by hand, no redirects followed.

struct Browser {
    http: reqwest::Client,
    cookies: HashMap<String, String>,
    csrf: String,
}

impl Browser {
    fn new() -> Self {
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

    async fn get(&mut self, url: &str) -> (StatusCode, String) {
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
    async fn sign_in(&mut self, base: &str, name: &str) {
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

    async fn post_chat(&mut self, base: &str, id: &str, text: &str) -> StatusCode {
        self.post_json(base, &json!({"id": id, "text": text})).await
    }

    async fn post_json(&mut self, base: &str, body: &Value) -> StatusCode {
        let res = self
            .http
            .post(format!("{base}/api/chat/messages"))
            .header(reqwest::header::COOKIE, self.cookie_header())
            .header("X-CSRF-Token", &self.csrf)
            .json(body)
            .send()
            .await
            .unwrap();
        StatusCode::from_u16(res.status().as_u16()).unwrap()
    }

    async fn transcript(&mut self, base: &str) -> Value {
        let (status, body) = self.get(&format!("{base}/api/chat/messages?after=0")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Polls the transcript until a reply is there and no turn is running.
    async fn wait_for_reply(&mut self, server: &mut Server) -> Value {
        self.wait_for_replies(server, 1).await
    }

    /// Polls the transcript until `n` replies are there and no turn is running.
    async fn wait_for_replies(&mut self, server: &mut Server, n: usize) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let t = self.transcript(&server.base).await;
            if assistant_texts(&t).len() >= n && t["working"] == false {
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

fn assistant_texts(transcript: &Value) -> Vec<String> {
    transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect()
}

fn user_texts(transcript: &Value) -> Vec<String> {
    transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------
// The scenario.

fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("steward-crash-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("steward.db")
}

/// The person the crash tests sign in as (the development sign-in by name) and the account id
/// that name maps to.
const TESTER_NAME: &str = "Crash Tester";
const TESTER_ID: &str = "dev-crash-tester";

async fn events_of(db: &Path, user: &str) -> Vec<String> {
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(db).unwrap());
    let ctx = Ctx::new(
        table,
        Arc::new(SystemClock),
        UserId::parse(user).unwrap(),
        Actor::User,
    );
    steward_events::events::list_events(&ctx)
        .await
        .unwrap()
        .into_iter()
        .map(|e| format!("{e:?}"))
        .collect()
}

/// Runs one crash: the fake holds request `held` (counting from 0); the server is killed
/// while it waits, then restarted; `total` requests are expected in all. Returns the fake's
/// requests.
async fn crash_while_holding(name: &str, plan: Vec<Step>, held: usize) -> Vec<Value> {
    let total = plan.len();
    let db = temp_db(name);
    let user = TESTER_ID.to_owned();
    let (fake, model_base) = FakeModel::start(plan).await;

    let mut server = Server::start(&db, &model_base).await;
    let mut browser = Browser::new();
    browser.sign_in(&server.base, TESTER_NAME).await;
    assert_eq!(
        browser.post_chat(&server.base, "crash-msg-1", TEXT).await,
        StatusCode::ACCEPTED
    );
    fake.wait_for_requests(held + 1, &mut server).await;
    let t = browser.transcript(&server.base).await;
    assert_eq!(t["working"], true, "the turn is waiting on the model: {t}");
    server.kill();

    let mut server = Server::start(&db, &model_base).await;
    // The session lives in the store: the same cookie works after the restart.
    let t = browser.wait_for_reply(&mut server).await;
    fake.wait_for_requests(total, &mut server).await;
    assert_eq!(
        assistant_texts(&t),
        vec!["Done: Spring Meetup is on 14 September 2030.".to_owned()],
        "exactly one reply: {t}"
    );
    assert_eq!(user_texts(&t), vec![TEXT.to_owned()], "{t}");

    // Sending the same message again (a browser retry) runs nothing.
    assert_eq!(
        browser.post_chat(&server.base, "crash-msg-1", TEXT).await,
        StatusCode::ACCEPTED
    );
    server.kill();
    let requests = fake.requests();
    assert_eq!(requests.len(), total, "no model call beyond the plan");
    let events = events_of(&db, &user).await;
    assert_eq!(events.len(), 1, "exactly one event: {events:?}");
    assert!(events[0].contains("Spring Meetup"), "{events:?}");
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
    requests
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_the_first_model_call_waits_the_turn_runs_once_after_restart() {
    // 0: held (killed); after the restart 1: create_event, 2: the reply.
    let requests =
        crash_while_holding("first", vec![Step::Hold, tool_call(1), final_text(2)], 0).await;
    assert_eq!(
        requests[1]["messages"], requests[0]["messages"],
        "after the restart the model sees the turn again from the start"
    );
    let first = requests[0]["messages"].as_array().unwrap();
    assert_eq!(first.len(), 1, "one user message");
    assert!(first[0].to_string().contains(TEXT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_the_second_model_call_waits_the_committed_tool_call_is_not_repeated() {
    // 0: create_event (commits), 1: held (killed); after the restart 2: the reply.
    let requests =
        crash_while_holding("second", vec![tool_call(0), Step::Hold, final_text(2)], 1).await;
    assert_eq!(
        requests[2]["messages"], requests[1]["messages"],
        "after the restart the turn resumes where it stopped, with the stored tool result"
    );
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "user, tool call, tool result");
    assert!(messages[2].to_string().contains("tool_result"));
}

fn sample_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chat-script.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_model_chats_through_steward_serve_and_its_buttons_work() {
    let db = temp_db("scripted");
    let user = TESTER_ID.to_owned();
    let provider = format!("scripted:{}", sample_script().display());
    let mut server = Server::start_with(&db, &[("STEWARD_MODEL_PROVIDER", &provider)]).await;
    assert_eq!(
        server.model_label,
        format!("scripted (test replay of {})", sample_script().display())
    );
    let mut browser = Browser::new();
    browser.sign_in(&server.base, TESTER_NAME).await;
    let (_, page) = browser.get(&format!("{}/app/chat", server.base)).await;
    assert!(
        page.contains("scripted (test replay of"),
        "the chat page says so"
    );

    assert_eq!(
        browser.post_chat(&server.base, "s-1", "hello").await,
        StatusCode::ACCEPTED
    );
    let t = browser.wait_for_reply(&mut server).await;
    let reply = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()
        .clone();
    assert_eq!(
        reply["buttons"],
        json!([{"id": "b0", "title": "Yes, create one"}, {"id": "b1", "title": "Not now"}])
    );
    // Click the first button.
    let click = json!({"id": "s-2", "button": {"id": "b0", "title": "Yes, create one"}});
    assert_eq!(
        browser.post_json(&server.base, &click).await,
        StatusCode::ACCEPTED
    );
    let t = browser.wait_for_replies(&mut server, 2).await;
    assert_eq!(
        user_texts(&t),
        vec!["hello".to_owned(), "Yes, create one".to_owned()]
    );
    assert!(
        assistant_texts(&t)[1].starts_with("Done: Spring Meetup"),
        "{t}"
    );
    server.kill();
    assert_eq!(events_of(&db, &user).await.len(), 1);
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
}

#[test]
fn a_bad_script_stops_steward_serve_at_start_naming_the_step() {
    let db = temp_db("bad-script");
    let script = db.with_file_name("bad.json");
    std::fs::write(
        &script,
        r#"[{"text": "hi"}, {"tool": "create_event", "text": "x"}]"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_steward"))
        .arg("serve")
        .env_clear()
        .env("STEWARD_DB", &db)
        .env("STEWARD_ADDR", "127.0.0.1:0")
        .env(
            "STEWARD_MODEL_PROVIDER",
            format!("scripted:{}", script.display()),
        )
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("step 2"), "{stderr}");
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
}
