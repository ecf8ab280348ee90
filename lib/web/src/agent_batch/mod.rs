//! The agent function's batch: SQS FIFO records, processed one conversation at a time.
//!
//! Records of one message group run one after another, in order; different groups run
//! concurrently. When a record fails, it and every later record of its group are reported as
//! `batchItemFailures` (SQS redelivers them, still in order) and the other groups carry on.
//! Two records of one group never run at once. A panicking handler counts as a failure.

mod worker;

use std::collections::HashMap;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures::FutureExt;

pub use worker::{Senders, TurnWorker};

/// The SQS attribute holding a FIFO record's message group.
pub const MESSAGE_GROUP_ATTRIBUTE: &str = "MessageGroupId";

/// One record with its place in the batch.
struct Placed {
    index: usize,
    record: SqsMessage,
}

/// Processes `event` with `handle` under the rules of the module docs and returns the
/// failures to report (empty: every record succeeded).
pub async fn process_batch<F, Fut, E>(event: SqsEvent, handle: F) -> SqsBatchResponse
where
    F: Fn(SqsMessage) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let groups = group_records(event.records);
    let handle = &handle;
    let results = futures::future::join_all(
        groups
            .into_iter()
            .map(|(group, records)| process_group(group, records, handle)),
    )
    .await;
    let mut failed: Vec<(usize, Option<String>)> = results.into_iter().flatten().collect();
    failed.sort_by_key(|(index, _)| *index);
    let mut response = SqsBatchResponse::default();
    for (index, id) in failed {
        match id {
            Some(id) => response.add_failure(id),
            None => tracing::error!(
                index,
                "a failed record has no message id, so it cannot be reported for redelivery"
            ),
        }
    }
    response
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

/// Runs one group's records in order; returns (batch index, message id) of the failed record
/// and of every record after it.
async fn process_group<F, Fut, E>(
    group: String,
    records: Vec<Placed>,
    handle: &F,
) -> Vec<(usize, Option<String>)>
where
    F: Fn(SqsMessage) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let mut records = records.into_iter();
    while let Some(Placed { index, record }) = records.next() {
        let id = record.message_id.clone();
        let outcome = AssertUnwindSafe(handle(record)).catch_unwind().await;
        let error = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e.to_string(),
            Err(_) => "the handler panicked".to_owned(),
        };
        let later: Vec<(usize, Option<String>)> =
            records.map(|p| (p.index, p.record.message_id)).collect();
        tracing::warn!(
            %group,
            message_id = id.as_deref().unwrap_or("?"),
            held_back = later.len(),
            %error,
            "record failed; it and the later records of its group go back to the queue"
        );
        let mut failed = vec![(index, id)];
        failed.extend(later);
        return failed;
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, group: Option<&str>) -> SqsMessage {
        let mut m = SqsMessage::default();
        m.message_id = Some(id.to_owned());
        m.body = Some(id.to_owned());
        if let Some(g) = group {
            m.attributes
                .insert(MESSAGE_GROUP_ATTRIBUTE.to_owned(), g.to_owned());
        }
        m
    }

    fn ids(response: &SqsBatchResponse) -> Vec<&str> {
        response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect()
    }

    #[tokio::test]
    async fn records_without_a_group_stand_alone_and_panics_are_failures() {
        let mut event = SqsEvent::default();
        event.records = vec![record("a", None), record("boom", None), record("c", None)];
        let response = process_batch(event, |m| async move {
            if m.body.as_deref() == Some("boom") {
                panic!("handler bug");
            }
            Ok::<(), String>(())
        })
        .await;
        assert_eq!(ids(&response), ["boom"]);
    }

    #[tokio::test]
    async fn an_empty_batch_has_no_failures() {
        let response =
            process_batch(SqsEvent::default(), |_m| async { Ok::<(), String>(()) }).await;
        assert!(response.batch_item_failures.is_empty());
    }
}
