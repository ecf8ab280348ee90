//! Fixtures for the conformance suite, built on `steward_store::testing`.

#![allow(clippy::unwrap_used, missing_docs, dead_code)]

use std::sync::Arc;

use steward_store::testing::{Backend, fresh_table};
use steward_store::{ManualClock, SqliteTable};

#[allow(unused_imports)]
pub use steward_store::testing::{emulator_config, emulator_endpoint, unique_name};

use crate::conformance::{Fixture, START_MILLIS, ScratchDir};

async fn fixture(backend: Backend) -> Option<Fixture> {
    let clock = ManualClock::at_millis(START_MILLIS);
    let table = fresh_table(backend, Arc::new(clock.clone())).await?;
    Some(Fixture {
        table,
        clock,
        folder: None,
    })
}

pub async fn sqlite_fixture() -> Option<Fixture> {
    fixture(Backend::Sqlite).await
}

/// A SQLite file store, as `steward serve` opens one: reads on its reader connections, writes
/// on its writer, a checkpointer beside them (an in-memory store has one connection only).
pub async fn sqlite_file_fixture() -> Option<Fixture> {
    let clock = ManualClock::at_millis(START_MILLIS);
    let folder = ScratchDir(std::env::temp_dir().join(unique_name("steward-table")));
    let table =
        SqliteTable::open_with_clock(folder.0.join("store.db"), Arc::new(clock.clone())).unwrap();
    Some(Fixture {
        table: Arc::new(table),
        clock,
        folder: Some(folder),
    })
}

pub async fn dynamo_fixture() -> Option<Fixture> {
    let f = fixture(Backend::Dynamo).await;
    if f.is_none() {
        eprintln!("skipping: no emulator (set STEWARD_TEST_AWS_ENDPOINT)");
    }
    f
}
