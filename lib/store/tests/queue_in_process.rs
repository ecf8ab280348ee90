//! The in-process turn queue: per-group order, parallelism across groups, dedupe, retry then
//! dead-letter, panics, redrive, and recovery after the queue is dropped mid-way.

#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use steward_store::testing::RecordingSleeper;
use steward_store::{
    Handler, HandlerError, InProcessQueue, Item, ManualClock, Page, Query, QueueConfig, QueueError,
    QueuedMessage, RECEIVES_MAX, REDELIVERY_SCHEDULE, SqliteTable, StoreError, Table, TokioSleeper,
    TraceContext, TurnQueue, WriteOp, redelivery_wait_total,
};
use tokio::sync::{Notify, Semaphore};

/// Records every delivery; behaviour per body: `fail:N:...` fails the first N attempts,
/// `panic...` always panics, `block...` waits on `release`, `slow...` sleeps 50 ms.
#[derive(Default)]
struct Recorder {
    log: Mutex<Vec<(String, String, u32)>>,
    done: Mutex<Vec<(String, String)>>,
    active: Mutex<HashMap<String, u32>>,
    overlap: Mutex<bool>,
    max_parallel: Mutex<usize>,
    release: Notify,
    /// What the dead-letter hook was told: (body, error, attempt).
    dead: Mutex<Vec<(String, String, u32)>>,
    /// The trace context of every delivery: (body, attempt, context).
    traces: Mutex<Vec<(String, u32, TraceContext)>>,
}

#[async_trait]
impl Handler for Recorder {
    async fn handle(&self, m: QueuedMessage) -> Result<(), HandlerError> {
        self.traces
            .lock()
            .unwrap()
            .push((m.body.clone(), m.attempt, m.trace.clone()));
        self.log
            .lock()
            .unwrap()
            .push((m.group.clone(), m.body.clone(), m.attempt));
        {
            let mut active = self.active.lock().unwrap();
            let n = active.entry(m.group.clone()).or_default();
            *n += 1;
            if *n > 1 {
                *self.overlap.lock().unwrap() = true;
            }
            let running = active.values().filter(|v| **v > 0).count();
            let mut max = self.max_parallel.lock().unwrap();
            *max = (*max).max(running);
        }
        let result = self.behave(&m).await;
        *self.active.lock().unwrap().get_mut(&m.group).unwrap() -= 1;
        if result.is_ok() {
            self.done.lock().unwrap().push((m.group, m.body));
        }
        result
    }

    async fn dead_lettered(&self, m: QueuedMessage, error: &str) {
        self.dead
            .lock()
            .unwrap()
            .push((m.body, error.to_owned(), m.attempt));
    }
}

impl Recorder {
    async fn behave(&self, m: &QueuedMessage) -> Result<(), HandlerError> {
        if let Some(rest) = m.body.strip_prefix("fail:") {
            let n: u32 = rest.split(':').next().unwrap().parse().unwrap();
            if m.attempt <= n {
                return Err(HandlerError(format!("planned failure {}", m.attempt)));
            }
        } else if m.body.starts_with("panic") {
            panic!("planned panic");
        } else if m.body.starts_with("block") {
            self.release.notified().await;
        } else if m.body.starts_with("slow") {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    fn done_in(&self, group: &str) -> Vec<String> {
        self.done
            .lock()
            .unwrap()
            .iter()
            .filter(|(g, _)| g == group)
            .map(|(_, b)| b.clone())
            .collect()
    }
}

fn fast() -> QueueConfig {
    QueueConfig {
        attempts_max: 3,
        redelivery: vec![Duration::from_millis(5), Duration::from_millis(20)],
        idle_worker: Duration::from_millis(100),
        sleeper: Arc::new(TokioSleeper),
    }
}

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

fn sqlite() -> Arc<dyn Table> {
    Arc::new(SqliteTable::in_memory().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_group_is_processed_in_order_one_at_a_time() {
    let rec = Arc::new(Recorder::default());
    let q = InProcessQueue::start(sqlite(), rec.clone(), fast())
        .await
        .unwrap();
    let bodies: Vec<String> = (0..30).map(|i| format!("slow-{i:02}")).collect();
    for (i, b) in bodies.iter().enumerate() {
        q.enqueue("conv-a", &format!("m{i}"), b).await.unwrap();
    }
    wait_until("all handled", || rec.done_in("conv-a").len() == 30).await;
    assert_eq!(rec.done_in("conv-a"), bodies);
    assert!(
        !*rec.overlap.lock().unwrap(),
        "two messages of one group never overlap"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn different_groups_run_in_parallel() {
    let rec = Arc::new(Recorder::default());
    let q = InProcessQueue::start(sqlite(), rec.clone(), fast())
        .await
        .unwrap();
    for g in 0..4 {
        for i in 0..3 {
            q.enqueue(
                &format!("g{g}"),
                &format!("g{g}-m{i}"),
                &format!("slow-{i}"),
            )
            .await
            .unwrap();
        }
    }
    wait_until("all handled", || rec.done.lock().unwrap().len() == 12).await;
    assert!(
        *rec.max_parallel.lock().unwrap() >= 2,
        "groups overlapped in time"
    );
    for g in 0..4 {
        assert_eq!(
            rec.done_in(&format!("g{g}")),
            ["slow-0", "slow-1", "slow-2"]
        );
    }
    assert!(!*rec.overlap.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_dedupe_id_within_five_minutes_is_dropped() {
    let rec = Arc::new(Recorder::default());
    let clock = ManualClock::at_millis(1_796_040_000_000);
    let table: Arc<dyn Table> =
        Arc::new(SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap());
    let q = InProcessQueue::start_with_clock(table, rec.clone(), fast(), Arc::new(clock.clone()))
        .await
        .unwrap();
    assert!(!q.known_duplicate("c", "wamid.1"), "nothing taken yet");
    q.enqueue("c", "wamid.1", "first").await.unwrap();
    // Known from memory once taken, so a caller can answer a retry before building its body;
    // only for that group and id.
    assert!(q.known_duplicate("c", "wamid.1"));
    assert!(!q.known_duplicate("c", "wamid.2"));
    assert!(!q.known_duplicate("d", "wamid.1"));
    q.enqueue("c", "wamid.1", "first again").await.unwrap();
    clock.advance_millis(4 * 60 * 1000);
    assert!(q.known_duplicate("c", "wamid.1"), "still inside the window");
    q.enqueue("c", "wamid.1", "still inside the window")
        .await
        .unwrap();
    q.enqueue("c", "wamid.2", "second").await.unwrap();
    wait_until("two handled", || rec.done_in("c").len() == 2).await;
    clock.advance_millis(2 * 60 * 1000);
    assert!(!q.known_duplicate("c", "wamid.1"), "the window closed");
    q.enqueue("c", "wamid.1", "after the window").await.unwrap();
    wait_until("three handled", || rec.done_in("c").len() == 3).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(rec.done_in("c"), ["first", "second", "after the window"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_racing_each_other_are_still_taken_once() {
    // A provider retrying while the first delivery is still being written: no copy is known
    // yet when it arrives, copies may share a batch or follow each other into the table, and
    // one only may be taken.
    let rec = Arc::new(Recorder::default());
    let q = InProcessQueue::start(sqlite(), rec.clone(), fast())
        .await
        .unwrap();
    for round in 0..20 {
        let id = format!("wamid.{round}");
        let copies: Vec<_> = (0..8)
            .map(|copy| {
                let (q, id) = (q.clone(), id.clone());
                tokio::spawn(async move { q.enqueue("c", &id, &format!("{id} copy {copy}")).await })
            })
            .collect();
        for copy in copies {
            copy.await.unwrap().expect("every copy is acknowledged");
        }
    }
    wait_until("twenty handled", || rec.done_in("c").len() == 20).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let done = rec.done_in("c");
    assert_eq!(done.len(), 20, "one delivery per message id: {done:?}");
    for (round, body) in done.iter().enumerate() {
        assert!(
            body.starts_with(&format!("wamid.{round} copy ")),
            "{done:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_dedupe_id_in_two_groups_is_two_messages() {
    let rec = Arc::new(Recorder::default());
    let q = InProcessQueue::start(sqlite(), rec.clone(), fast())
        .await
        .unwrap();
    // Web chat ids are generated by each browser: two users may send the same id.
    q.enqueue("web:u1", "c-1", "from u1").await.unwrap();
    q.enqueue("web:u2", "c-1", "from u2").await.unwrap();
    q.enqueue("web:u1", "c-1", "u1 again").await.unwrap();
    wait_until("both handled", || {
        rec.done_in("web:u1").len() == 1 && rec.done_in("web:u2").len() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(rec.done_in("web:u1"), ["from u1"]);
    assert_eq!(rec.done_in("web:u2"), ["from u2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_retried_then_dead_lettered_and_can_be_redriven() {
    let rec = Arc::new(Recorder::default());
    let table = sqlite();
    let q = InProcessQueue::start(table.clone(), rec.clone(), fast())
        .await
        .unwrap();
    q.enqueue("c", "1", "fail:2:recovers").await.unwrap();
    q.enqueue("c", "2", "fail:9:never").await.unwrap();
    q.enqueue("c", "3", "panic").await.unwrap();
    q.enqueue("c", "4", "after").await.unwrap();
    wait_until("the last one handled", || {
        rec.done_in("c").contains(&"after".to_string())
    })
    .await;
    assert_eq!(rec.done_in("c"), ["fail:2:recovers", "after"]);
    let attempts = |body: &str| {
        rec.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, b, _)| b == body)
            .count()
    };
    assert_eq!(attempts("fail:2:recovers"), 3);
    assert_eq!(attempts("fail:9:never"), 3, "bounded retries");
    assert_eq!(attempts("panic"), 3, "a panic is a failure like any other");

    wait_until("two dead letters", || {
        futures::executor::block_on(q.dead_letters()).unwrap().len() == 2
    })
    .await;
    let dead = q.dead_letters().await.unwrap();
    assert_eq!(dead[0].body, "fail:9:never");
    assert!(
        dead[0].error.contains("planned failure 3"),
        "{}",
        dead[0].error
    );
    assert_eq!(dead[1].error, "the handler panicked");
    // The hook heard of each dead letter once, with its last failure; a recovered message
    // never reached it.
    let hooked = |rec: &Recorder| rec.dead.lock().unwrap().clone();
    assert_eq!(
        hooked(&rec),
        [
            ("fail:9:never".to_owned(), "planned failure 3".to_owned(), 3),
            ("panic".to_owned(), "the handler panicked".to_owned(), 3),
        ]
    );

    // Re-drive the first dead letter: it runs again (and, still failing, is parked again).
    assert!(q.redrive(dead[0].seq).await.unwrap());
    assert!(!q.redrive(dead[0].seq).await.unwrap(), "already re-driven");
    wait_until("re-driven message retried", || {
        attempts("fail:9:never") == 6
    })
    .await;
    wait_until("parked again", || {
        futures::executor::block_on(q.dead_letters()).unwrap().len() == 2
    })
    .await;
    assert_eq!(
        hooked(&rec).len(),
        3,
        "the hook runs again for the re-driven one"
    );
    assert_eq!(hooked(&rec)[2].0, "fail:9:never");
}

/// The deployed shape's schedule with waits recorded, not taken.
fn deployed_schedule(sleeper: Arc<RecordingSleeper>) -> QueueConfig {
    QueueConfig {
        sleeper,
        ..QueueConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_message_is_retried_on_the_shared_schedule_and_its_conversation_waits() {
    let rec = Arc::new(Recorder::default());
    let sleeper = RecordingSleeper::new();
    let q = InProcessQueue::start(sqlite(), rec.clone(), deployed_schedule(sleeper.clone()))
        .await
        .unwrap();
    q.enqueue("c", "1", "fail:2:recovers").await.unwrap();
    q.enqueue("c", "2", "after").await.unwrap();
    wait_until("the later message handled", || {
        rec.done_in("c").contains(&"after".to_string())
    })
    .await;
    assert_eq!(
        sleeper.waits(),
        [REDELIVERY_SCHEDULE[0], REDELIVERY_SCHEDULE[1]],
        "two failures: the first two steps (5 s, 30 s), nothing else"
    );
    assert_eq!(rec.done_in("c"), ["fail:2:recovers", "after"]);
    let log: Vec<(String, u32)> = rec
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b, a)| (b.clone(), *a))
        .collect();
    assert_eq!(
        log,
        [
            ("fail:2:recovers".to_string(), 1),
            ("fail:2:recovers".to_string(), 2),
            ("fail:2:recovers".to_string(), 3),
            ("after".to_string(), 1),
        ],
        "the later message waited behind the retries, never overtaking"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_message_is_dead_lettered_after_the_whole_schedule_and_the_group_moves_on() {
    let rec = Arc::new(Recorder::default());
    let sleeper = RecordingSleeper::new();
    let q = InProcessQueue::start(sqlite(), rec.clone(), deployed_schedule(sleeper.clone()))
        .await
        .unwrap();
    q.enqueue("c", "1", "fail:99:poison").await.unwrap();
    q.enqueue("c", "2", "next").await.unwrap();
    wait_until("the next message handled", || rec.done_in("c") == ["next"]).await;
    let attempts = rec
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, b, _)| b == "fail:99:poison")
        .count();
    assert_eq!(attempts, RECEIVES_MAX as usize);
    assert_eq!(
        sleeper.waits(),
        REDELIVERY_SCHEDULE,
        "5 s, 30 s, 2 min, 10 min"
    );
    assert_eq!(
        sleeper.waits().iter().sum::<Duration>(),
        redelivery_wait_total(&REDELIVERY_SCHEDULE, RECEIVES_MAX),
        "the conversation waited the schedule's total, no longer"
    );
    let dead = q.dead_letters().await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body, "fail:99:poison");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_queue_on_the_same_store_finishes_everything_in_order() {
    let dir =
        std::env::temp_dir().join(format!("steward-queue-{}-{}", std::process::id(), line!()));
    let path = dir.join("queue.db");
    let first = Arc::new(Recorder::default());
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(&path).unwrap());
    let q = InProcessQueue::start(table, first.clone(), fast())
        .await
        .unwrap();
    // Group a blocks on its third message; group b runs through.
    let a: Vec<String> = ["a0", "a1", "block-a2", "a3", "a4", "a5"]
        .map(String::from)
        .to_vec();
    let b: Vec<String> = (0..5).map(|i| format!("b{i}")).collect();
    for (i, body) in a.iter().enumerate() {
        q.enqueue("a", &format!("a{i}"), body).await.unwrap();
    }
    for (i, body) in b.iter().enumerate() {
        q.enqueue("b", &format!("b{i}"), body).await.unwrap();
    }
    wait_until("a blocked on its third message", || {
        first
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|(_, body, _)| body == "block-a2")
    })
    .await;
    // The "process" dies: workers are aborted mid-message.
    q.shutdown(Duration::from_millis(20)).await;
    drop(q);
    assert_eq!(first.done_in("a"), ["a0", "a1"]);
    assert!(q_enqueue_after_shutdown_is_refused(&first).await);

    // A new queue over the same file (a restarted `steward serve`).
    let second = Arc::new(Recorder::default());
    second.release.notify_one();
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(&path).unwrap());
    let _q2 = InProcessQueue::start(table, second.clone(), fast())
        .await
        .unwrap();
    wait_until("the rest of a handled", || second.done_in("a").len() == 4).await;
    wait_until("b finished", || {
        first.done_in("b").len() + second.done_in("b").len() == 5
    })
    .await;
    assert_eq!(second.done_in("a"), ["block-a2", "a3", "a4", "a5"]);
    let mut all_b = first.done_in("b");
    all_b.extend(second.done_in("b"));
    assert_eq!(all_b, b, "b completed exactly once each, in order");
    let _ = std::fs::remove_dir_all(&dir);
}

async fn q_enqueue_after_shutdown_is_refused(_: &Recorder) -> bool {
    let table = sqlite();
    let q = InProcessQueue::start(table, Arc::new(Recorder::default()), fast())
        .await
        .unwrap();
    q.shutdown(Duration::from_millis(10)).await;
    matches!(
        q.enqueue("x", "y", "z").await,
        Err(steward_store::QueueError::Closed)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_workers_are_dropped_and_restarted_on_demand() {
    let rec = Arc::new(Recorder::default());
    let q = InProcessQueue::start(sqlite(), rec.clone(), fast())
        .await
        .unwrap();
    q.enqueue("c", "1", "one").await.unwrap();
    wait_until("one handled", || rec.done_in("c").len() == 1).await;
    // Longer than `idle_worker`: the worker has exited.
    tokio::time::sleep(Duration::from_millis(250)).await;
    q.enqueue("c", "2", "two").await.unwrap();
    wait_until("two handled", || rec.done_in("c").len() == 2).await;
    assert_eq!(rec.done_in("c"), ["one", "two"]);
}

#[tokio::test]
async fn bad_messages_are_refused_with_a_reason() {
    let q = InProcessQueue::start(sqlite(), Arc::new(Recorder::default()), fast())
        .await
        .unwrap();
    assert!(matches!(
        q.enqueue("", "id", "b").await,
        Err(steward_store::QueueError::Invalid(_))
    ));
    assert!(matches!(
        q.enqueue("g", "", "b").await,
        Err(steward_store::QueueError::Invalid(_))
    ));
    let huge = "x".repeat(300 * 1024);
    assert!(matches!(
        q.enqueue("g", "id", &huge).await,
        Err(steward_store::QueueError::Invalid(_))
    ));
}

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_context_travels_with_the_message_through_retries_and_a_restart() {
    let dir =
        std::env::temp_dir().join(format!("steward-queue-{}-{}", std::process::id(), line!()));
    let path = dir.join("queue.db");
    let traced = TraceContext::new(Some(PARENT), Some("vendor=abc"));
    let first = Arc::new(Recorder::default());
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(&path).unwrap());
    let q = InProcessQueue::start(table, first.clone(), fast())
        .await
        .unwrap();
    q.enqueue_traced("a", "a0", "fail:1:traced", &traced)
        .await
        .unwrap();
    q.enqueue("a", "a1", "untraced").await.unwrap();
    q.enqueue_traced("b", "b0", "block-b", &traced)
        .await
        .unwrap();
    wait_until("a handled", || first.done_in("a").len() == 2).await;
    wait_until("b started", || {
        first.log.lock().unwrap().iter().any(|(g, _, _)| g == "b")
    })
    .await;
    q.shutdown(Duration::from_millis(20)).await;
    drop(q);
    let traces = first.traces.lock().unwrap().clone();
    let of = |body: &str, attempt: u32| {
        traces
            .iter()
            .find(|(b, a, _)| b == body && *a == attempt)
            .map(|(_, _, t)| t.clone())
            .unwrap()
    };
    assert_eq!(of("fail:1:traced", 1), traced);
    assert_eq!(of("fail:1:traced", 2), traced, "a retry keeps its context");
    assert_eq!(of("untraced", 1), TraceContext::none());

    // A restarted queue reads the context back from the row.
    let second = Arc::new(Recorder::default());
    second.release.notify_one();
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(&path).unwrap());
    let _q2 = InProcessQueue::start(table, second.clone(), fast())
        .await
        .unwrap();
    wait_until("b handled after the restart", || {
        second.done_in("b").len() == 1
    })
    .await;
    let traces = second.traces.lock().unwrap().clone();
    assert_eq!(traces[0].2, traced);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A message written by a Steward from before traces were carried (no trace fields in its
/// row) is still dispatched, with no context: the "migration" is that old rows read as
/// untraced.
#[tokio::test]
async fn a_message_stored_before_traces_were_carried_is_dispatched_untraced() {
    let table = sqlite();
    table
        .write(vec![WriteOp::put(Item::new(
            "QUEUE",
            format!("MSG#{:020}", 1),
            serde_json::json!({"group": "old", "dedupe_id": "o1", "body": "from-before"}),
        ))])
        .await
        .unwrap();
    let rec = Arc::new(Recorder::default());
    let _q = InProcessQueue::start(table, rec.clone(), fast())
        .await
        .unwrap();
    wait_until("the old message handled", || rec.done_in("old").len() == 1).await;
    let traces = rec.traces.lock().unwrap().clone();
    assert_eq!(
        traces,
        [("from-before".to_owned(), 1, TraceContext::none())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_moved_by_another_writer_is_read_again_and_nothing_is_overwritten() {
    let table = sqlite();
    let rec = Arc::new(Recorder::default());
    // Enqueues only: a blocked handler keeps every message in the table.
    let q = InProcessQueue::start(table.clone(), rec.clone(), fast())
        .await
        .unwrap();
    q.enqueue("g", "m1", "block-1").await.unwrap();
    // Another process (a second queue on the same file) takes the next number.
    let other = InProcessQueue::start(table.clone(), Arc::new(Recorder::default()), fast())
        .await
        .unwrap();
    other.enqueue("h", "n1", "block-other").await.unwrap();
    // This queue's remembered counter is stale now: its write must fail, re-read and go on.
    q.enqueue("g", "m2", "block-2").await.unwrap();
    let messages = table
        .query_all(
            &steward_store::Query::prefix("QUEUE", "MSG#").limit(10),
            usize::MAX,
        )
        .await
        .unwrap();
    let bodies: Vec<&str> = messages
        .iter()
        .map(|i| i.data["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies, ["block-1", "block-other", "block-2"]);
    rec.release.notify_waiters();
}

/// A table whose committed enqueue transactions (those putting a `MSG#` item) are counted, and
/// the first of which waits until the test opens the gate: the enqueues behind it pile up.
struct GatedTable {
    inner: Arc<dyn Table>,
    gate: Semaphore,
    held_first: std::sync::atomic::AtomicBool,
    /// Messages per committed enqueue transaction, in order.
    enqueue_writes: Mutex<Vec<usize>>,
}

impl std::fmt::Debug for GatedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatedTable").finish_non_exhaustive()
    }
}

impl GatedTable {
    fn new(inner: Arc<dyn Table>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            gate: Semaphore::new(0),
            held_first: std::sync::atomic::AtomicBool::new(false),
            enqueue_writes: Mutex::new(Vec::new()),
        })
    }

    fn batches(&self) -> Vec<usize> {
        self.enqueue_writes.lock().unwrap().clone()
    }
}

#[async_trait]
impl Table for GatedTable {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.inner.get(pk, sk).await
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }

    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        let messages = ops
            .iter()
            .filter(|op| matches!(op, WriteOp::Put { item, .. } if item.sk.starts_with("MSG#")))
            .count();
        if messages > 0
            && !self
                .held_first
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            self.gate.acquire().await.unwrap().forget();
        }
        let result = self.inner.write(ops).await;
        if messages > 0 && result.is_ok() {
            self.enqueue_writes.lock().unwrap().push(messages);
        }
        result
    }
}

/// Enqueues `first` and holds its write at the gate while every `(group, id, body)` of `rest`
/// is sent and waits behind it, then opens the gate. Returns each enqueue's answer, `first`'s
/// first.
async fn enqueue_behind_a_held_write(
    q: &InProcessQueue,
    table: &GatedTable,
    first: (&str, &str, &str),
    rest: Vec<(String, String, String)>,
) -> Vec<Result<(), QueueError>> {
    let enqueue = |(group, id, body): (String, String, String)| {
        let q = q.clone();
        async move { q.enqueue(&group, &id, &body).await }
    };
    let first = enqueue((first.0.to_owned(), first.1.to_owned(), first.2.to_owned()));
    let rest = rest.into_iter().map(enqueue).collect();
    steward_store::testing::behind_a_held_write(
        first,
        rest,
        || table.held_first.load(std::sync::atomic::Ordering::SeqCst),
        || table.gate.add_permits(1),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueues_waiting_on_a_write_share_the_next_transaction_and_each_is_delivered_once() {
    let table = GatedTable::new(sqlite());
    let rec = Arc::new(Recorder::default());
    let q = InProcessQueue::start(table.clone(), rec.clone(), fast())
        .await
        .unwrap();
    // Sixty more over three conversations, plus a copy of one of them, arrive while the
    // first write is held.
    let mut rest: Vec<(String, String, String)> = (1..=60)
        .map(|n| {
            let group = format!("g{}", n % 3);
            (group.clone(), format!("m{n}"), format!("{group} m{n}"))
        })
        .collect();
    rest.push(("g1".into(), "m1".into(), "g1 m1 again".into()));
    for answer in enqueue_behind_a_held_write(&q, &table, ("g0", "m0", "g0 m0"), rest).await {
        answer.expect("every enqueue is acknowledged, the copy too");
    }
    wait_until("all sixty-one handled", || {
        rec.done.lock().unwrap().len() == 61
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;

    let batches = table.batches();
    assert_eq!(
        batches.iter().sum::<usize>(),
        61,
        "each message written once: {batches:?}"
    );
    assert!(
        batches.len() <= 4,
        "sixty waiting enqueues go in batches of up to 49, not one write each: {batches:?}"
    );
    assert!(batches.iter().all(|&n| n <= 49), "{batches:?}");
    for (group, expected) in [("g0", 21), ("g1", 20), ("g2", 20)] {
        let mut done = rec.done_in(group);
        assert!(
            !done.contains(&"g1 m1 again".to_owned()),
            "the copy was dropped"
        );
        done.sort();
        done.dedup();
        assert_eq!(
            done.len(),
            expected,
            "each of {group}'s messages once: {done:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_meeting_a_message_taken_by_an_earlier_run_drops_that_one_and_writes_the_rest() {
    let store = sqlite();
    // An earlier run took m1 (its dedupe item is in the table), then stopped.
    let earlier = Arc::new(Recorder::default());
    let q = InProcessQueue::start(store.clone(), earlier.clone(), fast())
        .await
        .unwrap();
    q.enqueue("g", "m1", "m1").await.unwrap();
    wait_until("m1 handled", || earlier.done_in("g").len() == 1).await;
    q.shutdown(Duration::from_secs(1)).await;

    // This run does not know m1: the provider's retry of it lands in a batch with new ones.
    let table = GatedTable::new(store.clone());
    let rec = Arc::new(Recorder::default());
    let q = InProcessQueue::start(table.clone(), rec.clone(), fast())
        .await
        .unwrap();
    let rest = (1..=5)
        .map(|n| ("g".to_owned(), format!("m{n}"), format!("m{n}")))
        .collect();
    for answer in enqueue_behind_a_held_write(&q, &table, ("g", "m0", "m0"), rest).await {
        answer.expect("every copy is acknowledged, the known one too");
    }
    wait_until("five handled", || rec.done_in("g").len() == 5).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut done = rec.done_in("g");
    done.sort();
    assert_eq!(
        done,
        ["m0", "m2", "m3", "m4", "m5"],
        "m1 was not taken again"
    );
    // The refused attempt wrote nothing: each of this run's five messages went in once.
    assert_eq!(
        table.batches().iter().sum::<usize>(),
        5,
        "{:?}",
        table.batches()
    );
    let queued = store
        .query_all(&Query::prefix("QUEUE", "DEDUPE#").limit(100), usize::MAX)
        .await
        .unwrap();
    assert_eq!(queued.len(), 6, "one dedupe item per distinct message");
}
