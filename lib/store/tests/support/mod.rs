//! Fixtures for the conformance suite, built on `steward_store::testing`.

#![allow(clippy::unwrap_used, missing_docs, dead_code)]

use std::sync::Arc;

use steward_store::ManualClock;
use steward_store::testing::{Backend, fresh_table};

#[allow(unused_imports)]
pub use steward_store::testing::{emulator_config, emulator_endpoint, unique_name};

use crate::conformance::{Fixture, START_MILLIS};

async fn fixture(backend: Backend) -> Option<Fixture> {
    let clock = ManualClock::at_millis(START_MILLIS);
    let table = fresh_table(backend, Arc::new(clock.clone())).await?;
    Some(Fixture { table, clock })
}

pub async fn sqlite_fixture() -> Option<Fixture> {
    fixture(Backend::Sqlite).await
}

pub async fn dynamo_fixture() -> Option<Fixture> {
    let f = fixture(Backend::Dynamo).await;
    if f.is_none() {
        eprintln!("skipping: no emulator (set STEWARD_TEST_AWS_ENDPOINT)");
    }
    f
}
