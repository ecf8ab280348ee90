//! Undo: last in first out, whole actions, never over a later change, never a public action,
//! and an undo is recorded but not itself undone.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::sync::Arc;

use serde_json::json;
use steward_harness::audit::{self, ActionHeader, ActionKind};
use steward_harness::undo::UndoneKind;
use steward_harness::{Actor, Audited, ServiceError, accounts, prepare_undo, undo_last};
use support::notes::{self, Calls};
use support::{World, effect};

async fn titles(w: &World, ctx: &steward_harness::Ctx) -> Vec<String> {
    let mut t: Vec<String> = notes::list(ctx)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.title)
        .collect();
    t.sort();
    let _ = w;
    t
}

async fn undo_walks_back_last_in_first_out(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::Agent);
    let a = notes::add(&ctx, "A").await.unwrap();
    notes::add(&ctx.next_action(), "B").await.unwrap();
    notes::rename(&ctx.next_action(), &a.id, "A2")
        .await
        .unwrap();
    assert_eq!(titles(&w, &ctx).await, ["A2", "B"]);

    let s = undo_last(&ctx.next_action()).await.unwrap();
    assert_eq!(s.changes.len(), 1);
    assert_eq!(s.changes[0].kind, UndoneKind::Updated);
    assert_eq!(s.label.as_deref(), Some(&*format!("Rename note {}", a.id)));
    assert_eq!(titles(&w, &ctx).await, ["A", "B"]);

    let s = undo_last(&ctx.next_action()).await.unwrap();
    assert_eq!(s.changes[0].kind, UndoneKind::Created);
    assert_eq!(titles(&w, &ctx).await, ["A"]);

    // Undo #3 reverts the first action, not an undo.
    undo_last(&ctx.next_action()).await.unwrap();
    assert!(titles(&w, &ctx).await.is_empty());

    let err = undo_last(&ctx.next_action()).await.unwrap_err();
    assert!(matches!(err, ServiceError::CannotUndo { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Could not undo: there is nothing to undo. Nothing was changed."
    );
}

async fn all_rows_of_one_action_revert_together(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let keep = notes::add(&ctx, "Keep").await.unwrap();
    let batch = ctx.next_action();
    let (tx, _) = notes::plan_add(&batch, &["X".into(), "Y".into(), "Z".into()]).unwrap();
    tx.commit().await.unwrap();
    assert_eq!(notes::list(&ctx).await.unwrap().len(), 4);

    let s = undo_last(&ctx.next_action()).await.unwrap();
    assert_eq!(s.undone, batch.action());
    assert_eq!(s.changes.len(), 3);
    assert_eq!(s.sentence(), "Undid \"Add 3 note(s)\" (3 records).");
    let left = notes::list(&ctx).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, keep.id);
}

async fn undoing_a_delete_recreates_the_record_at_a_higher_version(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let a = notes::add(&ctx, "A").await.unwrap();
    notes::rename(&ctx.next_action(), &a.id, "A2")
        .await
        .unwrap();
    notes::delete(&ctx.next_action(), &a.id).await.unwrap();
    let s = undo_last(&ctx.next_action()).await.unwrap();
    assert_eq!(s.changes[0].kind, UndoneKind::Deleted);
    let (note, item) = notes::load(&ctx, &a.id).await.unwrap();
    assert_eq!(note.title, "A2");
    assert_eq!(item.version, 3, "versions never go back");
}

async fn undo_refuses_when_a_record_changed_since(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::Agent);
    let a = notes::add(&ctx, "A").await.unwrap();
    let b = notes::add(&ctx.next_action(), "B").await.unwrap();
    // Someone edits B behind the audit trail's back (a direct store write, e.g. another tool
    // path with a bug, or a public action that is not undoable).
    let (_, b_item) = notes::load(&ctx, &b.id).await.unwrap();
    let public = w.ctx(&u, Actor::Public);
    Audited::new(&public)
        .replace(&b_item, json!({"id": b.id, "title": "B by a visitor"}))
        .commit()
        .await
        .unwrap();

    let before = w.dump("USER#u1").await;
    let err = undo_last(&ctx.next_action()).await.unwrap_err();
    assert!(matches!(err, ServiceError::CannotUndo { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&format!("NOTE#{}", b.id)), "{msg}");
    assert!(msg.contains("never overwrites a later change"), "{msg}");
    assert!(msg.ends_with("Nothing was changed."), "{msg}");
    assert_eq!(w.dump("USER#u1").await, before, "nothing written");
    let _ = a;
}

async fn public_actions_are_never_undone(w: World) {
    let u = w.account("u1").await;
    let owner = w.ctx(&u, Actor::User);
    notes::add(&owner, "Mine").await.unwrap();
    // A visitor adds a record to the owner's partition (like a public registration).
    let visitor = w.ctx(&u, Actor::Public);
    let theirs = notes::add(&visitor, "Visitor's").await.unwrap();

    let s = undo_last(&owner.next_action()).await.unwrap();
    assert_eq!(s.actor, Actor::User);
    let left = notes::list(&owner).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, theirs.id, "the visitor's record stays");

    let err = undo_last(&owner.next_action()).await.unwrap_err();
    assert!(matches!(err, ServiceError::CannotUndo { .. }), "{err:?}");
    assert_eq!(notes::list(&owner).await.unwrap().len(), 1);
}

async fn an_undo_is_recorded_and_marks_the_original(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::Mcp);
    let a = notes::add(&ctx, "A").await.unwrap();
    let undo_ctx = ctx.next_action();
    let s = undo_last(&undo_ctx).await.unwrap();
    assert_eq!(s.undo_action, undo_ctx.action());

    let original: Vec<ActionHeader> = audit::request_headers(w.table.as_ref(), &u, &ctx.action())
        .await
        .unwrap();
    assert_eq!(original.len(), 1);
    assert_eq!(original[0].undone_by, Some(undo_ctx.action()));
    let undo: Vec<ActionHeader> = audit::request_headers(w.table.as_ref(), &u, &undo_ctx.action())
        .await
        .unwrap();
    assert_eq!(undo.len(), 1);
    let undo = undo[0].clone();
    assert_eq!(undo.kind, ActionKind::Undo);
    assert_eq!(undo.undoes, Some(ctx.action()));
    assert_eq!(undo.actor, Actor::Mcp);
    assert_eq!(undo.changes, 1);
    assert_eq!(undo.label.as_deref(), Some("Undo: Add 1 note(s)"));
    assert!(notes::load(&ctx, &a.id).await.is_err());
}

#[tokio::test]
async fn undo_after_undo_of_a_later_edit_still_matches() {
    // A creates, B edits, undo B (restores A's data at a new version), undo A (must see the
    // record as A left it, despite the version having moved).
    let w = World::new();
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let a = notes::add(&ctx, "A").await.unwrap();
    notes::rename(&ctx.next_action(), &a.id, "A2")
        .await
        .unwrap();
    undo_last(&ctx.next_action()).await.unwrap();
    undo_last(&ctx.next_action()).await.unwrap();
    assert!(notes::list(&ctx).await.unwrap().is_empty());
}

async fn undo_is_refused_on_a_paused_account(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    notes::add(&ctx, "A").await.unwrap();
    accounts::pause(w.table.as_ref(), &u).await.unwrap();
    let err = undo_last(&ctx.next_action()).await.unwrap_err();
    assert!(matches!(err, ServiceError::Forbidden { .. }), "{err:?}");
    assert_eq!(notes::list(&ctx).await.unwrap().len(), 1);
}

async fn an_undo_tool_call_retried_undoes_only_once(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::Agent);
    notes::add(&ctx, "A").await.unwrap();
    notes::add(&ctx.next_action(), "B").await.unwrap();
    let registry = notes::registry(Arc::new(Calls::default()));

    let call = ctx.next_action().with_effect(effect("toolu_undo"));
    let first = registry
        .call(call.clone(), "undo_last_action", json!({}))
        .await
        .unwrap();
    let retry = ctx.next_action().with_effect(effect("toolu_undo"));
    let second = registry
        .call(retry, "undo_last_action", json!({}))
        .await
        .unwrap();
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(first, second);
    assert_eq!(titles(&w, &ctx).await, ["A"], "only B was undone");

    // The same through the plain service function.
    let svc = ctx.next_action().with_effect(effect("toolu_undo2"));
    let s1 = undo_last(&svc).await.unwrap();
    let s2 = undo_last(&ctx.next_action().with_effect(effect("toolu_undo2")))
        .await
        .unwrap();
    assert_eq!(s1, s2);
    assert!(titles(&w, &ctx).await.is_empty());
}

async fn prepare_undo_shows_what_would_be_reverted_without_writing(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let a = notes::add(&ctx, "A").await.unwrap();
    let before = w.dump("USER#u1").await;
    let prepared = prepare_undo(&ctx.next_action()).await.unwrap();
    assert_eq!(prepared.summary().changes[0].sk, format!("NOTE#{}", a.id));
    assert_eq!(
        prepared.summary().changes[0].discarded.as_ref().unwrap()["title"],
        "A"
    );
    drop(prepared);
    assert_eq!(w.dump("USER#u1").await, before);
}

async fn a_request_of_three_commits_is_undone_whole_then_the_one_before(w: World) {
    let u = w.account("u1").await;
    let earlier = w.ctx(&u, Actor::Agent);
    let first = notes::add(&earlier, "First").await.unwrap();
    // One request (one chat message): three tool calls, three commits.
    let request = earlier.next_action();
    let a = notes::add(&request, "A").await.unwrap();
    notes::add(&request, "B").await.unwrap();
    notes::rename(&request, &first.id, "First, renamed")
        .await
        .unwrap();
    assert_eq!(titles(&w, &earlier).await, ["A", "B", "First, renamed"]);

    let s = undo_last(&request.next_action()).await.unwrap();
    assert_eq!(s.undone, request.action());
    assert_eq!(s.steps, 3);
    assert_eq!(
        s.labels,
        [
            "Add 1 note(s)".to_owned(),
            "Add 1 note(s)".to_owned(),
            format!("Rename note {}", first.id)
        ]
    );
    assert_eq!(s.changes.len(), 3);
    assert_eq!(
        s.changes[0].sk,
        format!("NOTE#{}", a.id),
        "in the order first touched"
    );
    assert_eq!(
        s.sentence(),
        format!(
            "Undid \"Add 1 note(s)\", \"Add 1 note(s)\" and \"Rename note {}\" (3 records).",
            first.id
        )
    );
    assert_eq!(titles(&w, &earlier).await, ["First"], "all three reverted");
    let marked = audit::request_headers(w.table.as_ref(), &u, &request.action())
        .await
        .unwrap();
    assert!(marked.iter().all(|h| h.undone_by.is_some()), "{marked:?}");

    // The next undo reverts the request before, not a part of the undone one.
    let s = undo_last(&request.next_action()).await.unwrap();
    assert_eq!(s.undone, earlier.action());
    assert!(titles(&w, &earlier).await.is_empty());
    let err = undo_last(&request.next_action()).await.unwrap_err();
    assert!(matches!(err, ServiceError::CannotUndo { .. }), "{err:?}");
}

async fn a_record_changed_twice_in_a_request_goes_back_to_before_the_first(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let a = notes::add(&ctx, "A").await.unwrap();
    let request = ctx.next_action();
    notes::rename(&request, &a.id, "A2").await.unwrap();
    notes::rename(&request, &a.id, "A3").await.unwrap();
    let b = notes::add(&request, "B").await.unwrap();
    notes::delete(&request, &b.id).await.unwrap();
    let s = undo_last(&ctx.next_action()).await.unwrap();
    assert_eq!(s.steps, 4);
    assert_eq!(
        s.changes.len(),
        1,
        "B was created and removed within the request"
    );
    assert_eq!(s.changes[0].kind, UndoneKind::Updated);
    assert_eq!(s.changes[0].restored.as_ref().unwrap()["title"], "A");
    assert_eq!(s.changes[0].discarded.as_ref().unwrap()["title"], "A3");
    let (note, item) = notes::load(&ctx, &a.id).await.unwrap();
    assert_eq!(note.title, "A");
    assert_eq!(item.version, 4, "versions never go back");
    assert!(notes::load(&ctx, &b.id).await.is_err());
}

async fn a_public_action_between_two_steps_is_never_undone(w: World) {
    let u = w.account("u1").await;
    let owner = w.ctx(&u, Actor::Agent);
    let before = notes::add(&owner, "Before").await.unwrap();
    let request = owner.next_action();
    let a = notes::add(&request, "A").await.unwrap();
    // A visitor acts in the middle of the organiser's request (like a public registration).
    let visitor = w.ctx(&u, Actor::Public);
    let theirs = notes::add(&visitor, "Visitor's").await.unwrap();
    let b = notes::add(&request, "B").await.unwrap();

    let s = undo_last(&owner.next_action()).await.unwrap();
    assert_eq!(s.undone, request.action());
    let left: Vec<String> = notes::list(&owner)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.id)
        .collect();
    assert!(left.contains(&theirs.id), "the visitor's record stays");
    assert!(left.contains(&before.id));
    assert!(!left.contains(&a.id) && !left.contains(&b.id));

    // The next undo skips the visitor and reverts the organiser's request before.
    let s = undo_last(&owner.next_action()).await.unwrap();
    assert_eq!(s.undone, owner.action());
    let left = notes::list(&owner).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, theirs.id);
}

async fn a_change_by_someone_else_between_two_steps_makes_undo_refuse(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let a = notes::add(&ctx, "A").await.unwrap();
    let request = ctx.next_action();
    notes::rename(&request, &a.id, "A2").await.unwrap();
    // A visitor edits the same record between the request's two changes to it.
    let (_, item) = notes::load(&ctx, &a.id).await.unwrap();
    Audited::new(&w.ctx(&u, Actor::Public))
        .replace(
            &item,
            json!({"id": a.id, "title": "A by a visitor", "body": ""}),
        )
        .commit()
        .await
        .unwrap();
    notes::rename(&request, &a.id, "A3").await.unwrap();

    let before = w.dump("USER#u1").await;
    let err = undo_last(&ctx.next_action()).await.unwrap_err();
    assert!(matches!(err, ServiceError::CannotUndo { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("changed by someone else"), "{msg}");
    assert!(msg.ends_with("Nothing was changed."), "{msg}");
    assert_eq!(w.dump("USER#u1").await, before, "nothing written");
}

async fn a_request_too_large_for_one_transaction_is_refused_not_half_undone(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let request = ctx.next_action();
    // Two commits of 30 notes: each fits a transaction, their undo (60 records) does not.
    for batch in 0..2 {
        let titles: Vec<String> = (0..30).map(|i| format!("n{batch}-{i}")).collect();
        let (tx, _) = notes::plan_add(&request, &titles).unwrap();
        tx.commit().await.unwrap();
    }
    let before = w.dump("USER#u1").await;
    let err = undo_last(&ctx.next_action()).await.unwrap_err();
    assert!(matches!(err, ServiceError::CannotUndo { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Could not undo: the last request (\"Add 30 note(s); Add 30 note(s)\") changed 60 records in 2 steps, more than one undo can put back at once, and undo never reverts only part of a request; change those records back directly. Nothing was changed."
    );
    assert_eq!(w.dump("USER#u1").await, before, "nothing written");
}

async fn the_largest_commit_can_still_be_undone_by_a_tool_call(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let titles: Vec<String> = (0..steward_harness::limits::AUDITED_CHANGES_MAX)
        .map(|i| format!("n{i}"))
        .collect();
    let (tx, _) = notes::plan_add(&ctx, &titles).unwrap();
    tx.commit().await.unwrap();
    // The undo carries an effect item, like a model's tool call: it still fits.
    let s = undo_last(&ctx.next_action().with_effect(effect("toolu_big_undo")))
        .await
        .unwrap();
    assert_eq!(
        s.changes.len(),
        steward_harness::limits::AUDITED_CHANGES_MAX
    );
    assert!(notes::list(&ctx).await.unwrap().is_empty());
}

async fn renaming_the_account_is_undoable(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    accounts::rename(&ctx, "New name").await.unwrap();
    undo_last(&ctx.next_action()).await.unwrap();
    assert_eq!(accounts::profile(&ctx).await.unwrap().name, "Owner u1");
}

async fn world(backend: steward_store::testing::Backend) -> Option<World> {
    World::on(backend).await
}

steward_store::backend_tests!(setup = world;
    undo_walks_back_last_in_first_out,
    all_rows_of_one_action_revert_together,
    undoing_a_delete_recreates_the_record_at_a_higher_version,
    undo_refuses_when_a_record_changed_since,
    public_actions_are_never_undone,
    an_undo_is_recorded_and_marks_the_original,
    undo_is_refused_on_a_paused_account,
    an_undo_tool_call_retried_undoes_only_once,
    prepare_undo_shows_what_would_be_reverted_without_writing,
    renaming_the_account_is_undoable,
    a_request_of_three_commits_is_undone_whole_then_the_one_before,
    a_record_changed_twice_in_a_request_goes_back_to_before_the_first,
    a_public_action_between_two_steps_is_never_undone,
    a_change_by_someone_else_between_two_steps_makes_undo_refuse,
    a_request_too_large_for_one_transaction_is_refused_not_half_undone,
    the_largest_commit_can_still_be_undone_by_a_tool_call,
);
