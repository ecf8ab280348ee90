//! The functions' AWS endpoint: a loopback proxy in front of moto that answers a chosen share
//! of DynamoDB and SQS requests with the services' throttling errors (before forwarding, so a
//! throttled request changes nothing, as on AWS) and counts every request by operation — the
//! input of the cost model.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use rand::RngExt;

/// The proxy's state.
pub struct FaultProxy {
    upstream: String,
    http: reqwest::Client,
    throttle_rate: f64,
    /// Requests forwarded, by `X-Amz-Target` (e.g. `DynamoDB_20120810.TransactWriteItems`).
    pub calls: Mutex<BTreeMap<String, u64>>,
    /// Prices every answered request (the cost model).
    pub meter: crate::cost::Meter,
    /// Requests answered with a throttling error, by service.
    pub throttled_dynamodb: AtomicU64,
    /// Requests answered with a throttling error, by service.
    pub throttled_sqs: AtomicU64,
}

impl FaultProxy {
    /// Serves the proxy for `upstream` (moto); returns it and its base URL.
    pub async fn start(upstream: &str, throttle_rate: f64) -> anyhow::Result<(Arc<Self>, String)> {
        let proxy = Arc::new(Self {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: steward_net::client_builder().build()?,
            throttle_rate,
            calls: Mutex::new(BTreeMap::new()),
            meter: crate::cost::Meter::default(),
            throttled_dynamodb: AtomicU64::new(0),
            throttled_sqs: AtomicU64::new(0),
        });
        let app = Router::new().fallback(forward).with_state(proxy.clone());
        let base = crate::fakes::serve(app).await?;
        Ok((proxy, base))
    }

    /// The requests counted so far, by operation.
    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

async fn forward(
    State(proxy): State<Arc<FaultProxy>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("other")
        .to_owned();
    let dynamodb = target.starts_with("DynamoDB_");
    if proxy.throttle_rate > 0.0 && rand::rng().random_bool(proxy.throttle_rate.min(1.0)) {
        let (counter, kind) = if dynamodb {
            (
                &proxy.throttled_dynamodb,
                "com.amazonaws.dynamodb.v20120810#ThrottlingException",
            )
        } else {
            (&proxy.throttled_sqs, "com.amazonaws.sqs#RequestThrottled")
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let body =
            serde_json::json!({"__type": kind, "message": "Rate exceeded (injected by the stage)"});
        return Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amzn-query-error", "RequestThrottled;Sender")
            .body(Body::from(body.to_string()))
            .unwrap_or_default();
    }
    *proxy
        .calls
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(target.clone())
        .or_default() += 1;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = proxy
        .http
        .request(method, format!("{}{path}", proxy.upstream))
        .body(body.clone());
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(answer) => {
            let mut builder = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if name != "content-length" && name != "transfer-encoding" {
                    builder = builder.header(name, value);
                }
            }
            let ok = answer.status().is_success();
            let bytes = answer.bytes().await.unwrap_or_default();
            if ok {
                proxy.meter.record(&target, &body, &bytes);
            }
            builder.body(Body::from(bytes)).unwrap_or_default()
        }
        Err(e) => Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Body::from(format!("stage proxy: moto unreachable: {e}")))
            .unwrap_or_default(),
    }
}
