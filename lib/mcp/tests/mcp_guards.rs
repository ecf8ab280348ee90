//! What stands before the MCP handler, over real HTTP: bearer authentication (401 with
//! `WWW-Authenticate`), the insecure dev user (loopback only), the per-token rate limit (429
//! with `Retry-After`) and DNS-rebinding protection (403).
#![allow(clippy::unwrap_used, missing_docs)]

// The harness tests' "notes" domain, shared rather than copied.
#[path = "../../harness/tests/support/notes.rs"]
#[allow(clippy::unwrap_used, missing_docs, dead_code)]
mod notes;
#[path = "support/mcp_server.rs"]
mod server;

use std::net::SocketAddr;
use std::num::NonZeroU32;

use serde_json::{Value, json};
use steward_harness::{UserId, tokens};
use steward_mcp::{McpConfig, McpConfigError};
use steward_store::testing::Backend;

use server::{TestServer, V_INIT};

fn list_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
}

async fn assert_unauthorized(res: reqwest::Response, invalid_token: bool) {
    assert_eq!(res.status(), 401);
    let challenge = res.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert_eq!(
        challenge.contains("invalid_token"),
        invalid_token,
        "{challenge}"
    );
    let body: Value = res.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("token"),
        "{body}"
    );
    assert_eq!(body["id"], 1, "the request's id is echoed");
}

async fn world(backend: Backend) -> Option<TestServer> {
    TestServer::loopback(backend).await
}

async fn missing_wrong_and_revoked_tokens_are_401(s: TestServer) {
    let (user, token) = s.caller("u1").await;
    assert_unauthorized(s.post(None, &[], &list_request()).await, false).await;
    assert_unauthorized(
        s.post(Some("stw_not-a-real-token"), &[], &list_request())
            .await,
        true,
    )
    .await;
    assert_unauthorized(
        s.post(None, &[("authorization", "Basic dTpw")], &list_request())
            .await,
        true,
    )
    .await;
    // GET and DELETE (session calls) are refused before anything else, too.
    let res = s.http.get(&s.url).send().await.unwrap();
    assert_eq!(res.status(), 401);

    let ok = s
        .post(
            Some(&token),
            &[("mcp-protocol-version", V_INIT)],
            &list_request(),
        )
        .await;
    assert_eq!(ok.status(), 200);
    let record = tokens::list_tokens(s.table.as_ref(), &user)
        .await
        .unwrap()
        .remove(0);
    tokens::revoke_token(s.table.as_ref(), &s.clock, &record.id)
        .await
        .unwrap();
    assert_unauthorized(s.post(Some(&token), &[], &list_request()).await, true).await;
}

async fn disallowed_hosts_and_origins_are_403(s: TestServer) {
    let (_, token) = s.caller("u1").await;
    for headers in [
        vec![("host", "evil.example.com")],
        vec![
            ("host", "evil.example.com"),
            ("origin", "http://evil.example.com"),
        ],
        vec![("origin", "http://evil.example.com")],
        vec![("origin", "null")],
    ] {
        let res = s.post(Some(&token), &headers, &list_request()).await;
        assert_eq!(res.status(), 403, "{headers:?}");
        let body: Value = res.json().await.unwrap();
        assert!(body["error"]["message"].is_string());
    }
    // Refused before authentication: a rebound page learns nothing about tokens.
    let res = s
        .post(None, &[("host", "evil.example.com")], &list_request())
        .await;
    assert_eq!(res.status(), 403);
    // Loopback names with any port, and a loopback Origin, are fine.
    for headers in [
        vec![("host", "localhost:1234")],
        vec![("origin", "http://localhost:5173")],
    ] {
        let res = s.post(Some(&token), &headers, &list_request()).await;
        assert_eq!(res.status(), 200, "{headers:?}");
    }
}

async fn configured_hosts_are_served(backend: Backend) {
    let Some(s) = TestServer::start(backend, |_| {
        McpConfig::new(["mcp.example.org", "*.execute-api.eu-west-1.amazonaws.com"]).unwrap()
    })
    .await
    else {
        return;
    };
    let (_, token) = s.caller("u1").await;
    for (host, status) in [
        ("mcp.example.org", 200),
        ("abc123.execute-api.eu-west-1.amazonaws.com", 200),
        ("execute-api.eu-west-1.amazonaws.com", 403),
        // Not loopback-only: the production list replaces the loopback names.
        ("127.0.0.1", 403),
    ] {
        let res = s
            .post(
                Some(&token),
                &[("host", host), ("mcp-protocol-version", V_INIT)],
                &list_request(),
            )
            .await;
        assert_eq!(res.status(), status, "{host}");
    }
}

async fn rate_limit_is_429_with_retry_after(backend: Backend) {
    let Some(s) = TestServer::start(backend, |_| {
        McpConfig::loopback().with_calls_per_minute(NonZeroU32::new(3).unwrap())
    })
    .await
    else {
        return;
    };
    let (_, alice) = s.caller("alice").await;
    let (_, bob) = s.caller("bob").await;
    for _ in 0..3 {
        let res = s.post(Some(&alice), &[], &list_request()).await;
        assert_eq!(res.status(), 200);
    }
    let res = s.post(Some(&alice), &[], &list_request()).await;
    assert_eq!(res.status(), 429);
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&retry), "{retry}");
    let body: Value = res.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("3 calls a minute")
    );
    // Per token: another caller is unaffected.
    assert_eq!(s.post(Some(&bob), &[], &list_request()).await.status(), 200);
}

async fn dev_user_acts_for_token_less_loopback_requests(backend: Backend) {
    let Some(s) = TestServer::start(backend, |bound| {
        McpConfig::loopback()
            .with_insecure_dev_user(bound, UserId::parse("dev").unwrap())
            .unwrap()
    })
    .await
    else {
        return;
    };
    s.account("dev").await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "add_note", "arguments": {"title": "from the suite"}}});
    let res = s
        .post(None, &[("mcp-protocol-version", V_INIT)], &call)
        .await;
    assert_eq!(res.status(), 200);
    let reply: Value = res.json().await.unwrap();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    // A presented token is still checked.
    let res = s.post(Some("stw_wrong"), &[], &list_request()).await;
    assert_eq!(res.status(), 401);
}

async fn dev_user_needs_a_loopback_host(backend: Backend) {
    let Some(s) = TestServer::start(backend, |bound| {
        McpConfig::new(["127.0.0.1", "tunnel.example.net"])
            .unwrap()
            .with_insecure_dev_user(bound, UserId::parse("dev").unwrap())
            .unwrap()
    })
    .await
    else {
        return;
    };
    s.account("dev").await;
    let res = s
        .post(None, &[("host", "tunnel.example.net")], &list_request())
        .await;
    assert_eq!(
        res.status(),
        401,
        "a tunnel to the port does not get the dev user"
    );
    // Nor does a tunnel that keeps the loopback Host but adds its forwarding headers.
    let res = s
        .post(
            None,
            &[
                ("x-forwarded-for", "203.0.113.9"),
                ("cf-connecting-ip", "203.0.113.9"),
            ],
            &list_request(),
        )
        .await;
    assert_eq!(
        res.status(),
        401,
        "forwarded requests do not get the dev user"
    );
}

/// Finding 12 of the security review: an unauthenticated request is refused after reading at
/// most a small part of its body (the id is echoed only from a small body).
async fn refusals_read_only_a_small_body(s: TestServer) {
    let big = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {"padding": "x".repeat(512 * 1024)},
    });
    let res = s.post(None, &[], &big).await;
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert!(
        body.get("id").is_none(),
        "a large body is not parsed: {body}"
    );
    assert!(body["error"]["message"].as_str().unwrap().contains("token"));
}

#[test]
fn dev_user_constructor_refuses_non_loopback_addresses() {
    let user = UserId::parse("dev").unwrap();
    for bound in ["0.0.0.0:8080", "192.168.1.20:8080", "[::]:8080"] {
        let bound: SocketAddr = bound.parse().unwrap();
        let err = McpConfig::loopback()
            .with_insecure_dev_user(bound, user.clone())
            .unwrap_err();
        assert!(matches!(err, McpConfigError::NotLoopback { .. }), "{bound}");
        assert!(
            err.to_string().contains("STEWARD_MCP_INSECURE_DEV_USER"),
            "{err}"
        );
        assert!(
            McpConfig::loopback()
                .with_conformance_fixtures(bound)
                .is_err()
        );
    }
    for bound in ["127.0.0.1:8080", "[::1]:8080"] {
        let bound: SocketAddr = bound.parse().unwrap();
        assert!(
            McpConfig::loopback()
                .with_insecure_dev_user(bound, user.clone())
                .is_ok()
        );
    }
}

async fn fixtures_only_when_asked(backend: Backend) {
    let Some(s) = TestServer::start(backend, |bound| {
        McpConfig::loopback()
            .with_conformance_fixtures(bound)
            .unwrap()
    })
    .await
    else {
        return;
    };
    let (_, token) = s.caller("u1").await;
    let list = s.rpc(&token, "tools/list", json!({})).await;
    let names: Vec<String> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names[0], "add_note", "the registry's tools come first");
    assert!(names.iter().any(|n| n == "test_simple_text"));
    let result = s.call(&token, "test_error_handling", json!({})).await;
    assert_eq!(result["isError"], true);
}

steward_store::backend_tests!(setup = world;
    missing_wrong_and_revoked_tokens_are_401,
    refusals_read_only_a_small_body,
    disallowed_hosts_and_origins_are_403,
);

/// Tests that build their own server: SQLite only (the guards do not touch the store's kind).
mod own_server {
    use super::*;

    #[tokio::test]
    async fn configured_hosts() {
        configured_hosts_are_served(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn rate_limit() {
        rate_limit_is_429_with_retry_after(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn dev_user() {
        dev_user_acts_for_token_less_loopback_requests(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn dev_user_host() {
        dev_user_needs_a_loopback_host(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn fixtures() {
        fixtures_only_when_asked(Backend::Sqlite).await;
    }
}
