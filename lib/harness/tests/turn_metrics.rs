//! A turn's metrics, collected once where it ends and handed to the process's recorder:
//! model calls and tokens, tool calls, tool errors (a bug) and held actions (a delete) from a
//! real turn with a scripted model; a failed model call counted for the turn and by kind.
//! Its own test binary, so the recorder it installs is the process's only one; SQLite only
//! (the counts do not depend on the store).

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use steward_harness::Actor;
use steward_harness::metrics::{
    self, MetricsRecorder, ModelFailureKind, NotSentReason, TurnEnd, TurnMetrics,
};
use steward_llm::{ContentBlock, CreateResponse, LlmError, StopReason, Usage};
use steward_store::testing::Backend;

use chat::rig::Rig;
use support::notes;

/// Keeps everything it is given.
#[derive(Default)]
struct Captured {
    turns: Mutex<Vec<TurnMetrics>>,
    failures: Mutex<Vec<ModelFailureKind>>,
}

impl MetricsRecorder for Captured {
    fn turn(&self, m: &TurnMetrics) {
        self.turns.lock().unwrap().push(m.clone());
    }
    fn model_failure(&self, kind: ModelFailureKind) {
        self.failures.lock().unwrap().push(kind);
    }
    fn reply_not_sent(&self, _reason: NotSentReason) {}
    fn dead_letter(&self, _channel: &str) {}
}

fn usage(input: u64, read: u64, write: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_creation_input_tokens: write,
        cache_read_input_tokens: read,
        ..Usage::default()
    }
}

fn answer(content: Vec<ContentBlock>, stop: StopReason, u: Usage) -> CreateResponse {
    let mut resp = CreateResponse::new(content, stop);
    resp.usage = u;
    resp
}

fn call(id: &str, tool: &str, args: Value) -> ContentBlock {
    ContentBlock::tool_use(id, tool, args)
}

#[tokio::test]
async fn a_turn_hands_its_metrics_to_the_recorder_once() {
    let captured = Arc::new(Captured::default());
    assert!(metrics::install(Arc::clone(&captured) as _));
    let r = Rig::on(Backend::Sqlite).await.unwrap();
    let ctx = r.world.ctx(&r.user, Actor::User);
    let id = notes::add(&ctx, "Groceries").await.unwrap().id;

    // One round of three calls: one runs, one is held (a delete), one is a bug; then the
    // answer.
    r.model.push(Ok(answer(
        vec![
            call("tu_1", "add_note", json!({"title": "milk"})),
            call("tu_2", "delete_note", json!({"id": id})),
            call("tu_3", "explode", json!({})),
        ],
        StopReason::ToolUse,
        usage(100, 0, 900, 40),
    )));
    r.model.push(Ok(answer(
        vec![ContentBlock::text("Added milk; the delete needs your yes.")],
        StopReason::EndTurn,
        usage(50, 1_000, 0, 20),
    )));
    r.say("m1", "add milk, delete groceries, and explode").await;

    let turns = captured.turns.lock().unwrap().clone();
    assert_eq!(turns.len(), 1, "one value per turn");
    let m = &turns[0];
    assert_eq!(m.channel.as_str(), "tg");
    assert_eq!(m.conversation, r.conv);
    assert_eq!(m.turn, 1);
    assert_eq!(m.end, TurnEnd::Replied);
    assert_eq!((m.model_calls, m.model_failures), (2, 0));
    assert_eq!(m.uncached_input_tokens, 150);
    assert_eq!(m.cache_write_tokens, 900);
    assert_eq!(m.cache_read_tokens, 1_000);
    assert_eq!(m.output_tokens, 60);
    assert_eq!(m.cache_read_share(), Some(1_000.0 / 2_050.0));
    assert_eq!(
        (m.tool_calls, m.tool_errors, m.held_actions),
        (3, 1, 1),
        "three calls: the bug is the one error, the held delete is not"
    );

    // A model call that times out: counted for the turn and by kind, once.
    r.model.push(Err(LlmError::Timeout));
    r.say("m2", "hello").await;
    let turns = captured.turns.lock().unwrap().clone();
    assert_eq!(turns.len(), 2);
    let m = &turns[1];
    assert_eq!((m.turn, m.model_calls, m.model_failures), (2, 1, 1));
    assert_eq!(m.input_tokens(), 0);
    assert_eq!(m.cache_read_share(), None);
    assert_eq!(m.tool_calls, 0);
    assert_eq!(
        *captured.failures.lock().unwrap(),
        [ModelFailureKind::Timeout]
    );

    // A duplicate delivery runs no turn and records nothing.
    r.say("m2", "hello").await;
    assert_eq!(captured.turns.lock().unwrap().len(), 2);
}
