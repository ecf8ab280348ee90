//! The turn inspector pages: the signed-in person's own conversation, its turns and one turn
//! with its model and tool calls; someone else's conversation is the UI's 404; untrusted text
//! is escaped; the chat and Activity link to it.

use axum::http::StatusCode;
use serde_json::json;
use steward_events::events::{self, NewEvent};
use steward_events::text::EventName;
use steward_events::when::EventDates;
use steward_harness::ids::{EffectKey, ToolUseId};
use steward_harness::transcript::{
    self, CallNote, ModelRow, RowSource, SeenRow, StepNote, ToolNote, ToolState,
};
use steward_harness::{Actor, ChannelName, ConversationKey, Ctx, UserId, conversation};
use steward_llm::{ContentBlock, Message, Role, Usage};
use steward_store::Clock;

use crate::support::TestApp;

fn row(
    message: Message,
    source: RowSource,
    stop: Option<&str>,
    note: Option<StepNote>,
) -> ModelRow {
    ModelRow {
        message: message.into(),
        source,
        stop_reason: stop.map(str::to_owned),
        note,
    }
}

fn call_note(input: u64, output: u64, read: u64, latency_ms: u64) -> Option<StepNote> {
    let usage = Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: read,
        cache_creation_input_tokens: 5,
        ..Usage::default()
    };
    Some(StepNote::Call(CallNote::new(
        "claude-sonnet-4-5",
        &usage,
        latency_ms,
        1,
    )))
}

/// Stores one turn of `user`'s web chat: a held `cancel_event` then a `rename_event` that
/// ran, and the reply; the person's words and the arguments carry markup.
async fn store_turn(app: &TestApp, user: &UserId, turn: u64, words: &str) -> ConversationKey {
    let table = app.table.as_ref();
    let now = app.clock.now_millis();
    let key = ConversationKey::web(user);
    let channel = ChannelName::parse("web").unwrap();
    conversation::claim(
        table,
        &key,
        &channel,
        Some(user),
        &format!("m{turn}"),
        now,
        100,
        None,
        None,
    )
    .await
    .unwrap();
    let user_text = transcript::user_turn_text("Active event: <b>Spring</b> meetup", words);
    let rows = [
        row(Message::user_text(&user_text), RowSource::User, None, None),
        row(
            Message::assistant(vec![
                ContentBlock::tool_use("tu_cancel", "cancel_event", json!({"id": "ev_1"})),
                ContentBlock::tool_use(
                    "tu_rename",
                    "rename_event",
                    json!({"id": "ev_1", "name": "<img src=x onerror=alert(1)>"}),
                ),
            ]),
            RowSource::Model,
            Some("tool_use"),
            call_note(1500, 90, 3100, 1234),
        ),
        row(
            Message::user(vec![
                ContentBlock::tool_result("tu_cancel", "NOT EXECUTED: confirm first.", true),
                ContentBlock::tool_result(
                    "tu_rename",
                    r#"{"ok":true,"summary":"Renamed."}"#,
                    false,
                ),
            ]),
            RowSource::Tools,
            None,
            Some(StepNote::Tools(vec![
                ToolNote {
                    id: "tu_cancel".into(),
                    state: ToolState::Held,
                    effect: Some("tu_cancel".into()),
                },
                ToolNote {
                    id: "tu_rename".into(),
                    state: ToolState::Ran,
                    effect: Some("tu_rename".into()),
                },
            ])),
        ),
        row(
            Message::assistant(vec![ContentBlock::text("Renamed. Cancel it too?")]),
            RowSource::Model,
            Some("end_turn"),
            call_note(80, 12, 4600, 640),
        ),
    ];
    for (step, r) in rows.into_iter().enumerate() {
        transcript::append(table, &key, 0, turn, u32::try_from(step).unwrap(), r, now)
            .await
            .unwrap();
    }
    let seen = |role, text: &str| SeenRow {
        role,
        text: Some(text.into()),
        buttons: Vec::new(),
        reaction: None,
        at_ms: now,
    };
    transcript::put_seen(
        table,
        &key,
        turn,
        transcript::SEEN_USER,
        seen(Role::User, words),
    )
    .await
    .unwrap();
    transcript::put_seen(
        table,
        &key,
        turn,
        transcript::SEEN_REPLY,
        seen(Role::Assistant, "Renamed. Cancel it too?"),
    )
    .await
    .unwrap();
    key
}

#[tokio::test]
async fn the_inspector_shows_the_persons_own_turns_and_404s_anyone_elses() {
    let app = TestApp::new().await;
    let mut dana = app.signed_in("Dana").await;
    let mut eli = app.signed_in("Eli").await;

    // Before her first message: her own chat has no turns yet (not a 404).
    let empty = dana.get("/app/conversations/web:dana/turns").await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("No turns yet"), "{}", empty.body);

    let key = store_turn(
        &app,
        dana.user(),
        1,
        "rename it to <script>alert(1)</script>",
    )
    .await;
    assert_eq!(key.to_string(), "web:dana");

    let list = dana.get("/app/conversations/web:dana/turns").await;
    assert_eq!(list.status, StatusCode::OK);
    let body = &list.body;
    assert!(body.contains("<h1>Turns</h1>"), "{body}");
    assert!(
        body.contains("<caption>The newest 1 of 1 turns, newest first</caption>"),
        "{body}"
    );
    assert!(
        body.contains(r#"<a href="/app/conversations/web:dana/turns/1">Turn 1</a>"#),
        "{body}"
    );
    assert!(body.contains("2 (1 held)"), "{body}");
    // 1500 + 90 + 3100 + 5 + 80 + 12 + 4600 + 5 tokens.
    assert!(body.contains("<td>9392</td>"), "{body}");
    assert!(!body.contains("<script>alert"), "escaped: {body}");
    assert!(
        body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{body}"
    );

    let page = dana.get("/app/conversations/web:dana/turns/1").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(body.contains("<h1>Turn 1</h1>"), "{body}");
    assert!(body.contains("<caption>Model calls of turn 1, in order</caption>"));
    assert!(body.contains("<caption>Tool calls of turn 1, in order</caption>"));
    assert!(body.contains(r#"<th scope="col">Cache read</th>"#));
    for cell in [
        "<td>1500</td>",
        "<td>3100</td>",
        "<td>4600</td>",
        "1234 ms",
        "640 ms",
        "end_turn",
    ] {
        assert!(body.contains(cell), "{cell}: {body}");
    }
    assert!(
        body.contains("Active event: &lt;b&gt;Spring&lt;/b&gt; meetup"),
        "context block: {body}"
    );
    assert!(body.contains(">Held</span>"), "{body}");
    assert!(body.contains(">Ran</span>"), "{body}");
    assert!(body.contains("NOT EXECUTED: confirm first."));
    assert!(
        body.contains("<code>tu_rename</code>"),
        "the effect id: {body}"
    );
    assert!(body.contains("Renamed."));
    assert!(body.contains("Renamed. Cancel it too?"));
    assert!(!body.contains("<img src=x"), "arguments escaped: {body}");
    assert!(
        body.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{body}"
    );
    assert!(!body.contains("<script>alert"), "{body}");

    // Eli: Dana's conversation, a turn of it, and an id that names nothing are all 404.
    for path in [
        "/app/conversations/web:dana/turns",
        "/app/conversations/web:dana/turns/1",
        "/app/conversations/web:nobody/turns/1",
        "/app/conversations/not-a-key/turns",
    ] {
        let refused = eli.get(path).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{path}");
        assert!(!refused.body.contains("Cancel it too"), "{path}");
    }
    // Dana: a turn that does not exist, or is not a number.
    for path in [
        "/app/conversations/web:dana/turns/2",
        "/app/conversations/web:dana/turns/0",
        "/app/conversations/web:dana/turns/one",
    ] {
        assert_eq!(dana.get(path).await.status, StatusCode::NOT_FOUND, "{path}");
    }
    // Signed out: to the sign-in page, like every app page.
    let anon = app
        .anonymous()
        .get("/app/conversations/web:dana/turns/1")
        .await;
    assert_ne!(anon.status, StatusCode::OK);
    assert!(!anon.body.contains("Cancel it too"));
}

#[tokio::test]
async fn the_chat_and_activity_link_to_the_inspector() {
    let app = TestApp::new().await;
    let mut dana = app.signed_in("Dana").await;
    let chat = dana.get("/app/chat").await;
    assert!(
        chat.body
            .contains(r#"href="/app/conversations/web:dana/turns""#),
        "{}",
        chat.body
    );

    // A change the assistant made from her web chat links to that conversation's turns.
    let key = store_turn(&app, dana.user(), 1, "create an event").await;
    let agent = Ctx::new(
        app.table.clone(),
        app.clock.clone(),
        dana.user().clone(),
        Actor::Agent,
    )
    .with_effect(EffectKey::new(key, ToolUseId::parse("tu_create").unwrap()));
    events::create_event(
        &agent,
        NewEvent::new(
            EventName::parse("Spring").unwrap(),
            EventDates::parse(&["2026-07-01"]).unwrap(),
        ),
    )
    .await
    .unwrap()
    .commit()
    .await
    .unwrap();
    let activity = dana.get("/app/activity").await;
    assert!(
        activity
            .body
            .contains(r#"<a href="/app/conversations/web:dana/turns">See the turns</a>"#),
        "{}",
        activity.body
    );
}
