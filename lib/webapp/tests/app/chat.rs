//! The web chat API and page: sending (enqueued as the signed-in user's web message), input
//! checks, CSRF and session refusals, reading the visible transcript after a position, and
//! the "working" signal.

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use steward_channels::{Channel, InboundMessage};
use steward_harness::transcript::{
    self, SEEN_APOLOGY, SEEN_REACTION, SEEN_REPLY, SEEN_USER, SeenRow,
};
use steward_harness::{ChannelName, ConversationKey, conversation};
use steward_llm::Role;
use steward_store::{Clock as _, QueueError, TurnQueue};
use steward_webapp::WebState;

use crate::support::{Browser, TestApp, test_config};

const API: &str = "/api/chat/messages";

/// When the rows these tests write were shown: the test app's clock (`support.rs`). Visible
/// rows expire `RETENTION_DAYS` after it, so a row dated 1970 would read as long gone.
const SHOWN_AT_MS: i64 = 1_780_304_400_000;

fn seen(role: Role, text: &str, buttons: &[&str]) -> SeenRow {
    SeenRow {
        role,
        text: Some(text.to_owned()),
        buttons: buttons.iter().map(|b| (*b).to_owned()).collect(),
        reaction: None,
        at_ms: SHOWN_AT_MS,
    }
}

async fn claim(app: &TestApp, key: &ConversationKey, message_id: &str) -> u64 {
    let channel = ChannelName::parse("web").unwrap();
    match conversation::claim(
        app.table.as_ref(),
        key,
        &channel,
        None,
        message_id,
        app.clock.now_millis(),
        60,
        None,
        None,
    )
    .await
    .unwrap()
    {
        conversation::Claim::Turn { turn, .. } => turn,
        other => panic!("expected a turn, got {other:?}"),
    }
}

async fn post_raw(browser: &mut Browser, body: &str) -> crate::support::Page {
    let cookies = browser
        .cookies
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ");
    let req = Request::post(API)
        .header(header::COOKIE, cookies)
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-csrf-token", browser.csrf.clone().unwrap_or_default())
        .body(Body::from(body.to_owned()))
        .unwrap();
    browser.send(req).await
}

#[tokio::test]
async fn a_message_is_enqueued_as_the_signed_in_users_web_message() {
    let app = TestApp::new().await;
    let mut ana = app.signed_in("Ana").await;
    let res = ana
        .post_json(API, &json!({"id": "m-1", "text": "  create an event  "}))
        .await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{}", res.body);
    assert_eq!(res.json(), json!({"id": "m-1"}));

    let queued = app.queue.0.lock().unwrap().clone();
    assert_eq!(queued.len(), 1);
    let (group, dedupe, body) = &queued[0];
    assert_eq!(group, "web:ana");
    assert_eq!(dedupe, "m-1");
    let message: InboundMessage = serde_json::from_str(body).unwrap();
    assert_eq!(message.channel, Channel::Web);
    assert_eq!(message.external_user_id, "ana");
    assert_eq!(message.conversation_id, "ana");
    assert_eq!(message.provider_message_id, "m-1");
    assert_eq!(message.text.as_deref(), Some("create an event"));
    assert_eq!(message.timestamp, app.clock.now_millis() / 1000);

    // A button click.
    let res = ana
        .post_json(
            API,
            &json!({"id": "m-2", "button": {"id": "b1", "title": "Later"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{}", res.body);
    let queued = app.queue.0.lock().unwrap().clone();
    let message: InboundMessage = serde_json::from_str(&queued[1].2).unwrap();
    assert_eq!(message.button_id.as_deref(), Some("b1"));
    assert_eq!(message.text.as_deref(), Some("Later"));

    // A resend of the same id is accepted again, with the same dedupe id (the queue and the
    // conversation's claim drop the repeat).
    let res = ana
        .post_json(API, &json!({"id": "m-1", "text": "create an event"}))
        .await;
    assert_eq!(res.status, StatusCode::ACCEPTED);
    let queued = app.queue.0.lock().unwrap().clone();
    assert_eq!(queued.len(), 3);
    assert_eq!(queued[2].1, "m-1");
}

#[tokio::test]
async fn bad_input_is_refused_with_a_specific_message() {
    let app = TestApp::new().await;
    let mut ana = app.signed_in("Ana").await;
    let long = "x".repeat(4097);
    let cases: Vec<(String, &str)> = vec![
        (
            json!({"id": "m", "text": "   "}).to_string(),
            "the message is empty",
        ),
        (
            json!({"id": "m", "text": long}).to_string(),
            "the message is 4097 characters long; the limit is 4096",
        ),
        (
            json!({"id": "has space", "text": "hi"}).to_string(),
            "the client message id must be",
        ),
        (
            json!({"id": "", "text": "hi"}).to_string(),
            "the client message id must be",
        ),
        (
            json!({"id": "m", "text": "hi", "button": {"id": "b0"}}).to_string(),
            "send either \"text\" or \"button\"",
        ),
        (
            json!({"id": "m"}).to_string(),
            "send either \"text\" or \"button\"",
        ),
        (
            json!({"id": "m", "text": "hi", "user": "bob"}).to_string(),
            "unknown field `user`",
        ),
        (json!({"text": "hi"}).to_string(), "missing field `id`"),
        (json!({"id": 5, "text": "hi"}).to_string(), "invalid type"),
        (
            json!({"id": "m", "button": {"id": "no spaces allowed"}}).to_string(),
            "the button id is not valid",
        ),
        ("not json".to_owned(), "the body is not a chat message"),
    ];
    for (body, expected) in cases {
        let res = post_raw(&mut ana, &body).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{body}: {}", res.body);
        let error = res.json()["error"].as_str().unwrap().to_owned();
        assert!(error.contains(expected), "{body}: {error}");
    }
    assert!(
        app.queue.0.lock().unwrap().is_empty(),
        "nothing bad was enqueued"
    );
}

#[tokio::test]
async fn no_csrf_header_is_403_and_no_session_is_401() {
    let app = TestApp::new().await;
    let mut ana = app.signed_in("Ana").await;
    ana.csrf = Some("wrong-token".into());
    let res = ana.post_json(API, &json!({"id": "m", "text": "hi"})).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    ana.csrf = None;
    let res = ana.post_json(API, &json!({"id": "m", "text": "hi"})).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);

    let mut stranger = app.anonymous();
    let res = stranger
        .post_json(API, &json!({"id": "m", "text": "hi"}))
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert!(res.json()["error"].is_string());
    let res = stranger.get(API).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert!(res.json()["error"].is_string());
    assert!(app.queue.0.lock().unwrap().is_empty());
}

#[derive(Debug)]
struct BrokenQueue;

#[async_trait]
impl TurnQueue for BrokenQueue {
    async fn enqueue(&self, _: &str, _: &str, _: &str) -> Result<(), QueueError> {
        Err(QueueError::Closed)
    }
}

#[tokio::test]
async fn a_queue_failure_is_503() {
    let app = TestApp::new().await;
    let ana = app.signed_in("Ana").await;
    let state = WebState::new(
        app.table.clone(),
        app.clock.clone(),
        Arc::new(BrokenQueue),
        test_config(),
    );
    let mut ana = Browser {
        router: steward_webapp::routes(state),
        ..ana
    };
    let res = ana.post_json(API, &json!({"id": "m", "text": "hi"})).await;
    assert_eq!(res.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        res.json()["error"]
            .as_str()
            .unwrap()
            .contains("send it again")
    );
}

fn ns(messages: &Value) -> Vec<u64> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["n"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn reading_after_a_position_returns_only_later_messages() {
    let app = TestApp::new().await;
    let mut ana = app.signed_in("Ana").await;
    let key = ConversationKey::web(ana.user());
    let table = app.table.as_ref();
    transcript::put_seen(table, &key, 1, SEEN_USER, seen(Role::User, "hello", &[]))
        .await
        .unwrap();
    transcript::put_seen(
        table,
        &key,
        1,
        SEEN_REPLY,
        seen(
            Role::Assistant,
            "Hi! What now?",
            &["Create an event", "Later"],
        ),
    )
    .await
    .unwrap();
    transcript::put_seen(table, &key, 2, SEEN_USER, seen(Role::User, "Later", &[]))
        .await
        .unwrap();
    transcript::put_seen(
        table,
        &key,
        2,
        SEEN_REACTION,
        SeenRow {
            role: Role::Assistant,
            text: None,
            buttons: Vec::new(),
            reaction: Some("👍".into()),
            at_ms: SHOWN_AT_MS,
        },
    )
    .await
    .unwrap();
    // A silent reply shows nothing.
    transcript::put_seen(
        table,
        &key,
        2,
        SEEN_REPLY,
        SeenRow {
            role: Role::Assistant,
            text: None,
            buttons: Vec::new(),
            reaction: None,
            at_ms: SHOWN_AT_MS,
        },
    )
    .await
    .unwrap();
    // Another user's conversation is not visible.
    let other = ConversationKey::web(&steward_harness::UserId::parse("bob").unwrap());
    transcript::put_seen(table, &other, 1, SEEN_USER, seen(Role::User, "secret", &[]))
        .await
        .unwrap();

    let all = ana.get(API).await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.body);
    let all = all.json();
    assert_eq!(ns(&all["messages"]), vec![100, 102, 200, 201]);
    assert_eq!(
        all["messages"][0],
        json!({"n": 100, "role": "user", "text": "hello", "buttons": []})
    );
    assert_eq!(
        all["messages"][1],
        json!({"n": 102, "role": "assistant", "text": "Hi! What now?",
        // The reply markup, parsed for the page to build DOM nodes from.
        "doc": {"lines": [{"marker": {"kind": "none"}, "spans": [{"text": "Hi! What now?"}]}]},
        "buttons": [
            {"id": "b0", "title": "Create an event"},
            {"id": "b1", "title": "Later"}
        ]})
    );
    assert_eq!(all["messages"][3]["reaction"], "👍");
    assert_eq!(all["working"], false);
    assert_eq!(all["more"], false);
    assert_eq!(
        ns(&ana.get(&format!("{API}?after=0")).await.json()["messages"]).len(),
        4
    );

    let later = ana.get(&format!("{API}?after=102")).await.json();
    assert_eq!(ns(&later["messages"]), vec![200, 201]);
    let none = ana.get(&format!("{API}?after=201")).await.json();
    assert_eq!(ns(&none["messages"]), Vec::<u64>::new());

    for bad in ["abc", "-1", "1.5", "99999999999999999999"] {
        let res = ana.get(&format!("{API}?after={bad}")).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "after={bad}");
        assert!(
            res.json()["error"].as_str().unwrap().contains("after"),
            "{}",
            res.body
        );
    }
}

/// Opening a long conversation reads its newest page only; older pages come on request.
#[tokio::test]
async fn a_conversation_of_500_messages_opens_on_its_newest_page() {
    use steward_webapp::chat_api::CHAT_PAGE_MESSAGES;
    let app = TestApp::new().await;
    let mut ana = app.signed_in("Ana").await;
    let key = ConversationKey::web(ana.user());
    let table = app.table.as_ref();
    for turn in 1..=250u64 {
        transcript::put_seen(
            table,
            &key,
            turn,
            SEEN_USER,
            seen(Role::User, &format!("q{turn}"), &[]),
        )
        .await
        .unwrap();
        transcript::put_seen(
            table,
            &key,
            turn,
            SEEN_REPLY,
            seen(Role::Assistant, &format!("a{turn}"), &[]),
        )
        .await
        .unwrap();
    }
    let newest = ana.get(API).await.json();
    let shown = ns(&newest["messages"]);
    assert_eq!(shown.len(), CHAT_PAGE_MESSAGES);
    assert_eq!(
        shown.first(),
        Some(&22_600),
        "turn 226's question starts the page"
    );
    assert_eq!(shown.last(), Some(&25_002), "the last reply ends it");
    assert_eq!(newest["earlier"], true);
    assert_eq!(newest["more"], false);

    let before = ana.get(&format!("{API}?before=22600")).await.json();
    let older = ns(&before["messages"]);
    assert_eq!(older.len(), CHAT_PAGE_MESSAGES);
    assert_eq!(older.first(), Some(&20_100));
    assert_eq!(older.last(), Some(&22_502), "right before the newest page");
    assert_eq!(before["earlier"], true);

    let oldest = ana.get(&format!("{API}?before=300")).await.json();
    assert_eq!(ns(&oldest["messages"]), vec![100, 102, 200, 202]);
    assert_eq!(oldest["earlier"], false);

    // Polling after the newest page still reads forwards, and nothing is new yet.
    let after = ana.get(&format!("{API}?after=25002")).await.json();
    assert_eq!(ns(&after["messages"]), Vec::<u64>::new());
    assert!(after.get("earlier").is_none());

    for bad in ["0", "x", "-5"] {
        let res = ana.get(&format!("{API}?before={bad}")).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "before={bad}");
    }
    let res = ana.get(&format!("{API}?after=1&before=2")).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);

    let page = ana.get("/app/chat").await;
    assert!(
        page.body.contains("id=\"chat-earlier\""),
        "the page has the button"
    );
}

#[tokio::test]
async fn working_is_true_from_the_claim_until_the_reply() {
    let app = TestApp::new().await;
    let mut ana = app.signed_in("Ana").await;
    let key = ConversationKey::web(ana.user());
    let working = |v: Value| v["working"].as_bool().unwrap();
    assert!(!working(ana.get(API).await.json()), "a new conversation");

    let turn = claim(&app, &key, "m-1").await;
    assert!(working(ana.get(API).await.json()), "claimed, no reply yet");
    transcript::put_seen(
        app.table.as_ref(),
        &key,
        turn,
        SEEN_USER,
        seen(Role::User, "hi", &[]),
    )
    .await
    .unwrap();
    assert!(working(ana.get(API).await.json()), "the user row alone");
    transcript::put_seen(
        app.table.as_ref(),
        &key,
        turn,
        SEEN_REPLY,
        seen(Role::Assistant, "Hello!", &[]),
    )
    .await
    .unwrap();
    assert!(!working(ana.get(API).await.json()), "answered");

    // A message that failed for good and got the dead-letter apology is not being worked on.
    let failed = claim(&app, &key, "m-3").await;
    assert!(working(ana.get(API).await.json()));
    transcript::put_seen(
        app.table.as_ref(),
        &key,
        failed,
        SEEN_APOLOGY,
        seen(Role::Assistant, steward_harness::dead_letter::APOLOGY, &[]),
    )
    .await
    .unwrap();
    assert!(!working(ana.get(API).await.json()), "apologised");

    // A message that never gets an answer (it failed for good) stops counting after a while.
    claim(&app, &key, "m-2").await;
    assert!(working(ana.get(API).await.json()));
    app.clock.advance_millis(31 * 60 * 1000);
    assert!(!working(ana.get(API).await.json()), "stale");
}

#[tokio::test]
async fn the_chat_page_has_the_log_the_form_the_token_and_the_model_label() {
    let app = TestApp::new().await;
    let mut ana = app.signed_in("Ana").await;
    let page = ana.get("/app/chat").await;
    assert_eq!(page.status, StatusCode::OK);
    let csrf = ana.csrf.clone().unwrap();
    assert!(
        page.body
            .contains(&format!("<meta name=\"csrf-token\" content=\"{csrf}\">"))
    );
    assert!(page.body.contains("Model: scripted (test)"));
    assert!(page.body.contains("id=\"chat-log\""));
    let at = page.body.find("id=\"chat-working\"").unwrap();
    let start = page.body[..at].rfind('<').unwrap();
    let tag = &page.body[start..at + page.body[at..].find('>').unwrap()];
    assert!(
        tag.contains("class=\"working\"") && tag.contains("aria-live=\"polite\""),
        "{tag}"
    );
    assert!(page.body.contains("id=\"chat-text\""));
    assert!(page.body.contains("data-api=\"/api/chat/messages\""));
    assert!(page.body.contains("aria-current=\"page\">Chat<"));
    assert!(!page.body.contains("<script>"), "no inline script");
    assert!(!page.body.contains("style="), "no inline style");

    let mut config = test_config();
    config.model_label = "none configured".into();
    let bare = TestApp::with_config(config).await;
    let mut ben = bare.signed_in("Ben").await;
    let page = ben.get("/app/chat").await;
    assert!(
        page.body.contains("No model is plugged in"),
        "{}",
        page.body
    );

    let mut stranger = app.anonymous();
    let page = stranger.get("/app/chat").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
}
