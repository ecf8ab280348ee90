//! The turn: one test per row of the failure table (named after the row), the loop and its
//! cap, tools in order, result caps, byte-stable append-only replay, and the guards. Every
//! test runs on SQLite and, with the emulator, on DynamoDB.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use serde_json::json;
use steward_harness::transcript::{self, RowSource};
use steward_harness::turn::{BAIL_OUT, BUSY, NO_MODEL, PAUSED, REFUSED, SWAMPED, TIMED_OUT};
use steward_harness::{TurnLimits, TurnOutcome, accounts, usage};
use steward_llm::{ContentBlock, InvalidKind, LlmError, Role, StopReason};
use steward_store::testing::Backend;
use steward_store::{Item, Page, Query, RawItem, StoreError, Table, WriteOp};

use chat::rig::{Rig, RigOptions};
use support::World;

async fn rig(backend: Backend) -> Option<Rig> {
    Rig::on(backend).await
}

async fn model_rows(r: &Rig) -> Vec<transcript::PlacedRow> {
    transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
        .await
        .unwrap()
}

// ---- the failure table -------------------------------------------------------------------

async fn provider_rate_limit_or_overload(r: Rig) {
    r.model.push(Err(LlmError::RateLimited {
        retry_after: Some(Duration::from_secs(30)),
    }));
    let out = r.say("m1", "add a note called milk").await;
    assert_eq!(Rig::text(&out), SWAMPED);
    r.model.push(Err(LlmError::Overloaded));
    assert_eq!(Rig::text(&r.say("m2", "again").await), SWAMPED);
    // Recorded in both transcripts, so the next turn is coherent.
    let rows = model_rows(&r).await;
    let last = rows.last().unwrap();
    assert_eq!(last.row.source, RowSource::Harness);
    assert_eq!(steward_llm::text_of(&last.row.message.content), SWAMPED);
    let seen = transcript::read_seen(r.world.table.as_ref(), &r.conv, None)
        .await
        .unwrap();
    assert_eq!(seen.last().unwrap().row.text.as_deref(), Some(SWAMPED));
    assert_eq!(r.outbox.texts(), [SWAMPED, SWAMPED]);
}

async fn model_call_hangs(r: Rig) {
    r.model.push(Err(LlmError::Timeout));
    assert_eq!(Rig::text(&r.say("m1", "hello").await), TIMED_OUT);
    // The next turn works and the history alternates: user, assistant(timeout), user.
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Hi!")],
        StopReason::EndTurn,
    )));
    assert_eq!(Rig::text(&r.say("m2", "hello?").await), "Hi!");
    let roles: Vec<Role> = r
        .model
        .requests()
        .last()
        .unwrap()
        .messages
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
}

async fn replay_rejected(r: Rig) {
    // Turn 1: the model thinks, calls a tool, then answers.
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![
            ContentBlock::thinking("I should add it", "sig-old"),
            ContentBlock::tool_use("tu_1", "add_note", json!({"title": "milk"})),
        ],
        StopReason::ToolUse,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![
            ContentBlock::thinking("done", "sig-old-2"),
            ContentBlock::text("Added milk."),
        ],
        StopReason::EndTurn,
    )));
    r.say("m1", "note milk").await;
    // Turn 2: the provider rejects the replayed signatures once, then answers.
    r.model.push(Err(LlmError::invalid_request(
        "messages.1.content.0: Invalid `signature` in `thinking` block",
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Sure.")],
        StopReason::EndTurn,
    )));
    assert_eq!(Rig::text(&r.say("m2", "thanks").await), "Sure.");
    let reqs = r.model.requests();
    let rejected = &reqs[2];
    let retried = &reqs[3];
    let has_reasoning = |req: &steward_llm::CreateRequest| {
        req.messages
            .iter()
            .flat_map(|m| &m.content)
            .any(ContentBlock::is_reasoning)
    };
    assert!(has_reasoning(rejected));
    assert!(!has_reasoning(retried), "reasoning stripped for the retry");
    // Text and tool calls stay.
    let kinds: Vec<_> = retried
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| b.type_name())
        .collect();
    assert!(
        kinds.contains(&"tool_use") && kinds.contains(&"tool_result") && kinds.contains(&"text")
    );
    // The stored rows are untouched: the thinking blocks are still there.
    let rows = model_rows(&r).await;
    assert!(
        rows.iter()
            .flat_map(|r| &r.row.message.content)
            .any(ContentBlock::is_reasoning)
    );
    // Later requests keep the stripped prefix (stable from now on), without a new rejection.
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Ok.")],
        StopReason::EndTurn,
    )));
    r.say("m3", "ok").await;
    let reqs = r.model.requests();
    assert!(!has_reasoning(&reqs[4]));
    assert_eq!(
        support::without_cache_marks(&reqs[4].messages[..retried.messages.len()]),
        support::without_cache_marks(&retried.messages)
    );
}

async fn optional_api_feature_rejected(r: Rig) {
    r.model.push(Err(LlmError::InvalidRequest {
        message: "output_config.effort: Extra inputs are not permitted".into(),
        kind: InvalidKind::OptionalFeatureRejected,
    }));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Hello.")],
        StopReason::EndTurn,
    )));
    assert!(!r.agent.is_lean());
    assert_eq!(Rig::text(&r.say("m1", "hi").await), "Hello.");
    assert!(r.agent.is_lean(), "lean mode switched on, process-wide");
    let reqs = r.model.requests();
    assert!(
        reqs[0].output_config.is_some() && reqs[0].thinking.is_some(),
        "set explicitly at first"
    );
    assert!(reqs[1].output_config.is_none() && reqs[1].thinking.is_none());
}

async fn tool_throws_a_bug(mut r: Rig) {
    r.model = r
        .model
        .clone()
        .tool_use("tu_1", "explode", json!({}))
        .text("Sorry, that failed.");
    assert_eq!(
        Rig::text(&r.say("m1", "explode").await),
        "Sorry, that failed."
    );
    let results = r.last_results();
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "an error result");
    assert!(
        results[0].1.to_lowercase().contains("internal error"),
        "{}",
        results[0].1
    );
    assert!(
        !results[0].1.contains("kaboom"),
        "no detail leaks to the model"
    );
}

async fn tool_returns_a_validation_error(r: Rig) {
    let r = Rig {
        model: r
            .model
            .clone()
            .tool_use("tu_1", "add_note", json!({"title": 7, "priority": 9}))
            .tool_use("tu_2", "add_note", json!({"title": "milk"}))
            .text("Added."),
        ..r
    };
    assert_eq!(Rig::text(&r.say("m1", "add milk").await), "Added.");
    let reqs = r.model.requests();
    let first_results = &reqs[1].messages.last().unwrap().content;
    let ContentBlock::ToolResult(res) = &first_results[0] else {
        panic!()
    };
    let Some(steward_llm::ToolResultContent::Text(text)) = &res.content else {
        panic!()
    };
    assert_eq!(res.is_error, Some(true));
    assert!(
        text.contains("Invalid arguments") && text.contains("title") && text.contains("priority"),
        "{text}"
    );
    assert_eq!(r.notes_count().await, 1, "the corrected call ran once");
}

async fn duplicate_webhook_delivery(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Hi.")],
        StopReason::EndTurn,
    )));
    r.say("wamid.1", "hi").await;
    assert_eq!(r.say("wamid.1", "hi").await, TurnOutcome::Duplicate);
    assert_eq!(r.model.calls(), 1);
    assert_eq!(r.outbox.texts(), ["Hi."]);
}

async fn two_messages_in_quick_succession(r: Rig) {
    use steward_store::{
        Handler, HandlerError, InProcessQueue, QueueConfig, QueuedMessage, TurnQueue,
    };
    struct Turns(Arc<Rig>);
    #[async_trait::async_trait]
    impl Handler for Turns {
        async fn handle(&self, m: QueuedMessage) -> Result<(), HandlerError> {
            self.0
                .agent
                .handle(&self.0.input(&m.dedupe_id, &m.body), self.0.outbox.as_ref())
                .await
                .map(|_| ())
                .map_err(|e| HandlerError(e.to_string()))
        }
    }
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::tool_use(
            "tu_1",
            "add_note",
            json!({"title": "first"}),
        )],
        StopReason::ToolUse,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Added first.")],
        StopReason::EndTurn,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Second seen.")],
        StopReason::EndTurn,
    )));
    let rig = Arc::new(r);
    let queue = InProcessQueue::start(
        Arc::clone(&rig.world.table),
        Arc::new(Turns(Arc::clone(&rig))),
        QueueConfig::default(),
    )
    .await
    .unwrap();
    queue
        .enqueue(rig.conv.as_str(), "m1", "add first")
        .await
        .unwrap();
    queue
        .enqueue(rig.conv.as_str(), "m2", "and then?")
        .await
        .unwrap();
    for _ in 0..500 {
        if rig.outbox.texts().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(rig.outbox.texts(), ["Added first.", "Second seen."]);
    // The second turn's request saw the whole first turn: never interleaved.
    let reqs = rig.model.requests();
    let roles: Vec<Role> = reqs[2].messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
    queue.shutdown(Duration::from_secs(1)).await;
}

async fn model_loops(r: Rig) {
    // Different arguments each time, so the loop breaker (same call three times) stays out
    // of it and the call cap is what stops the turn.
    for i in 0..20 {
        r.model.push(Ok(steward_llm::CreateResponse::new(
            vec![ContentBlock::tool_use(
                format!("tu_{i}"),
                "get_note",
                json!({ "id": format!("note-{i}") }),
            )],
            StopReason::ToolUse,
        )));
    }
    assert_eq!(Rig::text(&r.say("m1", "loop").await), BAIL_OUT);
    assert_eq!(r.model.calls(), 12, "hard cap on model calls per message");
    let rows = model_rows(&r).await;
    assert_eq!(rows.last().unwrap().row.source, RowSource::Harness);
    assert_eq!(
        rows.len(),
        1 + 12 * 2 + 1,
        "user row, 12 rounds, the bail-out"
    );
}

async fn model_refuses(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("")],
        StopReason::Refusal,
    )));
    assert_eq!(Rig::text(&r.say("m1", "something bad").await), REFUSED);
    let rows = model_rows(&r).await;
    assert_eq!(
        rows.last().unwrap().row.source,
        RowSource::Harness,
        "the honest reply is recorded"
    );
}

async fn account_paused(r: Rig) {
    accounts::pause(r.world.table.as_ref(), &r.user)
        .await
        .unwrap();
    assert_eq!(Rig::text(&r.say("m1", "add a note").await), PAUSED);
    assert_eq!(r.model.calls(), 0, "answered without calling the model");
}

async fn no_api_key(backend: Backend) -> Option<Rig> {
    Rig::with(
        backend,
        RigOptions {
            model: false,
            ..RigOptions::default()
        },
    )
    .await
}

async fn no_api_key_configured(r: Rig) {
    assert_eq!(Rig::text(&r.say("m1", "hi").await), NO_MODEL);
    assert_eq!(r.outbox.texts(), [NO_MODEL]);
}

async fn capped(backend: Backend) -> Option<Rig> {
    let limits = TurnLimits {
        messages_per_hour: 3,
        ..TurnLimits::default()
    };
    Rig::with(
        backend,
        RigOptions {
            limits,
            ..RigOptions::default()
        },
    )
    .await
}

async fn hourly_cap_answers_without_the_model(r: Rig) {
    for i in 0..3 {
        r.model.push(Ok(steward_llm::CreateResponse::new(
            vec![ContentBlock::text("ok")],
            StopReason::EndTurn,
        )));
        r.say(&format!("m{i}"), "hi").await;
    }
    assert_eq!(Rig::text(&r.say("m3", "hi").await), BUSY);
    assert_eq!(r.model.calls(), 3);
    r.world.clock.advance_millis(60 * 60 * 1000);
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("back")],
        StopReason::EndTurn,
    )));
    assert_eq!(
        Rig::text(&r.say("m4", "hi").await),
        "back",
        "a new hour, a new allowance"
    );
}

// ---- the loop ----------------------------------------------------------------------------

async fn tools_run_in_order_and_results_go_back_together(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![
            ContentBlock::text("Adding both."),
            ContentBlock::tool_use("tu_a", "add_note", json!({"title": "first"})),
            ContentBlock::tool_use("tu_b", "add_note", json!({"title": "second"})),
            ContentBlock::tool_use("tu_c", "list_notes", json!({})),
        ],
        StopReason::ToolUse,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Done: 2 notes.")],
        StopReason::EndTurn,
    )));
    assert_eq!(Rig::text(&r.say("m1", "add two").await), "Done: 2 notes.");
    let results = r.last_results();
    let ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["tu_a", "tu_b", "tu_c"],
        "one user message with every result, in order"
    );
    assert!(
        results[2].1.contains("2 notes"),
        "the list ran after both adds: {}",
        results[2].1
    );
}

async fn tool_results_are_capped(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::tool_use(
            "tu_1",
            "big_list",
            json!({"count": 5000}),
        )],
        StopReason::ToolUse,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Long list.")],
        StopReason::EndTurn,
    )));
    r.say("m1", "big").await;
    let results = r.last_results();
    assert!(results[0].1.chars().count() <= steward_harness::TOOL_RESULT_CHARS_MAX);
    assert!(results[0].1.contains("truncated"));
}

async fn max_tokens_says_the_answer_was_cut_off(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![
            ContentBlock::text("Here is the start of a long"),
            ContentBlock::tool_use("tu_1", "add_note", json!({"title": "half"})),
        ],
        StopReason::MaxTokens,
    )));
    let text = Rig::text(&r.say("m1", "write a lot").await);
    assert!(
        text.starts_with("Here is the start of a long") && text.contains("cut off"),
        "{text}"
    );
    assert_eq!(
        r.notes_count().await,
        0,
        "a call cut off mid-way is not run"
    );
    // The history stays valid: the cut tool_use got a result.
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("ok")],
        StopReason::EndTurn,
    )));
    r.say("m2", "continue").await;
    let req = r.model.requests().pop().unwrap();
    let results: Vec<_> = req
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| b.type_name() == Some("tool_result"))
        .collect();
    assert_eq!(results.len(), 1);
}

async fn pause_turn_continues(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Working…")],
        StopReason::PauseTurn,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text(" done.")],
        StopReason::EndTurn,
    )));
    assert_eq!(Rig::text(&r.say("m1", "go").await), "done.");
    assert_eq!(r.model.calls(), 2);
}

async fn unknown_stop_reason_is_final_text(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Fine.")],
        StopReason::Unknown("brand_new".into()),
    )));
    assert_eq!(Rig::text(&r.say("m1", "go").await), "Fine.");
}

async fn replay_is_append_only_and_byte_stable(r: Rig) {
    let script = [
        vec![ContentBlock::tool_use(
            "tu_1",
            "add_note",
            // A whole number written as a decimal: stored, and read by later turns, as `1`.
            json!({"title": "one", "weight": 1.0}),
        )],
        vec![ContentBlock::text("Added one.")],
        vec![
            ContentBlock::thinking("hm", "sig"),
            ContentBlock::tool_use("tu_2", "list_notes", json!({})),
        ],
        vec![ContentBlock::text("You have one note.")],
        vec![ContentBlock::text("Bye!")],
    ];
    for blocks in script {
        let stop = if blocks.iter().any(|b| b.type_name() == Some("tool_use")) {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        r.model
            .push(Ok(steward_llm::CreateResponse::new(blocks, stop)));
    }
    r.say("m1", "add one").await;
    r.world.clock.advance_millis(60_000);
    r.say("m2", "how many?").await;
    r.world.clock.advance_millis(60_000);
    r.say("m3", "bye").await;
    let reqs = r.model.requests();
    assert_eq!(reqs.len(), 5);
    for pair in reqs.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(b.messages.len() > a.messages.len());
        let a_msgs = serde_json::to_vec(&support::without_cache_marks(&a.messages)).unwrap();
        let b_prefix = serde_json::to_vec(&support::without_cache_marks(
            &b.messages[..a.messages.len()],
        ))
        .unwrap();
        assert_eq!(
            a_msgs, b_prefix,
            "request N+1 starts with request N's messages, byte for byte"
        );
        assert_eq!(
            serde_json::to_vec(&a.system).unwrap(),
            serde_json::to_vec(&b.system).unwrap()
        );
        assert_eq!(
            serde_json::to_vec(&a.tools).unwrap(),
            serde_json::to_vec(&b.tools).unwrap()
        );
        assert!(
            Arc::ptr_eq(&a.tools, &b.tools),
            "every request shares the one frozen tool list"
        );
    }
    // Requests share the stored rows' messages: the breakpoint goes on the request's own copy
    // of its newest message, so no earlier message ever carries one.
    for req in &reqs {
        let marked = req
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| {
                serde_json::to_value(b)
                    .unwrap()
                    .get("cache_control")
                    .is_some()
            })
            .count();
        assert_eq!(
            marked, 1,
            "one breakpoint per request, on its newest message"
        );
    }
    // The newest message carries the cache breakpoint; the context block is fresh each turn.
    let last = reqs.last().unwrap().messages.last().unwrap();
    let ContentBlock::Text(t) = last.content.last().unwrap() else {
        panic!()
    };
    assert!(t.cache_control.is_some());
    assert!(
        t.text.starts_with("<context>") && t.text.contains("<user_message>\nbye\n</user_message>")
    );
}

async fn usage_is_logged_per_user_per_month(r: Rig) {
    let mut resp =
        steward_llm::CreateResponse::new(vec![ContentBlock::text("Hi")], StopReason::EndTurn);
    resp.usage.input_tokens = 100;
    resp.usage.output_tokens = 20;
    resp.usage.cache_read_input_tokens = 900;
    resp.usage.cache_creation_input_tokens = 50;
    r.model.push(Ok(resp.clone()));
    r.model.push(Ok(resp));
    r.say("m1", "hi").await;
    r.say("m2", "hi").await;
    let month = usage::month_of(r.world.clock.now_millis_for_tests());
    let u = usage::get(r.world.table.as_ref(), &r.user, &month)
        .await
        .unwrap();
    assert_eq!(
        (
            u.calls,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (2, 200, 40, 1800, 100)
    );
}

async fn a_failed_send_is_retried_and_resends_the_same_reply(r: Rig) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text("Hello!")],
        StopReason::EndTurn,
    )));
    r.outbox
        .send_fails
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(
        r.agent
            .handle(&r.input("m1", "hi"), r.outbox.as_ref())
            .await
            .is_err()
    );
    r.outbox
        .send_fails
        .store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(Rig::text(&r.say("m1", "hi").await), "Hello!");
    assert_eq!(
        r.model.calls(),
        1,
        "the recorded reply is resent, the model is not asked again"
    );
    assert_eq!(r.say("m1", "hi").await, TurnOutcome::Duplicate);
}

// ---- the history kept between turns --------------------------------------------------------

/// Passes everything through, counting the model-transcript rows the store hands over.
#[derive(Debug)]
struct ModelReads {
    inner: Arc<dyn Table>,
    rows: AtomicUsize,
}

impl ModelReads {
    fn rows(&self) -> usize {
        self.rows.load(Ordering::SeqCst)
    }

    fn count<'a>(&self, sks: impl Iterator<Item = &'a str>) {
        let n = sks.filter(|sk| sk.starts_with("MODEL#")).count();
        self.rows.fetch_add(n, Ordering::SeqCst);
    }
}

#[async_trait]
impl Table for ModelReads {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let item = self.inner.get(pk, sk).await?;
        self.count(item.iter().map(|i| i.sk.as_str()));
        Ok(item)
    }
    async fn query(&self, q: &Query) -> Result<Page, StoreError> {
        let page = self.inner.query(q).await?;
        self.count(page.items.iter().map(|i| i.sk.as_str()));
        Ok(page)
    }
    async fn query_raw(&self, q: &Query) -> Result<Page<RawItem>, StoreError> {
        let page = self.inner.query_raw(q).await?;
        self.count(page.items.iter().map(|i| i.sk.as_str()));
        Ok(page)
    }
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.inner.write(ops).await
    }
}

async fn counted(backend: Backend) -> Option<(Rig, Arc<ModelReads>)> {
    let world = World::on(backend).await?;
    let reads = Arc::new(ModelReads {
        inner: Arc::clone(&world.table),
        rows: AtomicUsize::new(0),
    });
    let world = World {
        table: Arc::clone(&reads) as Arc<dyn Table>,
        clock: world.clock,
    };
    Some((Rig::build(world, RigOptions::default()).await, reads))
}

/// The model's answers for one turn that adds a note: the call, then the reply.
fn add_note_turn(r: &Rig, title: &str) {
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::tool_use(
            format!("tu_{title}"),
            "add_note",
            json!({"title": title}),
        )],
        StopReason::ToolUse,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![ContentBlock::text(format!("Added {title}."))],
        StopReason::EndTurn,
    )));
}

async fn a_turn_keeps_the_rows_it_wrote_and_reads_only_another_processs(
    (r, reads): (Rig, Arc<ModelReads>),
) {
    // Turn 1 writes four rows: the person's, the call, its result, the reply.
    add_note_turn(&r, "one");
    r.say("m1", "add one").await;
    assert_eq!(model_rows(&r).await.len(), 4);

    // Turn 2 finds them in memory: no model row comes back from the store.
    let before = reads.rows();
    add_note_turn(&r, "two");
    assert_eq!(Rig::text(&r.say("m2", "add two").await), "Added two.");
    assert_eq!(
        reads.rows() - before,
        0,
        "turn 2 read back none of the rows the agent wrote"
    );

    // Turn 3 runs in another process, which reads the segment whole.
    let other = r.another_instance();
    let before = reads.rows();
    add_note_turn(&r, "three");
    r.say_through(&other, "m3", "add three").await;
    assert_eq!(
        reads.rows() - before,
        8,
        "a fresh process reads what is stored"
    );

    // Turn 4, back in the first: it reads only turn 3's rows, and its history is the store's.
    let before = reads.rows();
    add_note_turn(&r, "four");
    r.say("m4", "add four").await;
    assert_eq!(
        reads.rows() - before,
        4,
        "only the rows another process wrote"
    );
    let reqs = r.model.requests();
    assert_eq!(reqs.len(), 8);
    let stored = model_rows(&r).await;
    let turn_4_first = &reqs[6];
    let from_store = transcript::to_messages(&stored[..12], None);
    assert_eq!(
        serde_json::to_vec(&support::without_cache_marks(
            &turn_4_first.messages[..from_store.len()]
        ))
        .unwrap(),
        serde_json::to_vec(&support::without_cache_marks(&from_store)).unwrap(),
        "turn 4's first request starts with the stored rows, byte for byte"
    );
}

mod kept {
    use super::*;
    steward_store::backend_tests!(setup = counted;
        a_turn_keeps_the_rows_it_wrote_and_reads_only_another_processs);
}

trait NowForTests {
    fn now_millis_for_tests(&self) -> i64;
}
impl NowForTests for steward_store::ManualClock {
    fn now_millis_for_tests(&self) -> i64 {
        use steward_store::Clock;
        self.now_millis()
    }
}

steward_store::backend_tests!(setup = rig;
    provider_rate_limit_or_overload,
    model_call_hangs,
    replay_rejected,
    optional_api_feature_rejected,
    tool_throws_a_bug,
    tool_returns_a_validation_error,
    duplicate_webhook_delivery,
    two_messages_in_quick_succession,
    model_loops,
    model_refuses,
    account_paused,
    tools_run_in_order_and_results_go_back_together,
    tool_results_are_capped,
    max_tokens_says_the_answer_was_cut_off,
    pause_turn_continues,
    unknown_stop_reason_is_final_text,
    replay_is_append_only_and_byte_stable,
    usage_is_logged_per_user_per_month,
    a_failed_send_is_retried_and_resends_the_same_reply,
);

mod no_key {
    use super::*;
    steward_store::backend_tests!(setup = no_api_key; no_api_key_configured);
}

mod cap {
    use super::*;
    steward_store::backend_tests!(setup = capped; hourly_cap_answers_without_the_model);
}
