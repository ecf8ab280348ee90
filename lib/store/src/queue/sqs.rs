//! The production adapter: an SQS FIFO queue. The message group is the conversation key, so
//! SQS delivers one conversation's messages in order and never two at once, across any number
//! of agent Lambda instances; the deduplication id is the provider's message id. It also
//! changes received messages' visibility for the agent ([`MessageVisibility`]).

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::{ChangeMessageVisibilityBatchRequestEntry, MessageAttributeValue};
use sha2::{Digest, Sha256};

use super::{
    MessageVisibility, QueueError, TRACEPARENT, TRACESTATE, TraceContext, TurnQueue,
    VisibilityChange, VisibilityError,
};

/// Longest group or deduplication id SQS accepts.
const SQS_ID_CHARS_MAX: usize = 128;
/// Entries SQS accepts in one `ChangeMessageVisibilityBatch` request.
const SQS_BATCH_ENTRIES_MAX: usize = 10;
/// Longest visibility timeout SQS accepts: 12 hours, in seconds.
const SQS_VISIBILITY_SECS_MAX: u64 = 12 * 60 * 60;

/// Enqueues turns to an SQS FIFO queue.
#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: Client,
    url: String,
}

impl SqsQueue {
    /// A queue at `url` reached through `client`.
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }

    /// A queue with a client configured from the environment (`AWS_ENDPOINT_URL` included).
    pub async fn from_env(url: impl Into<String>) -> Self {
        let config = crate::aws::load_sdk_config().await;
        Self::new(Client::new(&config), url)
    }

    /// The queue URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

#[async_trait]
impl TurnQueue for SqsQueue {
    async fn enqueue(&self, group: &str, dedupe_id: &str, body: &str) -> Result<(), QueueError> {
        self.enqueue_traced(group, dedupe_id, body, &TraceContext::none())
            .await
    }

    /// The trace context goes as the String message attributes `traceparent` and
    /// `tracestate` (the agent reads them from its SQS event's records).
    async fn enqueue_traced(
        &self,
        group: &str,
        dedupe_id: &str,
        body: &str,
        trace: &TraceContext,
    ) -> Result<(), QueueError> {
        super::check_message(group, dedupe_id, body)?;
        let mut send = self
            .client
            .send_message()
            .queue_url(&self.url)
            .message_group_id(sqs_safe_id(group))
            .message_deduplication_id(dedupe_id_in_group(group, dedupe_id))
            .message_body(body);
        for (name, value) in [
            (TRACEPARENT, trace.traceparent()),
            (TRACESTATE, trace.tracestate()),
        ] {
            if let Some(value) = value {
                send = send.message_attributes(name, string_attribute(value)?);
            }
        }
        send.send()
            .await
            .map_err(|e| QueueError::Sqs(DisplayErrorContext(e).to_string()))?;
        Ok(())
    }
}

fn string_attribute(value: &str) -> Result<MessageAttributeValue, QueueError> {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .map_err(|e| QueueError::Invalid(e.to_string()))
}

#[async_trait]
impl MessageVisibility for SqsQueue {
    /// `ChangeMessageVisibilityBatch`, ten entries a request, timeouts rounded up to whole
    /// seconds (a lease is never cut short) and capped at SQS's 12 hours.
    async fn change_visibility(&self, changes: &[VisibilityChange]) -> Result<(), VisibilityError> {
        let mut failed = Vec::new();
        let mut reason: Option<String> = None;
        for chunk in changes.chunks(SQS_BATCH_ENTRIES_MAX) {
            let mut entries = Vec::with_capacity(chunk.len());
            for (i, change) in chunk.iter().enumerate() {
                let entry = ChangeMessageVisibilityBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(&change.receipt_handle)
                    .visibility_timeout(visibility_secs(change.timeout))
                    .build();
                match entry {
                    Ok(entry) => entries.push(entry),
                    Err(e) => {
                        failed.push(change.receipt_handle.clone());
                        reason.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            if entries.is_empty() {
                continue;
            }
            let sent = self
                .client
                .change_message_visibility_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await;
            match sent {
                Ok(out) => {
                    for entry in out.failed() {
                        let handle = entry
                            .id()
                            .parse::<usize>()
                            .ok()
                            .and_then(|i| chunk.get(i))
                            .map_or_else(|| entry.id().to_owned(), |c| c.receipt_handle.clone());
                        failed.push(handle);
                        reason.get_or_insert_with(|| {
                            format!("{}: {}", entry.code(), entry.message().unwrap_or_default())
                        });
                    }
                }
                Err(e) => {
                    failed.extend(chunk.iter().map(|c| c.receipt_handle.clone()));
                    reason.get_or_insert_with(|| DisplayErrorContext(e).to_string());
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(VisibilityError {
                failed,
                reason: reason.unwrap_or_default(),
            })
        }
    }
}

/// `timeout` as SQS's whole seconds: rounded up, at most [`SQS_VISIBILITY_SECS_MAX`].
fn visibility_secs(timeout: Duration) -> i32 {
    let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    i32::try_from(secs.min(SQS_VISIBILITY_SECS_MAX)).unwrap_or(i32::MAX)
}

/// The deduplication id sent for `dedupe_id` in `group`. SQS FIFO deduplicates across the
/// whole queue, but ids are unique per conversation only (a web chat's ids are generated by
/// each browser), so the group is part of the id. Stable, so a provider's retry still
/// deduplicates.
pub fn dedupe_id_in_group(group: &str, dedupe_id: &str) -> String {
    sqs_safe_id(&format!("{group}|{dedupe_id}"))
}

/// `id` as SQS accepts it for a group or deduplication id: unchanged when it is at most 128
/// characters of SQS's allowed set (alphanumerics and ASCII punctuation), otherwise `h-` and
/// the hex SHA-256 of it (stable, so retries of the same id still deduplicate).
pub fn sqs_safe_id(id: &str) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c.is_ascii_punctuation();
    if !id.is_empty() && id.len() <= SQS_ID_CHARS_MAX && id.chars().all(allowed) {
        id.to_owned()
    } else {
        format!("h-{}", hex::encode(Sha256::digest(id.as_bytes())))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{dedupe_id_in_group, sqs_safe_id, visibility_secs};

    #[test]
    fn visibility_is_whole_seconds_rounded_up_and_capped() {
        assert_eq!(visibility_secs(Duration::ZERO), 0);
        assert_eq!(visibility_secs(Duration::from_millis(300)), 1);
        assert_eq!(visibility_secs(Duration::from_secs(30)), 30);
        assert_eq!(visibility_secs(Duration::from_millis(30_001)), 31);
        assert_eq!(visibility_secs(Duration::from_secs(24 * 3600)), 43_200);
    }

    #[test]
    fn safe_ids_pass_through_and_others_are_hashed() {
        assert_eq!(sqs_safe_id("wamid.HBgL=="), "wamid.HBgL==");
        let long = "x".repeat(129);
        let hashed = sqs_safe_id(&long);
        assert!(hashed.starts_with("h-") && hashed.len() == 66);
        assert_eq!(hashed, sqs_safe_id(&long), "stable across calls");
        assert!(sqs_safe_id("café").starts_with("h-"));
        assert!(sqs_safe_id("with space").starts_with("h-"));
        assert_ne!(sqs_safe_id("a b"), sqs_safe_id("a c"));
    }

    #[test]
    fn dedupe_ids_are_scoped_by_group() {
        assert_eq!(dedupe_id_in_group("tg:42", "1001"), "tg:42|1001");
        assert_ne!(
            dedupe_id_in_group("web:u1", "c-1"),
            dedupe_id_in_group("web:u2", "c-1")
        );
        let long = dedupe_id_in_group("web:u1", &"x".repeat(128));
        assert!(long.starts_with("h-"));
        assert_eq!(long, dedupe_id_in_group("web:u1", &"x".repeat(128)));
    }
}
