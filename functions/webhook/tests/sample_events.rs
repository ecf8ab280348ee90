//! `events/webhook-whatsapp.json` and `events/webhook-telegram.json` through the webhook
//! function's router, as the Lambda runtime hands them over: each answers 200 and enqueues
//! exactly the message `events/agent-sqs-batch.json` carries for it.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use axum::body::to_bytes;
use axum::http::StatusCode;
use serde_json::Value;
use steward_edge::config::Settings;
use steward_edge::health;
use steward_testkit::queue::RecordingQueue;
use steward_testkit::samples::sample_event;
use steward_webhook as webhooks;
use tower::ServiceExt;

/// The test secrets the samples were made with (events/README.md).
const WHATSAPP_APP_SECRET: &str = "steward-sample-app-secret";
const TELEGRAM_WEBHOOK_SECRET: &str = "steward-sample-telegram-secret-0123456789";

/// The body `events/agent-sqs-batch.json` carries for `message_id`, parsed.
fn queued_body(message_id: &str) -> Value {
    let batch: Value = serde_json::from_str(&sample_event("agent-sqs-batch.json")).unwrap();
    let records = batch["Records"].as_array().unwrap();
    let record = records
        .iter()
        .find(|r| r["attributes"]["MessageDeduplicationId"] == message_id)
        .unwrap_or_else(|| panic!("no record for {message_id}"));
    serde_json::from_str(record["body"].as_str().unwrap()).unwrap()
}

/// The router `functions/webhook/src/main.rs` runs, with `app_secret` for WhatsApp.
fn app(app_secret: &str, queue: Arc<RecordingQueue>) -> axum::Router {
    let settings = Settings::from_pairs([
        ("WHATSAPP_APP_SECRET", app_secret),
        ("WHATSAPP_VERIFY_TOKEN", "steward-sample-verify-token"),
        ("TELEGRAM_WEBHOOK_SECRET", TELEGRAM_WEBHOOK_SECRET),
    ]);
    let state = webhooks::webhook_state(&settings, queue).unwrap();
    webhooks::routes(state).merge(health::routes())
}

async fn invoke(app: axum::Router, event: &str) -> (StatusCode, String) {
    let request = lambda_http::request::from_str(event).unwrap();
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn the_whatsapp_sample_is_signed_with_the_test_secret_and_enqueued() {
    let queue = Arc::new(RecordingQueue::default());
    let event = sample_event("webhook-whatsapp.json");
    let (status, body) = invoke(app(WHATSAPP_APP_SECRET, queue.clone()), &event).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let enqueued = queue.messages();
    assert_eq!(enqueued.len(), 1, "{enqueued:?}");
    let (group, dedupe, body) = &enqueued[0];
    assert_eq!(group, "wa:16505551234");
    assert_eq!(dedupe, "wamid.SAMPLE0000000000000000000001");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body, queued_body(dedupe));

    // The signature really is the test secret's: any other secret refuses, enqueuing nothing.
    let other = Arc::new(RecordingQueue::default());
    let (status, _) = invoke(app("another-secret", other.clone()), &event).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(other.messages().is_empty());
}

#[tokio::test]
async fn the_telegram_sample_carries_the_secret_token_and_is_enqueued() {
    let queue = Arc::new(RecordingQueue::default());
    let (status, body) = invoke(
        app(WHATSAPP_APP_SECRET, queue.clone()),
        &sample_event("webhook-telegram.json"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let enqueued = queue.messages();
    assert_eq!(enqueued.len(), 1, "{enqueued:?}");
    let (group, dedupe, body) = &enqueued[0];
    assert_eq!(group, "tg:111222333");
    assert_eq!(dedupe, "875310001");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body, queued_body(dedupe));
}

#[tokio::test]
async fn healthz_answers_through_the_webhook_function() {
    let event = sample_event("webhook-telegram.json")
        .replace("\"POST\"", "\"GET\"")
        .replace("/webhooks/telegram", "/healthz");
    let queue = Arc::new(RecordingQueue::default());
    let (status, body) = invoke(app(WHATSAPP_APP_SECRET, queue), &event).await;
    assert_eq!((status, body.trim()), (StatusCode::OK, "ok"));
}
