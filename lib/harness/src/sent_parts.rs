//! [`SentParts`]: the ledger of a turn's reply parts the provider accepted, so a reply sent
//! again after a failure (the queue redelivers the message, the turn resumes) sends only the
//! parts not yet delivered. One row per delivered part, written right after the provider
//! accepted it and before the next part is sent: at most the part in flight can repeat (a
//! provider that accepted it but whose answer was lost), never the ones before it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use steward_channels::PartLedger;
use steward_store::{Clock, Item, StoreError, Table, WriteOp};

use crate::ids::ConversationKey;
use crate::keys;
use crate::limits::INBOX_TTL_SECS;

/// What a delivered part's row holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SentPart {
    /// The provider's id of the message the part became.
    message_id: String,
    /// When it was recorded, in epoch milliseconds.
    at_ms: i64,
}

/// Whose parts a ledger holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    /// The reply of this turn.
    Turn(u64),
    /// The dead-letter apology for this provider message id.
    Apology(String),
}

/// The delivered parts of one turn's reply (or of one message's apology), in the table under
/// the conversation.
pub struct SentParts<'a> {
    table: &'a dyn Table,
    clock: &'a dyn Clock,
    conversation: &'a ConversationKey,
    reply: Reply,
}

impl std::fmt::Debug for SentParts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentParts")
            .field("conversation", &self.conversation)
            .field("reply", &self.reply)
            .finish_non_exhaustive()
    }
}

impl<'a> SentParts<'a> {
    /// The ledger of turn `turn` of `conversation`.
    pub fn new(
        table: &'a dyn Table,
        clock: &'a dyn Clock,
        conversation: &'a ConversationKey,
        turn: u64,
    ) -> Self {
        Self {
            table,
            clock,
            conversation,
            reply: Reply::Turn(turn),
        }
    }

    /// The ledger of the dead-letter apology for message `message_id` of `conversation`.
    pub fn apology(
        table: &'a dyn Table,
        clock: &'a dyn Clock,
        conversation: &'a ConversationKey,
        message_id: &str,
    ) -> Self {
        Self {
            table,
            clock,
            conversation,
            reply: Reply::Apology(message_id.to_owned()),
        }
    }

    fn sk(&self, part: usize) -> String {
        match &self.reply {
            Reply::Turn(turn) => keys::sent_part_sk(*turn, part),
            Reply::Apology(message_id) => keys::apology_part_sk(message_id, part),
        }
    }

    /// The provider message ids of the parts delivered so far, by part number (tests, tools).
    pub async fn delivered_ids(&self, parts: usize) -> Result<Vec<Option<String>>, StoreError> {
        let mut out = Vec::with_capacity(parts);
        for part in 0..parts {
            out.push(self.read(part).await?);
        }
        Ok(out)
    }

    async fn read(&self, part: usize) -> Result<Option<String>, StoreError> {
        let pk = keys::conversation_pk(self.conversation);
        let Some(item) = self.table.get(&pk, &self.sk(part)).await? else {
            return Ok(None);
        };
        let row: SentPart = item
            .parse()
            .map_err(|e| StoreError::Backend(format!("corrupt sent-part row {}: {e}", item.sk)))?;
        Ok(Some(row.message_id))
    }
}

#[async_trait]
impl PartLedger for SentParts<'_> {
    async fn delivered(&self, part: usize) -> Result<Option<String>, String> {
        self.read(part).await.map_err(|e| e.to_string())
    }

    async fn record(&self, part: usize, message_id: &str) -> Result<(), String> {
        let now = self.clock.now_millis();
        let row = SentPart {
            message_id: message_id.to_owned(),
            at_ms: now,
        };
        let pk = keys::conversation_pk(self.conversation);
        // Kept as long as the message's INBOX row: after that a redelivery is a new turn.
        let item = Item::from_value(&pk, self.sk(part), &row)
            .map_err(|e| e.to_string())?
            .with_ttl(now.div_euclid(1000) + INBOX_TTL_SECS);
        match self.table.write(vec![WriteOp::put_if_absent(item)]).await {
            // Present already: an earlier attempt recorded it (and this one skipped it).
            Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}
