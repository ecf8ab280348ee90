//! The local adapter, used by `steward serve`: a durable FIFO in the [`Table`] with one worker
//! task per conversation.
//!
//! * Durable: `enqueue` returns only after the message is written to the table; a message is
//!   deleted only after its handler succeeded; [`InProcessQueue::start`] dispatches every
//!   message still there, in enqueue order. Killing the process loses nothing acknowledged
//!   (a message being handled at the kill is handled again: at-least-once, like SQS).
//! * Ordered: one worker per group, one message at a time, in enqueue order; different groups
//!   run in parallel; a worker with nothing to do for `idle_worker` exits.
//! * Deduplicated: a dedupe id seen in the same group in the last five minutes is accepted
//!   and dropped. Ids this process took lately are answered from memory ([`super::recent`]);
//!   any other repeat meets the dedupe item's conditional write.
//! * Group commit: enqueues that arrive while another is being written wait for the enqueue
//!   lock, and whichever takes it next writes all of them in one transaction (one counter
//!   update, two items each, at most [`ENQUEUE_BATCH_MAX`]). Each caller returns once the
//!   transaction holding its message committed, so the durability promise is the same as one
//!   write each; a burst of webhook deliveries pays for one commit instead of one each.
//! * Deletes by group commit too ([`super::removals`]): handled messages whose deletes meet
//!   one being written go in the next transaction together.
//! * Bounded retries: a failing (or panicking) handler is retried on the redelivery schedule
//!   the agent Lambda applies to SQS records ([`REDELIVERY_SCHEDULE`]: 5 s, 30 s, 2 min,
//!   10 min), at most [`RECEIVES_MAX`] attempts, then the message is parked as a
//!   [`DeadLetter`], kept in the table and re-drivable; the handler's
//!   [`Handler::dead_lettered`] hook runs first. Later messages of its conversation
//!   wait only that long; other conversations never wait.
//!
//! Layout, all in partition `QUEUE` (one process uses it, so one partition is fine):
//! `SEQ` (the next sequence number), `MSG#<seq>`, `DEAD#<seq>`, `DEDUPE#<sha256 of group and id>`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex as AsyncMutex, mpsc, oneshot};
use tokio::task::JoinHandle;

use super::recent::{DedupeKey, RECENT_KEYS_MAX, RecentKeys};
use super::removals::Removals;
use super::{
    DEDUPE_WINDOW_SECS, Handler, QueueError, QueuedMessage, RECEIVES_MAX, REDELIVERY_SCHEDULE,
    TraceContext, TurnQueue, redelivery_delay,
};
use crate::{
    Clock, Item, Query, Sleeper, StoreError, SystemClock, TRANSACTION_OPS_MAX, Table, TokioSleeper,
    WriteOp,
};

const PK: &str = "QUEUE";
const SEQ_SK: &str = "SEQ";
const MSG_PREFIX: &str = "MSG#";
const DEAD_PREFIX: &str = "DEAD#";
const DEDUPE_PREFIX: &str = "DEDUPE#";
/// Messages read per page when recovering or listing dead letters.
const RECOVERY_PAGE: usize = 100;
/// Attempts at taking the next sequence number before giving up (only another process
/// writing the same queue can make it contend).
const SEQ_RETRIES_MAX: usize = 50;
/// Enqueues written in one transaction at most: the counter update and two items per message
/// (the message, its dedupe item) must fit one transaction's operations.
const ENQUEUE_BATCH_MAX: usize = (TRANSACTION_OPS_MAX - 1) / 2;
/// Message bytes in one batch at most (past its first message): a quarter of DynamoDB's 4 MB
/// per transaction, should this queue run on that adapter, and a commit short enough that the
/// enqueues behind it are not kept waiting.
const ENQUEUE_BATCH_BYTES_MAX: usize = 1024 * 1024;

/// Tuning of the in-process queue.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// Attempts per message before it is dead-lettered (SQS's `maxReceiveCount`).
    pub attempts_max: u32,
    /// Wait after each failed attempt, in order; the last entry repeats (see
    /// [`redelivery_delay`]).
    pub redelivery: Vec<Duration>,
    /// A worker with no message for this long exits (a new one starts on demand).
    pub idle_worker: Duration,
    /// How the waits between attempts are taken (tests record them instead).
    pub sleeper: Arc<dyn Sleeper>,
}

impl Default for QueueConfig {
    /// The deployed shape's numbers: [`RECEIVES_MAX`] attempts, [`REDELIVERY_SCHEDULE`].
    fn default() -> Self {
        Self {
            attempts_max: RECEIVES_MAX,
            redelivery: REDELIVERY_SCHEDULE.to_vec(),
            idle_worker: Duration::from_secs(60),
            sleeper: Arc::new(TokioSleeper),
        }
    }
}

/// A message that failed every attempt, parked for an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Its position in the queue (stable id for [`InProcessQueue::redrive`]).
    pub seq: u64,
    /// The message's group.
    pub group: String,
    /// Its dedupe id.
    pub dedupe_id: String,
    /// Its body.
    pub body: String,
    /// The last failure.
    pub error: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    group: String,
    dedupe_id: String,
    body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The W3C `traceparent` it was enqueued with. Rows written before traces were carried
    /// have neither field and read as "no context" (`serde(default)`): no schema change, so
    /// a queue left in an existing database is dispatched as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    traceparent: Option<String>,
    /// The W3C `tracestate` that came with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tracestate: Option<String>,
}

impl Stored {
    fn trace(&self) -> TraceContext {
        TraceContext::new(self.traceparent.as_deref(), self.tracestate.as_deref())
    }
}

#[derive(Debug)]
struct Pending {
    seq: u64,
    stored: Stored,
}

/// An enqueue waiting to be written, with the channel its caller awaits the outcome on.
struct Request {
    id: u64,
    stored: Stored,
    dedupe: DedupeKey,
    done: oneshot::Sender<Result<(), QueueError>>,
}

struct Worker {
    tx: mpsc::UnboundedSender<Pending>,
    handle: JoinHandle<()>,
}

/// The durable in-process [`TurnQueue`]. Cheap to clone.
#[derive(Clone)]
pub struct InProcessQueue {
    inner: Arc<Inner>,
}

struct Inner {
    table: Arc<dyn Table>,
    handler: Arc<dyn Handler>,
    config: QueueConfig,
    clock: Arc<dyn Clock>,
    /// Held across "write then dispatch" so dispatch order equals sequence order.
    workers: AsyncMutex<HashMap<String, Worker>>,
    /// The `SEQ` counter as this process last wrote it (read from the table when unknown or
    /// when a conditional write finds it changed by another process), so an enqueue is one
    /// write, not a read and a write.
    counter: std::sync::Mutex<Option<Counter>>,
    /// Enqueues not yet written, oldest first; the holder of `workers` writes them.
    waiting: std::sync::Mutex<Vec<Request>>,
    request_ids: AtomicU64,
    /// Dedupe keys this process has taken and whose window is still open.
    recent: std::sync::Mutex<RecentKeys>,
    /// Handled messages' deletes, written together when they arrive together.
    removals: Removals,
    closed: AtomicBool,
}

/// The queue's sequence counter: the next number and the version of its row.
#[derive(Debug, Clone, Copy)]
struct Counter {
    next: u64,
    version: u64,
}

impl std::fmt::Debug for InProcessQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessQueue")
            .field("table", &self.inner.table)
            .field("config", &self.inner.config)
            .finish()
    }
}

impl InProcessQueue {
    /// Starts the queue over `table`: every message left unfinished by a previous run is
    /// dispatched again, in order, before this returns.
    pub async fn start(
        table: Arc<dyn Table>,
        handler: Arc<dyn Handler>,
        config: QueueConfig,
    ) -> Result<Self, QueueError> {
        Self::start_with_clock(table, handler, config, Arc::new(SystemClock)).await
    }

    /// [`InProcessQueue::start`] with a clock for the dedupe window.
    pub async fn start_with_clock(
        table: Arc<dyn Table>,
        handler: Arc<dyn Handler>,
        config: QueueConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, QueueError> {
        let queue = Self {
            inner: Arc::new(Inner {
                table,
                handler,
                config,
                clock,
                workers: AsyncMutex::new(HashMap::new()),
                counter: std::sync::Mutex::new(None),
                waiting: std::sync::Mutex::new(Vec::new()),
                request_ids: AtomicU64::new(0),
                recent: std::sync::Mutex::new(RecentKeys::new(RECENT_KEYS_MAX)),
                removals: Removals::default(),
                closed: AtomicBool::new(false),
            }),
        };
        let leftovers = queue
            .inner
            .table
            .query_all(
                &Query::prefix(PK, MSG_PREFIX).limit(RECOVERY_PAGE),
                usize::MAX,
            )
            .await?;
        let mut workers = queue.inner.workers.lock().await;
        for item in leftovers {
            let pending = decode(&item)?;
            tracing::info!(seq = pending.seq, group = %pending.stored.group, "redelivering unfinished message");
            queue.dispatch(&mut workers, pending);
        }
        drop(workers);
        Ok(queue)
    }

    /// Messages that failed every attempt, oldest first.
    pub async fn dead_letters(&self) -> Result<Vec<DeadLetter>, QueueError> {
        let items = self
            .inner
            .table
            .query_all(
                &Query::prefix(PK, DEAD_PREFIX).limit(RECOVERY_PAGE),
                usize::MAX,
            )
            .await?;
        items
            .iter()
            .map(|item| {
                let p = decode(item)?;
                Ok(DeadLetter {
                    seq: p.seq,
                    group: p.stored.group,
                    dedupe_id: p.stored.dedupe_id,
                    body: p.stored.body,
                    error: p.stored.error.unwrap_or_default(),
                })
            })
            .collect()
    }

    /// Puts a dead letter back at the end of the queue for another round of attempts.
    /// Returns false when no dead letter has that sequence number.
    pub async fn redrive(&self, seq: u64) -> Result<bool, QueueError> {
        let mut workers = self.inner.workers.lock().await;
        let Some(item) = self.inner.table.get(PK, &dead_sk(seq)).await? else {
            return Ok(false);
        };
        let mut pending = decode(&item)?;
        pending.stored.error = None;
        let taken = vec![WriteOp::delete_if(
            PK,
            dead_sk(seq),
            crate::Condition::Present,
        )];
        let new_seq = match self.append(&[(&pending.stored, taken)]).await {
            Ok(new_seq) => new_seq,
            // Another process re-drove it between the read and the write.
            Err(AppendError::Refused { .. }) => return Ok(false),
            Err(AppendError::Queue(e)) => return Err(e),
        };
        pending.seq = new_seq;
        self.dispatch(&mut workers, pending);
        Ok(true)
    }

    /// Stops taking messages, lets each worker finish the message it is handling for up to
    /// `grace`, then aborts what is left. Unfinished messages stay in the table for the next
    /// [`InProcessQueue::start`].
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let workers: Vec<Worker> = self
            .inner
            .workers
            .lock()
            .await
            .drain()
            .map(|(_, w)| w)
            .collect();
        let mut handles = Vec::with_capacity(workers.len());
        for w in workers {
            drop(w.tx);
            handles.push(w.handle);
        }
        let aborts: Vec<_> = handles.iter().map(JoinHandle::abort_handle).collect();
        if tokio::time::timeout(grace, futures::future::join_all(handles))
            .await
            .is_err()
        {
            tracing::warn!("queue workers still busy after the grace period; aborting them");
            for a in aborts {
                a.abort();
            }
        }
    }

    /// Writes `messages`, each with its own extra operations, in one transaction under
    /// consecutive sequence numbers, and returns the first.
    async fn append(&self, messages: &[(&Stored, Vec<WriteOp>)]) -> Result<u64, AppendError> {
        let table = &self.inner.table;
        let data = messages
            .iter()
            .map(|(stored, _)| serde_json::to_value(stored))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| QueueError::Invalid(e.to_string()))?;
        let count = messages.len() as u64;
        let mut known = *lock(&self.inner.counter);
        for _ in 0..SEQ_RETRIES_MAX {
            let counter = match known {
                Some(c) => Some(c),
                None => table
                    .get(PK, SEQ_SK)
                    .await
                    .map_err(QueueError::from)?
                    .map(|c| Counter {
                        next: c
                            .data
                            .get("next")
                            .and_then(serde_json::Value::as_u64)
                            .unwrap_or(1),
                        version: c.version,
                    }),
            };
            let (seq, seq_op, written) = match counter {
                Some(c) => {
                    let written = Counter {
                        next: c.next + count,
                        version: c.version + 1,
                    };
                    let next = Item::new(PK, SEQ_SK, serde_json::json!({ "next": written.next }))
                        .with_version(written.version);
                    (c.next, WriteOp::put_if_version(next, c.version), written)
                }
                None => {
                    let written = Counter {
                        next: 1 + count,
                        version: 1,
                    };
                    let next = Item::new(PK, SEQ_SK, serde_json::json!({ "next": written.next }));
                    (1, WriteOp::put_if_absent(next), written)
                }
            };
            // The transaction: the counter, then each message followed by its extras;
            // `owner[i]` names the message whose extra operation `i` is.
            let mut ops = vec![seq_op];
            let mut owner = vec![None];
            for (i, ((_, extra), data)) in messages.iter().zip(&data).enumerate() {
                ops.push(WriteOp::put_if_absent(Item::new(
                    PK,
                    msg_sk(seq + i as u64),
                    data.clone(),
                )));
                owner.push(None);
                ops.extend(extra.iter().cloned());
                owner.extend(extra.iter().map(|_| Some(i)));
            }
            let result = table.write(ops).await;
            let mut cached = lock(&self.inner.counter);
            match result {
                Ok(()) => {
                    *cached = Some(written);
                    return Ok(seq);
                }
                Err(StoreError::ConditionFailed { op_index }) => {
                    match owner.get(op_index).copied().flatten() {
                        // An extra operation's condition: that message's to answer; nothing
                        // was written, so the counter is as it was.
                        Some(message) => return Err(AppendError::Refused { message }),
                        // The counter or a message's slot: another writer moved the counter.
                        None => {
                            *cached = None;
                            known = None;
                        }
                    }
                }
                // Nothing was written: the counter is as it was.
                Err(e) => return Err(QueueError::from(e).into()),
            }
        }
        Err(QueueError::Store(StoreError::Throttled(
            "could not take a queue sequence number".into(),
        ))
        .into())
    }

    /// Takes the oldest waiting enqueues, as many as one transaction holds.
    fn take_batch(&self) -> Vec<Request> {
        let mut waiting = lock(&self.inner.waiting);
        let (mut count, mut bytes) = (0, 0);
        for request in waiting.iter() {
            let size = request.stored.body.len();
            if count == ENQUEUE_BATCH_MAX || (count > 0 && bytes + size > ENQUEUE_BATCH_BYTES_MAX) {
                break;
            }
            count += 1;
            bytes += size;
        }
        waiting.drain(..count).collect()
    }

    /// Writes `batch` in one transaction (again without a message the table already holds),
    /// dispatches what was written in sequence order and answers every caller. Runs under the
    /// enqueue lock (`workers`).
    async fn write_batch(&self, workers: &mut HashMap<String, Worker>, batch: Vec<Request>) {
        if self.inner.closed.load(Ordering::SeqCst) {
            for request in batch {
                let _ = request.done.send(Err(QueueError::Closed));
            }
            return;
        }
        // Two copies of one message in a batch: the first is written, the others are its
        // duplicates (a transaction may not name the dedupe item twice).
        let mut seen = HashSet::with_capacity(batch.len());
        let mut todo = Vec::with_capacity(batch.len());
        for request in batch {
            if seen.insert(request.dedupe) {
                todo.push(request);
            } else {
                duplicate_dropped(request);
            }
        }
        while !todo.is_empty() {
            let now = self.inner.clock.now_secs();
            let until = now + DEDUPE_WINDOW_SECS;
            let messages: Vec<(&Stored, Vec<WriteOp>)> = todo
                .iter()
                .map(|request| {
                    let dedupe = Item::new(PK, dedupe_sk(&request.dedupe), serde_json::json!({}))
                        .with_ttl(until);
                    (&request.stored, vec![WriteOp::put_if_absent(dedupe)])
                })
                .collect();
            let result = self.append(&messages).await;
            drop(messages);
            match result {
                Ok(first) => {
                    let mut recent = lock(&self.inner.recent);
                    for request in &todo {
                        recent.insert(request.dedupe, until, now);
                    }
                    drop(recent);
                    for (seq, request) in (first..).zip(todo) {
                        self.dispatch(
                            workers,
                            Pending {
                                seq,
                                stored: request.stored,
                            },
                        );
                        let _ = request.done.send(Ok(()));
                    }
                    return;
                }
                // Its dedupe item is in the table: taken before (by an earlier run of this
                // process, or past what memory keeps). The rest go again without it.
                Err(AppendError::Refused { message }) => duplicate_dropped(todo.remove(message)),
                Err(AppendError::Queue(e)) => {
                    for request in todo {
                        let _ = request.done.send(Err(e.clone()));
                    }
                    return;
                }
            }
        }
    }

    fn dispatch(&self, workers: &mut HashMap<String, Worker>, pending: Pending) {
        let group = pending.stored.group.clone();
        let pending = match workers.get(&group) {
            Some(w) => match w.tx.send(pending) {
                Ok(()) => return,
                // The worker exited between idling out and removing itself; start another.
                Err(mpsc::error::SendError(p)) => p,
            },
            None => pending,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(pending);
        let handle = tokio::spawn(Self::work(Arc::clone(&self.inner), group.clone(), rx));
        workers.insert(group, Worker { tx, handle });
    }

    async fn work(inner: Arc<Inner>, group: String, mut rx: mpsc::UnboundedReceiver<Pending>) {
        loop {
            let next = match tokio::time::timeout(inner.config.idle_worker, rx.recv()).await {
                Ok(Some(p)) => p,
                Ok(None) => return,
                Err(_idle) => {
                    let mut workers = inner.workers.lock().await;
                    if rx.is_empty() {
                        workers.remove(&group);
                        return;
                    }
                    continue;
                }
            };
            if inner.closed.load(Ordering::SeqCst) {
                return;
            }
            Self::deliver(&inner, next).await;
        }
    }

    async fn deliver(inner: &Inner, pending: Pending) {
        let Pending { seq, stored } = pending;
        let mut last_error = String::new();
        for attempt in 1..=inner.config.attempts_max.max(1) {
            let message = QueuedMessage {
                group: stored.group.clone(),
                dedupe_id: stored.dedupe_id.clone(),
                body: stored.body.clone(),
                attempt,
                trace: stored.trace(),
            };
            let handler = Arc::clone(&inner.handler);
            // A task of its own, so a panicking handler is a failed attempt, not a dead worker.
            let mut task = AbortOnDrop(tokio::spawn(async move { handler.handle(message).await }));
            match (&mut task.0).await {
                Ok(Ok(())) => {
                    if let Err(e) = inner
                        .removals
                        .remove(inner.table.as_ref(), PK, msg_sk(seq))
                        .await
                    {
                        tracing::error!(seq, error = %e, "handled message could not be removed; it will be redelivered");
                    }
                    return;
                }
                Ok(Err(e)) => last_error = e.0,
                Err(join) if join.is_panic() => last_error = "the handler panicked".into(),
                Err(join) => last_error = format!("the handler was cancelled: {join}"),
            }
            if attempt < inner.config.attempts_max && !inner.closed.load(Ordering::SeqCst) {
                let wait = redelivery_delay(&inner.config.redelivery, attempt);
                tracing::warn!(
                    seq,
                    group = %stored.group,
                    attempt,
                    retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    error = %last_error,
                    "queued message failed; its conversation waits for the retry"
                );
                inner.config.sleeper.sleep(wait).await;
            } else if inner.closed.load(Ordering::SeqCst) {
                tracing::warn!(seq, group = %stored.group, attempt, error = %last_error, "queued message failed during shutdown; it stays queued");
                return;
            } else {
                tracing::warn!(seq, group = %stored.group, attempt, error = %last_error, "queued message failed its last attempt");
            }
        }
        tracing::error!(seq, group = %stored.group, error = %last_error, "message dead-lettered after every attempt failed");
        // Before parking: a crash in between redelivers the message, and the hook's own
        // ledger keeps what it does to once.
        let message = QueuedMessage {
            group: stored.group.clone(),
            dedupe_id: stored.dedupe_id.clone(),
            body: stored.body.clone(),
            attempt: inner.config.attempts_max.max(1),
            trace: stored.trace(),
        };
        let handler = Arc::clone(&inner.handler);
        let error = last_error.clone();
        // A task of its own, like each attempt, so a panicking hook does not stop the parking.
        let mut hook = AbortOnDrop(tokio::spawn(async move {
            handler.dead_lettered(message, &error).await;
        }));
        if let Err(join) = (&mut hook.0).await {
            tracing::error!(seq, group = %stored.group, error = %join, "the dead-letter hook failed");
        }
        let dead = Stored {
            error: Some(last_error),
            ..stored
        };
        let parked = serde_json::to_value(&dead)
            .map_err(|e| StoreError::Backend(e.to_string()))
            .map(|data| {
                vec![
                    WriteOp::delete(PK, msg_sk(seq)),
                    WriteOp::put(Item::new(PK, dead_sk(seq), data)),
                ]
            });
        let result = match parked {
            Ok(ops) => inner.table.write(ops).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            tracing::error!(seq, error = %e, "could not park the dead letter; it stays queued");
        }
    }
}

impl InProcessQueue {
    /// Whether `dedupe` is among the keys this process took lately, its window still open.
    fn taken_lately(&self, dedupe: &DedupeKey) -> bool {
        lock(&self.inner.recent).contains(dedupe, self.inner.clock.now_secs())
    }
}

#[async_trait::async_trait]
impl TurnQueue for InProcessQueue {
    async fn enqueue(&self, group: &str, dedupe_id: &str, body: &str) -> Result<(), QueueError> {
        self.enqueue_traced(group, dedupe_id, body, &TraceContext::none())
            .await
    }

    async fn enqueue_traced(
        &self,
        group: &str,
        dedupe_id: &str,
        body: &str,
        trace: &TraceContext,
    ) -> Result<(), QueueError> {
        super::check_message(group, dedupe_id, body)?;
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(QueueError::Closed);
        }
        let dedupe = dedupe_key(group, dedupe_id);
        // A provider's retry of a message this process took lately: answered from memory,
        // without the table or the enqueue lock.
        if self.taken_lately(&dedupe) {
            tracing::debug!(dedupe_id, "duplicate message dropped");
            return Ok(());
        }
        let (done, mut outcome) = oneshot::channel();
        let id = self.inner.request_ids.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.waiting).push(Request {
            id,
            stored: Stored {
                group: group.to_owned(),
                dedupe_id: dedupe_id.to_owned(),
                body: body.to_owned(),
                error: None,
                traceparent: trace.traceparent().map(str::to_owned),
                tracestate: trace.tracestate().map(str::to_owned),
            },
            dedupe,
            done,
        });
        let _withdraw = Withdraw {
            inner: &self.inner,
            id,
        };
        let mut workers = self.inner.workers.lock().await;
        // Let the other tasks ready on this thread (webhook requests verified and parsed in the
        // meantime) add their messages first, so one commit carries them all.
        tokio::task::yield_now().await;
        // Whoever held the lock before may have written this message with its own batch; if
        // not, write what is waiting, oldest first, until it is.
        loop {
            match outcome.try_recv() {
                Ok(result) => return result,
                Err(oneshot::error::TryRecvError::Closed) => return Err(interrupted()),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let batch = self.take_batch();
            if batch.is_empty() {
                // Neither answered nor waiting: only a writer dropped mid-write leaves that.
                return Err(interrupted());
            }
            self.write_batch(&mut workers, batch).await;
        }
    }

    fn known_duplicate(&self, group: &str, dedupe_id: &str) -> bool {
        self.taken_lately(&dedupe_key(group, dedupe_id))
    }
}

/// What [`InProcessQueue::append`] could not do.
enum AppendError {
    /// The condition of an extra operation of message `message` (its index in the batch) did
    /// not hold; nothing was written.
    Refused { message: usize },
    /// Anything else; nothing was written.
    Queue(QueueError),
}

impl From<QueueError> for AppendError {
    fn from(e: QueueError) -> Self {
        Self::Queue(e)
    }
}

/// Takes a waiting enqueue back out when its caller goes away before a writer took it (a
/// message taken already is written and answered regardless).
struct Withdraw<'a> {
    inner: &'a Inner,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        lock(&self.inner.waiting).retain(|request| request.id != self.id);
    }
}

/// Answers a duplicate: accepted, and dropped.
fn duplicate_dropped(request: Request) {
    tracing::debug!(
        dedupe_id = request.stored.dedupe_id.as_str(),
        "duplicate message dropped"
    );
    let _ = request.done.send(Ok(()));
}

/// The answer for an enqueue whose batch's writer went away before the write was confirmed:
/// it may or may not be queued, so the caller answers as for a failed write (the provider
/// retries, and the dedupe item decides).
fn interrupted() -> QueueError {
    QueueError::Store(StoreError::Backend(
        "the write holding this message was interrupted before it was confirmed".into(),
    ))
}

/// A std mutex's guard; a poisoned lock is taken as it is (every critical section here leaves
/// its data consistent at each step).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Aborts the handler's task when the worker itself is aborted (shutdown past its grace), so
/// no handler keeps running for a message that will be redelivered.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The dedupe key of `dedupe_id` within `group`: ids are unique per conversation only (a web
/// chat's ids are generated by each browser), so the same id in two groups is two messages.
/// The group is length-prefixed so no (group, id) pair can pose as another.
fn dedupe_key(group: &str, dedupe_id: &str) -> DedupeKey {
    let mut hash = Sha256::new();
    hash.update((group.len() as u64).to_be_bytes());
    hash.update(group.as_bytes());
    hash.update(dedupe_id.as_bytes());
    hash.finalize().into()
}

fn dedupe_sk(key: &DedupeKey) -> String {
    format!("{DEDUPE_PREFIX}{}", hex::encode(key))
}

fn msg_sk(seq: u64) -> String {
    format!("{MSG_PREFIX}{seq:020}")
}

fn dead_sk(seq: u64) -> String {
    format!("{DEAD_PREFIX}{seq:020}")
}

fn decode(item: &Item) -> Result<Pending, QueueError> {
    let seq = item
        .sk
        .rsplit('#')
        .next()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| StoreError::Backend(format!("bad queue key {}", item.sk)))?;
    let stored = item
        .parse::<Stored>()
        .map_err(|e| StoreError::Backend(format!("bad queued message {}: {e}", item.sk)))?;
    Ok(Pending { seq, stored })
}
