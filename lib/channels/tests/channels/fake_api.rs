//! A fake provider API on 127.0.0.1:0 that records every request and answers with a script.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::Value;

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

type Responder = dyn Fn(&Recorded, usize) -> (u16, Value) + Send + Sync;

struct Inner {
    requests: Mutex<Vec<Recorded>>,
    respond: Box<Responder>,
}

/// The running fake; dropped with the test's runtime.
pub struct FakeApi {
    pub base: String,
    inner: Arc<Inner>,
}

impl FakeApi {
    /// Starts a fake that answers request number `n` (from 0) with `respond(&request, n)`.
    pub async fn start(
        respond: impl Fn(&Recorded, usize) -> (u16, Value) + Send + Sync + 'static,
    ) -> Self {
        let inner = Arc::new(Inner {
            requests: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        });
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            base: format!("http://{addr}"),
            inner,
        }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.requests.lock().unwrap().clone()
    }
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
        let mut requests = inner.requests.lock().unwrap();
        requests.push(recorded.clone());
        requests.len() - 1
    };
    let (status, json) = (inner.respond)(&recorded, n);
    (StatusCode::from_u16(status).unwrap(), axum::Json(json))
}
