//! No silence: a history the model would refuse is repaired or compacted so the next turn
//! answers normally — an unpaired tool call, a row that does not parse, a prompt too long — and
//! a model stuck calling the same tool is stopped by the loop breaker. Every test runs on
//! SQLite and, with the emulator, on DynamoDB.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use serde_json::json;
use steward_harness::compaction::{NOTES_DROPPED, NOTES_HEADER};
use steward_harness::transcript::{self, ModelRow, RowSource, UNFINISHED_CALL};
use steward_harness::turn::{BROKEN, GOING_IN_CIRCLES};
use steward_harness::{ChannelName, conversation, keys};
use steward_llm::{
    ContentBlock, CreateRequest, CreateResponse, LlmError, Message, Role, StopReason,
    ToolResultContent, text_of,
};
use steward_store::testing::Backend;
use steward_store::{Item, WriteOp};

use chat::rig::Rig;

fn text(t: &str) -> CreateResponse {
    CreateResponse::new(vec![ContentBlock::text(t)], StopReason::EndTurn)
}

fn too_long() -> LlmError {
    LlmError::ContextWindowExceeded {
        message: "prompt is too long: 250000 tokens > 200000 maximum".into(),
    }
}

fn channel() -> ChannelName {
    ChannelName::parse("tg").unwrap()
}

/// Stores `row` at (segment 0, `turn`, `step`) as a crashed earlier attempt would have left it,
/// and makes the conversation's turn counter say `turn` turns have started.
async fn stored(r: &Rig, turn: u64, step: u32, row: ModelRow) {
    let now = steward_store::Clock::now_millis(&r.world.clock);
    transcript::append(r.world.table.as_ref(), &r.conv, 0, turn, step, row, now)
        .await
        .unwrap();
    conversation::update(r.world.table.as_ref(), &r.conv, &channel(), |m| {
        m.turns = m.turns.max(turn);
        m.user = Some(r.user.clone());
    })
    .await
    .unwrap();
}

fn user_row(text: &str) -> ModelRow {
    ModelRow {
        message: Message::user_text(transcript::user_turn_text("ctx", text)).into(),
        source: RowSource::User,
        stop_reason: None,
        note: None,
    }
}

fn model_row(content: Vec<ContentBlock>, stop: &str) -> ModelRow {
    ModelRow {
        message: Message::assistant(content).into(),
        source: RowSource::Model,
        stop_reason: Some(stop.into()),
        note: None,
    }
}

/// Panics unless `req` is what the provider accepts: roles alternate from a user message, and
/// every tool call is answered in the next message and every result answers one.
fn assert_well_formed(req: &CreateRequest) {
    assert_eq!(req.messages.first().map(|m| m.role), Some(Role::User));
    for pair in req.messages.windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "roles alternate");
    }
    for (i, m) in req.messages.iter().enumerate() {
        let calls = support::tool_use_ids(m);
        let results = |m: &Message| -> Vec<String> {
            m.content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult(r) => Some(r.tool_use_id.clone()),
                    _ => None,
                })
                .collect()
        };
        if !calls.is_empty() {
            let next = req.messages.get(i + 1).expect("calls are answered");
            assert_eq!(results(next), calls, "every tool_use has its tool_result");
        }
        if m.role == Role::User && i > 0 {
            let asked: Vec<String> = req.messages[i - 1]
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse(u) => Some(u.id.clone()),
                    _ => None,
                })
                .collect();
            for id in results(m) {
                assert!(asked.contains(&id), "result {id} answers a call");
            }
        }
    }
}

fn result_text(req: &CreateRequest, id: &str) -> (String, bool) {
    req.messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            ContentBlock::ToolResult(r) if r.tool_use_id == id => Some((
                match &r.content {
                    Some(ToolResultContent::Text(t)) => t.clone(),
                    _ => String::new(),
                },
                r.is_error == Some(true),
            )),
            _ => None,
        })
        .expect("a result for the call")
}

async fn an_unpaired_tool_call_is_closed_and_the_next_turn_answers(r: Rig) {
    // Turn 1 stopped between the model's call and its result (a crash, then a dead letter).
    stored(&r, 1, 0, user_row("add a note called milk")).await;
    stored(
        &r,
        1,
        1,
        model_row(
            vec![ContentBlock::tool_use(
                "tu_lost",
                "add_note",
                json!({"title": "milk"}),
            )],
            "tool_use",
        ),
    )
    .await;
    r.model.push(Ok(text("Hi! What next?")));
    assert_eq!(Rig::text(&r.say("m2", "hello?").await), "Hi! What next?");
    let first = &r.model.requests()[0];
    assert_well_formed(first);
    let (said, is_error) = result_text(first, "tu_lost");
    assert_eq!(said, UNFINISHED_CALL);
    assert!(is_error);
    // The repair is the same on the next request: its history is a byte-for-byte prefix.
    r.model.push(Ok(text("Sure.")));
    assert_eq!(Rig::text(&r.say("m3", "thanks").await), "Sure.");
    let reqs = r.model.requests();
    assert_well_formed(&reqs[1]);
    let before = support::without_cache_marks(&reqs[0].messages);
    let after = support::without_cache_marks(&reqs[1].messages);
    assert_eq!(
        serde_json::to_vec(&after[..before.len()]).unwrap(),
        serde_json::to_vec(&before).unwrap()
    );
    // The stored rows are untouched: the repair is made for each request, never written.
    let rows = transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
        .await
        .unwrap();
    assert!(!rows.iter().any(|p| {
        p.row
            .message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult(t) if t.tool_use_id == "tu_lost"))
    }));
}

async fn a_row_that_does_not_parse_is_skipped_and_the_next_turn_answers(r: Rig) {
    stored(&r, 1, 0, user_row("add a note called milk")).await;
    stored(
        &r,
        1,
        1,
        model_row(
            vec![ContentBlock::tool_use(
                "tu_1",
                "add_note",
                json!({"title": "milk"}),
            )],
            "tool_use",
        ),
    )
    .await;
    // The results row is corrupt: not a model row at all.
    let pk = keys::conversation_pk(&r.conv);
    let garbage = Item::new(&pk, keys::model_sk(0, 1, 2), json!({"oops": [1, 2, 3]}));
    r.world
        .table
        .write(vec![WriteOp::put(garbage)])
        .await
        .unwrap();
    stored(
        &r,
        1,
        3,
        model_row(vec![ContentBlock::text("Added milk.")], "end_turn"),
    )
    .await;
    r.model.push(Ok(text("You have one note.")));
    assert_eq!(
        Rig::text(&r.say("m2", "what do I have?").await),
        "You have one note."
    );
    let req = &r.model.requests()[0];
    assert_well_formed(req);
    assert_eq!(result_text(req, "tu_1").0, UNFINISHED_CALL);
    assert!(text_of(&req.messages[1].content).contains("Added milk."));
}

async fn a_prompt_too_long_is_compacted_and_retried_once(r: Rig) {
    r.model.push(Ok(text("Hello!")));
    r.say("m1", "hi").await;
    // The model says the prompt is too long; the harness summarises what came before this
    // turn, carries the turn's own row into the new segment and asks again.
    r.model.push(Err(too_long()));
    r.model.push(Ok(text("- the user said hi")));
    r.model.push(Ok(text("All good.")));
    assert_eq!(Rig::text(&r.say("m2", "how are you").await), "All good.");
    assert_eq!(r.model.calls(), 4);
    let conv = conversation::load(r.world.table.as_ref(), &r.conv, &channel())
        .await
        .unwrap();
    assert_eq!(conv.meta.segment, 1);
    // The person's row, waiting for the first answer, went into the old segment first.
    let old = transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
        .await
        .unwrap();
    assert!(
        old.iter().any(|row| row.turn == 2 && row.step == 0),
        "{old:?}"
    );
    let retried = &r.model.requests()[3];
    assert_well_formed(retried);
    assert_eq!(retried.messages.len(), 1, "notes and the user row, merged");
    let t = text_of(&retried.messages[0].content);
    assert!(
        t.starts_with(NOTES_HEADER) && t.contains("the user said hi"),
        "{t}"
    );
    assert!(
        t.contains("<user_message>\nhow are you\n</user_message>"),
        "{t}"
    );
    // The next turn goes on from the new segment, a byte-for-byte continuation.
    r.model.push(Ok(text("Bye.")));
    r.say("m3", "bye").await;
    let next = &r.model.requests()[4];
    assert_eq!(
        support::without_cache_marks(&next.messages[..1]),
        support::without_cache_marks(&retried.messages),
        "the retried request is the prefix of the next"
    );
}

async fn a_prompt_still_too_long_after_compaction_is_answered_not_retried_again(r: Rig) {
    r.model.push(Ok(text("Hello!")));
    r.say("m1", "hi").await;
    r.model.push(Err(too_long()));
    r.model.push(Ok(text("- notes")));
    r.model.push(Err(too_long()));
    assert_eq!(Rig::text(&r.say("m2", "again").await), BROKEN);
    assert_eq!(r.model.calls(), 4, "one compaction, one retry, no more");
}

async fn a_history_too_long_even_for_the_notes_gets_fixed_notes(r: Rig) {
    r.model.push(Ok(text("Hello!")));
    r.say("m1", "hi").await;
    r.model.push(Err(too_long()));
    r.model.push(Err(too_long()));
    r.model.push(Ok(text("Fine, thanks.")));
    assert_eq!(
        Rig::text(&r.say("m2", "how are you").await),
        "Fine, thanks."
    );
    let retried = r.model.requests().last().cloned().unwrap();
    assert_well_formed(&retried);
    let t = text_of(&retried.messages[0].content);
    assert!(t.contains(NOTES_DROPPED), "{t}");
}

async fn a_model_repeating_the_same_call_is_stopped_after_three(r: Rig) {
    for i in 0..3 {
        r.model.push(Ok(CreateResponse::new(
            vec![ContentBlock::tool_use(
                format!("tu_{i}"),
                "list_notes",
                json!({}),
            )],
            StopReason::ToolUse,
        )));
    }
    assert_eq!(Rig::text(&r.say("m1", "loop").await), GOING_IN_CIRCLES);
    assert_eq!(r.model.calls(), 3, "no fourth model call");
    assert_eq!(r.model.remaining(), 0);
    let rows = transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
        .await
        .unwrap();
    // user, (call, result) × 2, the third call, its "not run" result, the harness's line.
    assert_eq!(rows.len(), 1 + 2 * 2 + 1 + 1 + 1);
    assert_eq!(rows.last().unwrap().row.source, RowSource::Harness);
    let not_run = &rows[rows.len() - 2].row.message.content[0];
    assert!(
        matches!(not_run, ContentBlock::ToolResult(t) if t.tool_use_id == "tu_2" && t.is_error == Some(true)),
        "{not_run:?}"
    );
    // The turn is done: the next message is answered normally.
    r.model.push(Ok(text("Sorry about that.")));
    assert_eq!(Rig::text(&r.say("m2", "hm?").await), "Sorry about that.");
    assert_well_formed(r.model.requests().last().unwrap());
}

async fn rig(backend: Backend) -> Option<Rig> {
    Rig::on(backend).await
}

steward_store::backend_tests!(setup = rig;
    an_unpaired_tool_call_is_closed_and_the_next_turn_answers,
    a_row_that_does_not_parse_is_skipped_and_the_next_turn_answers,
    a_prompt_too_long_is_compacted_and_retried_once,
    a_prompt_still_too_long_after_compaction_is_answered_not_retried_again,
    a_history_too_long_even_for_the_notes_gets_fixed_notes,
    a_model_repeating_the_same_call_is_stopped_after_three,
);

/// 100 seeded runaway models: each makes a seeded number of different calls mixed in with
/// repeats of one call, and the turn always stops at that call's third time with the fixed
/// line, before the call cap and without a further model call.
#[tokio::test]
async fn runaway_models_stop_at_the_third_repeat_over_100_seeds() {
    for seed in 0_u64..100 {
        let r = Rig::on(Backend::Sqlite).await.unwrap();
        // A small deterministic generator: no dependency, same runs every time.
        let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let repeated = json!({ "id": format!("stuck-{seed}") });
        let mut repeats = 0;
        let mut calls = 0;
        let mut i = 0;
        while repeats < 3 {
            // Up to 8 different calls in all, so the third repeat comes within the 12-call cap.
            let input = if next(2) == 0 && calls - repeats < 8 {
                json!({ "id": format!("other-{seed}-{i}") })
            } else {
                repeats += 1;
                repeated.clone()
            };
            r.model.push(Ok(CreateResponse::new(
                vec![ContentBlock::tool_use(format!("tu_{i}"), "get_note", input)],
                StopReason::ToolUse,
            )));
            calls += 1;
            i += 1;
        }
        // Whatever the model would do next is never asked for.
        r.model.push(Ok(text("unreachable")));
        let said = Rig::text(&r.say("m1", "go").await);
        assert_eq!(said, GOING_IN_CIRCLES, "seed {seed}");
        assert_eq!(r.model.calls(), calls, "seed {seed}");
        assert_eq!(r.model.remaining(), 1, "seed {seed}");
    }
}
