//! MCP access tokens: create, list, authenticate, record use, revoke.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use steward_harness::limits::TOKEN_LAST_USED_RESOLUTION_SECS;
use steward_harness::tokens::{self, TOKEN_PREFIX};
use steward_harness::{Actor, ServiceError, TokenId, UserId};
use support::World;

async fn a_token_authenticates_its_user_and_only_its_hash_is_stored(w: World) {
    let u = w.account("u1").await;
    let t = w.table.as_ref();
    let new = tokens::create_token(t, &w.clock, &u, Some("Claude desktop"))
        .await
        .unwrap();
    assert!(new.token.expose().starts_with(TOKEN_PREFIX));
    // Finding 14 of the security review: the token never shows in `Debug` output.
    let shown = format!("{new:?}");
    assert!(!shown.contains(new.token.expose()), "{shown}");
    assert!(shown.contains("***"), "{shown}");
    assert_eq!(
        new.token.expose().len(),
        TOKEN_PREFIX.len() + 43,
        "32 bytes, base64url"
    );
    assert_eq!(new.record.label, "Claude desktop");
    assert_eq!(new.record.id, tokens::token_id_of(new.token.expose()));

    // The secret appears nowhere in the store.
    for pk in ["USER#u1", &format!("TOKEN#{}", new.record.id)] {
        for (_, _, data) in w.dump(pk).await {
            assert!(
                !data
                    .to_string()
                    .contains(&new.token.expose()[TOKEN_PREFIX.len()..])
            );
        }
    }

    let who = tokens::authenticate(t, &w.clock, new.token.expose())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(who.user, u);
    assert_eq!(who.last_used_ms, Some(support::T0_MILLIS));

    assert!(
        tokens::authenticate(t, &w.clock, "stw_wrong")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        tokens::authenticate(t, &w.clock, "")
            .await
            .unwrap()
            .is_none()
    );
    let long = format!("{TOKEN_PREFIX}{}", "a".repeat(1000));
    assert!(
        tokens::authenticate(t, &w.clock, &long)
            .await
            .unwrap()
            .is_none()
    );
}

async fn last_use_is_recorded_at_most_once_a_minute(w: World) {
    let u = w.account("u1").await;
    let t = w.table.as_ref();
    let new = tokens::create_token(t, &w.clock, &u, None).await.unwrap();
    assert_eq!(new.record.label, tokens::DEFAULT_TOKEN_LABEL);
    tokens::authenticate(t, &w.clock, new.token.expose())
        .await
        .unwrap();
    w.clock.advance_millis(1_000);
    tokens::authenticate(t, &w.clock, new.token.expose())
        .await
        .unwrap();
    let r = tokens::get_token(t, &new.record.id).await.unwrap();
    assert_eq!(r.last_used_ms, Some(support::T0_MILLIS));
    w.clock
        .advance_millis(TOKEN_LAST_USED_RESOLUTION_SECS * 1000);
    tokens::authenticate(t, &w.clock, new.token.expose())
        .await
        .unwrap();
    let r = tokens::get_token(t, &new.record.id).await.unwrap();
    assert_eq!(
        r.last_used_ms,
        Some(support::T0_MILLIS + 1_000 + TOKEN_LAST_USED_RESOLUTION_SECS * 1000)
    );
}

async fn tokens_are_listed_per_user_and_revoked_for_good(w: World) {
    let u1 = w.account("u1").await;
    let u2 = w.account("u2").await;
    let t = w.table.as_ref();
    let a = tokens::create_token(t, &w.clock, &u1, Some("a"))
        .await
        .unwrap();
    w.clock.advance_millis(10);
    let b = tokens::create_token(t, &w.clock, &u1, Some("b"))
        .await
        .unwrap();
    let c = tokens::create_token(t, &w.clock, &u2, Some("c"))
        .await
        .unwrap();
    let listed: Vec<String> = tokens::list_tokens(t, &u1)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.label)
        .collect();
    assert_eq!(listed, ["a", "b"]);

    let revoked = tokens::revoke_token(t, &w.clock, &a.record.id)
        .await
        .unwrap();
    assert!(revoked.revoked);
    assert_eq!(revoked.revoked_ms, Some(support::T0_MILLIS + 10));
    assert!(
        tokens::authenticate(t, &w.clock, a.token.expose())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        tokens::authenticate(t, &w.clock, b.token.expose())
            .await
            .unwrap()
            .is_some()
    );
    // Revoking again is a no-op.
    assert!(
        tokens::revoke_token(t, &w.clock, &a.record.id)
            .await
            .unwrap()
            .revoked
    );
    let listed = tokens::list_tokens(t, &u1).await.unwrap();
    assert!(listed[0].revoked && !listed[1].revoked);

    // A user can revoke only their own tokens.
    let ctx = w.ctx(&u1, Actor::User);
    let err = tokens::revoke_own_token(&ctx, &c.record.id)
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
    assert!(
        tokens::authenticate(t, &w.clock, c.token.expose())
            .await
            .unwrap()
            .is_some()
    );
    tokens::revoke_own_token(&ctx, &b.record.id).await.unwrap();
    assert!(
        tokens::authenticate(t, &w.clock, b.token.expose())
            .await
            .unwrap()
            .is_none()
    );

    let unknown = TokenId::parse(&"0".repeat(64)).unwrap();
    let err = tokens::revoke_token(t, &w.clock, &unknown)
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
}

async fn token_creation_errors(w: World) {
    let t = w.table.as_ref();
    let ghost = UserId::parse("ghost").unwrap();
    let err = tokens::create_token(t, &w.clock, &ghost, None)
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
    let u = w.account("u1").await;
    let err = tokens::create_token(t, &w.clock, &u, Some("  "))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Invalid label: it is empty");
}

async fn world(backend: steward_store::testing::Backend) -> Option<World> {
    World::on(backend).await
}

steward_store::backend_tests!(setup = world;
    a_token_authenticates_its_user_and_only_its_hash_is_stored,
    last_use_is_recorded_at_most_once_a_minute,
    tokens_are_listed_per_user_and_revoked_for_good,
    token_creation_errors,
);
