//! Crash and resume: a fault-injecting table makes the k-th write fail (before or after it
//! takes effect, and every write after it), for every k a turn makes. Re-running the same
//! message on the healthy table must then give exactly one user row, no doubled change, at
//! most one extra model call per crash, alternating roles with every tool_use paired to its
//! tool_result, and exactly one final reply.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::json;
use steward_harness::transcript::{self, RowSource};
use steward_harness::{Agent, Domain, ModelSettings, TurnLimits, TurnOutcome, keys};
use steward_llm::{
    ContentBlock, CreateRequest, CreateResponse, LlmClient, LlmError, Role, StopReason,
};
use steward_store::testing::Backend;
use steward_store::{Item, Page, Query, StoreError, Table, WriteOp};

use chat::rig::{NotesContext, RecOutbox, Rig};
use support::{World, notes};

/// Passes everything through until `budget` writes have happened, then fails every write:
/// before it takes effect, or (with `after`) after it did, as a crash right after a commit.
#[derive(Debug)]
struct Faulty {
    inner: Arc<dyn Table>,
    budget: AtomicI64,
    after: bool,
    writes: AtomicUsize,
    crashed: AtomicBool,
}

#[async_trait]
impl Table for Faulty {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.inner.get(pk, sk).await
    }
    async fn query(&self, q: &Query) -> Result<Page, StoreError> {
        self.inner.query(q).await
    }
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        if self.crashed.load(Ordering::SeqCst) || self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            if self.after && !self.crashed.swap(true, Ordering::SeqCst) {
                self.inner.write(ops).await?;
            }
            self.crashed.store(true, Ordering::SeqCst);
            return Err(StoreError::Backend("injected crash".into()));
        }
        self.inner.write(ops).await
    }
}

/// A model that answers from the request, the same way every time: with no tool result yet
/// in this turn, it asks to add a note; after one, it says `reply` (an empty reply makes the
/// person see the fallback line, which the transcript then records as shown).
#[derive(Debug, Default)]
struct Deterministic {
    calls: AtomicUsize,
    reply: &'static str,
}

#[async_trait]
impl LlmClient for Deterministic {
    async fn create(&self, req: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let last = req.messages.last().unwrap();
        let answered = last
            .content
            .iter()
            .any(|b| b.type_name() == Some("tool_result"));
        Ok(if answered {
            CreateResponse::new(vec![ContentBlock::text(self.reply)], StopReason::EndTurn)
        } else {
            CreateResponse::new(
                vec![
                    ContentBlock::thinking("add it", "sig"),
                    ContentBlock::tool_use(format!("tu_{n}"), "add_note", json!({"title": "milk"})),
                ],
                StopReason::ToolUse,
            )
        })
    }
}

fn agent(table: Arc<dyn Table>, world: &World, model: Arc<Deterministic>) -> Agent {
    Agent::new(
        table,
        world.clock_arc(),
        Some(model),
        ModelSettings::new("claude-test"),
        TurnLimits::default(),
        Domain {
            product: "Steward".into(),
            prompt: "# Notes".into(),
            registry: Arc::new(notes::registry(Arc::new(notes::Calls::default()))),
            context: Arc::new(NotesContext),
        },
    )
}

/// What the model says at the end of the turn, and what the person then sees.
#[derive(Debug, Clone, Copy)]
struct Ending {
    reply: &'static str,
    seen: &'static str,
}

const PLAIN: Ending = Ending {
    reply: "Added milk.",
    seen: "Added milk.",
};

const FALLBACK: Ending = Ending {
    reply: "",
    seen: steward_harness::shaping::EMPTY_REPLY_FALLBACK,
};

async fn run_case(
    backend: Backend,
    budget: i64,
    after: bool,
    ending: Ending,
) -> Option<(usize, bool)> {
    let world = World::on(backend).await?;
    let probe = Rig::build(world.clone(), Default::default()).await;
    let user = probe.user.clone();
    let input = probe.input("wamid.1", "note milk");
    let model = Arc::new(Deterministic {
        calls: AtomicUsize::new(0),
        reply: ending.reply,
    });
    let outbox = RecOutbox::new(steward_channels::ChannelProfile::TELEGRAM);
    let faulty = Arc::new(Faulty {
        inner: Arc::clone(&world.table),
        budget: AtomicI64::new(budget),
        after,
        writes: AtomicUsize::new(0),
        crashed: AtomicBool::new(false),
    });
    let first = agent(faulty.clone(), &world, Arc::clone(&model))
        .handle(&input, &outbox)
        .await;
    let crashed = faulty.crashed.load(Ordering::SeqCst);
    assert_eq!(
        first.is_err(),
        crashed,
        "budget {budget}: an injected crash surfaces as an error"
    );
    let calls_before = model.calls.load(Ordering::SeqCst);

    // Redelivery on a healthy store.
    let second = agent(Arc::clone(&world.table), &world, Arc::clone(&model))
        .handle(&input, &outbox)
        .await
        .unwrap();
    if !crashed {
        assert_eq!(second, TurnOutcome::Duplicate);
    } else if second == TurnOutcome::Duplicate {
        // Only when the crash came right after the very last write (marking the turn done).
        assert!(
            after,
            "budget {budget}: a turn that did not finish is resumed"
        );
    }
    let third = agent(Arc::clone(&world.table), &world, Arc::clone(&model))
        .handle(&input, &outbox)
        .await
        .unwrap();
    assert_eq!(third, TurnOutcome::Duplicate, "done means done");

    let table = world.table.as_ref();
    let rows = transcript::load_segment(table, &probe.conv, 0)
        .await
        .unwrap();
    let user_rows = rows
        .iter()
        .filter(|r| r.row.source == RowSource::User)
        .count();
    assert_eq!(
        user_rows, 1,
        "budget {budget}/{after}: exactly one user row"
    );
    let notes = table
        .query(&Query::prefix(keys::user_pk(&user), "NOTE#"))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(
        notes, 1,
        "budget {budget}/{after}: the change happened exactly once"
    );
    let total_calls = model.calls.load(Ordering::SeqCst);
    assert!(
        total_calls <= 3,
        "budget {budget}/{after}: at most one extra model call ({total_calls})"
    );
    assert!(total_calls >= calls_before);

    let messages = transcript::to_messages(&rows, None);
    for pair in messages.windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "roles alternate");
    }
    assert_eq!(messages.first().map(|m| m.role), Some(Role::User));
    let uses: Vec<String> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u.id.clone()),
            _ => None,
        })
        .collect();
    let results: Vec<String> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r.tool_use_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(uses, results, "every tool_use paired with its result");

    let seen = transcript::read_seen(table, &probe.conv, None)
        .await
        .unwrap();
    let words: Vec<_> = seen.iter().filter(|s| s.row.role == Role::User).collect();
    assert_eq!(
        words.len(),
        1,
        "budget {budget}/{after}: the words seen once"
    );
    assert_eq!(words[0].row.text.as_deref(), Some("note milk"));
    let replies: Vec<_> = seen
        .iter()
        .filter(|s| s.row.role == Role::Assistant && s.row.text.is_some())
        .collect();
    assert_eq!(replies.len(), 1, "exactly one final reply recorded");
    assert_eq!(replies[0].row.text.as_deref(), Some(ending.seen));
    let sent = outbox.texts();
    assert!(
        (1..=2).contains(&sent.len()) && sent.iter().all(|t| t == ending.seen),
        "sent at least once: {sent:?}"
    );
    let shown: Vec<_> = rows
        .iter()
        .filter(|r| r.row.source == RowSource::Shown)
        .collect();
    if ending.reply == ending.seen {
        assert!(
            shown.is_empty(),
            "budget {budget}/{after}: nothing to record"
        );
    } else {
        assert_eq!(
            shown.len(),
            1,
            "budget {budget}/{after}: what the person saw is recorded exactly once"
        );
        assert!(
            steward_llm::text_of(&shown[0].row.message.content).contains(ending.seen),
            "budget {budget}/{after}"
        );
        assert_eq!(
            rows.last().map(|r| r.row.source),
            Some(RowSource::Shown),
            "budget {budget}/{after}: the last row of the turn"
        );
    }
    Some((faulty.writes.load(Ordering::SeqCst), crashed))
}

async fn crash_at_every_write(backend: Backend, ending: Ending) {
    // A clean run tells how many writes a turn makes.
    let Some((writes, crashed)) = run_case(backend, i64::MAX, false, ending).await else {
        eprintln!("skipping: backend unavailable");
        return;
    };
    assert!(!crashed);
    assert!(
        writes >= 8,
        "a turn with a tool call makes several writes ({writes})"
    );
    for k in 0..writes as i64 {
        run_case(backend, k, false, ending).await;
        run_case(backend, k, true, ending).await;
    }
}

/// The claim that opens a turn stores the person's words in its own transaction: a crash at
/// the turn's next write leaves them in the visible transcript, before any redelivery.
#[tokio::test]
async fn the_words_are_stored_with_the_claim() {
    let world = World::on(Backend::Sqlite).await.unwrap();
    let probe = Rig::build(world.clone(), Default::default()).await;
    let input = probe.input("wamid.1", "note milk");
    let faulty = Arc::new(Faulty {
        inner: Arc::clone(&world.table),
        budget: AtomicI64::new(1),
        after: false,
        writes: AtomicUsize::new(0),
        crashed: AtomicBool::new(false),
    });
    let outbox = RecOutbox::new(steward_channels::ChannelProfile::TELEGRAM);
    let model = Arc::new(Deterministic::default());
    let crashed = agent(faulty.clone(), &world, model)
        .handle(&input, &outbox)
        .await;
    assert!(crashed.is_err(), "the write after the claim fails");
    assert_eq!(
        faulty.writes.load(Ordering::SeqCst),
        3,
        "the claim, the usage record (its failure is only logged), then the person's row with \
         the model's answer"
    );
    let seen = transcript::read_seen(world.table.as_ref(), &probe.conv, None)
        .await
        .unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].turn, 1);
    assert_eq!(seen[0].row.role, Role::User);
    assert_eq!(seen[0].row.text.as_deref(), Some("note milk"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crash_and_resume_on_sqlite() {
    crash_at_every_write(Backend::Sqlite, PLAIN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crash_and_resume_with_a_fallback_reply_on_sqlite() {
    crash_at_every_write(Backend::Sqlite, FALLBACK).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crash_and_resume_on_dynamodb() {
    crash_at_every_write(Backend::Dynamo, PLAIN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crash_and_resume_with_a_fallback_reply_on_dynamodb() {
    crash_at_every_write(Backend::Dynamo, FALLBACK).await;
}

// ---- the person's row, stored with the first answer ----------------------------------------

/// What [`FirstAnswer`] does at the turn's first in-order write.
#[derive(Debug, Clone, Copy, PartialEq)]
enum AtFirstAnswer {
    /// Passes it through.
    Pass,
    /// Fails it before it takes effect (a crash between the model call and the write).
    Fail,
    /// Stores a different person's row at its first key first, as another attempt of the
    /// same turn would with another context block.
    Race,
}

/// Passes everything through, noting the sort keys of the model rows each store call writes,
/// and does [`AtFirstAnswer`] once at the first `write_in_order`.
#[derive(Debug)]
struct FirstAnswer {
    inner: Arc<dyn Table>,
    calls: std::sync::Mutex<Vec<Vec<String>>>,
    at_first: std::sync::Mutex<AtFirstAnswer>,
}

/// The other attempt's words, in the row [`AtFirstAnswer::Race`] stores.
const RACER: &str = "<context>another attempt's block</context> add one";

impl FirstAnswer {
    fn note(&self, ops: &[WriteOp]) {
        let sks: Vec<String> = ops
            .iter()
            .map(|op| op.key().1.to_owned())
            .filter(|sk| sk.starts_with("MODEL#"))
            .collect();
        if !sks.is_empty() {
            self.calls.lock().unwrap().push(sks);
        }
    }
}

#[async_trait]
impl Table for FirstAnswer {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.inner.get(pk, sk).await
    }
    async fn query(&self, q: &Query) -> Result<Page, StoreError> {
        self.inner.query(q).await
    }
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.note(&ops);
        self.inner.write(ops).await
    }
    async fn write_in_order(&self, ops: Vec<WriteOp>) -> Result<usize, StoreError> {
        let act = std::mem::replace(&mut *self.at_first.lock().unwrap(), AtFirstAnswer::Pass);
        match act {
            AtFirstAnswer::Pass => {}
            AtFirstAnswer::Fail => return Err(StoreError::Backend("injected crash".into())),
            AtFirstAnswer::Race => {
                let Some(WriteOp::Put { item, .. }) = ops.first() else {
                    panic!("the first in-order write puts the person's row: {ops:?}");
                };
                let mut theirs: transcript::ModelRow = item.parse().unwrap();
                theirs.message = steward_llm::Message::user(vec![ContentBlock::text(RACER)]).into();
                let theirs = Item::from_value(item.pk.clone(), item.sk.clone(), &theirs).unwrap();
                self.inner
                    .write(vec![WriteOp::put_if_absent(theirs)])
                    .await
                    .unwrap();
            }
        }
        self.note(&ops);
        self.inner.write_in_order(ops).await
    }
}

async fn first_answer(backend: Backend) -> Option<(Rig, Arc<FirstAnswer>)> {
    let world = World::on(backend).await?;
    let watched = Arc::new(FirstAnswer {
        inner: Arc::clone(&world.table),
        calls: std::sync::Mutex::new(Vec::new()),
        at_first: std::sync::Mutex::new(AtFirstAnswer::Pass),
    });
    let world = World {
        table: Arc::clone(&watched) as Arc<dyn Table>,
        clock: world.clock,
    };
    Some((Rig::build(world, Default::default()).await, watched))
}

/// The model's next answers: a call to add a note `title` (as `id`), then `reply`.
fn add_note_answers(r: &Rig, id: &str, reply: &str) {
    r.model.push(Ok(CreateResponse::new(
        vec![ContentBlock::tool_use(
            id,
            "add_note",
            json!({"title": "one"}),
        )],
        StopReason::ToolUse,
    )));
    r.model.push(Ok(CreateResponse::new(
        vec![ContentBlock::text(reply)],
        StopReason::EndTurn,
    )));
}

async fn model_rows(r: &Rig) -> Vec<transcript::PlacedRow> {
    transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
        .await
        .unwrap()
}

/// `a`'s messages as the start of `b`'s, byte for byte (cache marks aside).
fn starts_with(b: &[Arc<steward_llm::Message>], a: &[Arc<steward_llm::Message>]) -> bool {
    b.len() >= a.len()
        && serde_json::to_vec(&support::without_cache_marks(a)).unwrap()
            == serde_json::to_vec(&support::without_cache_marks(&b[..a.len()])).unwrap()
}

/// A turn's four model rows take three store calls: the person's row goes with the model's
/// first answer, then the tool's result, then the reply.
async fn the_persons_row_is_stored_with_the_first_answer((r, watched): (Rig, Arc<FirstAnswer>)) {
    add_note_answers(&r, "tu_1", "Added one.");
    assert_eq!(Rig::text(&r.say("m1", "add one").await), "Added one.");
    let sk = |step| keys::model_sk(0, 1, step);
    assert_eq!(
        *watched.calls.lock().unwrap(),
        vec![vec![sk(0), sk(1)], vec![sk(2)], vec![sk(3)]]
    );
    assert_eq!(model_rows(&r).await.len(), 4);
}

/// A crash between the first model call and the write that stores its answer with the
/// person's row leaves neither: the resumed turn makes the row again (a fresh context block),
/// asks the model again, and from then on every request, this turn's and the next's, starts
/// with what is stored.
async fn a_crash_before_the_first_answer_is_stored_makes_the_row_again(
    (r, watched): (Rig, Arc<FirstAnswer>),
) {
    *watched.at_first.lock().unwrap() = AtFirstAnswer::Fail;
    r.model.push(Ok(CreateResponse::new(
        vec![ContentBlock::tool_use(
            "tu_1",
            "add_note",
            json!({"title": "one"}),
        )],
        StopReason::ToolUse,
    )));
    let crashed = r
        .agent
        .handle(&r.input("m1", "add one"), r.outbox.as_ref())
        .await;
    assert!(crashed.is_err(), "the injected crash surfaces");
    assert!(model_rows(&r).await.is_empty(), "no model row is stored");
    assert_eq!(r.notes_count().await, 0, "no tool ran");

    r.world.clock.advance_millis(60_000);
    add_note_answers(&r, "tu_2", "Added one.");
    assert_eq!(Rig::text(&r.say("m1", "add one").await), "Added one.");
    assert_eq!(r.notes_count().await, 1, "the change happened once");

    let rows = model_rows(&r).await;
    assert_eq!(rows.len(), 4);
    let reqs = r.model.requests();
    assert_eq!(reqs.len(), 3, "one model call more");
    let stored_person = transcript::to_messages(&rows[..1], None);
    assert!(
        !starts_with(&reqs[0].messages, &stored_person),
        "the crashed attempt's row is not the stored one (its context block is a minute older)"
    );
    assert!(starts_with(&reqs[1].messages, &stored_person));
    assert!(
        starts_with(&reqs[2].messages, &reqs[1].messages),
        "the second call starts with the first's messages"
    );

    r.model.push(Ok(CreateResponse::new(
        vec![ContentBlock::text("Bye!")],
        StopReason::EndTurn,
    )));
    r.say("m2", "bye").await;
    let next = r.model.requests();
    let stored = transcript::to_messages(&rows, None);
    assert!(
        starts_with(&next[3].messages, &stored),
        "the next turn starts with the stored rows, byte for byte"
    );
    assert!(starts_with(&next[3].messages, &reqs[2].messages));
}

/// Another attempt of the turn stored its person's row (another context block) while this one
/// was asking the model: this attempt's answer, made in answer to its own row, is not stored;
/// the model is asked again in answer to the stored row, and the turn goes on from there.
async fn another_attempts_row_stored_first_is_answered_again(
    (r, watched): (Rig, Arc<FirstAnswer>),
) {
    *watched.at_first.lock().unwrap() = AtFirstAnswer::Race;
    r.model.push(Ok(CreateResponse::new(
        vec![ContentBlock::tool_use(
            "tu_ours",
            "add_note",
            json!({"title": "one"}),
        )],
        StopReason::ToolUse,
    )));
    add_note_answers(&r, "tu_again", "Added one.");
    assert_eq!(Rig::text(&r.say("m1", "add one").await), "Added one.");

    let reqs = r.model.requests();
    assert_eq!(reqs.len(), 3, "one model call more");
    let text = |m: &steward_llm::Message| steward_llm::text_of(&m.content);
    assert!(!text(reqs[0].messages.last().unwrap()).contains(RACER));
    assert_eq!(
        text(reqs[1].messages.last().unwrap()),
        RACER,
        "asked again with theirs"
    );

    let rows = model_rows(&r).await;
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(text(&rows[0].row.message), RACER);
    assert_eq!(
        support::tool_use_ids(&rows[1].row.message),
        ["tu_again"],
        "the answer to the stored row"
    );
    assert_eq!(r.notes_count().await, 1, "the change happened once");
    assert!(starts_with(&reqs[2].messages, &reqs[1].messages));
}

/// A person's row too large for the store (the words fit the claim; with the context block
/// they no longer fit an item) is written before the model call, so the turn fails without
/// paying for one.
async fn a_persons_row_too_large_fails_before_the_model_is_asked(
    (r, watched): (Rig, Arc<FirstAnswer>),
) {
    let words = "a".repeat(steward_store::ITEM_BYTES_MAX - 200);
    let failed = r
        .agent
        .handle(&r.input("m1", &words), r.outbox.as_ref())
        .await;
    let err = failed.unwrap_err().to_string();
    assert!(err.contains("too large") || err.contains("bytes"), "{err}");
    assert!(r.model.requests().is_empty(), "no model call was made");
    assert_eq!(
        *watched.calls.lock().unwrap(),
        vec![vec![keys::model_sk(0, 1, 0)]],
        "the row was written alone, and refused"
    );
}

mod first_answer {
    use super::*;
    steward_store::backend_tests!(setup = first_answer;
        a_persons_row_too_large_fails_before_the_model_is_asked,
        the_persons_row_is_stored_with_the_first_answer,
        a_crash_before_the_first_answer_is_stored_makes_the_row_again,
        another_attempts_row_stored_first_is_answered_again);
}
