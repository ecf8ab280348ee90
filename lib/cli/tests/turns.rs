//! `steward turns` as an operator uses it: a stored turn with a held call and a confirmed one
//! in its readable form and as JSON; an unknown conversation or turn is an error naming it,
//! with a non-zero exit.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use steward_channels::PartLedger;
use steward_harness::sent_parts::SentParts;
use steward_harness::transcript::{
    self, CallNote, ModelRow, RowSource, SeenRow, StepNote, ToolNote, ToolState,
};
use steward_harness::{ChannelName, ConversationKey, UserId, conversation};
use steward_llm::{ContentBlock, Message, Role, Usage};
use steward_store::{Clock, SqliteTable, SystemClock};

fn steward(db: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_steward"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("STEWARD_DB")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("steward-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("steward.db")
}

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

fn call_note(input: u64, output: u64, read: u64, latency_ms: u64, rows: usize) -> StepNote {
    let usage = Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: read,
        cache_creation_input_tokens: 10,
        ..Usage::default()
    };
    StepNote::Call(CallNote::new("claude-sonnet-4-5", &usage, latency_ms, rows))
}

/// Turn 1 of `tg:42`: the model deletes one note (held) and renames another (ran), then
/// answers; the reply went out as one Telegram message.
async fn store_a_turn(db: &Path, user: &UserId) -> ConversationKey {
    let table = SqliteTable::open(db).unwrap();
    let clock = SystemClock;
    let now = clock.now_millis();
    let key = ConversationKey::telegram(42);
    let tg = ChannelName::parse("tg").unwrap();
    conversation::claim(&table, &key, &tg, Some(user), "m1", now, 100, None, None)
        .await
        .unwrap();
    let user_text = transcript::user_turn_text("Notes (2): [\"n1\",\"n2\"]", "tidy my notes");
    let rows = [
        row(Message::user_text(&user_text), RowSource::User, None, None),
        row(
            Message::assistant(vec![
                ContentBlock::text("On it."),
                ContentBlock::tool_use("tu_1", "delete_note", json!({"id": "n1"})),
                ContentBlock::tool_use("tu_2", "rename_note", json!({"title": "Plan", "id": "n2"})),
            ]),
            RowSource::Model,
            Some("tool_use"),
            Some(call_note(1200, 80, 3000, 1450, 1)),
        ),
        row(
            Message::user(vec![
                ContentBlock::tool_result("tu_1", "NOT EXECUTED: ask the person first.", true),
                ContentBlock::tool_result(
                    "tu_2",
                    r#"{"ok":true,"summary":"Renamed the note to \"Plan\"."}"#,
                    false,
                ),
            ]),
            RowSource::Tools,
            None,
            Some(StepNote::Tools(vec![
                ToolNote {
                    id: "tu_1".into(),
                    state: ToolState::Held,
                    effect: Some("tu_1".into()),
                },
                ToolNote {
                    id: "tu_2".into(),
                    state: ToolState::Ran,
                    effect: Some("tu_2".into()),
                },
            ])),
        ),
        row(
            Message::assistant(vec![ContentBlock::text("Renamed it. Delete \"Old\" too?")]),
            RowSource::Model,
            Some("end_turn"),
            Some(call_note(60, 20, 4200, 800, 3)),
        ),
    ];
    for (step, r) in rows.into_iter().enumerate() {
        transcript::append(&table, &key, 0, 1, u32::try_from(step).unwrap(), r, now)
            .await
            .unwrap();
    }
    let seen = |role, text: &str, buttons: &[&str]| SeenRow {
        role,
        text: Some(text.into()),
        buttons: buttons.iter().map(|b| (*b).to_owned()).collect(),
        reaction: None,
        at_ms: now,
    };
    transcript::put_seen(
        &table,
        &key,
        1,
        transcript::SEEN_USER,
        seen(Role::User, "tidy my notes", &[]),
    )
    .await
    .unwrap();
    transcript::put_seen(
        &table,
        &key,
        1,
        transcript::SEEN_REPLY,
        seen(
            Role::Assistant,
            "Renamed it. Delete \"Old\" too?",
            &["Yes", "No"],
        ),
    )
    .await
    .unwrap();
    SentParts::new(&table, &clock, &key, 1)
        .record(0, "tg-msg-501")
        .await
        .unwrap();
    key
}

#[tokio::test]
async fn a_turn_is_shown_readably_and_as_json() {
    let db = temp_db("turns");
    let (ok, user, err) = steward(&db, &["user", "create", "--name", "Dana"]);
    assert!(ok, "{err}");
    let user = UserId::parse(user.trim()).unwrap();
    store_a_turn(&db, &user).await;

    let (ok, out, err) = steward(&db, &["turns", "tg:42", "--turn", "1"]);
    assert!(ok, "{err}");
    let mut lines = out.lines();
    let first = lines.next().unwrap();
    assert!(first.starts_with("turn 1 at 20"), "{first}");
    assert!(first.ends_with(" UTC"), "{first}");
    let rest: Vec<&str> = lines.collect();
    assert_eq!(
        rest,
        [
            "  message: tidy my notes",
            "  context (sent with every model call):",
            "    Notes (2): [\"n1\",\"n2\"]",
            "  model call 1 (claude-sonnet-4-5): stop=tool_use input=1200 output=80 cache_read=3000 cache_write=10 latency=1450ms rows_sent=1",
            "    text: On it.",
            "  tool delete_note [held] id=tu_1 effect=tu_1",
            "    arguments: {\"id\":\"n1\"}",
            "    result: NOT EXECUTED: ask the person first.",
            "  tool rename_note [ran] id=tu_2 effect=tu_2",
            "    arguments: {\"id\":\"n2\",\"title\":\"Plan\"}",
            "    result: Renamed the note to \"Plan\".",
            "  model call 3 (claude-sonnet-4-5): stop=end_turn input=60 output=20 cache_read=4200 cache_write=10 latency=800ms rows_sent=3",
            "    text: Renamed it. Delete \"Old\" too?",
            "  reply on tg: Renamed it. Delete \"Old\" too?",
            "    buttons: Yes | No",
            "    delivered parts: tg-msg-501",
        ]
    );

    // The JSON form is the typed inspection.
    let (ok, out, err) = steward(&db, &["turns", "tg:42", "--turn", "1", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["turn"], 1);
    assert_eq!(v["conversation"], "tg:42");
    assert_eq!(v["model_calls"][0]["tokens"]["cache_read"], 3000);
    assert_eq!(v["model_calls"][0]["latency_ms"], 1450);
    assert_eq!(v["model_calls"][1]["model"], "claude-sonnet-4-5");
    assert_eq!(v["tool_calls"][0]["state"], "held");
    assert_eq!(v["tool_calls"][1]["state"], "ran");
    assert_eq!(v["tool_calls"][1]["effect"], "tu_2");
    assert_eq!(v["reply"]["parts"], json!(["tg-msg-501"]));
    assert_eq!(v["reply"]["buttons"], json!(["Yes", "No"]));
    assert_eq!(v["context"]["text"], "Notes (2): [\"n1\",\"n2\"]");

    // Every turn: the conversation's header, then each turn.
    let (ok, out, err) = steward(&db, &["turns", "tg:42"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("conversation tg:42 (tg), 1 turns\n\nturn 1 at "),
        "{out}"
    );
    let (ok, out, _) = steward(&db, &["turns", "tg:42", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["turns"], 1);
    assert_eq!(v["listed"][0]["turn"], 1);
    assert_eq!(v["older"], false);
}

#[tokio::test]
async fn an_unknown_conversation_or_turn_is_an_error_naming_it() {
    let db = temp_db("turns-bad");
    let (ok, user, err) = steward(&db, &["user", "create", "--name", "Eli"]);
    assert!(ok, "{err}");
    store_a_turn(&db, &UserId::parse(user.trim()).unwrap()).await;

    let (ok, out, err) = steward(&db, &["turns", "tg:43"]);
    assert!(!ok);
    assert!(out.is_empty());
    assert!(err.contains("no conversation tg:43"), "{err}");

    let (ok, out, err) = steward(&db, &["turns", "tg:42", "--turn", "9"]);
    assert!(!ok);
    assert!(out.is_empty());
    assert!(
        err.contains("conversation tg:42 has no turn 9 (it has 1)"),
        "{err}"
    );

    let (ok, _, err) = steward(&db, &["turns", "tg:42", "--turn", "two"]);
    assert!(!ok);
    assert!(err.contains("--turn"), "{err}");

    let (ok, _, err) = steward(&db, &["turns", "not a key"]);
    assert!(!ok);
    assert!(
        err.contains("\"not a key\" is not a conversation key"),
        "{err}"
    );

    let (ok, _, err) = steward(&temp_db("turns-none"), &["turns", "tg:42"]);
    assert!(!ok);
    assert!(err.contains("there is no store at"), "{err}");
}
