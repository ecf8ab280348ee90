//! Channel identities and one-time linking codes.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::sync::Arc;

use steward_harness::identity::{self, Bound};
use steward_harness::limits::LINK_CODE_TTL_SECS;
use steward_harness::linking::{self, LinkCode, LinkOutcome};
use steward_harness::{ChannelIdentity, ServiceError, UserId};
use support::World;

fn wa(id: &str) -> ChannelIdentity {
    ChannelIdentity::parse("wa", id).unwrap()
}

async fn an_identity_binds_to_one_account(w: World) {
    let u1 = w.account("u1").await;
    let u2 = w.account("u2").await;
    let phone = wa("4915112345");
    let t = w.table.as_ref();
    assert_eq!(identity::lookup(t, &phone).await.unwrap(), None);
    assert_eq!(
        identity::bind(t, &w.clock, &phone, &u1).await.unwrap(),
        Bound::Bound
    );
    assert_eq!(identity::lookup(t, &phone).await.unwrap(), Some(u1.clone()));
    assert_eq!(
        identity::bind(t, &w.clock, &phone, &u1).await.unwrap(),
        Bound::AlreadyYours
    );
    let err = identity::bind(t, &w.clock, &phone, &u2).await.unwrap_err();
    assert!(matches!(err, ServiceError::Forbidden { .. }));
    assert!(
        err.to_string()
            .contains("already linked to a different Steward account")
    );
    assert_eq!(identity::lookup(t, &phone).await.unwrap(), Some(u1.clone()));

    // The same external id on another channel is another identity.
    let tg = ChannelIdentity::parse("tg", "4915112345").unwrap();
    identity::bind(t, &w.clock, &tg, &u2).await.unwrap();
    let listed = identity::list_identities(t, &u1).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].identity, phone);

    let ghost = UserId::parse("ghost").unwrap();
    let err = identity::bind(t, &w.clock, &wa("1"), &ghost)
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
}

async fn unbinding_frees_the_identity(w: World) {
    let u1 = w.account("u1").await;
    let u2 = w.account("u2").await;
    let t = w.table.as_ref();
    let phone = wa("49");
    identity::bind(t, &w.clock, &phone, &u1).await.unwrap();
    let err = identity::unbind(t, &phone, &u2).await.unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
    identity::unbind(t, &phone, &u1).await.unwrap();
    assert!(identity::list_identities(t, &u1).await.unwrap().is_empty());
    identity::bind(t, &w.clock, &phone, &u2).await.unwrap();
    assert_eq!(identity::lookup(t, &phone).await.unwrap(), Some(u2));
}

async fn a_code_in_a_message_links_the_sender_once(w: World) {
    let u = w.account("u1").await;
    let t = w.table.as_ref();
    let issued = linking::issue_code(t, &w.clock, &u).await.unwrap();
    assert_eq!(
        issued.expires_at_secs,
        support::T0_MILLIS / 1000 + LINK_CODE_TTL_SECS
    );
    let text = format!(
        "Hello! link me please: {}",
        issued.code.as_str().to_lowercase()
    );
    let phone = wa("4915112345");
    let out = linking::consume_from_text(t, &w.clock, &text, &phone)
        .await
        .unwrap();
    assert_eq!(out, Some(LinkOutcome::Linked { user: u.clone() }));
    assert_eq!(identity::lookup(t, &phone).await.unwrap(), Some(u.clone()));

    // Used: a second phone cannot spend it again.
    let err = linking::consume(t, &w.clock, &issued.code, &wa("111"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Invalid linking code: that code is unknown, already used or expired"),
        "{err}"
    );
    assert_eq!(identity::lookup(t, &wa("111")).await.unwrap(), None);

    // No code in the text: nothing happens.
    assert_eq!(
        linking::consume_from_text(t, &w.clock, "just saying hi", &wa("222"))
            .await
            .unwrap(),
        None
    );
}

async fn a_new_code_retires_the_old_one(w: World) {
    let u = w.account("u1").await;
    let t = w.table.as_ref();
    let old = linking::issue_code(t, &w.clock, &u).await.unwrap();
    let new = linking::issue_code(t, &w.clock, &u).await.unwrap();
    assert_ne!(old.code, new.code);
    let err = linking::consume(t, &w.clock, &old.code, &wa("1"))
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }));
    let ok = linking::consume(t, &w.clock, &new.code, &wa("1"))
        .await
        .unwrap();
    assert_eq!(ok, LinkOutcome::Linked { user: u });
}

async fn codes_expire_after_thirty_minutes(w: World) {
    let u = w.account("u1").await;
    let t = w.table.as_ref();
    let issued = linking::issue_code(t, &w.clock, &u).await.unwrap();
    w.clock.advance_millis(LINK_CODE_TTL_SECS * 1000);
    let err = linking::consume(t, &w.clock, &issued.code, &wa("1"))
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }), "{err:?}");
    assert_eq!(identity::lookup(t, &wa("1")).await.unwrap(), None);
    // A new code after expiry works (the stale pointer does not get in the way).
    let fresh = linking::issue_code(t, &w.clock, &u).await.unwrap();
    linking::consume(t, &w.clock, &fresh.code, &wa("1"))
        .await
        .unwrap();
}

async fn unknown_codes_and_codes_for_taken_identities_are_refused(w: World) {
    let u1 = w.account("u1").await;
    let u2 = w.account("u2").await;
    let t = w.table.as_ref();
    let err = linking::consume(t, &w.clock, &LinkCode::parse("K7PQ4MXB").unwrap(), &wa("1"))
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }));

    identity::bind(t, &w.clock, &wa("1"), &u1).await.unwrap();
    let code = linking::issue_code(t, &w.clock, &u2).await.unwrap().code;
    let err = linking::consume(t, &w.clock, &code, &wa("1"))
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Forbidden { .. }), "{err:?}");
    // The code was not spent: it still works for a free identity.
    linking::consume(t, &w.clock, &code, &wa("2"))
        .await
        .unwrap();

    let again = linking::issue_code(t, &w.clock, &u1).await.unwrap().code;
    assert_eq!(
        linking::consume(t, &w.clock, &again, &wa("1"))
            .await
            .unwrap(),
        LinkOutcome::AlreadyLinked { user: u1 }
    );
    let ghost = UserId::parse("ghost").unwrap();
    assert!(matches!(
        linking::issue_code(t, &w.clock, &ghost).await.unwrap_err(),
        ServiceError::NotFound { .. }
    ));
}

async fn a_code_binds_at_most_once_under_concurrency(w: World) {
    let u = w.account("u1").await;
    let code = linking::issue_code(w.table.as_ref(), &w.clock, &u)
        .await
        .unwrap()
        .code;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let table = Arc::clone(&w.table);
        let clock = w.clock.clone();
        let code = code.clone();
        tasks.push(tokio::spawn(async move {
            let sender = wa(&format!("49{i}"));
            linking::consume(table.as_ref(), &clock, &code, &sender).await
        }));
    }
    let mut linked = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(LinkOutcome::Linked { .. }) => linked += 1,
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => assert!(matches!(e, ServiceError::Invalid { .. }), "{e:?}"),
        }
    }
    assert_eq!(linked, 1);
    assert_eq!(
        identity::list_identities(w.table.as_ref(), &u)
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn world(backend: steward_store::testing::Backend) -> Option<World> {
    World::on(backend).await
}

steward_store::backend_tests!(setup = world;
    an_identity_binds_to_one_account,
    unbinding_frees_the_identity,
    a_code_in_a_message_links_the_sender_once,
    a_new_code_retires_the_old_one,
    codes_expire_after_thirty_minutes,
    unknown_codes_and_codes_for_taken_identities_are_refused,
    a_code_binds_at_most_once_under_concurrency,
);
