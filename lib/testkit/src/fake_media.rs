//! A fake WhatsApp Graph API media endpoint and Telegram Bot API file endpoint on 127.0.0.1:0,
//! serving media bytes and injecting failures per file: an error status on either hop, a size
//! that lies, a `Content-Type` that lies, a slow answer, a body that goes on past any cap
//! (counting what it actually wrote), a download URL on another host, a `file_path` that
//! climbs out.
//!
//! Routes (one server serves both channels):
//! * WhatsApp, API base [`FakeMedia::whatsapp_base`]: `GET /graph/{media-id}` answers
//!   `{url, mime_type, sha256, file_size, id}` with the download URL `/cdn/{media-id}`; both need
//!   `Authorization: Bearer` [`WHATSAPP_TOKEN`].
//! * Telegram, API base [`FakeMedia::telegram_base`]: `GET /tg/bot{token}/getFile?file_id=…`
//!   answers `{ok, result: {file_id, file_size, file_path}}`; `GET /tg/file/bot{token}/{path}`
//!   the bytes; the token must be [`TELEGRAM_TOKEN`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The WhatsApp access token the fake accepts.
pub const WHATSAPP_TOKEN: &str = "fake-wa-media-token";
/// The Telegram bot token the fake accepts.
pub const TELEGRAM_TOKEN: &str = "123456:fake-tg-media-token";

/// Size of each chunk of a served body, in bytes.
const CHUNK_BYTES: usize = 16 * 1024;

/// One file the fake serves, and how it misbehaves.
#[derive(Debug, Clone)]
pub struct MediaFile {
    bytes: Vec<u8>,
    pad_to: Option<usize>,
    mime: Option<String>,
    content_type: Option<String>,
    declared_size: Option<Option<u64>>,
    lookup_status: u16,
    lookup_description: Option<String>,
    download_status: u16,
    delay: Duration,
    download_url: Option<String>,
    file_path: Option<String>,
}

impl MediaFile {
    /// A file serving `bytes`, declaring type `mime` (the Graph answer's `mime_type` and the
    /// download's `Content-Type`) and its true size.
    pub fn new(bytes: Vec<u8>, mime: &str) -> Self {
        Self {
            bytes,
            pad_to: None,
            mime: Some(mime.to_owned()),
            content_type: None,
            declared_size: None,
            lookup_status: 200,
            lookup_description: None,
            download_status: 200,
            delay: Duration::ZERO,
            download_url: None,
            file_path: None,
        }
    }

    /// The body goes on with zero bytes up to `total` bytes (the declared size stays that of
    /// the bytes given, unless [`Self::declared_size`] says otherwise).
    pub fn padded_to(mut self, total: usize) -> Self {
        self.pad_to = Some(total);
        self
    }

    /// Declares `size` (`None`: says nothing) instead of the true size.
    pub fn declared_size(mut self, size: Option<u64>) -> Self {
        self.declared_size = Some(size);
        self
    }

    /// The download answers with this `Content-Type` instead of the declared type.
    pub fn content_type(mut self, content_type: &str) -> Self {
        self.content_type = Some(content_type.to_owned());
        self
    }

    /// The lookup (Graph media id, `getFile`) answers `status`, with a Telegram `description`.
    pub fn lookup_fails(mut self, status: u16, description: &str) -> Self {
        self.lookup_status = status;
        self.lookup_description = Some(description.to_owned());
        self
    }

    /// The download answers `status` (404 or 410: an expired URL).
    pub fn download_fails(mut self, status: u16) -> Self {
        self.download_status = status;
        self
    }

    /// The download waits `delay` before answering.
    pub fn slow(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// WhatsApp: the Graph answer gives this download URL instead of the fake's own.
    pub fn download_url(mut self, url: &str) -> Self {
        self.download_url = Some(url.to_owned());
        self
    }

    /// Telegram: `getFile` answers this `file_path` instead of `files/{file_id}`.
    pub fn file_path(mut self, path: &str) -> Self {
        self.file_path = Some(path.to_owned());
        self
    }

    fn total_len(&self) -> usize {
        self.pad_to.unwrap_or(0).max(self.bytes.len())
    }

    fn declared(&self) -> Option<u64> {
        self.declared_size.unwrap_or(Some(self.bytes.len() as u64))
    }
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct MediaRequest {
    /// The request's path.
    pub path: String,
    /// The query string, when there is one.
    pub query: Option<String>,
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Inner {
    files: Mutex<HashMap<String, MediaFile>>,
    sent: Mutex<HashMap<String, Arc<AtomicUsize>>>,
    requests: Mutex<Vec<MediaRequest>>,
}

/// The running fake.
pub struct FakeMedia {
    /// The fake's root URL (`http://127.0.0.1:<port>`).
    pub base: String,
    inner: Arc<Inner>,
}

impl FakeMedia {
    /// Starts a fake serving no files yet.
    pub async fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let base = crate::serve_loopback(app).await;
        Self { base, inner }
    }

    /// Serves `file` as media id / `file_id` `id`.
    pub fn add(&self, id: &str, file: MediaFile) {
        lock(&self.inner.files).insert(id.to_owned(), file);
    }

    /// The WhatsApp API base to configure (`WHATSAPP_API_BASE`).
    pub fn whatsapp_base(&self) -> String {
        format!("{}/graph", self.base)
    }

    /// The Telegram API base to configure (`TELEGRAM_API_BASE`).
    pub fn telegram_base(&self) -> String {
        format!("{}/tg", self.base)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<MediaRequest> {
        lock(&self.inner.requests).clone()
    }

    /// How many body bytes the fake has handed to the connection for file `id` (a body the
    /// client stopped reading stops here, give or take the socket buffers).
    pub fn bytes_sent(&self, id: &str) -> usize {
        lock(&self.inner.sent)
            .get(id)
            .map_or(0, |n| n.load(Ordering::SeqCst))
    }

    /// How many downloads (second hops) were asked for.
    pub fn downloads(&self) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.path.starts_with("/cdn/") || r.path.starts_with("/tg/file/"))
            .count()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().expect("the fake's state is not poisoned")
}

fn json_answer(status: u16, body: Value) -> Response {
    (
        StatusCode::from_u16(status).expect("the fake answers a valid status"),
        axum::Json(body),
    )
        .into_response()
}

fn graph_error(status: u16) -> Response {
    json_answer(
        status,
        json!({ "error": { "message": "Unsupported get request.", "type": "GraphMethodException", "code": 100 } }),
    )
}

fn telegram_error(status: u16, description: &str) -> Response {
    json_answer(
        status,
        json!({ "ok": false, "error_code": status, "description": description }),
    )
}

async fn handle(State(inner): State<Arc<Inner>>, uri: Uri, headers: HeaderMap) -> Response {
    let request = MediaRequest {
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    lock(&inner.requests).push(request.clone());
    let path = request.path.as_str();
    let whatsapp_authorized =
        request.authorization.as_deref() == Some(&format!("Bearer {WHATSAPP_TOKEN}"));
    let file = |id: &str| lock(&inner.files).get(id).cloned();

    if let Some(id) = path.strip_prefix("/graph/") {
        if !whatsapp_authorized {
            return graph_error(401);
        }
        let Some(f) = file(id) else {
            return graph_error(400);
        };
        if f.lookup_status != 200 {
            return graph_error(f.lookup_status);
        }
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("127.0.0.1");
        let url = f
            .download_url
            .clone()
            .unwrap_or_else(|| format!("http://{host}/cdn/{id}"));
        let mut answer = json!({
            "messaging_product": "whatsapp",
            "url": url,
            "sha256": "fake",
            "id": id,
        });
        if let Some(mime) = &f.mime {
            answer["mime_type"] = json!(mime);
        }
        if let Some(size) = f.declared() {
            answer["file_size"] = json!(size);
        }
        return json_answer(200, answer);
    }
    if let Some(id) = path.strip_prefix("/cdn/") {
        if !whatsapp_authorized {
            return graph_error(401);
        }
        return match file(id) {
            Some(f) => serve(&inner, id, f).await,
            None => graph_error(404),
        };
    }
    let getfile = format!("/tg/bot{TELEGRAM_TOKEN}/getFile");
    if path == getfile {
        let id = request
            .query
            .as_deref()
            .unwrap_or_default()
            .split('&')
            .find_map(|pair| pair.strip_prefix("file_id="))
            .unwrap_or_default()
            .to_owned();
        let Some(f) = file(&id) else {
            return telegram_error(400, "Bad Request: invalid file_id");
        };
        if f.lookup_status != 200 {
            let description = f.lookup_description.as_deref().unwrap_or("Bad Request");
            return telegram_error(f.lookup_status, description);
        }
        let mut result = json!({
            "file_id": id,
            "file_unique_id": format!("u{id}"),
            "file_path": f.file_path.clone().unwrap_or_else(|| format!("files/{id}")),
        });
        if let Some(size) = f.declared() {
            result["file_size"] = json!(size);
        }
        return json_answer(200, json!({ "ok": true, "result": result }));
    }
    if path.starts_with("/tg/bot") {
        return telegram_error(401, "Unauthorized");
    }
    let file_prefix = format!("/tg/file/bot{TELEGRAM_TOKEN}/");
    if let Some(file_path) = path.strip_prefix(&file_prefix) {
        let found = lock(&inner.files)
            .iter()
            .find(|(id, f)| {
                f.file_path.clone().unwrap_or_else(|| format!("files/{id}")) == file_path
            })
            .map(|(id, f)| (id.clone(), f.clone()));
        return match found {
            Some((id, f)) => serve(&inner, &id, f).await,
            None => telegram_error(404, "Not Found"),
        };
    }
    if path.starts_with("/tg/file/") {
        return telegram_error(401, "Unauthorized");
    }
    (StatusCode::NOT_FOUND, "no such route").into_response()
}

/// Serves file `id`'s body in chunks, counting each chunk as it is handed to the connection.
async fn serve(inner: &Inner, id: &str, file: MediaFile) -> Response {
    tokio::time::sleep(file.delay).await;
    if file.download_status != 200 {
        return graph_error(file.download_status);
    }
    let counter = lock(&inner.sent)
        .entry(id.to_owned())
        .or_insert_with(|| Arc::new(AtomicUsize::new(0)))
        .clone();
    let total = file.total_len();
    let content_type = file
        .content_type
        .clone()
        .or_else(|| file.mime.clone())
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    let bytes = Arc::new(file.bytes);
    let stream = futures::stream::unfold(0usize, move |at| {
        let bytes = bytes.clone();
        let counter = counter.clone();
        async move {
            if at >= total {
                return None;
            }
            let end = (at + CHUNK_BYTES).min(total);
            let chunk: Vec<u8> = (at..end)
                .map(|i| bytes.get(i).copied().unwrap_or(0))
                .collect();
            counter.fetch_add(chunk.len(), Ordering::SeqCst);
            Some((Ok::<_, std::io::Error>(Bytes::from(chunk)), end))
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from_stream(stream))
        .expect("a valid response")
}
