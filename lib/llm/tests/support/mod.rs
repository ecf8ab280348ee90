//! A fake model provider on 127.0.0.1: answers every request from a queue of canned replies
//! and records what it received. Shared by the HTTP and Bedrock client tests.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};

/// One canned reply.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
    /// Wait this long before answering (to provoke a client timeout).
    pub delay: Duration,
    /// A streamed body instead of `body`: each piece sent after its pause.
    pub chunks: Option<Vec<(Duration, Vec<u8>)>>,
}

impl Reply {
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body: body.to_string(),
            delay: Duration::ZERO,
            chunks: None,
        }
    }

    /// A `200 text/event-stream` body sent piece by piece, each after its pause.
    pub fn stream(chunks: Vec<(Duration, String)>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type", "text/event-stream".to_owned())],
            body: String::new(),
            delay: Duration::ZERO,
            chunks: Some(
                chunks
                    .into_iter()
                    .map(|(pause, piece)| (pause, piece.into_bytes()))
                    .collect(),
            ),
        }
    }

    /// A `200` AWS event stream (Bedrock's `ConverseStream`): each frame sent after its pause.
    pub fn event_stream(frames: Vec<(Duration, Vec<u8>)>) -> Self {
        Self {
            status: 200,
            headers: vec![(
                "content-type",
                "application/vnd.amazon.eventstream".to_owned(),
            )],
            body: String::new(),
            delay: Duration::ZERO,
            chunks: Some(frames),
        }
    }

    /// A complete Converse answer (its JSON body) streamed as `ConverseStream` sends it.
    pub fn converse_stream(answer: &Value) -> Self {
        Self::event_stream(vec![(
            Duration::ZERO,
            steward_llm::testing::converse_stream_body(answer),
        )])
    }

    /// A complete answer streamed as the Claude API streams it, all at once.
    pub fn streamed(answer: &serde_json::Value) -> Self {
        Self::stream(vec![(Duration::ZERO, sse(&stream_events(answer)))])
    }

    pub fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
            delay: Duration::ZERO,
            chunks: None,
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// What the fake received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

#[derive(Default)]
struct State {
    replies: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
}

/// A running fake server; dropped with the test's runtime.
pub struct FakeServer {
    pub addr: SocketAddr,
    state: Arc<State>,
}

impl FakeServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let state = Arc::new(State {
            replies: Mutex::new(replies.into()),
            received: Mutex::default(),
        });
        let handler_state = state.clone();
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = handler_state.clone();
                async move { answer(state, method, uri, headers, body).await }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("fake server");
        });
        Self { addr, state }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().expect("lock").clone()
    }
}

async fn answer(
    state: Arc<State>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.received.lock().expect("lock").push(Received {
        method,
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = state.replies.lock().expect("lock").pop_front();
    let Some(reply) = reply else {
        return (
            StatusCode::IM_A_TEAPOT,
            "the fake server ran out of replies",
        )
            .into_response();
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let status = StatusCode::from_u16(reply.status).expect("status");
    let mut response = match reply.chunks {
        Some(chunks) => {
            let pieces = futures::stream::iter(chunks).then(|(pause, piece)| async move {
                tokio::time::sleep(pause).await;
                Ok::<_, std::convert::Infallible>(Bytes::from(piece))
            });
            (status, axum::body::Body::from_stream(pieces)).into_response()
        }
        None => (status, reply.body).into_response(),
    };
    for (name, value) in reply.headers {
        response
            .headers_mut()
            .insert(name, value.parse().expect("header value"));
    }
    response
}

/// A complete Messages API response as the API sends it.
pub fn api_response() -> serde_json::Value {
    serde_json::json!({
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": [
            {"type": "thinking", "thinking": "Plan it.", "signature": "sig"},
            {"type": "text", "text": "Your event is set up."}
        ],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 40}
    })
}

/// The API's error envelope.
pub fn api_error(kind: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Server-sent events as the Claude API writes them: `event:` and `data:` lines, a blank line
/// after each.
pub fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().expect("type")
            )
        })
        .collect()
}

/// The events of a streamed answer equal to the complete `answer`: text, reasoning and tool
/// input split into several deltas, a ping in between, usage split between message_start and
/// message_delta.
pub fn stream_events(answer: &Value) -> Vec<Value> {
    let mut start = answer.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["stop_sequence"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    let mut events = vec![
        json!({"type": "message_start", "message": start}),
        json!({"type": "ping"}),
    ];
    let halves = |text: &str| -> Vec<String> {
        let middle = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        vec![text[..middle].to_owned(), text[middle..].to_owned()]
    };
    for (index, block) in answer["content"]
        .as_array()
        .expect("content")
        .iter()
        .enumerate()
    {
        let mut opening = block.clone();
        let mut deltas = Vec::new();
        match block["type"].as_str().expect("block type") {
            "text" => {
                opening["text"] = json!("");
                for piece in halves(block["text"].as_str().expect("text")) {
                    deltas.push(json!({"type": "text_delta", "text": piece}));
                }
            }
            "thinking" => {
                opening["thinking"] = json!("");
                opening["signature"] = json!("");
                for piece in halves(block["thinking"].as_str().expect("thinking")) {
                    deltas.push(json!({"type": "thinking_delta", "thinking": piece}));
                }
                deltas.push(json!({"type": "signature_delta", "signature": block["signature"]}));
            }
            "tool_use" => {
                opening["input"] = json!({});
                for piece in halves(&block["input"].to_string()) {
                    deltas.push(json!({"type": "input_json_delta", "partial_json": piece}));
                }
            }
            _ => {}
        }
        events
            .push(json!({"type": "content_block_start", "index": index, "content_block": opening}));
        for delta in deltas {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({
        "type": "message_delta",
        "delta": {"stop_reason": answer["stop_reason"], "stop_sequence": answer["stop_sequence"]},
        "usage": {"output_tokens": answer["usage"]["output_tokens"]}
    }));
    events.push(json!({"type": "message_stop"}));
    events
}

/// A complete answer that calls a tool after reasoning and a line of text.
pub fn tool_use_response() -> Value {
    json!({
        "id": "msg_tool",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": [
            {"type": "thinking", "thinking": "They want a picnic on Saturday.", "signature": "EqQBCkYIBxgCKkB"},
            {"type": "text", "text": "I'll create the picnic now."},
            {"type": "tool_use", "id": "toolu_01A", "name": "create_event",
             "input": {"name": "Picnic in the park", "dates": ["2026-07-04"], "capacity": 40, "notes": "Bring blankets ☀"}}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": 1200, "output_tokens": 96, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 4000}
    })
}

/// The bytes of a photo: a PNG signature (base64 `iVBORw0KGgo=`).
pub const PHOTO: &[u8] = b"\x89PNG\r\n\x1a\n";
/// The bytes of a PDF: its header (base64 `JVBERi0xLjc=`).
pub const PROGRAMME: &[u8] = b"%PDF-1.7";

/// A person's message with a photo and a PDF, as the transcript stores it: blob references
/// only. The document carries a cache breakpoint.
pub fn stored_media_message() -> steward_llm::Message {
    use steward_llm::{
        CacheControl, ContentBlock, DocumentBlock, DocumentSource, Extra, ImageBlock, ImageSource,
        Message,
    };
    Message::user(vec![
        ContentBlock::Image(ImageBlock {
            source: ImageSource::Stored {
                key: "media/photo-1".to_owned(),
                media_type: "image/png".to_owned(),
            },
            cache_control: None,
            extra: Extra::new(),
        }),
        ContentBlock::Document(DocumentBlock {
            source: DocumentSource::Stored {
                key: "media/programme-1".to_owned(),
                media_type: "application/pdf".to_owned(),
            },
            title: Some("Spring Open: programme.pdf".to_owned()),
            cache_control: Some(CacheControl::ephemeral()),
            extra: Extra::new(),
        }),
        ContentBlock::text("Set this up"),
    ])
}

/// The blob store's bytes for [`stored_media_message`].
pub fn media_blobs() -> std::collections::HashMap<String, Vec<u8>> {
    std::collections::HashMap::from([
        ("media/photo-1".to_owned(), PHOTO.to_vec()),
        ("media/programme-1".to_owned(), PROGRAMME.to_vec()),
    ])
}
