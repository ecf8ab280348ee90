//! Loopback fakes of the outside APIs: the model (Anthropic Messages API) and Telegram's Bot API.
//!
//! The model is stateless and answers from the request alone, as a real model does: for every
//! marker (`stg-…`) the person wrote since the last final reply and that no `create_event` call
//! of the transcript names yet, it calls `create_event` (with a fresh tool-use id per model
//! call, as a real model would — so a turn that calls the model again after a crash makes a
//! *new* call, which only the turn's persisted steps can dedupe); with none left, it answers
//! "Done: <markers>". Telegram records every `sendMessage` with its arrival time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::watch;

/// What every marker starts with.
pub const MARKER_PREFIX: &str = "stg-";

/// The event name the fake model gives marker `m`.
pub fn event_name(marker: &str) -> String {
    format!("Stage {marker}")
}

/// Every marker in `text`, in order.
pub fn markers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(MARKER_PREFIX) {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(tail.len());
        let marker = tail[..end].trim_end_matches('-');
        if marker.len() > MARKER_PREFIX.len() && !out.iter().any(|m| m == marker) {
            out.push(marker.to_owned());
        }
        rest = &tail[end..];
    }
    out
}

/// The fake model.
pub struct FakeModel {
    /// How long each answer takes (a real model's latency, scaled down).
    latency: Duration,
    calls: AtomicU64,
    /// Every call's messages and answer, one JSON line each (for reading a failed run).
    transcript: Mutex<Option<std::fs::File>>,
}

impl FakeModel {
    /// Serves the fake on loopback; returns it and its base URL.
    pub async fn start(
        latency: Duration,
        transcript: &std::path::Path,
    ) -> anyhow::Result<(Arc<Self>, String)> {
        let fake = Arc::new(Self {
            latency,
            calls: AtomicU64::new(0),
            transcript: Mutex::new(Some(std::fs::File::create(transcript)?)),
        });
        let app = Router::new()
            .route("/v1/messages", post(model_answer))
            .with_state(fake.clone());
        let base = serve(app).await?;
        Ok((fake, base))
    }

    /// How many model calls were made.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

/// Answers as the Messages API does when it does not stream: a JSON body labelled as such (the
/// client reads an `application/json` answer whole and parses anything else as a stream).
async fn model_answer(
    State(fake): State<Arc<FakeModel>>,
    body: String,
) -> (axum::http::StatusCode, axum::Json<Value>) {
    let n = fake.calls.fetch_add(1, Ordering::Relaxed);
    tokio::time::sleep(fake.latency).await;
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(
                json!({"type":"error","error":{"type":"invalid_request_error","message":"not JSON"}}),
            ),
        );
    };
    let answer = plan_answer(&request, n);
    if let Some(file) = lock(&fake.transcript).as_mut() {
        use std::io::Write;
        // One write per line: `Value`'s `Display` on the unbuffered file was a system call per
        // token, thousands per call and growing with the history (issue #16's turn benchmark:
        // the load generator's system time crowded the server on the same two cores).
        let mut line =
            json!({"call": n, "messages": request.get("messages"), "answer": answer["content"]})
                .to_string();
        line.push('\n');
        let _ = file.write_all(line.as_bytes());
    }
    (axum::http::StatusCode::OK, axum::Json(answer))
}

/// The blocks of a message's content (a string is one text block).
fn blocks(message: &Value) -> Vec<Value> {
    match message.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}

fn has_tool_use(message: &Value) -> bool {
    blocks(message)
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
}

/// What the person wrote in a user text block: the `<user_message>` parts the harness wraps it
/// in (never the `<context>` block, which lists existing events by name), or all of it.
fn person_text(text: &str) -> String {
    const OPEN: &str = "<user_message>";
    const CLOSE: &str = "</user_message>";
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        let inner = &rest[at + OPEN.len()..];
        let end = inner.find(CLOSE).unwrap_or(inner.len());
        parts.push(&inner[..end]);
        rest = &inner[end..];
    }
    if parts.is_empty() {
        text.to_owned()
    } else {
        parts.join("\n")
    }
}

/// The answer to `request` (model call number `n`).
pub fn plan_answer(request: &Value, n: u64) -> Value {
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let role = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    // The turn starts after the last final reply (an assistant message without tool calls).
    let start = messages
        .iter()
        .rposition(|m| role(m) == "assistant" && !has_tool_use(m))
        .map_or(0, |i| i + 1);
    let mut asked: Vec<String> = Vec::new();
    let mut done: Vec<String> = Vec::new();
    for m in &messages[start..] {
        for b in blocks(m) {
            match (role(m).as_str(), b.get("type").and_then(Value::as_str)) {
                ("user", Some("text")) => {
                    let text = b.get("text").and_then(Value::as_str).unwrap_or("");
                    for marker in markers(&person_text(text)) {
                        if !asked.contains(&marker) {
                            asked.push(marker);
                        }
                    }
                }
                ("assistant", Some("tool_use")) => {
                    let name = b
                        .pointer("/input/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    done.extend(markers(name));
                }
                _ => {}
            }
        }
    }
    let pending: Vec<&String> = asked.iter().filter(|m| !done.contains(m)).collect();
    let usage = json!({"input_tokens": 100, "output_tokens": 20});
    if pending.is_empty() {
        let text = if asked.is_empty() {
            "Nothing to do.".to_owned()
        } else {
            format!("Done: {}", asked.join(", "))
        };
        return json!({
            "id": format!("msg_stage_{n}"), "type": "message", "role": "assistant",
            "model": "stage-fake", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage,
        });
    }
    let calls: Vec<Value> = pending
        .iter()
        .enumerate()
        .map(|(i, marker)| {
            json!({
                "type": "tool_use",
                "id": format!("toolu_stage_{n}_{i}"),
                "name": "create_event",
                "input": {"name": event_name(marker), "dates": ["2030-09-14"]},
            })
        })
        .collect();
    json!({
        "id": format!("msg_stage_{n}"), "type": "message", "role": "assistant",
        "model": "stage-fake", "content": calls,
        "stop_reason": "tool_use", "stop_sequence": null, "usage": usage,
    })
}

/// One message Telegram was asked to send.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The chat.
    pub chat: i64,
    /// The text.
    pub text: String,
    /// When it arrived.
    pub at: Instant,
}

/// The fake Telegram Bot API.
pub struct FakeTelegram {
    sent: Mutex<HashMap<i64, Vec<Sent>>>,
    other_calls: AtomicU64,
    changed: watch::Sender<u64>,
}

impl FakeTelegram {
    /// Serves the fake on loopback; returns it and its base URL.
    pub async fn start() -> anyhow::Result<(Arc<Self>, String)> {
        let (changed, _) = watch::channel(0);
        let fake = Arc::new(Self {
            sent: Mutex::new(HashMap::new()),
            other_calls: AtomicU64::new(0),
            changed,
        });
        let app = Router::new()
            .route("/{bot}/{method}", post(telegram_call))
            .with_state(fake.clone());
        let base = serve(app).await?;
        Ok((fake, base))
    }

    /// Everything sent to `chat`, in arrival order.
    pub fn sent_to(&self, chat: i64) -> Vec<Sent> {
        lock(&self.sent).get(&chat).cloned().unwrap_or_default()
    }

    /// Every `sendMessage`, all chats.
    pub fn all_sent(&self) -> Vec<Sent> {
        lock(&self.sent).values().flatten().cloned().collect()
    }

    /// Calls other than `sendMessage` (typing, reactions).
    pub fn other_calls(&self) -> u64 {
        self.other_calls.load(Ordering::Relaxed)
    }

    /// A receiver that changes on every `sendMessage`.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

async fn telegram_call(
    State(fake): State<Arc<FakeTelegram>>,
    Path((_bot, method)): Path<(String, String)>,
    body: String,
) -> axum::Json<Value> {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if method != "sendMessage" {
        fake.other_calls.fetch_add(1, Ordering::Relaxed);
        return axum::Json(json!({"ok": true, "result": true}));
    }
    let chat = request.get("chat_id").and_then(Value::as_i64).unwrap_or(0);
    let text = request
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let message_id = {
        let mut sent = lock(&fake.sent);
        let list = sent.entry(chat).or_default();
        list.push(Sent {
            chat,
            text: text.clone(),
            at: Instant::now(),
        });
        list.len()
    };
    fake.changed.send_modify(|n| *n += 1);
    axum::Json(json!({
        "ok": true,
        "result": {"message_id": message_id, "date": 0, "chat": {"id": chat, "type": "private"}, "text": text},
    }))
}

/// Serves `app` on a loopback port; returns its base URL.
pub async fn serve(app: Router) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(base)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_found_in_order_once() {
        assert_eq!(
            markers("please stg-003-01-a and stg-003-01-b, again stg-003-01-a."),
            vec!["stg-003-01-a", "stg-003-01-b"]
        );
        assert!(markers("nothing here, stg- alone").is_empty());
    }

    #[test]
    fn the_model_calls_the_tool_for_open_markers_then_answers() {
        let first = json!({"messages": [
            {"role": "user", "content": "old stg-1-1-a"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "create_event", "input": {"name": "Stage stg-1-1-a"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done: stg-1-1-a"}]},
            {"role": "user", "content": [{"type": "text", "text": "<context>Events: Stage stg-1-1-a</context><user_message>make stg-1-2-a</user_message>"}, {"type": "text", "text": "and stg-1-2-b"}]},
        ]});
        let answer = plan_answer(&first, 7);
        let content = answer["content"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = content
            .iter()
            .filter_map(|b| b.pointer("/input/name").and_then(Value::as_str))
            .collect();
        assert_eq!(names, vec!["Stage stg-1-2-a", "Stage stg-1-2-b"]);

        let mut messages = first["messages"].as_array().cloned().unwrap_or_default();
        messages.push(json!({"role": "assistant", "content": answer["content"].clone()}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "y", "content": "Stage stg-9-9-z"}]}));
        let last = plan_answer(&json!({ "messages": messages }), 8);
        assert_eq!(last["content"][0]["text"], "Done: stg-1-2-a, stg-1-2-b");
    }
}
