//! The production adapter: an SQS FIFO queue. The message group is the conversation key, so
//! SQS delivers one conversation's messages in order and never two at once, across any number
//! of agent Lambda instances; the deduplication id is the provider's message id.

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::DisplayErrorContext;
use sha2::{Digest, Sha256};

use super::{QueueError, TurnQueue};

/// Longest group or deduplication id SQS accepts.
const SQS_ID_CHARS_MAX: usize = 128;
/// Largest message body we send. SQS accepts up to 1 MiB now, but a queued turn carries one
/// chat message; anything near this is a bug upstream, and 256 KiB works on every account.
pub const SQS_BODY_BYTES_MAX: usize = 256 * 1024;

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
        let config = aws_config::load_from_env().await;
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
        if group.is_empty() || dedupe_id.is_empty() {
            return Err(QueueError::Invalid(
                "group and dedupe id must not be empty".into(),
            ));
        }
        if body.len() > SQS_BODY_BYTES_MAX {
            return Err(QueueError::Invalid(format!(
                "body is {} bytes, over {SQS_BODY_BYTES_MAX}",
                body.len()
            )));
        }
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_group_id(sqs_safe_id(group))
            .message_deduplication_id(sqs_safe_id(dedupe_id))
            .message_body(body)
            .send()
            .await
            .map_err(|e| QueueError::Sqs(DisplayErrorContext(e).to_string()))?;
        Ok(())
    }
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
    use super::sqs_safe_id;

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
}
