//! The confirmation gate, driven through real turns with a scripted model: held the first
//! time, held again in the same turn, allowed on a later turn with identical arguments (any
//! key order), never for other arguments, never after the TTL, never twice, exactly once under
//! concurrency, and always described from the database.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use steward_harness::gate::{self, GateDecision, Surface};
use steward_harness::{Actor, ConversationKey, EffectKey, ToolUseId};
use steward_llm::{ContentBlock, CreateResponse, StopReason};
use steward_store::testing::Backend;

use chat::rig::Rig;
use support::notes;

fn chat(r: &Rig, turn: u64) -> Surface {
    Surface::Chat {
        conversation: r.conv.clone(),
        turn,
    }
}

async fn rig(backend: Backend) -> Option<Rig> {
    Rig::on(backend).await
}

fn call(id: &str, tool: &str, args: Value) -> CreateResponse {
    CreateResponse::new(
        vec![ContentBlock::tool_use(id, tool, args)],
        StopReason::ToolUse,
    )
}

fn text(t: &str) -> CreateResponse {
    CreateResponse::new(vec![ContentBlock::text(t)], StopReason::EndTurn)
}

/// Adds a note directly and returns its id.
async fn seed_note(r: &Rig, title: &str) -> String {
    let ctx = r.world.ctx(&r.user, Actor::User);
    notes::add(&ctx, title).await.unwrap().id
}

async fn note_exists(r: &Rig, id: &str) -> bool {
    let ctx = r.world.ctx(&r.user, Actor::User);
    notes::load(&ctx, id).await.is_ok()
}

async fn held_first_then_allowed_on_a_later_turn(r: Rig) {
    let id = seed_note(&r, "Groceries").await;
    // Turn 1: the model calls at once (as the prompt says), is held, retries in the same
    // turn, is held again, and asks.
    r.model
        .push(Ok(call("tu_1", "delete_note", json!({"id": id}))));
    r.model
        .push(Ok(call("tu_2", "delete_note", json!({"id": id}))));
    r.model.push(Ok(text(
        "Delete \"Groceries\"? <buttons>Yes | No</buttons>",
    )));
    r.say("m1", "delete my groceries note").await;
    let reqs = r.model.requests();
    for req in &reqs[1..3] {
        let results = req.messages.last().unwrap();
        let ContentBlock::ToolResult(res) = &results.content[0] else {
            panic!()
        };
        let Some(steward_llm::ToolResultContent::Text(t)) = &res.content else {
            panic!()
        };
        assert!(t.starts_with("NOT EXECUTED"), "{t}");
        assert!(
            t.contains("Delete the note \"Groceries\""),
            "described from the database: {t}"
        );
        assert_eq!(res.is_error, Some(true));
    }
    assert!(
        note_exists(&r, &id).await,
        "not deleted in the turn that asked"
    );

    // Turn 2: the person says yes; identical arguments (keys reordered) now run.
    r.model
        .push(Ok(call("tu_3", "delete_note", json!({"id": id}))));
    r.model.push(Ok(text("Deleted.")));
    r.say("m2", "yes").await;
    assert!(!note_exists(&r, &id).await);
    let last = r.last_results();
    assert!(!last[0].2, "ran: {}", last[0].1);
}

async fn a_confirmation_is_for_those_arguments_only(r: Rig) {
    let a = seed_note(&r, "A").await;
    let b = seed_note(&r, "B").await;
    r.model
        .push(Ok(call("tu_1", "delete_note", json!({"id": a}))));
    r.model.push(Ok(text("Sure?")));
    r.say("m1", "delete A").await;
    // Next turn, the model tries to use the confirmation for B: held (and B is described).
    r.model
        .push(Ok(call("tu_2", "delete_note", json!({"id": b}))));
    r.model.push(Ok(text("Sure about B?")));
    r.say("m2", "yes").await;
    assert!(note_exists(&r, &a).await && note_exists(&r, &b).await);
    let last = r.last_results();
    assert!(
        last[0].1.contains("NOT EXECUTED") && last[0].1.contains("\"B\""),
        "{}",
        last[0].1
    );
}

async fn a_consumed_confirmation_cannot_be_used_twice(r: Rig) {
    let a = seed_note(&r, "A").await;
    r.model
        .push(Ok(call("tu_1", "delete_note", json!({"id": a}))));
    r.model.push(Ok(text("Sure?")));
    r.say("m1", "delete A").await;
    r.model
        .push(Ok(call("tu_2", "delete_note", json!({"id": a}))));
    r.model.push(Ok(text("Deleted.")));
    r.say("m2", "yes").await;
    // The note is gone; recreate one with the same id is impossible, so check the gate
    // directly: the confirmation is spent, so the same call is held again.
    let decision = gate::check(
        r.world.table.as_ref(),
        &r.user,
        &chat(&r, 99),
        r.world.clock_now(),
        "delete_note",
        &json!({"id": a}),
        Some("Delete the note \"A\"".into()),
    )
    .await
    .unwrap();
    assert!(
        matches!(decision, GateDecision::Held { .. }),
        "{decision:?}"
    );
}

async fn a_confirmation_lapses_after_an_hour(r: Rig) {
    let a = seed_note(&r, "A").await;
    r.model
        .push(Ok(call("tu_1", "delete_note", json!({"id": a}))));
    r.model.push(Ok(text("Sure?")));
    r.say("m1", "delete A").await;
    r.world.clock.advance_millis(61 * 60 * 1000);
    r.model
        .push(Ok(call("tu_2", "delete_note", json!({"id": a}))));
    r.model.push(Ok(text("Sure?")));
    r.say("m2", "yes").await;
    assert!(note_exists(&r, &a).await, "a stale approval does not count");
    assert!(r.last_results()[0].1.starts_with("NOT EXECUTED"));
}

async fn key_order_does_not_matter(r: Rig) {
    let a = seed_note(&r, "A").await;
    r.model.push(Ok(call(
        "tu_1",
        "delete_note",
        json!({"id": a, "reason": {"x": 1, "y": 2}}),
    )));
    r.model.push(Ok(text("Sure?")));
    r.say("m1", "delete A").await;
    r.model.push(Ok(call(
        "tu_2",
        "delete_note",
        json!({"reason": {"y": 2, "x": 1}, "id": a}),
    )));
    r.model.push(Ok(text("Done.")));
    r.say("m2", "yes").await;
    assert!(!note_exists(&r, &a).await);
}

async fn the_description_comes_from_the_database(r: Rig) {
    let a = seed_note(&r, "Tax return").await;
    r.model.push(Ok(call(
        "tu_1",
        "delete_note",
        json!({"id": a, "title": "an unimportant scratch note"}),
    )));
    r.model.push(Ok(text("Sure?")));
    r.say("m1", "delete it").await;
    let t = &r.last_results()[0].1;
    assert!(
        t.contains("\"Tax return\"") && !t.contains("unimportant"),
        "{t}"
    );
}

async fn two_concurrent_identical_calls_run_once(r: Rig) {
    let a = seed_note(&r, "A").await;
    let b = seed_note(&r, "B").await;
    let args = json!({"id": a});
    let table = r.world.table.as_ref();
    // Turn 1 files the request.
    let held = gate::check(
        table,
        &r.user,
        &chat(&r, 1),
        r.world.clock_now(),
        "delete_note",
        &args,
        Some("Delete A".into()),
    )
    .await
    .unwrap();
    assert!(matches!(held, GateDecision::Held { .. }));
    // Turn 2: two racing calls both see the open confirmation…
    let d1 = gate::check(
        table,
        &r.user,
        &chat(&r, 2),
        r.world.clock_now(),
        "delete_note",
        &args,
        Some("Delete A".into()),
    )
    .await
    .unwrap();
    let d2 = gate::check(
        table,
        &r.user,
        &chat(&r, 2),
        r.world.clock_now(),
        "delete_note",
        &args,
        Some("Delete A".into()),
    )
    .await
    .unwrap();
    let (GateDecision::Confirmed { consume: c1 }, GateDecision::Confirmed { consume: c2 }) =
        (d1, d2)
    else {
        panic!("both should see the open confirmation");
    };
    // …but each must spend it inside its own transaction: only one commits. Use two notes so
    // the records themselves don't conflict — only the confirmation does.
    let registry = Arc::new(notes::registry(Arc::new(notes::Calls::default())));
    let conv = ConversationKey::telegram(42);
    let ctx1 = r
        .world
        .ctx(&r.user, Actor::Agent)
        .with_effect(EffectKey::new(
            conv.clone(),
            ToolUseId::parse("tu_x").unwrap(),
        ))
        .with_confirmation(c1);
    let ctx2 = r
        .world
        .ctx(&r.user, Actor::Agent)
        .with_effect(EffectKey::new(conv, ToolUseId::parse("tu_y").unwrap()))
        .with_confirmation(c2);
    let (o1, o2) = tokio::join!(
        registry.call(ctx1, "delete_note", json!({"id": a})),
        registry.call(ctx2, "delete_note", json!({"id": b})),
    );
    let oks = [o1.unwrap(), o2.unwrap()]
        .iter()
        .filter(|o| o.is_ok())
        .count();
    assert_eq!(oks, 1, "exactly one call spent the confirmation");
    assert_eq!(
        note_exists(&r, &a).await as u8 + note_exists(&r, &b).await as u8,
        1
    );
}

trait ClockNow {
    fn clock_now(&self) -> i64;
}
impl ClockNow for support::World {
    fn clock_now(&self) -> i64 {
        use steward_store::Clock;
        self.clock.now_millis()
    }
}

steward_store::backend_tests!(setup = rig;
    held_first_then_allowed_on_a_later_turn,
    a_confirmation_is_for_those_arguments_only,
    a_consumed_confirmation_cannot_be_used_twice,
    a_confirmation_lapses_after_an_hour,
    key_order_does_not_matter,
    the_description_comes_from_the_database,
    two_concurrent_identical_calls_run_once,
);

mod property {
    //! For random scripts of model tool calls over random turns, no risky tool ever runs
    //! without a pending confirmation created on an earlier turn.
    use super::*;
    use proptest::prelude::*;
    use steward_harness::keys;

    #[derive(Debug, Clone)]
    enum Step {
        Delete(usize),
        Add,
        EndTurn,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0usize..3).prop_map(Step::Delete),
            1 => Just(Step::Add),
            2 => Just(Step::EndTurn),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
        #[test]
        fn no_risky_call_runs_without_an_earlier_confirmation(script in proptest::collection::vec(step(), 1..20)) {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async move {
                let r = Rig::on(Backend::Sqlite).await.unwrap();
                let ids = vec![seed_note(&r, "n0").await, seed_note(&r, "n1").await, seed_note(&r, "n2").await];
                // Split the script into turns; each turn's calls, then a closing text.
                let mut turns: Vec<Vec<Step>> = vec![Vec::new()];
                for s in script {
                    match s {
                        Step::EndTurn => turns.push(Vec::new()),
                        other => turns.last_mut().unwrap().push(other),
                    }
                }
                let mut n = 0;
                // When each delete was first requested (held), by note.
                let mut first_held: std::collections::HashMap<usize, usize> = Default::default();
                for (turn_no, calls) in turns.iter().enumerate() {
                    for c in calls {
                        n += 1;
                        let resp = match c {
                            Step::Delete(i) => call(&format!("tu_{n}"), "delete_note", json!({"id": ids[*i]})),
                            _ => call(&format!("tu_{n}"), "add_note", json!({"title": "x"})),
                        };
                        r.model.push(Ok(resp));
                    }
                    r.model.push(Ok(text("ok")));
                    let before: Vec<bool> = futures_exists(&r, &ids).await;
                    r.say(&format!("m{turn_no}"), "go").await;
                    let after: Vec<bool> = futures_exists(&r, &ids).await;
                    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
                        if *b && !*a {
                            // Deleted this turn: it must have been held on an EARLIER turn.
                            let held_on = first_held.get(&i).copied();
                            assert!(held_on.is_some_and(|t| t < turn_no), "note {i} deleted on turn {turn_no} without an earlier confirmation ({held_on:?})");
                        }
                    }
                    for c in calls {
                        if let Step::Delete(i) = c {
                            first_held.entry(*i).or_insert(turn_no);
                        }
                    }
                    // A confirmation is spent once: forget it after a deletion.
                    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
                        if *b && !*a { first_held.remove(&i); }
                    }
                }
                // Every stored confirmation that was consumed was created before the turn that used it.
                let rows = r.world.table.query_all(&steward_store::Query::prefix(keys::user_pk(&r.user), keys::CONFIRM_SK_PREFIX), 1000).await.unwrap();
                for row in rows {
                    let p: gate::Confirmation = row.parse().unwrap();
                    assert!(p.created_turn.is_some_and(|t| t >= 1));
                }
            });
        }
    }

    async fn futures_exists(r: &Rig, ids: &[String]) -> Vec<bool> {
        let mut out = Vec::new();
        for id in ids {
            out.push(note_exists(r, id).await);
        }
        out
    }
}
