//! `events/mcp-tools-list.json` through the MCP function's router, as the Lambda runtime hands
//! it over: with the sample's placeholder token the answer is 401; with a real token it is the
//! tool list.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use axum::body::to_bytes;
use axum::http::{HeaderValue, StatusCode, header};
use serde_json::Value;
use steward_events::EventsConfig;
use steward_harness::{UserId, accounts, tokens};
use steward_mcp::{self as mcp, McpConfig};
use steward_store::{ManualClock, SqliteTable, Table};
use steward_testkit::samples::sample_event;
use tower::ServiceExt;

#[tokio::test]
async fn the_tools_list_sample_needs_a_token_and_lists_the_tools_with_one() {
    let clock = Arc::new(ManualClock::at_millis(1_780_304_400_000));
    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
    // As the template sets it: the API's execute-api host names.
    let config = McpConfig::from_lookup(|name| {
        (name == "STEWARD_MCP_ALLOWED_HOSTS")
            .then(|| "*.execute-api.eu-west-1.amazonaws.com".to_owned())
    })
    .unwrap();
    let registry = Arc::new(steward_events::registry(
        &EventsConfig::with_public_base_url("https://steward.example.org"),
    ));
    let app: axum::Router = mcp::routes(registry, table.clone(), clock.clone(), config);
    let event = sample_event("mcp-tools-list.json");

    // As shipped: the placeholder token is refused.
    let request = lambda_http::request::from_str(&event).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    // With a real token (what `steward token create` prints): the tool list.
    let user = UserId::parse("dana").unwrap();
    accounts::create_account_with_id(table.as_ref(), clock.as_ref(), user.clone(), "Dana", None)
        .await
        .unwrap();
    let token = tokens::create_token(table.as_ref(), clock.as_ref(), &user, Some("sample"))
        .await
        .unwrap();
    let mut request = lambda_http::request::from_str(&event).unwrap();
    request.headers_mut().insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {}", token.token.expose())).unwrap(),
    );
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 22).await.unwrap();
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(answer["id"], 1, "{answer}");
    let tools: Vec<&str> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for expected in ["list_events", "undo_last_action"] {
        assert!(
            tools.contains(&expected),
            "{expected} missing from {tools:?}"
        );
    }
}
