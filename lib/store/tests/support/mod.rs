//! Builds fresh adapters for tests: an in-memory SQLite table, or a new DynamoDB table / SQS
//! FIFO queue on the emulator named by `STEWARD_TEST_AWS_ENDPOINT`.

#![allow(clippy::unwrap_used, missing_docs, dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use steward_store::{DynamoTable, ManualClock, SqliteTable, create_table};

use crate::conformance::{Fixture, START_MILLIS};

/// The emulator endpoint, or None to skip (fails instead when the emulator is required).
pub fn emulator_endpoint() -> Option<String> {
    match std::env::var("STEWARD_TEST_AWS_ENDPOINT") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("STEWARD_REQUIRE_EMULATOR").is_ok_and(|v| v == "1") {
                panic!("STEWARD_REQUIRE_EMULATOR=1 but STEWARD_TEST_AWS_ENDPOINT is not set");
            }
            eprintln!("skipping: no emulator (set STEWARD_TEST_AWS_ENDPOINT)");
            None
        }
    }
}

/// SDK configuration for the emulator: fixed test credentials and region.
pub async fn emulator_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test",
            "test",
            None,
            None,
            "steward-tests",
        ))
        .load()
        .await
}

/// A name no other test in this process (or a previous run) uses.
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

pub async fn sqlite_fixture() -> Option<Fixture> {
    let clock = ManualClock::at_millis(START_MILLIS);
    let table = SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap();
    Some(Fixture {
        table: Arc::new(table),
        clock,
    })
}

pub async fn dynamo_fixture() -> Option<Fixture> {
    let endpoint = emulator_endpoint()?;
    let config = emulator_config(&endpoint).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let name = unique_name("steward-test");
    create_table(&client, &name).await.unwrap();
    let clock = ManualClock::at_millis(START_MILLIS);
    let table = DynamoTable::with_clock(client, name, Arc::new(clock.clone()));
    Some(Fixture {
        table: Arc::new(table),
        clock,
    })
}
