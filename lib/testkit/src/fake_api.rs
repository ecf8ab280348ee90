//! A fake provider API (WhatsApp Cloud API, Telegram Bot API, or any script) on 127.0.0.1:0
//! that records every request and answers with a script.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{Value, json};

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request's path.
    pub path: String,
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
    /// The body as JSON (`null` when it is not JSON).
    pub body: Value,
}

impl Recorded {
    /// The Bot API method of a Telegram request (`sendMessage`, …).
    pub fn method(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }
}

/// How the fake answers request number `n`.
type Responder = dyn Fn(&Recorded, usize) -> (u16, Value) + Send + Sync;

struct Inner {
    requests: Mutex<Vec<Recorded>>,
    respond: Box<Responder>,
}

/// The running fake.
pub struct FakeApi {
    /// The fake's root URL (`http://127.0.0.1:<port>`).
    pub base: String,
    inner: Arc<Inner>,
}

impl FakeApi {
    /// Starts a fake answering request number `n` with `respond(&request, n)`.
    pub async fn start(
        respond: impl Fn(&Recorded, usize) -> (u16, Value) + Send + Sync + 'static,
    ) -> Self {
        let inner = Arc::new(Inner {
            requests: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        });
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let base = crate::serve_loopback(app).await;
        Self { base, inner }
    }

    /// A WhatsApp Cloud API that accepts everything.
    pub async fn whatsapp() -> Self {
        Self::start(|req, n| {
            if req.body.get("type").is_some() {
                (
                    200,
                    json!({ "messages": [{ "id": format!("wamid.out.{n}") }] }),
                )
            } else {
                (200, json!({ "success": true }))
            }
        })
        .await
    }

    /// A Telegram Bot API that accepts everything except messages to chat `fail_chat`
    /// (answered 500, a retryable failure).
    pub async fn telegram(fail_chat: Option<i64>) -> Self {
        Self::start(move |req, n| {
            if fail_chat.is_some() && req.body.get("chat_id").and_then(Value::as_i64) == fail_chat
            {
                return (
                    500,
                    json!({ "ok": false, "error_code": 500, "description": "Internal Server Error" }),
                );
            }
            if req.method() == "sendMessage" {
                (200, json!({ "ok": true, "result": { "message_id": 9000 + n } }))
            } else {
                (200, json!({ "ok": true, "result": true }))
            }
        })
        .await
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner
            .requests
            .lock()
            .expect("the request log is not poisoned")
            .clone()
    }

    /// The messages sent (WhatsApp `text`/`interactive`; Telegram `sendMessage`), in order.
    pub fn sent(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.method() == "sendMessage"
                    || matches!(
                        r.body.get("type").and_then(Value::as_str),
                        Some("text" | "interactive")
                    )
            })
            .map(|r| r.body)
            .collect()
    }

    /// The text of each message sent, in order (WhatsApp interactive bodies included).
    pub fn sent_texts(&self) -> Vec<String> {
        self.sent().iter().map(text_of).collect()
    }
}

/// The visible text of a sent message, whatever the channel's shape.
pub fn text_of(body: &Value) -> String {
    ["/text", "/text/body", "/interactive/body/text"]
        .iter()
        .find_map(|p| body.pointer(p).and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let recorded = Recorded {
        path: uri.path().to_owned(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let n = {
        let mut requests = inner
            .requests
            .lock()
            .expect("the request log is not poisoned");
        requests.push(recorded.clone());
        requests.len() - 1
    };
    let (status, json) = (inner.respond)(&recorded, n);
    (
        StatusCode::from_u16(status).expect("the script answers a valid status"),
        axum::Json(json),
    )
}
