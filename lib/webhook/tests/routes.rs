//! The webhook routes alone, over a recording queue: what is enqueued (and what is not), and
//! the status codes providers see.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use steward_channels::{InboundMessage, Secret, WEBHOOK_BODY_BYTES_MAX, telegram, whatsapp};
use steward_store::TurnQueue;
use steward_webhook::{self as webhooks, WebhookState, WhatsappSecrets};
use tower::ServiceExt;

use steward_testkit::queue::RecordingQueue;
use steward_testkit::webhooks::{APP_SECRET, TG_SECRET, VERIFY_TOKEN, tg_text, wa_text};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../channels/tests/fixtures");

fn app(queue: Arc<RecordingQueue>) -> Router {
    webhooks::routes(WebhookState {
        queue,
        whatsapp: Some(WhatsappSecrets {
            app_secret: Secret::new(APP_SECRET),
            verify_token: Secret::new(VERIFY_TOKEN),
        }),
        telegram: Some(Secret::new(TG_SECRET)),
    })
}

async fn call(app: Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn wa_post(body: Vec<u8>, signature: Option<String>) -> Request<Body> {
    let mut r = Request::post("/webhooks/whatsapp").header("content-type", "application/json");
    if let Some(sig) = signature {
        r = r.header(whatsapp::SIGNATURE_HEADER, sig);
    }
    r.body(Body::from(body)).unwrap()
}

fn signed(body: Vec<u8>) -> Request<Body> {
    let sig = whatsapp::sign(&body, APP_SECRET.as_bytes());
    wa_post(body, Some(sig))
}

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{path}")).unwrap()
}

#[tokio::test]
async fn the_handshake_echoes_the_challenge_only_for_the_right_token() {
    let q = Arc::new(RecordingQueue::default());
    let get = |token: &str| {
        Request::get(format!(
            "/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token={token}&hub.challenge=1158201444"
        ))
        .body(Body::empty())
        .unwrap()
    };
    assert_eq!(
        call(app(q.clone()), get(VERIFY_TOKEN)).await,
        (StatusCode::OK, "1158201444".to_owned())
    );
    assert_eq!(
        call(app(q.clone()), get("wrong")).await.0,
        StatusCode::FORBIDDEN
    );
    let no_params = Request::get("/webhooks/whatsapp")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(app(q), no_params).await.0, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_signed_message_is_enqueued_by_conversation_with_the_provider_id() {
    let q = Arc::new(RecordingQueue::default());
    let (status, _) = call(
        app(q.clone()),
        signed(wa_text("16505551234", "wamid.A", "hi")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let enqueued = q.enqueued.lock().unwrap().clone();
    assert_eq!(enqueued.len(), 1);
    let (group, dedupe, body) = &enqueued[0];
    assert_eq!(
        (group.as_str(), dedupe.as_str()),
        ("wa:16505551234", "wamid.A")
    );
    let message: InboundMessage = serde_json::from_str(body).unwrap();
    assert_eq!(message.text.as_deref(), Some("hi"));
}

#[tokio::test]
async fn several_messages_in_one_post_are_each_enqueued_in_order() {
    let q = Arc::new(RecordingQueue::default());
    let (status, _) = call(app(q.clone()), signed(fixture("whatsapp/several.json"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        q.groups_and_ids(),
        [
            ("wa:16505551234".to_owned(), "wamid.AAA1".to_owned()),
            ("wa:447700900123".to_owned(), "wamid.AAA2".to_owned()),
            ("wa:16505551234".to_owned(), "wamid.AAA4".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_bad_or_missing_signature_is_401_and_nothing_is_enqueued() {
    let q = Arc::new(RecordingQueue::default());
    let body = wa_text("16505551234", "wamid.A", "hi");
    let forged = whatsapp::sign(&body, b"not-the-secret");
    assert_eq!(
        call(app(q.clone()), wa_post(body.clone(), Some(forged)))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(app(q.clone()), wa_post(body.clone(), None)).await.0,
        StatusCode::UNAUTHORIZED
    );
    // Signed, then altered in transit.
    let sig = whatsapp::sign(&body, APP_SECRET.as_bytes());
    let mut altered = body;
    altered.push(b' ');
    assert_eq!(
        call(app(q.clone()), wa_post(altered, Some(sig))).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert!(q.groups_and_ids().is_empty());
}

#[tokio::test]
async fn an_oversized_body_is_413_and_nothing_is_enqueued() {
    let q = Arc::new(RecordingQueue::default());
    let big = vec![b' '; WEBHOOK_BODY_BYTES_MAX + 1];
    let (status, _) = call(app(q.clone()), signed(big.clone())).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let tg = Request::post("/webhooks/telegram")
        .header(telegram::SECRET_HEADER, TG_SECRET)
        .body(Body::from(big))
        .unwrap();
    assert_eq!(
        call(app(q.clone()), tg).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    assert!(q.groups_and_ids().is_empty());
}

#[tokio::test]
async fn malformed_json_with_a_valid_signature_is_200_and_nothing_is_enqueued() {
    let q = Arc::new(RecordingQueue::default());
    for body in [
        &b"{not json"[..],
        b"",
        b"[1,2,3]",
        br#"{"object":"whatsapp_business_account","entry":7}"#,
    ] {
        let (status, _) = call(app(q.clone()), signed(body.to_vec())).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(body));
    }
    assert!(q.groups_and_ids().is_empty());
}

#[tokio::test]
async fn statuses_reactions_and_unsupported_types_are_200_and_dropped() {
    let q = Arc::new(RecordingQueue::default());
    for f in [
        "whatsapp/status.json",
        "whatsapp/reaction.json",
        "whatsapp/unsupported.json",
    ] {
        assert_eq!(
            call(app(q.clone()), signed(fixture(f))).await.0,
            StatusCode::OK,
            "{f}"
        );
    }
    assert!(q.groups_and_ids().is_empty());
}

#[tokio::test]
async fn an_enqueue_failure_is_500_so_the_provider_retries() {
    let q = Arc::new(RecordingQueue::failing());
    let (status, _) = call(
        app(q.clone()),
        signed(wa_text("16505551234", "wamid.A", "hi")),
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    let tg = Request::post("/webhooks/telegram")
        .header(telegram::SECRET_HEADER, TG_SECRET)
        .body(Body::from(tg_text(1, 42, "hi")))
        .unwrap();
    assert_eq!(call(app(q), tg).await.0, StatusCode::INTERNAL_SERVER_ERROR);
}

#[tokio::test]
async fn telegram_needs_the_secret_token_and_enqueues_updates() {
    let q = Arc::new(RecordingQueue::default());
    let post = |secret: Option<&str>, body: Vec<u8>| {
        let mut r = Request::post("/webhooks/telegram");
        if let Some(s) = secret {
            r = r.header(telegram::SECRET_HEADER, s);
        }
        r.body(Body::from(body)).unwrap()
    };
    let body = tg_text(875_310_001, 111_222_333, "hi");
    assert_eq!(
        call(app(q.clone()), post(Some("wrong"), body.clone()))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(app(q.clone()), post(None, body.clone())).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert!(q.groups_and_ids().is_empty());
    assert_eq!(
        call(app(q.clone()), post(Some(TG_SECRET), body)).await.0,
        StatusCode::OK
    );
    // A callback query, an unknown update kind and broken JSON: 200 each.
    for b in [
        fixture("telegram/callback_query.json"),
        fixture("telegram/unknown_update.json"),
        b"{".to_vec(),
    ] {
        assert_eq!(
            call(app(q.clone()), post(Some(TG_SECRET), b)).await.0,
            StatusCode::OK
        );
    }
    assert_eq!(
        q.groups_and_ids(),
        [
            ("tg:111222333".to_owned(), "875310001".to_owned()),
            ("tg:111222333".to_owned(), "875310002".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_channel_without_secrets_is_not_served() {
    let q: Arc<dyn TurnQueue> = Arc::new(RecordingQueue::default());
    let bare = webhooks::routes(WebhookState {
        queue: q,
        whatsapp: None,
        telegram: None,
    });
    let (status, body) = call(bare.clone(), signed(wa_text("1", "w", "hi"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("WhatsApp is not configured"));
    let tg = Request::post("/webhooks/telegram")
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(call(bare, tg).await.0, StatusCode::NOT_FOUND);
}

/// Security review finding 10: a source that keeps presenting wrong Telegram secrets gets 429
/// with `Retry-After` (before any check) for the rest of the minute; other sources, Telegram
/// among them, are not affected.
#[tokio::test]
async fn repeated_bad_telegram_secrets_are_throttled_per_source() {
    let q = Arc::new(RecordingQueue::default());
    let router = app(q.clone());
    let post = |secret: &str, from: &str| {
        Request::post("/webhooks/telegram")
            .header(telegram::SECRET_HEADER, secret)
            .extension(axum::extract::ConnectInfo(
                format!("{from}:443")
                    .parse::<std::net::SocketAddr>()
                    .unwrap(),
            ))
            .body(Body::from(tg_text(875_310_001, 111_222_333, "hi")))
            .unwrap()
    };
    let limit = webhooks::bad_secrets::BAD_SECRETS_PER_MINUTE;
    for _ in 0..limit {
        let (status, _) = call(router.clone(), post("guess", "203.0.113.9")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let response = router
        .clone()
        .oneshot(post(TG_SECRET, "203.0.113.9"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(
        q.groups_and_ids().is_empty(),
        "nothing from a throttled source"
    );
    // Telegram, elsewhere, goes on as before.
    let (status, _) = call(router, post(TG_SECRET, "149.154.167.200")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(q.groups_and_ids().len(), 1);
}
