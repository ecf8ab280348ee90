//! Accounts: create, read, rename, time zone, pause and resume, with every error path.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use steward_harness::{AccountStatus, Actor, ServiceError, UserId, accounts};
use support::World;

async fn create_and_read_an_account(w: World) {
    let p = accounts::create_account(w.table.as_ref(), &w.clock, "  Dana Lee ", None)
        .await
        .unwrap();
    assert_eq!(p.name, "Dana Lee");
    assert_eq!(p.time_zone.as_str(), accounts::DEFAULT_TIME_ZONE);
    assert_eq!(p.status, AccountStatus::Active);
    assert_eq!(p.created_ms, support::T0_MILLIS);
    let read = accounts::get_profile(w.table.as_ref(), &p.user)
        .await
        .unwrap();
    assert_eq!(read.name, p.name);
    assert_eq!(read.version, 1);

    let other = accounts::create_account(w.table.as_ref(), &w.clock, "Sam", Some("Asia/Tokyo"))
        .await
        .unwrap();
    assert_ne!(other.user, p.user);
    assert_eq!(other.time_zone.as_str(), "Asia/Tokyo");
}

async fn creation_errors_are_readable(w: World) {
    let err = accounts::create_account(w.table.as_ref(), &w.clock, "Dana", Some("Moon/Base"))
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { ref field, .. } if field == "time zone"));
    let err = accounts::create_account(w.table.as_ref(), &w.clock, " ", None)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Invalid name: it is empty");

    w.account("taken").await;
    let err = accounts::create_account_with_id(
        w.table.as_ref(),
        &w.clock,
        UserId::parse("taken").unwrap(),
        "Again",
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(err.to_string(), "An account with id taken already exists.");
}

async fn a_missing_account_is_not_found(w: World) {
    let ghost = UserId::parse("ghost").unwrap();
    let err = accounts::get_profile(w.table.as_ref(), &ghost)
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
    assert!(
        err.for_model()
            .starts_with("The account ghost was not found.")
    );
    let err = accounts::pause(w.table.as_ref(), &ghost).await.unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
    let err = accounts::rename(&w.ctx(&ghost, Actor::User), "X")
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
}

async fn rename_and_time_zone_are_audited_edits(w: World) {
    let u = w.account("u1").await;
    let ctx = w.ctx(&u, Actor::User);
    let p = accounts::rename(&ctx, "Dana").await.unwrap();
    assert_eq!(p.name, "Dana");
    assert_eq!(p.version, 2);
    let p = accounts::set_time_zone(&ctx.next_action(), "America/New_York")
        .await
        .unwrap();
    assert_eq!(p.time_zone.as_str(), "America/New_York");
    let stored = accounts::profile(&ctx).await.unwrap();
    assert_eq!(stored, p);
    let err = accounts::set_time_zone(&ctx.next_action(), "Europe/Atlantis")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not a known IANA time zone"),
        "{err}"
    );
    let err = accounts::rename(&ctx.next_action(), "").await.unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }));
    // Two audited actions, one per edit.
    let actions = w
        .table
        .query_all(&steward_store::Query::prefix("USER#u1", "ACTION#"), 10)
        .await
        .unwrap();
    assert_eq!(actions.len(), 2);
}

async fn pause_and_resume_are_idempotent_and_gate_edits(w: World) {
    let u = w.account("u1").await;
    let p = accounts::pause(w.table.as_ref(), &u).await.unwrap();
    assert_eq!(p.status, AccountStatus::Paused);
    let again = accounts::pause(w.table.as_ref(), &u).await.unwrap();
    assert_eq!(again.version, p.version, "no write when already paused");
    let err = accounts::ensure_can_write(w.table.as_ref(), &u)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("Not allowed: {}", accounts::PAUSED_REASON)
    );
    let err = accounts::rename(&w.ctx(&u, Actor::User), "X")
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Forbidden { .. }));

    let p = accounts::resume(w.table.as_ref(), &u).await.unwrap();
    assert_eq!(p.status, AccountStatus::Active);
    accounts::rename(&w.ctx(&u, Actor::User), "X")
        .await
        .unwrap();
    // Pausing is not on the undo stack: undo reverts the rename, not the resume.
    let s = steward_harness::undo_last(&w.ctx(&u, Actor::User))
        .await
        .unwrap();
    assert_eq!(s.label.as_deref(), Some("Rename the account"));
    assert_eq!(
        accounts::get_profile(w.table.as_ref(), &u)
            .await
            .unwrap()
            .status,
        AccountStatus::Active
    );
}

async fn world(backend: steward_store::testing::Backend) -> Option<World> {
    World::on(backend).await
}

steward_store::backend_tests!(setup = world;
    create_and_read_an_account,
    creation_errors_are_readable,
    a_missing_account_is_not_found,
    rename_and_time_zone_are_audited_edits,
    pause_and_resume_are_idempotent_and_gate_edits,
);
