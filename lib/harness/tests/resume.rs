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
        2,
        "the claim, then one"
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
