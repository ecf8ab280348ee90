//! What a write call and a claim read before they write, and what they still catch without
//! reading again.
//!
//! The gate looks up the call's stored effect and the registry checks the account; the
//! registry and the audited commit then trust those reads instead of repeating them (each is a
//! round trip on DynamoDB). What changes in between is caught by the commit's conditions: an
//! account paused while the tool runs is refused, and a copy of the call that commits first is
//! replayed, on both backends. A claim and an update likewise start from the conversation record
//! their caller read, and a record changed since fails the versioned write and is read again.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use steward_harness::conversation::{self, Claim};
use steward_harness::gate::{self, GateOutcome, Surface};
use steward_harness::{
    Actor, Ctx, ToolErrorKind, ToolOutcome, ToolUseId, TurnOutcome, UserId, accounts, keys,
};
use steward_store::{Item, Page, Query, StoreError, Table, WriteOp};

use support::notes::{self, Calls};
use support::{World, effect};

/// What happens once, just before the first write that stores an effect (the call's commit).
type BeforeCommit =
    Box<dyn FnOnce(Arc<dyn Table>) -> futures::future::BoxFuture<'static, ()> + Send>;

/// Passes everything through, counting the reads of each sort key, and runs `before_commit`
/// (on the inner table) just before the first write that stores an effect.
struct Watched {
    inner: Arc<dyn Table>,
    gets: Mutex<HashMap<String, usize>>,
    before_commit: Mutex<Option<BeforeCommit>>,
}

impl Watched {
    fn new(inner: Arc<dyn Table>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            gets: Mutex::new(HashMap::new()),
            before_commit: Mutex::new(None),
        })
    }

    fn gets_of(&self, sk: &str) -> usize {
        self.gets.lock().unwrap().get(sk).copied().unwrap_or(0)
    }
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched").finish_non_exhaustive()
    }
}

#[async_trait]
impl Table for Watched {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        *self.gets.lock().unwrap().entry(sk.to_owned()).or_default() += 1;
        self.inner.get(pk, sk).await
    }
    async fn query(&self, q: &Query) -> Result<Page, StoreError> {
        self.inner.query(q).await
    }
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        let commits = ops.iter().any(|op| op.key().1.starts_with("EFFECT#"));
        if commits {
            let hook = self.before_commit.lock().unwrap().take();
            if let Some(hook) = hook {
                hook(Arc::clone(&self.inner)).await;
            }
        }
        self.inner.write(ops).await
    }
}

fn ctx_on(table: Arc<dyn Table>, w: &World, user: &UserId) -> Ctx {
    Ctx::new(table, w.clock_arc(), user.clone(), Actor::Agent)
}

fn surface() -> Surface {
    Surface::Chat {
        conversation: steward_harness::ConversationKey::telegram(42),
        turn: 1,
    }
}

/// Runs `add_note` through the gate as the model's call `tu_1`.
async fn add_through_gate(
    table: Arc<dyn Table>,
    w: &World,
    user: &UserId,
    title: &str,
) -> ToolOutcome {
    let registry = notes::registry(Arc::new(Calls::default()));
    let ctx = ctx_on(table, w, user).with_effect(effect("tu_1"));
    match gate::run(
        &registry,
        ctx,
        &surface(),
        "add_note",
        json!({"title": title}),
    )
    .await
    .unwrap()
    .unwrap()
    {
        GateOutcome::Ran(outcome) => outcome,
        other => panic!("add_note is not held: {other:?}"),
    }
}

/// The titles of the notes in `dump` (sort key, version, data).
fn titles(dump: &[(String, u64, serde_json::Value)]) -> Vec<String> {
    dump.iter()
        .filter(|(sk, _, _)| sk.starts_with("NOTE#"))
        .filter_map(|(_, _, data)| {
            data.get("title")
                .and_then(|t| t.as_str())
                .map(str::to_owned)
        })
        .collect()
}

async fn a_write_call_reads_its_effect_and_the_account_once(w: World) {
    let user = w.account("u1").await;
    let watched = Watched::new(Arc::clone(&w.table));
    let outcome = add_through_gate(watched.clone(), &w, &user, "Groceries").await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let effect_sk = keys::effect_sk(&ToolUseId::parse("tu_1").unwrap());
    assert_eq!(watched.gets_of(&effect_sk), 1, "the gate's look-up only");
    assert_eq!(
        watched.gets_of(keys::PROFILE_SK),
        1,
        "the registry's check only; the commit's condition carries its version"
    );
    assert_eq!(titles(&w.dump("USER#u1").await), ["Groceries"]);
}

async fn an_account_paused_while_the_tool_runs_is_refused_at_commit(w: World) {
    let user = w.account("u1").await;
    let watched = Watched::new(Arc::clone(&w.table));
    let paused_user = user.clone();
    *watched.before_commit.lock().unwrap() = Some(Box::new(move |inner| {
        Box::pin(async move {
            accounts::pause(inner.as_ref(), &paused_user).await.unwrap();
        })
    }));
    let outcome = add_through_gate(watched.clone(), &w, &user, "Groceries").await;
    let error = outcome.error_ref().expect("refused");
    assert_eq!(error.kind, ToolErrorKind::Forbidden, "{error:?}");
    assert!(
        error.message.contains(accounts::PAUSED_REASON),
        "{}",
        error.message
    );
    assert!(
        titles(&w.dump("USER#u1").await).is_empty(),
        "nothing written"
    );
    assert_eq!(
        watched.gets_of(keys::PROFILE_SK),
        2,
        "read again once the condition on the old version failed"
    );
}

async fn a_copy_that_commits_while_the_tool_runs_is_replayed(w: World) {
    let user = w.account("u1").await;
    let watched = Watched::new(Arc::clone(&w.table));
    let (copy_user, copy_clock) = (user.clone(), w.clock_arc());
    *watched.before_commit.lock().unwrap() = Some(Box::new(move |inner| {
        Box::pin(async move {
            // The same call (same effect key) delivered twice: the copy commits first, with
            // its own title, so the replay shows whose result came back.
            let registry = notes::registry(Arc::new(Calls::default()));
            let ctx =
                Ctx::new(inner, copy_clock, copy_user, Actor::Agent).with_effect(effect("tu_1"));
            let first = registry
                .call(ctx, "add_note", json!({"title": "From the copy"}))
                .await
                .unwrap();
            assert!(first.is_ok(), "{first:?}");
        })
    }));
    let outcome = add_through_gate(watched.clone(), &w, &user, "Groceries").await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let copy_text = format!("{outcome:?}");
    assert!(
        copy_text.contains("From the copy"),
        "the stored result: {copy_text}"
    );
    assert_eq!(
        titles(&w.dump("USER#u1").await),
        ["From the copy"],
        "one note"
    );
}

async fn a_claim_and_an_update_start_from_the_record_their_caller_read(w: World) {
    let user = w.account("u1").await;
    let key = steward_harness::ConversationKey::telegram(42);
    let channel = steward_harness::ChannelName::parse("tg").unwrap();
    let watched = Watched::new(Arc::clone(&w.table));
    let claim = |read, message: &'static str| {
        let (watched, key, channel, user) =
            (watched.clone(), key.clone(), channel.clone(), user.clone());
        async move {
            conversation::claim(
                watched.as_ref(),
                &key,
                &channel,
                Some(&user),
                message,
                0,
                100,
                read,
                None,
            )
            .await
            .unwrap()
        }
    };
    let turn_of = |claim: Claim| match claim {
        Claim::Turn {
            turn,
            resumed: false,
            ..
        } => turn,
        other => panic!("a new turn: {other:?}"),
    };

    let first = conversation::load(w.table.as_ref(), &key, &channel)
        .await
        .unwrap();
    assert_eq!(turn_of(claim(Some(first.clone()), "m1").await), 1);
    assert_eq!(
        watched.gets_of(keys::CONVERSATION_META_SK),
        0,
        "started from the caller's read"
    );

    // `first` is now stale (the claim saved the record): the versioned write fails and the
    // claim reads the record again, then takes the next turn.
    assert_eq!(turn_of(claim(Some(first), "m2").await), 2);
    assert_eq!(
        watched.gets_of(keys::CONVERSATION_META_SK),
        1,
        "read again once"
    );
    assert_eq!(turn_of(claim(None, "m3").await), 3);
    assert_eq!(
        watched.gets_of(keys::CONVERSATION_META_SK),
        2,
        "no record given: read"
    );

    // An update (the active record a tool set) starts from the turn's copy of the record the
    // same way, and reads again only when that copy is stale.
    let now = conversation::load(w.table.as_ref(), &key, &channel)
        .await
        .unwrap();
    let focused = conversation::update_from(watched.as_ref(), &now, |m| {
        m.active_record = Some("e_1".into());
    })
    .await
    .unwrap();
    assert_eq!(watched.gets_of(keys::CONVERSATION_META_SK), 2, "no read");
    let refocused = conversation::update_from(watched.as_ref(), &now, |m| {
        m.active_record = Some("e_2".into());
    })
    .await
    .unwrap();
    assert_eq!(
        watched.gets_of(keys::CONVERSATION_META_SK),
        3,
        "the stale copy read again"
    );
    assert_eq!(refocused.version, focused.version + 1);
    let stored = conversation::load(w.table.as_ref(), &key, &channel)
        .await
        .unwrap();
    assert_eq!(stored.meta.active_record.as_deref(), Some("e_2"));
    assert_eq!(stored.meta.turns, 3, "the claims' counts kept");
}

/// A whole turn with a write (a fresh claim, one tool call, a reply): the records looked up
/// once each, and the stored reply, which only a resumed claim can have, not at all.
async fn a_fresh_turn_reads_what_it_needs_once(w: World) {
    let watched = Watched::new(Arc::clone(&w.table));
    let world = World {
        table: watched.clone(),
        clock: w.clock.clone(),
    };
    let r = chat::rig::Rig::build(world, chat::rig::RigOptions::default()).await;
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::tool_use(
            "tu_1",
            "add_note",
            json!({"title": "Groceries"}),
        )],
        steward_llm::StopReason::ToolUse,
    )));
    r.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Added \"Groceries\".")],
        steward_llm::StopReason::EndTurn,
    )));
    let before = watched.gets.lock().unwrap().clone();
    let outcome = r.say("m1", "add a groceries note").await;
    assert_eq!(chat::rig::Rig::text(&outcome), "Added \"Groceries\".");
    let read = |sk: &str| watched.gets_of(sk) - before.get(sk).copied().unwrap_or(0);
    let seen_reply = keys::seen_sk(1, steward_harness::transcript::SEEN_REPLY);
    assert_eq!(read(&seen_reply), 0, "a fresh claim has no stored reply");
    assert_eq!(read(keys::CONVERSATION_META_SK), 1, "the claim's read");
    assert_eq!(
        read(keys::PROFILE_SK),
        2,
        "the turn's start (also for the context block) and the registry's check"
    );
    let effect_sk = keys::effect_sk(&ToolUseId::parse("tu_1").unwrap());
    assert_eq!(read(&effect_sk), 1, "the gate's look-up");
    assert_eq!(
        read(&keys::inbox_sk("m1")),
        1,
        "the claim's look-up; finishing starts from the record the claim wrote"
    );
    assert!(matches!(
        r.say("m1", "add a groceries note").await,
        TurnOutcome::Duplicate
    ));
}

/// Finishing from the claim's copy of the inbox record marks it done once; a second copy of
/// the delivery finishing from its own (now stale) copy changes nothing, and a redelivery is a
/// duplicate.
async fn a_claimed_message_is_finished_from_the_claims_copy(w: World) {
    let user = w.account("u1").await;
    let key = steward_harness::ConversationKey::telegram(42);
    let channel = steward_harness::ChannelName::parse("tg").unwrap();
    let now = steward_store::Clock::now_millis(&w.clock);
    let claim = || {
        conversation::claim(
            w.table.as_ref(),
            &key,
            &channel,
            Some(&user),
            "m1",
            now,
            100,
            None,
            None,
        )
    };
    let Claim::Turn { inbox: first, .. } = claim().await.unwrap() else {
        panic!("a new turn");
    };
    let Claim::Turn {
        inbox: second,
        resumed: true,
        ..
    } = claim().await.unwrap()
    else {
        panic!("the same turn, resumed");
    };
    conversation::finish_claimed(w.table.as_ref(), &key, "m1", &first)
        .await
        .unwrap();
    conversation::finish_claimed(w.table.as_ref(), &key, "m1", &second)
        .await
        .unwrap();
    assert!(matches!(claim().await.unwrap(), Claim::Duplicate));
    let stored = w
        .table
        .get(&keys::conversation_pk(&key), &keys::inbox_sk("m1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.version, 2, "marked done once");
}

async fn world(backend: steward_store::testing::Backend) -> Option<World> {
    World::on(backend).await
}

steward_store::backend_tests!(setup = world;
    a_write_call_reads_its_effect_and_the_account_once,
    an_account_paused_while_the_tool_runs_is_refused_at_commit,
    a_copy_that_commits_while_the_tool_runs_is_replayed,
    a_claim_and_an_update_start_from_the_record_their_caller_read,
    a_fresh_turn_reads_what_it_needs_once,
    a_claimed_message_is_finished_from_the_claims_copy,
);
