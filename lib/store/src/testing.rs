//! Test support shared by every crate's tests (feature `testing`): fresh tables on each
//! backend, so storage-touching tests run against SQLite always and against DynamoDB on the
//! emulator whenever `STEWARD_TEST_AWS_ENDPOINT` is set (`.ci/run` always sets it; with
//! `STEWARD_REQUIRE_EMULATOR=1` a missing endpoint fails instead of skipping), and a
//! [`RecordingSleeper`] for backoff schedules.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{Clock, DynamoTable, ManualClock, Sleeper, SqliteTable, Table, create_table};

/// The moment test clocks start at by default (2026-11-30T12:00:00Z).
pub const TEST_START_MILLIS: i64 = 1_796_040_000_000;

/// Which backend a test table lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// In-memory SQLite.
    Sqlite,
    /// A fresh table on the DynamoDB emulator.
    Dynamo,
}

/// The emulator endpoint, or None to skip (panics when the emulator is required).
pub fn emulator_endpoint() -> Option<String> {
    match std::env::var("STEWARD_TEST_AWS_ENDPOINT") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("STEWARD_REQUIRE_EMULATOR").map_or(true, |v| v != "1"),
                "STEWARD_REQUIRE_EMULATOR=1 but STEWARD_TEST_AWS_ENDPOINT is not set"
            );
            None
        }
    }
}

/// SDK configuration for the emulator: fixed test credentials and region.
pub async fn emulator_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(steward_net::sdk_http_client())
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

/// A name no other test in this process (or an earlier run) uses.
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// A fresh, empty table on `backend` deciding expiry by `clock`; None when that backend is
/// not available here (DynamoDB without an emulator).
///
/// # Panics
/// When the backend is configured but cannot be set up: a test should fail loudly then.
pub async fn fresh_table(backend: Backend, clock: Arc<dyn Clock>) -> Option<Arc<dyn Table>> {
    match backend {
        Backend::Sqlite => Some(Arc::new(
            SqliteTable::in_memory_with_clock(clock).expect("in-memory SQLite opens"),
        )),
        Backend::Dynamo => {
            let endpoint = emulator_endpoint()?;
            let config = emulator_config(&endpoint).await;
            let client = aws_sdk_dynamodb::Client::new(&config);
            let name = unique_name("steward-test");
            create_table(&client, &name)
                .await
                .expect("the emulator creates a table");
            Some(Arc::new(DynamoTable::with_clock(client, name, clock)))
        }
    }
}

/// A fresh table on every available backend, each with its own manual clock at
/// [`TEST_START_MILLIS`].
pub async fn all_backends() -> Vec<(Backend, Arc<dyn Table>, ManualClock)> {
    let mut out = Vec::new();
    for backend in [Backend::Sqlite, Backend::Dynamo] {
        let clock = ManualClock::at_millis(TEST_START_MILLIS);
        if let Some(table) = fresh_table(backend, Arc::new(clock.clone())).await {
            out.push((backend, table, clock));
        }
    }
    out
}

/// A [`Sleeper`] that takes no time: it records each wait asked of it and yields once, so a
/// test checks a backoff schedule without waiting it out (and without timed assertions).
#[derive(Debug, Default)]
pub struct RecordingSleeper {
    waits: Mutex<Vec<Duration>>,
}

impl RecordingSleeper {
    /// A sleeper with no waits recorded yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Every wait asked for so far, in order.
    pub fn waits(&self) -> Vec<Duration> {
        self.waits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl Sleeper for RecordingSleeper {
    async fn sleep(&self, duration: Duration) {
        self.waits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(duration);
        tokio::task::yield_now().await;
    }
}

/// Generates one `#[tokio::test]` per case and backend: `mod sqlite { … }` and
/// `mod dynamodb { … }`, each case calling `super::<case>(fixture)` with the fixture that
/// `setup(Backend)` (an async fn in the calling module returning `Option<Fixture>`) builds. A backend whose setup
/// returns None (no emulator configured) is skipped with a note on stderr.
///
/// ```ignore
/// async fn world(backend: Backend) -> Option<World> { … }
/// async fn undo_is_lifo(w: World) { … }
/// steward_store::backend_tests!(setup = world; undo_is_lifo, effects_run_once);
/// ```
#[macro_export]
macro_rules! backend_tests {
    (setup = $setup:ident; $($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    match super::$setup($crate::testing::Backend::Sqlite).await {
                        Some(fixture) => super::$case(fixture).await,
                        None => eprintln!("skipping: SQLite backend unavailable"),
                    }
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    match super::$setup($crate::testing::Backend::Dynamo).await {
                        Some(fixture) => super::$case(fixture).await,
                        None => eprintln!("skipping: no DynamoDB emulator (set STEWARD_TEST_AWS_ENDPOINT)"),
                    }
                }
            )*
        }
    };
}

/// For tests of group commit: starts `first`, waits (up to 10 s) until `held()` says its write
/// is held at the test's gate, starts every one of `rest` behind it, gives them a tenth of a
/// second to line up (nothing observable says when all of them wait on the lock; a tenth of a
/// second is ample for tasks that only push to a list, and a late one only makes one more
/// batch), then calls `open`. Returns each outcome, `first`'s first.
///
/// # Panics
/// When the first write is not held within 10 s, or a task panics: a failed test.
#[allow(clippy::panic, clippy::expect_used)]
pub async fn behind_a_held_write<T, F>(
    first: F,
    rest: Vec<F>,
    held: impl Fn() -> bool,
    open: impl FnOnce(),
) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let first = tokio::spawn(first);
    let mut waited = 0;
    while !held() {
        assert!(waited < 1_000, "the first write was not held within 10 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    let rest: Vec<_> = rest.into_iter().map(tokio::spawn).collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    open();
    let mut outcomes = vec![first.await.expect("the first task ran")];
    for task in rest {
        outcomes.push(task.await.expect("every task ran"));
    }
    outcomes
}
