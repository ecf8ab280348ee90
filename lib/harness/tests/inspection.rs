//! The turn inspector's read model over real turns: a held tool call, then the same call
//! confirmed on the next message (two model calls in that turn); tokens, model id and the
//! context block per call; the reply as sent; the owner check; and rows written before the
//! inspector's notes existed.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use serde_json::json;
use steward_harness::inspection::{self, InspectError, Reader};
use steward_harness::transcript::{self, ModelRow, RowSource, SeenRow, ToolState};
use steward_harness::{Actor, ConversationKey, conversation};
use steward_llm::{ContentBlock, CreateResponse, Message, Role, StopReason, Usage};
use steward_store::Clock;
use steward_store::testing::Backend;

use chat::rig::Rig;
use support::notes;

async fn rig(backend: Backend) -> Option<Rig> {
    Rig::on(backend).await
}

fn reply(text: &str) -> CreateResponse {
    CreateResponse::new(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

fn with_usage(mut resp: CreateResponse, input: u64, output: u64, read: u64) -> CreateResponse {
    resp.usage = Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: read,
        cache_creation_input_tokens: 7,
        ..Usage::default()
    };
    resp.model = "claude-test-20260101".into();
    resp
}

fn call(id: &str, name: &str, input: serde_json::Value) -> CreateResponse {
    CreateResponse::new(
        vec![
            ContentBlock::text("Let me do that."),
            ContentBlock::tool_use(id, name, input),
        ],
        StopReason::ToolUse,
    )
}

async fn a_held_call_then_its_confirmation_are_inspected_turn_by_turn(r: Rig) {
    let ctx = r.world.ctx(&r.user, Actor::User);
    let note = notes::add(&ctx, "Budget").await.unwrap();
    let args = json!({"id": note.id});

    // Turn 1: the delete is held; the model asks.
    r.model.push(Ok(with_usage(
        call("tu_del1", "delete_note", args.clone()),
        120,
        30,
        900,
    )));
    r.model.push(Ok(with_usage(
        reply("Shall I delete \"Budget\"?"),
        40,
        12,
        1000,
    )));
    r.say("m1", "delete the budget note").await;
    // Turn 2: "yes" — the same call now runs on the confirmation.
    r.model
        .push(Ok(call("tu_del2", "delete_note", args.clone())));
    r.model.push(Ok(reply("Deleted.")));
    r.say("m2", "yes").await;

    let table = r.world.table.as_ref();
    let owner = Reader::Person(&r.user);
    let first = inspection::turn(table, owner, &r.conv, 1).await.unwrap();
    assert_eq!(first.turn, 1);
    assert_eq!(
        first.message.as_ref().unwrap().text,
        "delete the budget note"
    );
    let context = first.context.as_ref().unwrap();
    assert!(context.text.contains("Notes (1)"), "{context:?}");
    assert!(!context.text.contains("<context>"));
    assert_eq!(first.model_calls.len(), 2);
    let c1 = &first.model_calls[0];
    assert_eq!(c1.step, 1);
    assert_eq!(c1.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(c1.model.as_deref(), Some("claude-test-20260101"));
    let t = c1.tokens.unwrap();
    assert_eq!(
        (t.input, t.output, t.cache_read, t.cache_write),
        (120, 30, 900, 7)
    );
    assert!(c1.latency_ms.is_some());
    assert_eq!(c1.rows_sent, Some(1), "the first call carries the user row");
    assert_eq!(c1.tool_calls, 1);
    assert_eq!(
        first.model_calls[1].stop_reason.as_deref(),
        Some("end_turn")
    );
    assert_eq!(first.model_calls[1].rows_sent, Some(3));
    assert_eq!(first.tool_calls.len(), 1);
    let held = &first.tool_calls[0];
    assert_eq!(held.name, "delete_note");
    assert_eq!(held.id, "tu_del1");
    assert_eq!(held.arguments.text, format!(r#"{{"id":"{}"}}"#, note.id));
    assert_eq!(held.state, Some(ToolState::Held));
    assert!(held.is_error, "a held call answers as an error");
    assert!(
        held.result
            .as_ref()
            .unwrap()
            .text
            .starts_with("NOT EXECUTED"),
        "{held:?}"
    );
    assert_eq!(held.effect.as_deref(), Some("tu_del1"));
    assert_eq!(held.action, None, "nothing was committed");
    assert_eq!(
        first.reply.text.as_ref().unwrap().text,
        "Shall I delete \"Budget\"?"
    );
    assert_eq!(first.reply.channel, "tg");

    let second = inspection::turn(table, owner, &r.conv, 2).await.unwrap();
    assert_eq!(second.model_calls.len(), 2, "a turn of two model calls");
    let confirmed = &second.tool_calls[0];
    assert_eq!(confirmed.state, Some(ToolState::Confirmed));
    assert!(!confirmed.is_error);
    assert_eq!(
        confirmed.result.as_ref().unwrap().text,
        "Deleted the note \"Budget\"."
    );
    assert_eq!(confirmed.effect.as_deref(), Some("tu_del2"));
    assert!(confirmed.action.is_some(), "the delete committed an action");
    assert_eq!(second.reply.text.as_ref().unwrap().text, "Deleted.");

    // Every turn, newest first.
    let all = inspection::conversation(table, owner, &r.conv)
        .await
        .unwrap();
    assert_eq!(all.turns, 2);
    assert_eq!(
        all.listed.iter().map(|t| t.turn).collect::<Vec<_>>(),
        [2, 1]
    );
    assert!(!all.older);
    assert_eq!(all.listed[1], first);

    // The operator reads it too; another person, an unknown conversation and a missing turn
    // are refused by name.
    assert_eq!(
        inspection::turn(table, Reader::Operator, &r.conv, 1)
            .await
            .unwrap(),
        first
    );
    let stranger = r.world.account("u2").await;
    let refused = inspection::turn(table, Reader::Person(&stranger), &r.conv, 1).await;
    assert!(
        matches!(refused, Err(InspectError::ConversationNotFound(_))),
        "{refused:?}"
    );
    let refused = inspection::conversation(table, Reader::Person(&stranger), &r.conv).await;
    assert!(matches!(
        refused,
        Err(InspectError::ConversationNotFound(_))
    ));
    let nowhere = ConversationKey::telegram(999);
    let err = inspection::turn(table, Reader::Operator, &nowhere, 1)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "no conversation tg:999");
    let err = inspection::turn(table, owner, &r.conv, 3)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "conversation tg:42 has no turn 3 (it has 2)"
    );
    assert!(matches!(
        inspection::turn(table, owner, &r.conv, 0).await,
        Err(InspectError::TurnNotFound { .. })
    ));
}

async fn refused_ran_and_not_run_calls_are_told_apart(r: Rig) {
    // One round: an unknown tool (refused) and a note added (ran, changed data).
    r.model.push(Ok(CreateResponse::new(
        vec![
            ContentBlock::tool_use("tu_bad", "no_such_tool", json!({})),
            ContentBlock::tool_use("tu_add", "add_note", json!({"title": "Venue"})),
        ],
        StopReason::ToolUse,
    )));
    // Then an answer cut off mid-call: that call is not run.
    r.model.push(Ok(CreateResponse::new(
        vec![ContentBlock::tool_use(
            "tu_cut",
            "add_note",
            json!({"title": "Cat"}),
        )],
        StopReason::MaxTokens,
    )));
    r.say("m1", "add a venue note").await;

    let t = inspection::turn(r.world.table.as_ref(), Reader::Person(&r.user), &r.conv, 1)
        .await
        .unwrap();
    let states: Vec<_> = t
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.state, c.action.is_some()))
        .collect();
    assert_eq!(
        states,
        [
            ("tu_bad", Some(ToolState::Refused), false),
            ("tu_add", Some(ToolState::Ran), true),
            ("tu_cut", Some(ToolState::NotRun), false),
        ]
    );
    assert_eq!(
        t.tool_calls[1].result.as_ref().unwrap().text,
        "Added note \"Venue\"."
    );
    assert_eq!(
        t.tool_calls[0].effect, None,
        "an unknown tool never reached the registry"
    );
    assert_eq!(t.model_calls[1].stop_reason.as_deref(), Some("max_tokens"));
    assert_eq!(
        t.harness_lines.len(),
        1,
        "the cut-off line: {:?}",
        t.harness_lines
    );
}

async fn a_conversation_without_an_owner_is_nobodys_to_inspect(r: Rig) {
    // A group conversation whose sender was never known: only the operator reads it.
    let table = r.world.table.as_ref();
    let key = ConversationKey::telegram(-77);
    let channel = steward_harness::ChannelName::parse("tg").unwrap();
    conversation::claim(table, &key, &channel, None, "g1", 0, 100, None, None)
        .await
        .unwrap();
    let refused = inspection::conversation(table, Reader::Person(&r.user), &key).await;
    assert!(matches!(
        refused,
        Err(InspectError::ConversationNotFound(_))
    ));
    assert!(
        inspection::conversation(table, Reader::Operator, &key)
            .await
            .is_ok()
    );
}

/// A row as stored before the inspector's notes existed: no `note` field at all.
async fn put_old_row(r: &Rig, turn: u64, step: u32, row: serde_json::Value) {
    let parsed: ModelRow = serde_json::from_value(row).unwrap();
    assert_eq!(parsed.note, None, "an old row reads without a note");
    transcript::append(
        r.world.table.as_ref(),
        &r.conv,
        0,
        turn,
        step,
        parsed,
        r.world.clock.now_millis(),
    )
    .await
    .unwrap();
}

async fn rows_written_before_the_notes_still_read(r: Rig) {
    let table = r.world.table.as_ref();
    let channel = steward_harness::ChannelName::parse("tg").unwrap();
    conversation::claim(
        table,
        &r.conv,
        &channel,
        Some(&r.user),
        "old1",
        0,
        100,
        None,
        None,
    )
    .await
    .unwrap();
    let user_text = transcript::user_turn_text("Time: long ago", "rename it");
    put_old_row(
        &r,
        1,
        0,
        json!({"message": Message::user_text(&user_text), "source": "user"}),
    )
    .await;
    put_old_row(
        &r,
        1,
        1,
        json!({
            "message": Message::assistant(vec![ContentBlock::tool_use("tu_old", "rename_note", json!({"id": "n1", "title": "X"}))]),
            "source": "model",
            "stop_reason": "tool_use"
        }),
    )
    .await;
    put_old_row(
        &r,
        1,
        2,
        json!({
            "message": Message::user(vec![ContentBlock::tool_result("tu_old", "Renamed.", false)]),
            "source": "tools"
        }),
    )
    .await;
    put_old_row(
        &r,
        1,
        3,
        json!({"message": Message::assistant(vec![ContentBlock::text("Done.")]), "source": "model", "stop_reason": "end_turn"}),
    )
    .await;
    transcript::put_seen(
        table,
        &r.conv,
        1,
        transcript::SEEN_REPLY,
        SeenRow {
            role: Role::Assistant,
            text: Some("Done.".into()),
            buttons: vec!["Undo".into()],
            reaction: None,
            at_ms: r.world.clock.now_millis(),
        },
    )
    .await
    .unwrap();

    let t = inspection::turn(table, Reader::Person(&r.user), &r.conv, 1)
        .await
        .unwrap();
    assert_eq!(t.context.unwrap().text, "Time: long ago");
    assert_eq!(t.model_calls.len(), 2);
    assert_eq!(t.model_calls[0].tokens, None);
    assert_eq!(t.model_calls[0].latency_ms, None);
    assert_eq!(t.model_calls[0].model, None);
    assert_eq!(t.tool_calls.len(), 1);
    assert_eq!(t.tool_calls[0].state, None, "not recorded then");
    assert_eq!(t.tool_calls[0].result.as_ref().unwrap().text, "Renamed.");
    assert_eq!(t.reply.buttons, ["Undo"]);
    assert_eq!(t.message, None, "no visible user row was stored");
    // A harness line, and the stored JSON of the new fields, round-trip.
    let row = ModelRow {
        message: Message::assistant(vec![ContentBlock::text("x")]).into(),
        source: RowSource::Harness,
        stop_reason: None,
        note: None,
    };
    let json = serde_json::to_value(&row).unwrap();
    assert!(json.get("note").is_none(), "no note, no field: {json}");
}

steward_store::backend_tests!(setup = rig;
    a_held_call_then_its_confirmation_are_inspected_turn_by_turn,
    a_conversation_without_an_owner_is_nobodys_to_inspect,
    refused_ran_and_not_run_calls_are_told_apart,
    rows_written_before_the_notes_still_read,
);
