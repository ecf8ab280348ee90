//! The HTTP API in front of the functions: a request becomes the API Gateway v2 (payload format
//! 2.0) proxy event the template's routes deliver, to the function the route names, and the
//! function's answer becomes a status and a body.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::runtime::{InvokeError, Pool, StartError};
use crate::serve::Serve;

/// The host the stage's API answers on (`STEWARD_PUBLIC_URL`'s).
pub const HOST: &str = "stage.steward.test";

/// What answers the people's requests: the three HTTP functions behind the API, or
/// `steward serve` directly.
pub enum Backend {
    /// The Lambda functions.
    Lambda {
        /// `ANY /webhooks/{proxy+}`, `GET /healthz`.
        webhook: Arc<Pool>,
        /// `ANY /mcp`.
        mcp: Arc<Pool>,
        /// `ANY /`, `/app`, `/app/{proxy+}`, `/api/{proxy+}`, `/e/{proxy+}`.
        web: Arc<Pool>,
    },
    /// `steward serve` over HTTP on loopback.
    Serve(Arc<Serve>),
}

/// The people's way in.
pub struct Api {
    /// What answers.
    pub backend: Backend,
    /// Requests served (API Gateway requests, for the cost model).
    pub requests: AtomicU64,
}

/// A function's answer.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status (502 when the function failed, as API Gateway answers).
    pub status: u16,
    /// The body.
    pub body: String,
}

impl Api {
    /// Routes one request as the template's routes do; `None` for a path no route matches.
    fn route(&self, path: &str) -> Option<&Arc<Pool>> {
        let Backend::Lambda { webhook, mcp, web } = &self.backend else {
            return None;
        };
        let under = |p: &str| path.starts_with(&format!("{p}/"));
        if under("/webhooks") || path == "/healthz" {
            Some(webhook)
        } else if path == "/mcp" {
            Some(mcp)
        } else if path == "/" || path == "/app" || under("/app") || under("/api") || under("/e") {
            Some(web)
        } else {
            None
        }
    }

    /// Sends `method path` with `headers` and `body` from `source_ip`.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
        source_ip: &str,
    ) -> Result<Answer, StartError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if let Backend::Serve(serve) = &self.backend {
            return Ok(match serve.request(method, path, headers, body).await {
                Some((status, body)) => Answer { status, body },
                None => Answer {
                    status: 502,
                    body: "steward serve did not answer".into(),
                },
            });
        }
        let Some(pool) = self.route(path) else {
            return Ok(Answer {
                status: 404,
                body: r#"{"message":"Not Found"}"#.into(),
            });
        };
        let event = event(method, path, headers, body, source_ip);
        Ok(match pool.invoke(&event).await? {
            Ok(response) => Answer {
                status: response
                    .get("statusCode")
                    .and_then(Value::as_u64)
                    .and_then(|s| u16::try_from(s).ok())
                    .unwrap_or(502),
                body: response
                    .get("body")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            },
            Err(e @ (InvokeError::Function(_) | InvokeError::Crashed(_) | InvokeError::Killed)) => {
                Answer {
                    status: 502,
                    body: format!(r#"{{"message":"Internal Server Error","stage":"{e}"}}"#),
                }
            }
            Err(InvokeError::Timeout) => Answer {
                status: 504,
                body: r#"{"message":"Service Unavailable"}"#.into(),
            },
        })
    }
}

/// An API Gateway HTTP API (payload 2.0) event for one request.
pub fn event(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    source_ip: &str,
) -> Value {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let mut all = serde_json::Map::new();
    all.insert("host".into(), HOST.into());
    all.insert("x-forwarded-for".into(), source_ip.into());
    all.insert("x-forwarded-proto".into(), "https".into());
    all.insert("x-forwarded-port".into(), "443".into());
    for (k, v) in headers {
        all.insert(k.to_ascii_lowercase(), (*v).into());
    }
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": all,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "stage",
            "domainName": HOST,
            "domainPrefix": "stage",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip, "userAgent": "steward-stage"},
            "requestId": format!("stage-{n}"),
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Dec/2026:00:00:00 +0000",
            "timeEpoch": now,
        },
        "body": body,
        "isBase64Encoded": false,
    })
}
