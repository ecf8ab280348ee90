//! `events/web-chat-message.json` through the web function's router, as the Lambda runtime
//! hands it over: a signed-in browser's chat message (session cookie + CSRF header) is
//! accepted with 202 and enqueued for the agent like any channel's message.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use axum::body::to_bytes;
use axum::http::StatusCode;
use serde_json::Value;
use steward_edge::client_address::ClientAddress;
use steward_edge::hosts::HostPattern;
use steward_events::EventsConfig;
use steward_harness::{UserId, accounts};
use steward_store::{ManualClock, SqliteTable, Table};
use steward_testkit::queue::RecordingQueue;
use steward_testkit::samples::sample_event;
use steward_webapp::{SignInMode, session};
use steward_webapp::{WebConfig, WebState, app};
use tower::ServiceExt;

/// The sample's fixed session cookie and CSRF token (events/README.md).
const SAMPLE_SESSION: &str = "steward-sample-session-0123456789abcdefghijklmnopqrstuv";
const SAMPLE_CSRF: &str = "steward-sample-csrf-0123456789abcdefghijklmnopqrstuvwx";

#[tokio::test]
async fn the_web_chat_sample_is_accepted_and_enqueued() {
    let clock = Arc::new(ManualClock::at_millis(1_780_304_400_000));
    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
    let queue = Arc::new(RecordingQueue::default());
    let config = WebConfig {
        sign_in: SignInMode::Development,
        secure_cookies: true,
        public_url: Some("https://steward.example.org".into()),
        whatsapp_number: None,
        telegram_bot: None,
        model_label: "scripted (sample)".into(),
        registrations_per_minute: 10,
        registrations_per_event_per_hour: 100,
        allowed_hosts: vec![HostPattern::parse("*.execute-api.eu-west-1.amazonaws.com").unwrap()],
        trusted_proxy: None,
        budget: steward_harness::budget::Budget::NONE,
        events: EventsConfig::with_public_base_url("https://steward.example.org"),
    };
    let state = WebState::new(table.clone(), clock.clone(), queue.clone(), config);
    let app = app::routes(state);

    let user = UserId::parse("dana").unwrap();
    accounts::create_account_with_id(table.as_ref(), clock.as_ref(), user.clone(), "Dana", None)
        .await
        .unwrap();
    session::start_with_id(
        table.as_ref(),
        clock.as_ref(),
        user,
        SAMPLE_SESSION,
        SAMPLE_CSRF,
    )
    .await
    .unwrap();

    let request = lambda_http::request::from_str(&sample_event("web-chat-message.json")).unwrap();
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    assert_eq!(
        status,
        StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let enqueued = queue.messages();
    assert_eq!(enqueued.len(), 1, "{enqueued:?}");
    let (group, dedupe, body) = &enqueued[0];
    assert_eq!(group, "web:dana");
    assert!(dedupe.contains("sample-web-message-0001"), "{dedupe}");
    let message: Value = serde_json::from_str(body).unwrap();
    assert_eq!(message["channel"], "web");
    assert_eq!(message["text"], "What is on this Saturday?");
}

/// On Lambda the client address is API Gateway's source address from the request context,
/// not a header the client could write.
#[test]
fn the_client_address_comes_from_the_request_context() {
    let event = sample_event("web-chat-message.json")
        .replace(
            "\"sourceIp\": \"203.0.113.7\"",
            "\"sourceIp\": \"198.51.100.9\"",
        )
        .replace(
            "\"x-forwarded-for\": \"203.0.113.7\"",
            "\"x-forwarded-for\": \"6.6.6.6\"",
        );
    let request = lambda_http::request::from_str(&event).unwrap();
    let (parts, _) = request.into_parts();
    assert_eq!(ClientAddress::of(&parts, None).limit_key(), "198.51.100.9");
}

/// The HTTP functions read the HTTP API's payload 2.0 only (the template's routes); a REST API's
/// event, which `lambda_http` would otherwise read with its default features, is refused
/// rather than routed as a request it half understood.
#[test]
fn a_rest_api_event_is_refused() {
    let rest = serde_json::json!({
        "resource": "/chat/messages",
        "path": "/chat/messages",
        "httpMethod": "POST",
        "headers": {"host": "abc.execute-api.eu-west-1.amazonaws.com"},
        "multiValueHeaders": {},
        "queryStringParameters": null,
        "requestContext": {
            "resourcePath": "/chat/messages",
            "httpMethod": "POST",
            "stage": "prod",
            "identity": {"sourceIp": "198.51.100.9"}
        },
        "body": "{}",
        "isBase64Encoded": false
    });
    assert!(lambda_http::request::from_str(&rest.to_string()).is_err());
    // The sample itself, the shape the routes deliver, still reads.
    assert!(lambda_http::request::from_str(&sample_event("web-chat-message.json")).is_ok());
}
