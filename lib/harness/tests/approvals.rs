//! The gate for surfaces confirmed out of band (MCP clients that cannot elicit): a held call
//! files a request and runs nothing; only the person's approval ([`gate::approve`], what the
//! web UI's Approvals page and a verified in-protocol answer call) lets the client's next
//! identical call run, exactly once. Each approval bug reported against other agent frameworks
//! is a named test here.

#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use steward_harness::gate::{self, ApprovalError, ConfirmState, GateOutcome, Surface};
use steward_harness::{
    Actor, ConversationKey, Ctx, EffectKey, Registry, ServiceError, TokenId, ToolDef, ToolResult,
    ToolUseId, UserId, keys,
};
use steward_store::testing::Backend;
use steward_store::{Item, Page, Query, StoreError, Table, WriteOp};

use support::{World, notes};

struct Rig {
    world: World,
    registry: Registry,
    user: UserId,
}

async fn rig(backend: Backend) -> Option<Rig> {
    let world = World::on(backend).await?;
    let user = world.account("u1").await;
    Some(Rig {
        world,
        registry: notes::registry(Arc::default()),
        user,
    })
}

fn client(token: &str) -> Surface {
    Surface::Mcp {
        token: Some(TokenId::parse(&token.repeat(64)[..64]).unwrap()),
        client: format!("Client {token}"),
    }
}

impl Rig {
    async fn note(&self, title: &str) -> String {
        notes::add(&self.world.ctx(&self.user, Actor::User), title)
            .await
            .unwrap()
            .id
    }

    async fn exists(&self, id: &str) -> bool {
        notes::load(&self.world.ctx(&self.user, Actor::User), id)
            .await
            .is_ok()
    }

    /// One MCP call of `delete_note` for `id` from `surface` as `user`.
    async fn delete_as(&self, user: &UserId, surface: &Surface, id: &str) -> GateOutcome {
        self.call_as(user, surface, "delete_note", json!({"id": id}))
            .await
    }

    async fn call_as(
        &self,
        user: &UserId,
        surface: &Surface,
        tool: &str,
        args: Value,
    ) -> GateOutcome {
        let ctx = self.world.ctx(user, Actor::Mcp);
        gate::run(&self.registry, ctx, surface, tool, args)
            .await
            .unwrap()
            .unwrap()
    }

    async fn delete(&self, surface: &Surface, id: &str) -> GateOutcome {
        self.delete_as(&self.user.clone(), surface, id).await
    }

    async fn approve(&self, held: &GateOutcome) -> Result<gate::Confirmation, ApprovalError> {
        let GateOutcome::Held { confirmation, .. } = held else {
            panic!("expected a held call, got {held:?}");
        };
        gate::approve(
            self.world.table.as_ref(),
            &self.user,
            &confirmation.id,
            now(&self.world),
        )
        .await
    }

    async fn decline(&self, held: &GateOutcome) {
        let GateOutcome::Held { confirmation, .. } = held else {
            panic!("expected a held call");
        };
        gate::decline(
            self.world.table.as_ref(),
            &self.user,
            &confirmation.id,
            now(&self.world),
        )
        .await
        .unwrap();
    }
}

fn now(w: &World) -> i64 {
    use steward_store::Clock;
    w.clock.now_millis()
}

fn held(o: &GateOutcome) -> bool {
    matches!(o, GateOutcome::Held { message, .. } if message.starts_with("NOT EXECUTED"))
}

fn ran(o: &GateOutcome) -> bool {
    matches!(o, GateOutcome::Ran(outcome) if outcome.is_ok())
}

async fn a_held_call_without_approval_runs_nothing(r: Rig) {
    let id = r.note("Groceries").await;
    let c = client("a");
    let first = r.delete(&c, &id).await;
    let GateOutcome::Held {
        message,
        confirmation,
    } = &first
    else {
        panic!("{first:?}")
    };
    assert!(
        message.contains("Delete the note \"Groceries\""),
        "{message}"
    );
    assert!(
        message.contains("Approvals page"),
        "says where to approve: {message}"
    );
    assert_eq!(confirmation.state, ConfirmState::Pending);
    assert_eq!(confirmation.client.as_deref(), Some("Client a"));
    // Repeating the call, however often, never runs it: nothing the client sends approves.
    for _ in 0..3 {
        assert!(held(&r.delete(&c, &id).await));
    }
    assert!(r.exists(&id).await);
    let listed = gate::list_requests(r.world.table.as_ref(), &r.user, now(&r.world))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "one request, however often it was asked");
}

async fn after_approval_the_identical_call_runs_exactly_once(r: Rig) {
    let id = r.note("Groceries").await;
    let c = client("a");
    let first = r.delete(&c, &id).await;
    r.approve(&first).await.unwrap();
    let second = r.delete(&c, &id).await;
    assert!(ran(&second), "{second:?}");
    assert!(!r.exists(&id).await);
    let listed = gate::list_requests(r.world.table.as_ref(), &r.user, now(&r.world))
        .await
        .unwrap();
    assert!(
        listed.is_empty(),
        "a spent request leaves the page: {listed:?}"
    );
}

async fn one_approval_is_not_reused_for_a_later_identical_call(r: Rig) {
    let c = client("a");
    // Renaming to the same title is a call that can repeat; hold it through a custom registry
    // whose rename is held, so the same arguments can be sent twice after one approval.
    let registry = held_rename_registry();
    let id = r.note("A").await;
    let args = json!({"id": id, "title": "B"});
    let run = |args: Value| {
        let ctx = r.world.ctx(&r.user, Actor::Mcp);
        let registry = &registry;
        let c = &c;
        async move {
            gate::run(registry, ctx, c, "rename_note", args)
                .await
                .unwrap()
                .unwrap()
        }
    };
    let first = run(args.clone()).await;
    r.approve(&first).await.unwrap();
    assert!(ran(&run(args.clone()).await));
    let later = run(args.clone()).await;
    assert!(
        held(&later),
        "the approval was spent by the first run: {later:?}"
    );
    let GateOutcome::Held { confirmation, .. } = later else {
        unreachable!()
    };
    assert_eq!(
        confirmation.state,
        ConfirmState::Pending,
        "a fresh request for the person"
    );
}

async fn arguments_changed_after_approval_do_not_run(r: Rig) {
    let a = r.note("A").await;
    let b = r.note("B").await;
    let c = client("a");
    let held_a = r.delete(&c, &a).await;
    r.approve(&held_a).await.unwrap();
    let other = r.delete(&c, &b).await;
    assert!(held(&other), "{other:?}");
    assert!(r.exists(&a).await && r.exists(&b).await);
    // The approval for A still stands, for A only.
    assert!(ran(&r.delete(&c, &a).await));
    assert!(r.exists(&b).await);
}

async fn malformed_arguments_never_run(r: Rig) {
    let a = r.note("A").await;
    let c = client("a");
    for args in [
        json!({"id": 5}),
        json!({}),
        json!("garbage"),
        json!({"note": a}),
    ] {
        let o = r
            .call_as(&r.user.clone(), &c, "delete_note", args.clone())
            .await;
        assert!(
            matches!(&o, GateOutcome::Ran(out) if !out.is_ok()),
            "refused, never treated as not risky: {args} → {o:?}"
        );
    }
    assert!(r.exists(&a).await);
    let unknown = gate::run(
        &r.registry,
        r.world.ctx(&r.user, Actor::Mcp),
        &c,
        "delete_everything",
        json!({}),
    )
    .await;
    assert!(unknown.is_err(), "an unknown capability is refused");
}

async fn an_error_in_the_decision_holds(r: Rig) {
    let registry = failing_decision_registry();
    let c = client("a");
    let ctx = r.world.ctx(&r.user, Actor::Mcp);
    let o = gate::run(&registry, ctx, &c, "wipe", json!({"what": "all"}))
        .await
        .unwrap()
        .unwrap();
    let GateOutcome::Held { message, .. } = &o else {
        panic!("a failing decision must hold: {o:?}")
    };
    assert!(message.contains("could not check"), "{message}");
    assert!(!WIPED.load(Ordering::SeqCst), "nothing ran");
}

async fn a_declined_request_never_runs(r: Rig) {
    let a = r.note("A").await;
    let c = client("a");
    let first = r.delete(&c, &a).await;
    r.decline(&first).await;
    let again = r.delete(&c, &a).await;
    let GateOutcome::Held {
        message,
        confirmation,
    } = &again
    else {
        panic!("{again:?}")
    };
    assert!(message.contains("declined"), "{message}");
    assert_eq!(confirmation.state, ConfirmState::Declined);
    // A decline cannot be turned into an approval.
    assert!(matches!(
        r.approve(&again).await,
        Err(ApprovalError::AlreadyDecided("declined"))
    ));
    assert!(held(&r.delete(&c, &a).await));
    assert!(r.exists(&a).await);
}

async fn an_approval_lapses_after_an_hour(r: Rig) {
    let a = r.note("A").await;
    let c = client("a");
    let first = r.delete(&c, &a).await;
    r.approve(&first).await.unwrap();
    r.world.clock.advance_millis(61 * 60 * 1000);
    assert!(
        held(&r.delete(&c, &a).await),
        "a stale approval does not count"
    );
    assert!(r.exists(&a).await);
    // Approving after the hour is refused too.
    r.world.clock.advance_millis(61 * 60 * 1000);
    assert!(matches!(r.approve(&first).await, Err(ApprovalError::Gone)));
}

async fn another_user_can_neither_approve_nor_use_it(r: Rig) {
    let a = r.note("A").await;
    let bob = r.world.account("bob").await;
    let c = client("a");
    let first = r.delete(&c, &a).await;
    let GateOutcome::Held { confirmation, .. } = &first else {
        panic!()
    };
    let by_bob = gate::approve(
        r.world.table.as_ref(),
        &bob,
        &confirmation.id,
        now(&r.world),
    )
    .await;
    assert!(
        matches!(by_bob, Err(ApprovalError::Gone)),
        "bob cannot even name it"
    );
    r.approve(&first).await.unwrap();
    // Bob's identical call (with his own, or even the same client's token) finds nothing of his.
    let o = r.delete_as(&bob, &c, &a).await;
    assert!(!ran(&o), "{o:?}");
    assert!(r.exists(&a).await);
}

async fn another_client_cannot_use_the_approval(r: Rig) {
    let a = r.note("A").await;
    let first = r.delete(&client("a"), &a).await;
    r.approve(&first).await.unwrap();
    assert!(
        held(&r.delete(&client("b"), &a).await),
        "approved for client a only"
    );
    assert!(r.exists(&a).await);
}

async fn an_approval_delivered_twice_runs_once(r: Rig) {
    let a = r.note("A").await;
    let b = r.note("B").await;
    let c = client("a");
    let first = r.delete(&c, &a).await;
    r.approve(&first).await.unwrap();
    let twice = r.approve(&first).await.unwrap();
    assert_eq!(
        twice.state,
        ConfirmState::Approved,
        "a second approval changes nothing"
    );
    // Two racing identical calls: exactly one spends the approval.
    let registry = &r.registry;
    let (c1, c2) = (c.clone(), c.clone());
    let ctx1 = r.world.ctx(&r.user, Actor::Mcp);
    let ctx2 = r.world.ctx(&r.user, Actor::Mcp);
    let (o1, o2) = tokio::join!(
        gate::run(registry, ctx1, &c1, "delete_note", json!({"id": a})),
        gate::run(registry, ctx2, &c2, "delete_note", json!({"id": a})),
    );
    let outcomes = [o1.unwrap().unwrap(), o2.unwrap().unwrap()];
    assert_eq!(
        outcomes.iter().filter(|o| ran(o)).count(),
        1,
        "{outcomes:?}"
    );
    assert!(!r.exists(&a).await);
    assert!(r.exists(&b).await);
}

async fn approving_one_of_two_pending_leaves_the_other_pending(r: Rig) {
    let a = r.note("A").await;
    let b = r.note("B").await;
    let c = client("a");
    let held_a = r.delete(&c, &a).await;
    let held_b = r.delete(&c, &b).await;
    r.approve(&held_a).await.unwrap();
    let listed = gate::list_requests(r.world.table.as_ref(), &r.user, now(&r.world))
        .await
        .unwrap();
    let GateOutcome::Held {
        confirmation: cb, ..
    } = &held_b
    else {
        panic!()
    };
    let other = listed.iter().find(|x| x.id == cb.id).unwrap();
    assert_eq!(other.state, ConfirmState::Pending);
    assert!(ran(&r.delete(&c, &a).await));
    assert!(held(&r.delete(&c, &b).await));
    assert!(r.exists(&b).await);
}

async fn only_mcp_requests_are_approved_out_of_band(r: Rig) {
    let a = r.note("A").await;
    let chat = Surface::Chat {
        conversation: steward_harness::ConversationKey::telegram(7),
        turn: 1,
    };
    let held_in_chat = r.delete(&chat, &a).await;
    assert!(matches!(
        r.approve(&held_in_chat).await,
        Err(ApprovalError::WrongSurface)
    ));
    assert!(
        gate::list_requests(r.world.table.as_ref(), &r.user, now(&r.world))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_crash_between_approval_and_effect_runs_once_later(r: Rig) {
    let a = r.note("A").await;
    let c = client("a");
    let first = r.delete(&c, &a).await;
    r.approve(&first).await.unwrap();
    // The effect's transaction (which also spends the approval) is lost in a crash.
    let faulty = Arc::new(FailNextWrite {
        inner: Arc::clone(&r.world.table),
        armed: AtomicBool::new(true),
    });
    let ctx = Ctx::new(faulty, r.world.clock_arc(), r.user.clone(), Actor::Mcp);
    let crashed = gate::run(&r.registry, ctx, &c, "delete_note", json!({"id": a}))
        .await
        .unwrap();
    assert!(
        !matches!(&crashed, Ok(o) if ran(o)),
        "the crashed attempt did not complete: {crashed:?}"
    );
    assert!(r.exists(&a).await, "nothing half-written");
    // The approval survived with the effect: the retry runs once, and only once.
    assert!(ran(&r.delete(&c, &a).await));
    assert!(!r.exists(&a).await);
    assert!(
        !ran(&r.delete(&c, &a).await),
        "a third call finds nothing to delete"
    );
    let row = r
        .world
        .table
        .query_all(
            &Query::prefix(keys::user_pk(&r.user), keys::CONFIRM_SK_PREFIX),
            10,
        )
        .await
        .unwrap();
    assert!(
        row.iter()
            .all(|i| i.parse::<gate::Confirmation>().unwrap().state != ConfirmState::Approved)
    );
}

async fn an_approval_confirms_only_the_description_shown(r: Rig) {
    let a = r.note("Old plans").await;
    let c = client("a");
    let first = r.delete(&c, &a).await;
    r.approve(&first).await.unwrap();
    // The record changes after the person approved "Delete the note \"Old plans\"": what the
    // call would do is no longer what they approved, so it is held again, described anew.
    notes::rename(&r.world.ctx(&r.user, Actor::User), &a, "Tax return")
        .await
        .unwrap();
    let again = r.delete(&c, &a).await;
    let GateOutcome::Held { confirmation, .. } = &again else {
        panic!("held again: {again:?}")
    };
    assert!(
        confirmation.description.contains("Tax return"),
        "{confirmation:?}"
    );
    assert_eq!(confirmation.state, ConfirmState::Pending);
    assert!(r.exists(&a).await);
    // Approving what it now says lets it run, once.
    r.approve(&again).await.unwrap();
    assert!(ran(&r.delete(&c, &a).await));
    assert!(!r.exists(&a).await);
}

/// A chat conversation on `turn` (confirmed by a later message of the person).
fn chat(turn: u64) -> Surface {
    Surface::Chat {
        conversation: ConversationKey::telegram(77),
        turn,
    }
}

/// A chat tool call of `delete_note` for `id` with the model's `tool_use` id `call`, over
/// `table`.
async fn chat_delete(
    r: &Rig,
    table: Arc<dyn Table>,
    turn: u64,
    call: &str,
    id: &str,
) -> GateOutcome {
    let ctx = Ctx::new(table, r.world.clock_arc(), r.user.clone(), Actor::Agent).with_effect(
        EffectKey::new(
            ConversationKey::telegram(77),
            ToolUseId::parse(call).unwrap(),
        ),
    );
    gate::run(
        &r.registry,
        ctx,
        &chat(turn),
        "delete_note",
        json!({"id": id}),
    )
    .await
    .unwrap()
    .unwrap()
}

async fn a_crash_between_a_chat_confirmation_and_its_effect_runs_once_on_resume(r: Rig) {
    let a = r.note("A").await;
    let table = Arc::clone(&r.world.table);
    assert!(held(
        &chat_delete(&r, Arc::clone(&table), 1, "tu_1", &a).await
    ));
    // The person said yes; the confirmed call's transaction (effect and spend together) is
    // lost in a crash.
    let faulty: Arc<dyn Table> = Arc::new(FailNextWrite {
        inner: Arc::clone(&table),
        armed: AtomicBool::new(true),
    });
    let ctx = Ctx::new(faulty, r.world.clock_arc(), r.user.clone(), Actor::Agent).with_effect(
        EffectKey::new(
            ConversationKey::telegram(77),
            ToolUseId::parse("tu_2").unwrap(),
        ),
    );
    let crashed = gate::run(&r.registry, ctx, &chat(2), "delete_note", json!({"id": a}))
        .await
        .unwrap();
    assert!(!matches!(&crashed, Ok(o) if ran(o)), "{crashed:?}");
    assert!(r.exists(&a).await, "nothing half-written");
    // The resumed turn repeats the same call (same tool_use id): it runs, once.
    assert!(ran(
        &chat_delete(&r, Arc::clone(&table), 2, "tu_2", &a).await
    ));
    assert!(!r.exists(&a).await);
    // A second resume after the effect committed is answered from the stored result.
    let replayed = chat_delete(&r, Arc::clone(&table), 2, "tu_2", &a).await;
    assert!(
        ran(&replayed),
        "the stored result, not a second run: {replayed:?}"
    );
    // A later, new call is not covered by the spent confirmation.
    let b = r.note("B").await;
    assert!(held(&chat_delete(&r, table, 3, "tu_3", &b).await));
    assert!(r.exists(&b).await);
}

async fn confirming_one_of_two_held_chat_calls_leaves_the_other_held(r: Rig) {
    let a = r.note("A").await;
    let b = r.note("B").await;
    let table = Arc::clone(&r.world.table);
    assert!(held(
        &chat_delete(&r, Arc::clone(&table), 1, "tu_1", &a).await
    ));
    assert!(held(
        &chat_delete(&r, Arc::clone(&table), 1, "tu_2", &b).await
    ));
    // The person confirms A only: the model calls A again on the next turn.
    assert!(ran(
        &chat_delete(&r, Arc::clone(&table), 2, "tu_3", &a).await
    ));
    assert!(!r.exists(&a).await);
    assert!(r.exists(&b).await, "B never ran");
    let states: Vec<(String, ConfirmState)> = r
        .world
        .table
        .query_all(
            &Query::prefix(keys::user_pk(&r.user), keys::CONFIRM_SK_PREFIX),
            10,
        )
        .await
        .unwrap()
        .iter()
        .map(|i| {
            let c: gate::Confirmation = i.parse().unwrap();
            (c.description, c.state)
        })
        .collect();
    assert!(
        states.contains(&("Delete the note \"B\"".to_owned(), ConfirmState::Pending)),
        "{states:?}"
    );
}

/// Fails the next write (before it takes effect), then passes everything through.
#[derive(Debug)]
struct FailNextWrite {
    inner: Arc<dyn Table>,
    armed: AtomicBool,
}

#[async_trait]
impl Table for FailNextWrite {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.inner.get(pk, sk).await
    }
    async fn query(&self, q: &Query) -> Result<Page, StoreError> {
        self.inner.query(q).await
    }
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if self.armed.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Backend("injected crash".into()));
        }
        self.inner.write(ops).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Wipe {
    what: String,
}

static WIPED: AtomicBool = AtomicBool::new(false);

/// One capability whose decision always fails.
fn failing_decision_registry() -> Registry {
    let tool = ToolDef::new::<Wipe, _, _>("wipe", "Wipes.", |_ctx: Ctx, _i: Wipe| async {
        WIPED.store(true, Ordering::SeqCst);
        Ok(ToolResult::new("wiped"))
    })
    .unwrap()
    .held_when(|_ctx: Ctx, i: Wipe| async move {
        Err::<Option<String>, _>(ServiceError::internal(format!(
            "lookup of {} broke",
            i.what
        )))
    });
    Registry::new().with(tool).unwrap()
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Rename {
    id: String,
    title: String,
}

/// `rename_note`, held every time: a call that can run again with the same arguments.
fn held_rename_registry() -> Registry {
    let tool = ToolDef::new::<Rename, _, _>(
        "rename_note",
        "Rename a note.",
        |ctx: Ctx, i: Rename| async move {
            let n = notes::rename(&ctx, &i.id, &i.title).await?;
            Ok(ToolResult::new(format!("Renamed to {}", n.title)))
        },
    )
    .unwrap()
    .held_when(|_ctx: Ctx, i: Rename| async move {
        Ok(Some(format!("Rename the note to \"{}\"", i.title)))
    });
    Registry::new().with(tool).unwrap()
}

steward_store::backend_tests!(setup = rig;
    a_held_call_without_approval_runs_nothing,
    after_approval_the_identical_call_runs_exactly_once,
    one_approval_is_not_reused_for_a_later_identical_call,
    arguments_changed_after_approval_do_not_run,
    malformed_arguments_never_run,
    an_error_in_the_decision_holds,
    a_declined_request_never_runs,
    an_approval_lapses_after_an_hour,
    another_user_can_neither_approve_nor_use_it,
    another_client_cannot_use_the_approval,
    an_approval_delivered_twice_runs_once,
    approving_one_of_two_pending_leaves_the_other_pending,
    only_mcp_requests_are_approved_out_of_band,
    a_crash_between_approval_and_effect_runs_once_later,
    an_approval_confirms_only_the_description_shown,
    a_crash_between_a_chat_confirmation_and_its_effect_runs_once_on_resume,
    confirming_one_of_two_held_chat_calls_leaves_the_other_held,
);
