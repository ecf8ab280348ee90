//! A conversation's state (`CONV#c / META`) and the claim that starts every turn.
//!
//! The claim is one conditional transaction: the message's `INBOX#<id>` record (absent →
//! created) together with the conversation record (version-checked), which takes the next turn
//! number and counts the hourly cap. A message already claimed is a duplicate (done) or a turn
//! to resume (running); nothing about it is ever counted twice.
//!
//! A conversation belongs to one person: the first claim by a known user records them as its
//! owner, and a claim by any other user is refused ([`Claim::NotOwner`]: nothing is written,
//! no turn runs). A private chat changes hands only when its identity does: binding the
//! identity to another account or unlinking it releases the conversation ([`handover_op`]) in
//! the same transaction, and the next owner starts on a fresh segment, so no one ever reads
//! another account's history.

use serde::{Deserialize, Serialize};
use steward_store::{Item, StoreError, Table, WriteOp};

use crate::ids::{ActionId, ChannelIdentity, ChannelName, ConversationKey, UserId};
use crate::keys;
use crate::limits::INBOX_TTL_SECS;

/// How many times a claim is retried when the conversation record changed under it.
const CLAIM_RETRIES_MAX: usize = 8;
/// One hour in milliseconds, the hourly cap's bucket.
const HOUR_MILLIS: i64 = 60 * 60 * 1000;

/// The conversation record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationMeta {
    /// Who the conversation belongs to: the first known user who wrote in it (None until the
    /// sender is known, and again after their identity was unlinked).
    #[serde(default)]
    pub user: Option<UserId>,
    /// The channel it runs on.
    pub channel: ChannelName,
    /// The current transcript segment; only it is replayed to the model.
    #[serde(default)]
    pub segment: u32,
    /// Turns started so far (the last turn's number).
    #[serde(default)]
    pub turns: u64,
    /// The record the conversation is about, shown in every context block.
    #[serde(default)]
    pub active_record: Option<String>,
    /// When the user last wrote (epoch ms): WhatsApp's 24-hour window starts here.
    #[serde(default)]
    pub last_inbound_ms: i64,
    /// The hour (epoch ms / 1 h) the count below belongs to.
    #[serde(default)]
    pub hour: i64,
    /// Messages claimed in that hour.
    #[serde(default)]
    pub hour_count: u32,
    /// Model rows sorting before this key are replayed without reasoning blocks: the
    /// provider rejected their signatures once (a model or prompt change), and stored rows
    /// are never rewritten.
    #[serde(default)]
    pub reasoning_floor: Option<String>,
}

impl ConversationMeta {
    fn new(channel: ChannelName) -> Self {
        Self {
            user: None,
            channel,
            segment: 0,
            turns: 0,
            active_record: None,
            last_inbound_ms: 0,
            hour: 0,
            hour_count: 0,
            reasoning_floor: None,
        }
    }
}

/// The conversation record with the version it was read at.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Its key.
    pub key: ConversationKey,
    /// Its state.
    pub meta: ConversationMeta,
    /// Version read, for the next conditional write (0: not stored yet).
    pub version: u64,
}

/// The `INBOX#<id>` record of one message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxRecord {
    /// The turn this message started.
    pub turn: u64,
    /// Whether the turn finished.
    pub done: bool,
    /// Whether the message was over the hourly cap when claimed.
    #[serde(default)]
    pub capped: bool,
    /// When the message was claimed (epoch ms).
    #[serde(default)]
    pub received_ms: i64,
    /// The turn's request id, minted in the claim: every change the turn makes is audited under
    /// it (one undo unit), and a resumed turn keeps it. `None` only in records written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionId>,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// Already handled completely: drop it.
    Duplicate,
    /// The conversation belongs to another user: refused, nothing written, no turn.
    NotOwner,
    /// A turn to run (fresh) or to resume (an earlier attempt stopped part-way).
    Turn {
        /// The turn's number in this conversation.
        turn: u64,
        /// Whether an earlier attempt had already started it.
        resumed: bool,
        /// Whether the message is over the hourly cap.
        capped: bool,
        /// The conversation as of the claim.
        conversation: Conversation,
        /// The turn's request id: the action id of every change it makes.
        action: ActionId,
        /// The message's inbox record as the claim left it, for [`finish_claimed`].
        inbox: Box<ClaimedInbox>,
    },
}

/// A claimed message's `INBOX#<id>` record as the claim wrote or read it: what
/// [`finish_claimed`] marks done without reading it again.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedInbox {
    record: InboxRecord,
    version: u64,
    ttl: Option<i64>,
}

/// Reads the conversation record (a fresh one, unsaved, when there is none).
pub async fn load(
    table: &dyn Table,
    key: &ConversationKey,
    channel: &ChannelName,
) -> Result<Conversation, StoreError> {
    let item = table
        .get(&keys::conversation_pk(key), keys::CONVERSATION_META_SK)
        .await?;
    match item {
        Some(item) => Ok(Conversation {
            key: key.clone(),
            meta: item
                .parse()
                .map_err(|e| StoreError::Backend(format!("corrupt conversation {key}: {e}")))?,
            version: item.version,
        }),
        None => Ok(Conversation {
            key: key.clone(),
            meta: ConversationMeta::new(channel.clone()),
            version: 0,
        }),
    }
}

/// The write that replaces the conversation record read as `conv` with `meta`.
pub fn save_op(conv: &Conversation, meta: &ConversationMeta) -> Result<WriteOp, StoreError> {
    let item = Item::from_value(
        keys::conversation_pk(&conv.key),
        keys::CONVERSATION_META_SK,
        meta,
    )
    .map_err(|e| StoreError::Backend(e.to_string()))?
    .with_version(conv.version + 1);
    Ok(if conv.version == 0 {
        WriteOp::put_if_absent(item)
    } else {
        WriteOp::put_if_version(item, conv.version)
    })
}

/// Updates the conversation record with `change`, retrying when it changed concurrently.
pub async fn update(
    table: &dyn Table,
    key: &ConversationKey,
    channel: &ChannelName,
    change: impl Fn(&mut ConversationMeta),
) -> Result<Conversation, StoreError> {
    update_inner(table, key, channel, None, change).await
}

/// [`update`] of the record read as `read` (the turn's own copy): the first attempt starts
/// from it instead of reading again; its write is conditioned on that version, so a record
/// changed since fails it and the next attempt reads afresh.
pub async fn update_from(
    table: &dyn Table,
    read: &Conversation,
    change: impl Fn(&mut ConversationMeta),
) -> Result<Conversation, StoreError> {
    let (key, channel) = (&read.key, &read.meta.channel);
    update_inner(table, key, channel, Some(read.clone()), change).await
}

async fn update_inner(
    table: &dyn Table,
    key: &ConversationKey,
    channel: &ChannelName,
    mut read: Option<Conversation>,
    change: impl Fn(&mut ConversationMeta),
) -> Result<Conversation, StoreError> {
    for _ in 0..CLAIM_RETRIES_MAX {
        let conv = match read.take() {
            Some(conv) => conv,
            None => load(table, key, channel).await?,
        };
        let mut meta = conv.meta.clone();
        change(&mut meta);
        match table.write(vec![save_op(&conv, &meta)?]).await {
            Ok(()) => {
                return Ok(Conversation {
                    key: key.clone(),
                    meta,
                    version: conv.version + 1,
                });
            }
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Throttled(format!(
        "conversation {key} kept changing under an update"
    )))
}

/// A write that goes into a fresh claim's transaction, made from the turn number the claim
/// opens.
pub type AlongClaim<'a> = &'a (dyn Fn(u64) -> Result<WriteOp, StoreError> + Send + Sync);

/// Claims message `message_id` of conversation `key` for user `user` at `now_ms`, counting
/// it against `messages_per_hour`: see the module docs.
///
/// `read` is the conversation record as the caller just read it, if it did: the first attempt
/// starts from it instead of reading again. The claim's write is conditioned on that version,
/// so a record changed since fails it, and the next attempt reads afresh.
///
/// `along`'s write, if any, goes into the transaction of a claim that opens a turn: it is
/// stored exactly when the turn is, so a resumed turn finds it (a resumed claim writes
/// nothing, `along` included). Its write must not be conditional: a condition failing would
/// read as the conversation having changed, and the claim would try again in vain.
#[allow(clippy::too_many_arguments)]
pub async fn claim(
    table: &dyn Table,
    key: &ConversationKey,
    channel: &ChannelName,
    user: Option<&UserId>,
    message_id: &str,
    now_ms: i64,
    messages_per_hour: u32,
    mut read: Option<Conversation>,
    along: Option<AlongClaim<'_>>,
) -> Result<Claim, StoreError> {
    let pk = keys::conversation_pk(key);
    let inbox_sk = keys::inbox_sk(message_id);
    for _ in 0..CLAIM_RETRIES_MAX {
        let conv = match read.take().filter(|c| &c.key == key) {
            Some(conv) => conv,
            None => load(table, key, channel).await?,
        };
        if let (Some(owner), Some(user)) = (&conv.meta.user, user)
            && owner != user
        {
            tracing::warn!(
                conversation = %key,
                %user,
                "message from a user who does not own this conversation refused; no turn runs"
            );
            return Ok(Claim::NotOwner);
        }
        if let Some(item) = table.get(&pk, &inbox_sk).await? {
            let inbox: InboxRecord = item
                .parse()
                .map_err(|e| StoreError::Backend(format!("corrupt inbox record: {e}")))?;
            return Ok(if inbox.done {
                Claim::Duplicate
            } else {
                Claim::Turn {
                    turn: inbox.turn,
                    resumed: true,
                    capped: inbox.capped,
                    conversation: conv,
                    action: inbox
                        .action
                        .unwrap_or_else(|| ActionId::generate_at(inbox.received_ms)),
                    inbox: Box::new(ClaimedInbox {
                        record: inbox,
                        version: item.version,
                        ttl: item.ttl,
                    }),
                }
            });
        }
        let mut meta = conv.meta.clone();
        meta.turns += 1;
        meta.last_inbound_ms = now_ms;
        if user.is_some() {
            meta.user = user.cloned();
        }
        let hour = now_ms.div_euclid(HOUR_MILLIS);
        if meta.hour != hour {
            meta.hour = hour;
            meta.hour_count = 0;
        }
        meta.hour_count = meta.hour_count.saturating_add(1);
        let capped = meta.hour_count > messages_per_hour;
        let action = ActionId::generate_at(now_ms);
        let inbox = InboxRecord {
            turn: meta.turns,
            done: false,
            capped,
            received_ms: now_ms,
            action: Some(action),
        };
        let inbox_item = Item::from_value(&pk, &inbox_sk, &inbox)
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .with_ttl(now_ms.div_euclid(1000) + INBOX_TTL_SECS);
        let claimed = ClaimedInbox {
            record: inbox,
            version: inbox_item.version,
            ttl: inbox_item.ttl,
        };
        let mut ops = vec![WriteOp::put_if_absent(inbox_item), save_op(&conv, &meta)?];
        if let Some(along) = along {
            ops.push(along(meta.turns)?);
        }
        match table.write(ops).await {
            Ok(()) => {
                return Ok(Claim::Turn {
                    turn: meta.turns,
                    resumed: false,
                    capped,
                    conversation: Conversation {
                        key: key.clone(),
                        meta,
                        version: conv.version + 1,
                    },
                    action,
                    inbox: Box::new(claimed),
                });
            }
            // Someone claimed the message, or changed the conversation, in between: look again.
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Throttled(format!(
        "conversation {key} kept changing under a claim"
    )))
}

/// Whether `user` may run a turn in the conversation read as `conv`: it has no owner yet, or
/// `user` is its owner.
pub fn may_write(conv: &Conversation, user: &UserId) -> bool {
    conv.meta.user.as_ref().is_none_or(|owner| owner == user)
}

/// The private conversation of `identity` (WhatsApp: the sender's number; Telegram: the
/// sender's own chat, whose id is theirs).
pub fn private_key(identity: &ChannelIdentity) -> Result<ConversationKey, StoreError> {
    ConversationKey::new(&identity.channel, identity.external.as_str())
        .map_err(|e| StoreError::Backend(format!("conversation of {identity}: {e}")))
}

/// The write, if any, that releases the private conversation of `identity` when it changes
/// hands: unless it already belongs to `next_owner`, it loses its owner and active record and
/// moves to a fresh segment (the old history stays stored, never replayed to anyone again).
/// Version-checked: put it in the same transaction as the identity change.
pub async fn handover_op(
    table: &dyn Table,
    identity: &ChannelIdentity,
    next_owner: Option<&UserId>,
) -> Result<Option<WriteOp>, StoreError> {
    let key = private_key(identity)?;
    let conv = load(table, &key, &identity.channel).await?;
    if conv.version == 0 {
        return Ok(None);
    }
    match &conv.meta.user {
        None => return Ok(None),
        Some(owner) if Some(owner) == next_owner => return Ok(None),
        Some(_) => {}
    }
    let mut meta = conv.meta.clone();
    meta.user = None;
    meta.active_record = None;
    meta.segment += 1;
    save_op(&conv, &meta).map(Some)
}

/// Marks message `message_id`'s turn finished, so a redelivery is dropped as a duplicate.
pub async fn finish(
    table: &dyn Table,
    key: &ConversationKey,
    message_id: &str,
) -> Result<(), StoreError> {
    let pk = keys::conversation_pk(key);
    let sk = keys::inbox_sk(message_id);
    let Some(item) = table.get(&pk, &sk).await? else {
        return Ok(());
    };
    let record: InboxRecord = item
        .parse()
        .map_err(|e| StoreError::Backend(format!("corrupt inbox record: {e}")))?;
    let claimed = ClaimedInbox {
        record,
        version: item.version,
        ttl: item.ttl,
    };
    finish_claimed(table, key, message_id, &claimed).await
}

/// [`finish`] from the inbox record as the claim left it, without reading it again. Only the
/// claim writes the record and only finishing changes it, so the claim's copy is current
/// unless a copy of the same delivery finished first; then the versioned write fails and
/// there is nothing left to do, as when the record has expired.
pub async fn finish_claimed(
    table: &dyn Table,
    key: &ConversationKey,
    message_id: &str,
    claimed: &ClaimedInbox,
) -> Result<(), StoreError> {
    if claimed.record.done {
        return Ok(());
    }
    let pk = keys::conversation_pk(key);
    let sk = keys::inbox_sk(message_id);
    let done = InboxRecord {
        done: true,
        ..claimed.record.clone()
    };
    let mut next = Item::from_value(&pk, &sk, &done)
        .map_err(|e| StoreError::Backend(e.to_string()))?
        .with_version(claimed.version + 1);
    next.ttl = claimed.ttl;
    match table
        .write(vec![WriteOp::put_if_version(next, claimed.version)])
        .await
    {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}
