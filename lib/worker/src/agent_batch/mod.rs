//! The agent function's batch: SQS FIFO records, processed one conversation at a time, and
//! brought back quickly when they fail.
//!
//! Records of one message group run one after another, in order; different groups run
//! concurrently. When a record fails, it and every later record of its group are reported as
//! `batchItemFailures` (SQS redelivers them, still in order) and the other groups carry on.
//! Two records of one group never run at once. A panicking handler counts as a failure.
//!
//! Timing (the contract `template.yaml` and `ARCHITECTURE.md` state):
//! * A transient failure is first retried inside the delivery (the worker's
//!   [`retry_transient`]). A record that still fails is made visible again after the
//!   redelivery schedule for its receive count ([`REDELIVERY_SCHEDULE`]: 5 s, 30 s, 2 min,
//!   10 min), with its group's held-back records, before the handler returns; on its last
//!   receive ([`RECEIVES_MAX`]) at once, so the queue dead-letters it on the next receive.
//! * While the batch runs, a heartbeat keeps its records invisible ([`VISIBILITY_LEASE`]
//!   past the last beat), so a killed invocation's records return within a lease.
//! * [`DEADLINE_RESERVE`] before the invocation's deadline, records still running are handed
//!   back unfinished (a stop there is a crash the turn resumes from), on the same schedule.
//! * When changing visibility fails, the failure is logged and the record is still reported:
//!   it comes back after its lease (or the queue's visibility timeout) instead. Nothing is lost.

mod lease;
mod retry;
mod worker;

use std::collections::HashMap;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures::FutureExt;
use steward_store::{
    MessageVisibility, RECEIVES_MAX, REDELIVERY_SCHEDULE, VisibilityChange, redelivery_delay,
};
use tokio::time::Instant;

pub use lease::{HEARTBEAT_EVERY, VISIBILITY_LEASE};
pub use retry::{
    RETRY_ATTEMPTS_MAX, RETRY_BACKOFF_FIRST, RETRY_BACKOFF_MAX, RETRY_BUDGET, RetryPolicy,
    retry_transient,
};
pub use worker::{Senders, TurnWorker, is_transient};

/// The SQS attribute holding a FIFO record's message group.
pub const MESSAGE_GROUP_ATTRIBUTE: &str = "MessageGroupId";

/// The SQS attribute counting how often a record has been received (1 on the first receive).
pub const RECEIVE_COUNT_ATTRIBUTE: &str = "ApproximateReceiveCount";

/// How long before the invocation's deadline records still running are handed back.
///
/// Ten seconds: room for the last heartbeat and the visibility changes to finish (each bounded
/// by [`VISIBILITY_CALL_TIMEOUT`]) and for the response to reach Lambda before it stops the
/// function.
pub const DEADLINE_RESERVE: Duration = Duration::from_secs(10);

/// Longest one visibility change may take before it is abandoned.
///
/// Three seconds: SQS answers in milliseconds; the SDK's defaults set no limit, and a stalled
/// call must not eat the time kept before the deadline.
pub const VISIBILITY_CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// How one invocation paces its records' visibility. The defaults are the deployed values
/// (the constants above and the shared redelivery schedule); tests scale them down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchTiming {
    /// Wait before a failed record comes back, by receive count (see [`redelivery_delay`]).
    pub redelivery: Vec<Duration>,
    /// The queue's `maxReceiveCount`: a record failing on this receive comes back at once, to
    /// be dead-lettered without holding its conversation any longer.
    pub receives_max: u32,
    /// How long each heartbeat keeps the records invisible.
    pub lease: Duration,
    /// Time between heartbeats.
    pub heartbeat_every: Duration,
    /// Time kept free before the invocation's deadline.
    pub deadline_reserve: Duration,
    /// Longest one visibility change may take.
    pub visibility_call_timeout: Duration,
}

impl Default for BatchTiming {
    fn default() -> Self {
        Self {
            redelivery: REDELIVERY_SCHEDULE.to_vec(),
            receives_max: RECEIVES_MAX,
            lease: VISIBILITY_LEASE,
            heartbeat_every: HEARTBEAT_EVERY,
            deadline_reserve: DEADLINE_RESERVE,
            visibility_call_timeout: VISIBILITY_CALL_TIMEOUT,
        }
    }
}

impl BatchTiming {
    /// How long a record that failed on its `receive`th receive stays invisible: zero on the
    /// last receive (the queue dead-letters it on the next), else the schedule's step. Past
    /// the last receive the queue evidently allows more, so the schedule's last step applies
    /// rather than retrying hot.
    pub fn comes_back_in(&self, receive: u32) -> Duration {
        if receive == self.receives_max {
            Duration::ZERO
        } else {
            redelivery_delay(&self.redelivery, receive)
        }
    }
}

/// What one invocation knows besides its records.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    /// Where the heartbeat and the failed records' visibility go; None: no visibility changes,
    /// failed records come back after the queue's visibility timeout.
    pub visibility: Option<Arc<dyn MessageVisibility>>,
    /// When the function will be stopped (Lambda's deadline), when known.
    pub deadline: Option<Instant>,
    /// The pacing.
    pub timing: BatchTiming,
}

impl Invocation {
    /// When running records are handed back: [`BatchTiming::deadline_reserve`] before the
    /// deadline.
    pub fn hand_back_at(&self) -> Option<Instant> {
        self.deadline.map(|deadline| {
            deadline
                .checked_sub(self.timing.deadline_reserve)
                .unwrap_or(deadline)
        })
    }
}

/// The invocation's deadline as an [`Instant`], from Lambda's epoch milliseconds
/// (`Context::deadline`); a deadline already past is now.
pub fn lambda_deadline(deadline_epoch_millis: u64) -> Instant {
    let deadline = UNIX_EPOCH + Duration::from_millis(deadline_epoch_millis);
    let left = deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    Instant::now() + left
}

/// One record with its place in the batch.
struct Placed {
    index: usize,
    record: SqsMessage,
}

/// A record to report, and when it should come back.
struct Failed {
    index: usize,
    message_id: Option<String>,
    receipt_handle: Option<String>,
    comes_back_in: Duration,
}

/// Processes `event` with `handle` under the rules of the module docs and returns the
/// failures to report (empty: every record succeeded).
pub async fn process_batch<F, Fut, E>(
    event: SqsEvent,
    invocation: &Invocation,
    handle: F,
) -> SqsBatchResponse
where
    F: Fn(SqsMessage) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let receipt_handles: Vec<String> = event
        .records
        .iter()
        .filter_map(|r| r.receipt_handle.clone())
        .collect();
    let groups = group_records(event.records);
    let handle = &handle;
    let timing = &invocation.timing;
    let hand_back_at = invocation.hand_back_at();
    let work = futures::future::join_all(
        groups
            .into_iter()
            .map(|(group, records)| process_group(group, records, handle, timing, hand_back_at)),
    );
    let results = match &invocation.visibility {
        Some(visibility) if !receipt_handles.is_empty() => {
            lease::while_leased(visibility.as_ref(), &receipt_handles, timing, work).await
        }
        _ => work.await,
    };
    let mut failed: Vec<Failed> = results.into_iter().flatten().collect();
    failed.sort_by_key(|f| f.index);
    if let Some(visibility) = &invocation.visibility {
        bring_back(visibility.as_ref(), &failed, timing).await;
    }
    let mut response = SqsBatchResponse::default();
    for f in failed {
        match f.message_id {
            Some(id) => response.add_failure(id),
            None => tracing::error!(
                index = f.index,
                "a failed record has no message id, so it cannot be reported for redelivery"
            ),
        }
    }
    response
}

/// Sets each failed record's visibility to its `comes_back_in`. A failure here is logged and
/// the records are still reported: they come back after their lease instead (or after the
/// queue's visibility timeout, when the heartbeat failed as well).
async fn bring_back(visibility: &dyn MessageVisibility, failed: &[Failed], timing: &BatchTiming) {
    let changes: Vec<VisibilityChange> = failed
        .iter()
        .filter_map(|f| {
            f.receipt_handle.as_ref().map(|handle| VisibilityChange {
                receipt_handle: handle.clone(),
                timeout: f.comes_back_in,
            })
        })
        .collect();
    if changes.is_empty() {
        return;
    }
    match tokio::time::timeout(
        timing.visibility_call_timeout,
        visibility.change_visibility(&changes),
    )
    .await
    {
        Ok(Ok(())) => tracing::info!(
            records = changes.len(),
            "failed records set to come back on the redelivery schedule"
        ),
        Ok(Err(e)) => tracing::error!(
            error = %e,
            "could not shorten the failed records' visibility; they are still reported and come back after their lease (or the queue's visibility timeout)"
        ),
        Err(_) => tracing::error!(
            records = changes.len(),
            "changing the failed records' visibility timed out; they are still reported and come back after their lease (or the queue's visibility timeout)"
        ),
    }
}

/// Records by message group, groups in order of first appearance, records in batch order. A
/// record without a group (a standard queue) is a group of its own.
fn group_records(records: Vec<SqsMessage>) -> Vec<(String, Vec<Placed>)> {
    let mut groups: Vec<(String, Vec<Placed>)> = Vec::new();
    let mut positions: HashMap<String, usize> = HashMap::new();
    for (index, record) in records.into_iter().enumerate() {
        let placed = Placed { index, record };
        match placed
            .record
            .attributes
            .get(MESSAGE_GROUP_ATTRIBUTE)
            .cloned()
        {
            Some(group) => match positions.get(&group) {
                Some(&at) => groups[at].1.push(placed),
                None => {
                    positions.insert(group.clone(), groups.len());
                    groups.push((group, vec![placed]));
                }
            },
            None => groups.push((format!("(no group #{index})"), vec![placed])),
        }
    }
    groups
}

/// The record's receive count; 1 when SQS did not say (or said something unreadable).
fn receive_count(record: &SqsMessage) -> u32 {
    record
        .attributes
        .get(RECEIVE_COUNT_ATTRIBUTE)
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(1)
}

/// Runs one group's records in order; returns the failed record and every record after it,
/// each to come back when the failed one does (a FIFO group is delivered in order, so the
/// later ones could not run earlier anyway).
async fn process_group<F, Fut, E>(
    group: String,
    records: Vec<Placed>,
    handle: &F,
    timing: &BatchTiming,
    hand_back_at: Option<Instant>,
) -> Vec<Failed>
where
    F: Fn(SqsMessage) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let mut records = records.into_iter();
    while let Some(Placed { index, record }) = records.next() {
        let id = record.message_id.clone();
        let receipt_handle = record.receipt_handle.clone();
        let receive = receive_count(&record);
        let error = match run_one(handle, record, hand_back_at).await {
            Ok(()) => continue,
            Err(error) => error,
        };
        let comes_back_in = timing.comes_back_in(receive);
        let later: Vec<Failed> = records
            .map(|p| Failed {
                index: p.index,
                message_id: p.record.message_id,
                receipt_handle: p.record.receipt_handle,
                comes_back_in,
            })
            .collect();
        tracing::warn!(
            %group,
            message_id = id.as_deref().unwrap_or("?"),
            receive,
            comes_back_in_secs = comes_back_in.as_secs(),
            last_receive = receive == timing.receives_max,
            held_back = later.len(),
            %error,
            "record failed; it and the later records of its group go back to the queue"
        );
        let mut failed = vec![Failed {
            index,
            message_id: id,
            receipt_handle,
            comes_back_in,
        }];
        failed.extend(later);
        return failed;
    }
    Vec::new()
}

/// Runs `handle` on one record, a panic and the hand-back time counting as failures.
async fn run_one<F, Fut, E>(
    handle: &F,
    record: SqsMessage,
    hand_back_at: Option<Instant>,
) -> Result<(), String>
where
    F: Fn(SqsMessage) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    const HANDED_BACK: &str = "the invocation's deadline is near; the record is handed back";
    let run = AssertUnwindSafe(handle(record)).catch_unwind();
    let outcome = match hand_back_at {
        Some(at) if at <= Instant::now() => return Err(HANDED_BACK.to_owned()),
        Some(at) => match tokio::time::timeout_at(at, run).await {
            Ok(outcome) => outcome,
            Err(_) => return Err(HANDED_BACK.to_owned()),
        },
        None => run.await,
    };
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the handler panicked".to_owned()),
    }
}

#[cfg(test)]
mod tests;
