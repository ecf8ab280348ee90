//! `STEWARD_RETENTION_DAYS` installed for the process: transcripts, audit rows with their
//! action headers, and usage records written afterwards carry `ttl = written + N days`. Its
//! own test binary, because the retention is process-wide.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use steward_harness::retention::{self, RetentionDays};
use steward_harness::transcript::{self, SEEN_USER, SeenRow};
use steward_harness::{Actor, Audited, ConversationKey, Ctx, UserId, accounts, keys, usage};
use steward_llm::Role;
use steward_store::{Clock, ManualClock, Query, SqliteTable, Table};

#[tokio::test]
async fn rows_written_with_a_retention_of_n_days_expire_n_days_later() {
    let installed = retention::install_setting(Some("45")).unwrap();
    assert_eq!(installed.days(), 45);
    assert_eq!(retention::current(), installed);
    assert!(
        retention::install(RetentionDays::new(60).unwrap()).is_err(),
        "a second, different retention is refused"
    );
    let clock = Arc::new(ManualClock::at_millis(1_780_000_000_500));
    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
    let now = clock.now_millis();
    let until = 1_780_000_000 + 45 * 86_400;

    let conversation = ConversationKey::telegram(42);
    let seen = SeenRow {
        role: Role::User,
        text: Some("hello".into()),
        buttons: Vec::new(),
        reaction: None,
        at_ms: now,
    };
    transcript::put_seen(table.as_ref(), &conversation, 1, SEEN_USER, seen)
        .await
        .unwrap();

    let user = UserId::parse("u-retention").unwrap();
    accounts::create_account_with_id(table.as_ref(), clock.as_ref(), user.clone(), "U", None)
        .await
        .unwrap();
    usage::record(
        table.as_ref(),
        &user,
        now,
        "scripted",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    let ctx = Ctx::new(table.clone(), clock.clone(), user.clone(), Actor::User);
    Audited::new(&ctx)
        .label("Add a note")
        .put_new(ctx.key("NOTE#1"), serde_json::json!({ "n": 1 }))
        .commit()
        .await
        .unwrap();

    let conv = table
        .query_all(
            &Query::prefix(keys::conversation_pk(&conversation), ""),
            100,
        )
        .await
        .unwrap();
    assert_eq!(conv.len(), 1);
    assert_eq!(conv[0].ttl, Some(until));
    let mine = table
        .query_all(&Query::prefix(keys::user_pk(&user), ""), 100)
        .await
        .unwrap();
    let retained: Vec<_> = mine
        .iter()
        .filter(|i| {
            [
                keys::ACTION_SK_PREFIX,
                keys::AUDIT_SK_PREFIX,
                keys::USAGE_SK_PREFIX,
            ]
            .iter()
            .any(|p| i.sk.starts_with(p))
        })
        .collect();
    assert!(retained.len() >= 3, "header, audit row, usage: {mine:?}");
    for item in retained {
        assert_eq!(item.ttl, Some(until), "{}", item.sk);
    }
}
