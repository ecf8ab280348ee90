//! The event source mapping, as Lambda runs it for an SQS FIFO queue: while an agent instance is
//! free (at most `MaximumConcurrency` at once), receive up to `BatchSize` records with the
//! queue's own visibility timeout (SQS keeps each message group to one consumer at a time),
//! invoke the agent with them as an `SqsEvent`, then delete every record the response does not
//! list in `batchItemFailures`. A failed invocation (crash, kill, timeout) deletes nothing: its
//! records come back when their visibility runs out — whatever the agent last set it to — and
//! SQS moves a record to the dead-letter queue on the receive after `maxReceiveCount`.
//!
//! The stage kills the agent (SIGKILL) at a random point of a chosen share of first deliveries.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use rand::RngExt;
use serde_json::{Value, json};

use crate::runtime::{InvokeError, Pool};

/// How long the poller waits after an empty receive. It polls without long-polling: the stage's
/// moto handles one request at a time, and a long poll would hold up every other call.
const EMPTY_RECEIVE_PAUSE: Duration = Duration::from_millis(50);

/// What the mapping counted.
#[derive(Default)]
pub struct EsmStats {
    /// Agent invocations.
    pub invocations: AtomicU64,
    /// Records delivered (with redeliveries).
    pub records: AtomicU64,
    /// Records the agent reported in `batchItemFailures`.
    pub reported_failures: AtomicU64,
    /// Invocations that failed as a whole (crash, kill, timeout, function error).
    pub failed_invocations: AtomicU64,
    /// Kills the stage carried out (the invocation was still running).
    pub kills: AtomicU64,
    /// Receive requests (including empty ones).
    pub receives: AtomicU64,
    /// Delete requests.
    pub deletes: AtomicU64,
}

/// The mapping's settings.
pub struct Esm {
    /// The agent's instances (their number is the maximum concurrency).
    pub agent: Arc<Pool>,
    /// The ESM's own SQS client.
    pub sqs: aws_sdk_sqs::Client,
    /// The turn queue.
    pub queue_url: String,
    /// Its ARN (the records' `eventSourceARN`).
    pub queue_arn: String,
    /// Records per invocation.
    pub batch_size: usize,
    /// The share of first deliveries on which the agent is killed.
    pub kill_rate: f64,
    /// Kills land uniformly within this long after the invocation starts.
    pub kill_window: Duration,
    /// Counters.
    pub stats: EsmStats,
    /// Set to stop polling.
    pub stop: AtomicBool,
}

impl Esm {
    /// Polls until [`Esm::stop`] is set; returns when every running invocation has finished.
    pub async fn run(self: Arc<Self>) {
        let mut running = tokio::task::JoinSet::new();
        while !self.stop.load(Ordering::Relaxed) {
            let instance = self.agent.take().await;
            let records = match self.receive().await {
                Ok(r) if !r.is_empty() => r,
                Ok(_) | Err(_) => {
                    self.agent.give(instance).await;
                    tokio::time::sleep(EMPTY_RECEIVE_PAUSE).await;
                    continue;
                }
            };
            let esm = self.clone();
            running.spawn(async move {
                let mut instance = instance;
                esm.deliver(&mut instance, records).await;
                esm.agent.give(instance).await;
            });
            while running.try_join_next().is_some() {}
        }
        while running.join_next().await.is_some() {}
    }

    async fn receive(&self) -> anyhow::Result<Vec<aws_sdk_sqs::types::Message>> {
        self.stats.receives.fetch_add(1, Ordering::Relaxed);
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(i32::try_from(self.batch_size).unwrap_or(10))
            .wait_time_seconds(0)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await?;
        Ok(out.messages.unwrap_or_default())
    }

    async fn deliver(
        &self,
        instance: &mut crate::runtime::Instance,
        records: Vec<aws_sdk_sqs::types::Message>,
    ) {
        self.stats.invocations.fetch_add(1, Ordering::Relaxed);
        self.stats
            .records
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        let first_delivery = records.iter().any(|m| receive_count(m) == 1);
        let kill_after = {
            let mut rng = rand::rng();
            let kill =
                first_delivery && self.kill_rate > 0.0 && rng.random_bool(self.kill_rate.min(1.0));
            kill.then(|| {
                let window = u64::try_from(self.kill_window.as_millis())
                    .unwrap_or(1)
                    .max(1);
                Duration::from_millis(rng.random_range(0..window))
            })
        };
        let event = json!({"Records": records.iter().map(|m| self.record(m)).collect::<Vec<_>>()});
        let outcome = match instance.invoke(&event, kill_after).await {
            Ok(o) => o,
            Err(fatal) => {
                eprintln!("stage: {fatal}");
                self.stop.store(true, Ordering::Relaxed);
                return;
            }
        };
        let failed: Vec<String> = match outcome {
            Ok(response) => response
                .get("batchItemFailures")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.get("itemIdentifier").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            Err(e) => {
                if e == InvokeError::Killed {
                    self.stats.kills.fetch_add(1, Ordering::Relaxed);
                }
                self.stats
                    .failed_invocations
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        self.stats
            .reported_failures
            .fetch_add(failed.len() as u64, Ordering::Relaxed);
        let entries: Vec<DeleteMessageBatchRequestEntry> = records
            .iter()
            .filter(|m| !failed.iter().any(|f| Some(f.as_str()) == m.message_id()))
            .enumerate()
            .filter_map(|(i, m)| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(format!("r{i}"))
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .build()
                    .ok()
            })
            .collect();
        if !entries.is_empty() {
            self.stats.deletes.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = self
                .sqs
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                // As on Lambda: an undeleted record simply comes back (the claim makes it harmless).
                eprintln!("stage: deleting handled records failed: {e}");
            }
        }
    }

    /// One record of the `SqsEvent`, as Lambda shapes it.
    fn record(&self, m: &aws_sdk_sqs::types::Message) -> Value {
        let mut attributes = serde_json::Map::new();
        for (k, v) in m.attributes().into_iter().flatten() {
            attributes.insert(k.as_str().to_owned(), v.clone().into());
        }
        json!({
            "messageId": m.message_id(),
            "receiptHandle": m.receipt_handle(),
            "body": m.body(),
            "attributes": attributes,
            "messageAttributes": {},
            "md5OfBody": m.md5_of_body(),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue_arn,
            "awsRegion": "eu-west-1",
        })
    }
}

fn receive_count(m: &aws_sdk_sqs::types::Message) -> u64 {
    m.attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}
