//! The audited transaction: version checks, audit rows, the paused gate, the op limit, the
//! tenant gate on keys, and exactly-once effects (also under concurrency).
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use serde_json::{Value, json};
use steward_harness::audit::{self, ActionHeader, ActionKind, AuditRow};
use steward_harness::limits::AUDITED_CHANGES_MAX;
use steward_harness::{Actor, Audited, ServiceError, accounts, effect, keys};
use support::notes::{self, Note};
use support::{World, effect};

async fn a_commit_writes_records_header_and_audit_rows_together(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let note = notes::add(&ctx, "Groceries").await.unwrap();

    let (stored, item) = notes::load(&ctx, &note.id).await.unwrap();
    assert_eq!(stored, note);
    assert_eq!(item.version, 1);

    let headers = audit::request_headers(w.table.as_ref(), &u, &ctx.action())
        .await
        .unwrap();
    assert_eq!(headers.len(), 1);
    let header: ActionHeader = headers[0].clone();
    let commit = header.commit.expect("a commit id");
    let stored: ActionHeader = w
        .table
        .get("USER#u1", &keys::commit_sk(&ctx.action(), &commit))
        .await
        .unwrap()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(stored, header);
    assert_eq!(header.actor, Actor::User);
    assert_eq!(header.kind, ActionKind::Change);
    assert_eq!(header.changes, 1);
    assert_eq!(header.label.as_deref(), Some("Add 1 note(s)"));
    assert!(header.undone_by.is_none());

    let row: AuditRow = w
        .table
        .get(
            "USER#u1",
            &keys::commit_audit_sk(&ctx.action(), Some(&commit), 0),
        )
        .await
        .unwrap()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        audit::audit_rows(w.table.as_ref(), &u, &header)
            .await
            .unwrap(),
        std::slice::from_ref(&row)
    );
    assert_eq!(row.action, ctx.action());
    assert_eq!(row.sk, format!("NOTE#{}", note.id));
    assert!(row.before.is_none());
    let after = row.after.unwrap();
    assert_eq!(after.version, 1);
    assert_eq!(after.data, serde_json::to_value(&note).unwrap());
}

async fn replace_bumps_the_version_and_keeps_both_images(w: World) {
    let u = w.account("u1").await;
    let note = notes::add(&w.ctx(&u, Actor::User), "Draft").await.unwrap();
    let ctx = w.ctx(&u, Actor::Agent);
    let renamed = notes::rename(&ctx, &note.id, "Final").await.unwrap();
    assert_eq!(renamed.title, "Final");
    let (_, item) = notes::load(&ctx, &note.id).await.unwrap();
    assert_eq!(item.version, 2);
    let headers = audit::request_headers(w.table.as_ref(), &u, &ctx.action())
        .await
        .unwrap();
    let rows = audit::audit_rows(w.table.as_ref(), &u, &headers[0])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let row = rows[0].clone();
    assert_eq!(row.actor, Actor::Agent);
    assert_eq!(row.before.unwrap().data["title"], "Draft");
    assert_eq!(row.after.unwrap().data["title"], "Final");
}

async fn a_stale_version_is_a_readable_conflict_and_writes_nothing(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let note = notes::add(&ctx, "A").await.unwrap();
    let (_, stale) = notes::load(&ctx, &note.id).await.unwrap();
    notes::rename(&ctx.next_action(), &note.id, "B")
        .await
        .unwrap();

    let before = w.dump("USER#u1").await;
    let late = ctx.next_action();
    let err = Audited::new(&late)
        .replace(&stale, json!({"id": note.id, "title": "C"}))
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict { .. }), "{err:?}");
    assert!(
        err.for_model().contains("changed since you read it"),
        "{err}"
    );
    assert_eq!(w.dump("USER#u1").await, before, "nothing written");
}

async fn put_new_over_an_existing_record_conflicts(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let note = notes::add(&ctx, "A").await.unwrap();
    let again = ctx.next_action();
    let err = Audited::new(&again)
        .put_new(notes::note_key(&again, &note.id), &note)
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict { .. }), "{err:?}");
}

async fn delete_and_require_unchanged_are_version_checked(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let a = notes::add(&ctx, "A").await.unwrap();
    let b = notes::add(&ctx.next_action(), "B").await.unwrap();
    let (_, a_item) = notes::load(&ctx, &a.id).await.unwrap();
    let (_, b_item) = notes::load(&ctx, &b.id).await.unwrap();

    // B changes after it was read: the check fails and A is not deleted.
    notes::rename(&ctx.next_action(), &b.id, "B2")
        .await
        .unwrap();
    let err = Audited::new(&ctx.next_action())
        .require_unchanged(&b_item)
        .delete(&a_item)
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict { .. }), "{err:?}");
    assert!(notes::load(&ctx, &a.id).await.is_ok());

    notes::delete(&ctx.next_action(), &a.id).await.unwrap();
    let err = notes::load(&ctx, &a.id).await.unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
}

async fn a_paused_account_cannot_write_and_a_missing_one_is_not_found(w: World) {
    let u = w.account("u1").await;
    accounts::pause(w.table.as_ref(), &u).await.unwrap();
    let err = notes::add(&w.ctx(&u, Actor::Agent), "A").await.unwrap_err();
    assert!(matches!(err, ServiceError::Forbidden { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("Not allowed: {}", accounts::PAUSED_REASON)
    );
    assert!(w.dump("USER#u1").await.len() == 1, "only the profile");

    accounts::resume(w.table.as_ref(), &u).await.unwrap();
    notes::add(&w.ctx(&u, Actor::Agent), "A").await.unwrap();

    let ghost = steward_harness::UserId::parse("ghost").unwrap();
    let err = notes::add(&w.ctx(&ghost, Actor::User), "A")
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }), "{err:?}");
    assert!(w.dump("USER#ghost").await.is_empty());
}

async fn too_many_changes_are_refused_clearly(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User).with_effect(effect("toolu_big"));
    let titles: Vec<String> = (0..=AUDITED_CHANGES_MAX).map(|i| format!("n{i}")).collect();
    let (tx, _) = notes::plan_add(&ctx, &titles).unwrap();
    let err = tx.commit().await.unwrap_err();
    assert!(
        matches!(err, ServiceError::TooManyChanges { changes, max } if changes == AUDITED_CHANGES_MAX + 1 && max == AUDITED_CHANGES_MAX),
        "{err:?}"
    );
    assert!(err.for_model().contains("smaller parts"), "{err}");

    // The maximum itself fits, with an effect item and the profile check.
    let titles: Vec<String> = (0..AUDITED_CHANGES_MAX).map(|i| format!("n{i}")).collect();
    let (tx, _) = notes::plan_add(&ctx, &titles).unwrap();
    tx.commit().await.unwrap();
    assert_eq!(notes::list(&ctx).await.unwrap().len(), AUDITED_CHANGES_MAX);
}

async fn the_domain_cannot_write_harness_keys_or_another_users_partition(w: World) {
    let u1 = w.account("u1").await;
    let _u2 = w.account("u2").await;
    let ctx = w.ctx(&u1, Actor::Agent);
    let profile = w.table.get("USER#u1", "PROFILE").await.unwrap().unwrap();
    let err = Audited::new(&ctx)
        .replace(&profile, json!({"name": "hijacked"}))
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Internal(_)), "{err:?}");

    let other = w.table.get("USER#u2", "PROFILE").await.unwrap().unwrap();
    let err = Audited::new(&ctx)
        .delete(&other)
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Internal(_)), "{err:?}");
    assert!(w.table.get("USER#u2", "PROFILE").await.unwrap().is_some());

    // A global index row of the domain's own kind is fine.
    let slug = keys::index_key("SLUG", "spring-fair").unwrap();
    Audited::new(&ctx)
        .put_new(slug, json!({"user": "u1"}))
        .commit()
        .await
        .unwrap();
}

async fn an_empty_transaction_writes_nothing(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User).with_effect(effect("toolu_empty"));
    let r = Audited::new(&ctx)
        .commit_with_result(json!("ok"))
        .await
        .unwrap();
    assert_eq!(r, "ok");
    assert_eq!(w.dump("USER#u1").await.len(), 1);
    assert!(
        effect::stored_effect(w.table.as_ref(), ctx.effect().unwrap())
            .await
            .unwrap()
            .is_none()
    );
}

async fn the_same_effect_key_twice_changes_once_and_returns_the_same_result(w: World) {
    let u = w.account("u1").await;
    let first = w.agent_call(&u, "toolu_1");
    let r1 = notes::add(&first, "Once").await.unwrap();
    // The retry is a new request (new action id) for the same tool call.
    let retry = first.next_action().with_effect(effect("toolu_1"));
    let (tx, _) = notes::plan_add(&retry, &["Once".to_owned()]).unwrap();
    let r2 = tx
        .commit_with_result(json!({"different": "result"}))
        .await
        .unwrap();
    assert_eq!(
        r2,
        Value::Null,
        "the first commit's stored result (none) comes back"
    );
    let rename_1 = w.agent_call(&u, "toolu_2");
    let a = notes::rename(&rename_1, &r1.id, "Renamed").await.unwrap();
    let rename_retry = rename_1.next_action().with_effect(effect("toolu_2"));
    let b = notes::rename(&rename_retry, &r1.id, "Renamed").await;
    // The retry reads version 2 and would write version 3, but the effect exists: it returns
    // the stored result and writes nothing.
    assert_eq!(b.unwrap(), a);
    assert_eq!(notes::list(&first).await.unwrap().len(), 1);
    let (_, item) = notes::load(&first, &r1.id).await.unwrap();
    assert_eq!(item.version, 2);
    let headers = w
        .table
        .query_all(&steward_store::Query::prefix("USER#u1", "ACTION#"), 100)
        .await
        .unwrap();
    assert_eq!(headers.len(), 2, "one action per distinct tool call");
}

async fn concurrent_calls_with_one_effect_key_act_exactly_once(w: World) {
    let u = w.account("u1").await;
    let base = w.ctx(&u, Actor::Agent);
    let mut tasks = Vec::new();
    for i in 0..8 {
        // Each attempt is its own request (own action id, own note id) for the same call.
        let ctx = base.next_action().with_effect(effect("toolu_race"));
        tasks.push(tokio::spawn(async move {
            let note = Note {
                id: format!("race{i}"),
                title: format!("attempt {i}"),
                body: String::new(),
            };
            Audited::new(&ctx)
                .put_new(notes::note_key(&ctx, &note.id), &note)
                .commit_with_result(json!({"created": note.id}))
                .await
        }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap().unwrap());
    }
    let first = results[0].clone();
    assert!(results.iter().all(|r| *r == first), "{results:?}");
    let notes = notes::list(&base).await.unwrap();
    assert_eq!(notes.len(), 1, "exactly one attempt wrote");
    assert_eq!(json!({"created": notes[0].id}), first);
    let stored = effect::stored_effect(w.table.as_ref(), &effect("toolu_race"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.result, first);
    let headers = w
        .table
        .query_all(&steward_store::Query::prefix("USER#u1", "ACTION#"), 100)
        .await
        .unwrap();
    assert_eq!(headers.len(), 1);
}

async fn effects_expire_with_the_inbox_window(w: World) {
    let u = w.account("u1").await;
    let ctx = w.agent_call(&u, "toolu_ttl");
    notes::add(&ctx, "A").await.unwrap();
    let item = w
        .table
        .get("CONV#tg:42", "EFFECT#toolu_ttl")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        item.ttl,
        Some(support::T0_MILLIS / 1000 + steward_harness::limits::EFFECT_TTL_SECS)
    );
    assert_eq!(item.data["action"], ctx.action().to_string());
}

async fn one_context_is_one_request_of_several_commits(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let a = notes::add(&ctx, "A").await.unwrap();
    Audited::new(&ctx)
        .label("Add other")
        .put_new(ctx.key("NOTE#other"), json!({"id": "other", "title": "B"}))
        .commit()
        .await
        .unwrap();
    notes::rename(&ctx, &a.id, "A2").await.unwrap();
    assert_eq!(notes::list(&ctx).await.unwrap().len(), 2);

    let headers = audit::request_headers(w.table.as_ref(), &u, &ctx.action())
        .await
        .unwrap();
    let labels: Vec<_> = headers.iter().map(|h| h.label.clone().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "Add 1 note(s)".to_owned(),
            "Add other".to_owned(),
            format!("Rename note {}", a.id)
        ],
        "one header per commit, oldest first, all under the request's action id"
    );
    assert!(headers.iter().all(|h| h.action == ctx.action()));
    let commits: std::collections::HashSet<_> = headers.iter().map(|h| h.commit).collect();
    assert_eq!(commits.len(), 3, "each commit has its own id");

    // The activity trail shows the request once, with its three changes.
    notes::add(&ctx.next_action(), "C").await.unwrap();
    let requests = audit::recent_requests(w.table.as_ref(), &u, 10)
        .await
        .unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].action, ctx.action());
    assert_eq!(requests[1].commits, headers);
    assert_eq!(requests[1].changes(), 3);
    assert_eq!(requests[0].commits.len(), 1);
    let newest = audit::recent_requests(w.table.as_ref(), &u, 1)
        .await
        .unwrap();
    assert_eq!(newest.len(), 1);
    assert_ne!(newest[0].action, ctx.action());
}

async fn world(backend: steward_store::testing::Backend) -> Option<World> {
    World::on(backend).await
}

steward_store::backend_tests!(setup = world;
    a_commit_writes_records_header_and_audit_rows_together,
    replace_bumps_the_version_and_keeps_both_images,
    a_stale_version_is_a_readable_conflict_and_writes_nothing,
    put_new_over_an_existing_record_conflicts,
    delete_and_require_unchanged_are_version_checked,
    a_paused_account_cannot_write_and_a_missing_one_is_not_found,
    too_many_changes_are_refused_clearly,
    the_domain_cannot_write_harness_keys_or_another_users_partition,
    an_empty_transaction_writes_nothing,
    the_same_effect_key_twice_changes_once_and_returns_the_same_result,
    concurrent_calls_with_one_effect_key_act_exactly_once,
    effects_expire_with_the_inbox_window,
    one_context_is_one_request_of_several_commits,
);
