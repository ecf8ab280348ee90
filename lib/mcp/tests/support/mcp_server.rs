//! A real MCP server for the tests: the `/mcp` router with the notes domain on a fresh table,
//! served by `axum::serve` on 127.0.0.1:0, and a reqwest client that speaks JSON-RPC to it.
#![allow(clippy::unwrap_used, missing_docs, dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use steward_harness::{UserId, accounts, tokens};
use steward_mcp::{self as mcp, McpConfig};
use steward_store::testing::{Backend, TEST_START_MILLIS, fresh_table};
use steward_store::{ManualClock, Table};

use super::notes;

/// The MCP revision that starts with `initialize`.
pub const V_INIT: &str = "2025-11-25";
/// The stateless MCP revision (no `initialize`; `_meta` on every request).
pub const V_STATELESS: &str = "2026-07-28";

pub struct TestServer {
    pub addr: SocketAddr,
    pub url: String,
    pub table: Arc<dyn Table>,
    pub clock: ManualClock,
    pub http: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// A server on `backend` (None when that backend is not available) whose MCP config is
    /// `configure(bound address)`.
    pub async fn start(
        backend: Backend,
        configure: impl FnOnce(SocketAddr) -> McpConfig,
    ) -> Option<Self> {
        Self::start_with(
            backend,
            Arc::new(notes::registry(Arc::default())),
            configure,
        )
        .await
    }

    /// A server on `backend` serving `registry`, configured by `configure(bound address)`.
    pub async fn start_with(
        backend: Backend,
        registry: Arc<steward_harness::Registry>,
        configure: impl FnOnce(SocketAddr) -> McpConfig,
    ) -> Option<Self> {
        let clock = ManualClock::at_millis(TEST_START_MILLIS);
        let table = fresh_table(backend, Arc::new(clock.clone())).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app: axum::Router = mcp::routes(
            registry,
            Arc::clone(&table),
            Arc::new(clock.clone()),
            configure(addr),
        );
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Some(Self {
            addr,
            url: format!("http://{addr}/mcp"),
            table,
            clock,
            http: steward_net::client_builder().build().unwrap(),
            task,
        })
    }

    /// A server with the loopback configuration.
    pub async fn loopback(backend: Backend) -> Option<Self> {
        Self::start(backend, |_| McpConfig::loopback()).await
    }

    /// Creates an active account `id`.
    pub async fn account(&self, id: &str) -> UserId {
        let user = UserId::parse(id).unwrap();
        accounts::create_account_with_id(
            self.table.as_ref(),
            &self.clock,
            user.clone(),
            &format!("Owner {id}"),
            Some("Europe/Berlin"),
        )
        .await
        .unwrap();
        user
    }

    /// A fresh token for `user`.
    pub async fn token(&self, user: &UserId) -> String {
        tokens::create_token(self.table.as_ref(), &self.clock, user, Some("tests"))
            .await
            .unwrap()
            .token
            .expose()
            .to_owned()
    }

    /// An account with a token.
    pub async fn caller(&self, id: &str) -> (UserId, String) {
        let user = self.account(id).await;
        let token = self.token(&user).await;
        (user, token)
    }

    /// POSTs `body` with the Streamable HTTP headers, `token` as bearer, plus `extra` headers.
    pub async fn post(
        &self,
        token: Option<&str>,
        extra: &[(&str, &str)],
        body: &Value,
    ) -> reqwest::Response {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        for (name, value) in extra {
            req = req.header(*name, *value);
        }
        req.send().await.unwrap()
    }

    /// A 2025-11-25 request (after or without `initialize`): 200 and the JSON-RPC reply.
    pub async fn rpc(&self, token: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let res = self
            .post(Some(token), &[("mcp-protocol-version", V_INIT)], &body)
            .await;
        assert_eq!(res.status(), 200, "{method}");
        res.json().await.unwrap()
    }

    /// `tools/call` of `name` with `arguments` (2025-11-25): the result object.
    pub async fn call(&self, token: &str, name: &str, arguments: Value) -> Value {
        let reply = self
            .rpc(
                token,
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            )
            .await;
        assert!(reply.get("error").is_none(), "{reply}");
        reply["result"].clone()
    }

    /// A 2026-07-28 request: `_meta` in the params, the standard headers; status and reply.
    pub async fn stateless(&self, token: &str, method: &str, params: Value) -> (u16, Value) {
        self.stateless_as(token, method, params, json!({})).await
    }

    /// A 2026-07-28 request from a client declaring `capabilities`.
    pub async fn stateless_as(
        &self,
        token: &str,
        method: &str,
        mut params: Value,
        capabilities: Value,
    ) -> (u16, Value) {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": V_STATELESS,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "steward-tests", "version": "1"},
        });
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut headers = vec![
            ("mcp-protocol-version", V_STATELESS),
            ("mcp-method", method),
        ];
        if !name.is_empty() {
            headers.push(("mcp-name", &name));
        }
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
        let res = self.post(Some(token), &headers, &body).await;
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }
}

/// The JSON a tool result's text item holds.
pub fn outcome(result: &Value) -> Value {
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}
