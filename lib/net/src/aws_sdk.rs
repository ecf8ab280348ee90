//! The AWS SDK's HTTP client: [`sdk_http_client`] sends the SDK's requests through the
//! workspace's reqwest (HTTP/1.1, rustls on ring), in place of the SDK's own hyper
//! client.
//!
//! Why by hand: the SDK's client (`aws-smithy-http-client`) always compiles HTTP/2 in (h2 and
//! hyper's HTTP/2 half, about 0.6 MB of every function's code, bench/RESULTS.md) next to the
//! reqwest stack the model clients, channel senders and the OTLP exporter already link, and no
//! feature turns it off. DynamoDB, SQS, SSM, S3 and Bedrock's streamed answers all speak
//! HTTP/1.1. No maintained crate adapts reqwest 0.12 to the SDK's `HttpClient` trait; this
//! module is that adapter, and keeps the SDK client's behaviour where it matters:
//! * **timeouts**: the connect timeout the SDK passes is reqwest's; the read timeout bounds the
//!   wait for the response's headers, as in the SDK's client (a streamed body is then bounded
//!   by its reader: Bedrock's idle timeout);
//! * **retries**: failures are classified the way the SDK's retry strategy reads them: a
//!   timeout as a timeout, a failed connect or an I/O error as I/O (retried), a request cut
//!   off mid-way as transient, an unbuildable request as the caller's error (not retried);
//! * **redirects** are not followed (the SDK reads a 301 from S3 itself).
//!
//! Not carried over: poisoning a pooled connection after a failed attempt (reqwest exposes no
//! handle on its connections; a broken connection fails its next use as I/O and is dropped).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::retry::ErrorKind;

/// The HTTP client every AWS SDK configuration in Steward is built with (see the
/// [module docs](self)).
pub fn sdk_http_client() -> SharedHttpClient {
    SharedHttpClient::new(ReqwestForSdk::default())
}

/// The SDK's `HttpClient`: one reqwest client per connect timeout the SDK asks for (clients
/// share nothing, so each keeps its own connection pool; Steward uses two or three timeouts).
#[derive(Debug, Default)]
struct ReqwestForSdk {
    clients: Mutex<HashMap<Option<Duration>, reqwest::Client>>,
}

impl ReqwestForSdk {
    fn client(&self, connect_timeout: Option<Duration>) -> Result<reqwest::Client, reqwest::Error> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(&connect_timeout) {
            return Ok(client.clone());
        }
        let mut builder = crate::client_builder().redirect(reqwest::redirect::Policy::none());
        if let Some(timeout) = connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build()?;
        clients.insert(connect_timeout, client.clone());
        Ok(client)
    }
}

impl HttpClient for ReqwestForSdk {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let built = self.client(settings.connect_timeout()).map_err(Arc::new);
        SharedHttpConnector::new(Connector {
            client: built,
            read_timeout: settings.read_timeout(),
        })
    }

    fn connector_metadata(&self) -> Option<ConnectorMetadata> {
        Some(ConnectorMetadata::new("reqwest", None))
    }
}

/// One reqwest client under one pair of timeouts; `client` holds why it could not be built
/// (the TLS set-up failed), which every request then reports.
#[derive(Debug)]
struct Connector {
    client: Result<reqwest::Client, Arc<reqwest::Error>>,
    read_timeout: Option<Duration>,
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = match &self.client {
            Ok(client) => client.clone(),
            Err(e) => {
                let why = format!("the HTTP client could not be built: {e}");
                return HttpConnectorFuture::ready(Err(ConnectorError::other(why.into(), None)));
            }
        };
        let request = match to_reqwest(request) {
            Ok(request) => request,
            Err(e) => return HttpConnectorFuture::ready(Err(e)),
        };
        let read_timeout = self.read_timeout;
        HttpConnectorFuture::new(async move {
            let sent = client.execute(request);
            let response = match read_timeout {
                Some(limit) => match tokio::time::timeout(limit, sent).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        let why = format!("no response within the read timeout of {limit:?}");
                        return Err(ConnectorError::timeout(why.into()));
                    }
                },
                None => sent.await,
            };
            let response = response.map_err(connector_error)?;
            let response = http::Response::from(response).map(SdkBody::from_body_1_x);
            HttpResponse::try_from(response).map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}

/// The SDK's request as reqwest's. A body in memory (every DynamoDB, SQS and SSM call, and
/// S3 puts from bytes) is sent with its length; a streaming one is streamed.
fn to_reqwest(request: HttpRequest) -> Result<reqwest::Request, ConnectorError> {
    let request = request
        .try_into_http1x()
        .map_err(|e| ConnectorError::user(e.into()))?;
    let request = request.map(|body| match body.bytes() {
        Some(bytes) => reqwest::Body::from(bytes.to_vec()),
        None => reqwest::Body::wrap(body),
    });
    reqwest::Request::try_from(request).map_err(|e| ConnectorError::user(e.into()))
}

/// A reqwest failure in the terms the SDK's retry strategy reads.
fn connector_error(e: reqwest::Error) -> ConnectorError {
    if e.is_timeout() {
        ConnectorError::timeout(e.into())
    } else if e.is_builder() {
        ConnectorError::user(e.into())
    } else if e.is_connect() || has_io_source(&e) {
        ConnectorError::io(e.into())
    } else if e.is_request() || e.is_body() {
        // Sending or reading was cut off (the connection closed mid-message): worth a retry.
        ConnectorError::other(e.into(), Some(ErrorKind::TransientError))
    } else {
        ConnectorError::other(e.into(), None)
    }
}

fn has_io_source(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = e.source();
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    use aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn connector(settings: HttpConnectorSettings) -> SharedHttpConnector {
        let components = RuntimeComponentsBuilder::for_tests().build().unwrap();
        sdk_http_client().http_connector(&settings, &components)
    }

    fn request(uri: &str, body: SdkBody) -> HttpRequest {
        let mut request = HttpRequest::new(body);
        *request.uri_mut() = uri.try_into().unwrap();
        request.set_method("POST").unwrap();
        request
            .headers_mut()
            .insert("x-amz-target", "DynamoDB_20120810.GetItem");
        request
    }

    /// A one-shot server: reads one request (headers and a `Content-Length` body), answers
    /// `reply` after `delay`, and hands back what it read.
    async fn server(
        reply: &'static str,
        delay: Duration,
    ) -> (String, tokio::task::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut read = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = socket.read(&mut buf).await.unwrap();
                read.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&read).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .map_or(0, |n| n.trim().parse::<usize>().unwrap());
                    if body.len() >= length {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            tokio::time::sleep(delay).await;
            let _ = socket.write_all(reply.as_bytes()).await;
            let _ = socket.shutdown().await;
            String::from_utf8_lossy(&read).into_owned()
        });
        (url, task)
    }

    #[tokio::test]
    async fn a_request_goes_out_over_http_1_and_its_answer_comes_back() {
        let (url, seen) = server(
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 11\r\nx-amzn-requestid: r1\r\n\r\n{\"Item\":{}}",
            Duration::ZERO,
        )
        .await;
        let response = connector(HttpConnectorSettings::default())
            .call(request(&url, SdkBody::from("{\"TableName\":\"t\"}")))
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.headers().get("x-amzn-requestid"), Some("r1"));
        assert_eq!(response.body().bytes(), None, "the body streams");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"{\"Item\":{}}");
        let seen = seen.await.unwrap();
        assert!(seen.starts_with("POST / HTTP/1.1\r\n"), "{seen}");
        let lower = seen.to_ascii_lowercase();
        assert!(
            lower.contains("x-amz-target: dynamodb_20120810.getitem\r\n"),
            "{seen}"
        );
        assert!(lower.contains("content-length: 17\r\n"), "{seen}");
        assert!(seen.ends_with("{\"TableName\":\"t\"}"), "{seen}");
    }

    #[tokio::test]
    async fn an_answer_slower_than_the_read_timeout_is_a_timeout() {
        let (url, _seen) = server(
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            Duration::from_secs(5),
        )
        .await;
        let settings = HttpConnectorSettings::builder()
            .read_timeout(Duration::from_millis(100))
            .build();
        let e = connector(settings)
            .call(request(&url, SdkBody::empty()))
            .await
            .unwrap_err();
        assert!(e.is_timeout(), "{e:?}");
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_io_error_and_a_closed_one_is_retryable() {
        // Nothing listens on a port just released.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        drop(listener);
        let e = connector(HttpConnectorSettings::default())
            .call(request(&url, SdkBody::empty()))
            .await
            .unwrap_err();
        assert!(e.is_io(), "{e:?}");

        // A server that hangs up without answering.
        let (url, _seen) = server("", Duration::ZERO).await;
        let e = connector(HttpConnectorSettings::default())
            .call(request(&url, SdkBody::empty()))
            .await
            .unwrap_err();
        assert!(
            e.is_io() || e.as_other() == Some(ErrorKind::TransientError),
            "{e:?}"
        );
    }

    #[test]
    fn one_client_per_connect_timeout() {
        let sdk = ReqwestForSdk::default();
        sdk.client(None).unwrap();
        sdk.client(Some(Duration::from_secs(3))).unwrap();
        sdk.client(Some(Duration::from_secs(3))).unwrap();
        assert_eq!(sdk.clients.lock().unwrap().len(), 2);
    }
}
