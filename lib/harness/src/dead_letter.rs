//! No silence: a message whose every attempt failed (the in-process queue's last attempt, or
//! the agent's last SQS receive before the queue moves it to its dead-letter queue) gets one
//! short apology, so the person is never left waiting for an answer that will not come.
//!
//! The rule lives here once, below both queue shapes: the worker calls [`apologise`] from the
//! in-process queue's dead-letter hook and from the agent's last receive.
//!
//! * At most once: the apology goes through the same send ledger as a turn's reply
//!   ([`SentParts::apology`], keyed by the message id). A part recorded as delivered is never
//!   sent again, so a second run of the dead-letter path (a re-driven message failing again, a
//!   redelivered SQS record) sends nothing more.
//! * Recorded: the apology is the visible row [`SEEN_APOLOGY`] of the message's turn (a
//!   message that failed before its claim is claimed here, so it has one), next to the
//!   person's own message. It stays out of the model transcript: the model did not write it,
//!   and the loader closes whatever the failed turn left open ([`crate::transcript`]).
//! * Not needed: nothing is sent for a message already answered (its turn is done, or its
//!   reply was delivered), a group chat's message, or one whose ids cannot be keys.
//! * Logged: one `error!` line with the conversation, the message id, the turn and the last
//!   failure, whatever happens next.

use steward_channels::{ChatKind, InboundMessage, PartLedger};
use steward_llm::Role;
use steward_store::StoreError;

use crate::conversation::{self, Claim, InboxRecord};
use crate::inbound::Parts;
use crate::keys;
use crate::outbox::ChannelOutbox;
use crate::sent_parts::SentParts;
use crate::shaping::ShapedReply;
use crate::transcript::{self, SEEN_APOLOGY, SeenRow};
use crate::turn::{Agent, Outbox, TurnError};

/// What the person is told when their message could not be handled at all.
pub const APOLOGY: &str = "Sorry — something went wrong on my side and I couldn't finish that. Please try again in a moment.";

/// What became of a dead-lettered message's apology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Apology {
    /// Sent now (and recorded in the visible transcript of `turn`, when there is one).
    Sent {
        /// The message's turn, when it has one.
        turn: Option<u64>,
    },
    /// The ledger holds it as delivered already: nothing was sent.
    AlreadySent,
    /// No apology is owed, for this reason.
    NotNeeded(&'static str),
}

/// Tells the sender of `message`, through `sender`, that it could not be handled, unless that
/// was done before or is not owed (see the module docs). `error` is the last failure, for the
/// log. `Err` only when the ledger could not be read or the send failed in a way worth
/// retrying: nothing was sent twice either way.
pub async fn apologise(
    agent: &Agent,
    message: &InboundMessage,
    sender: &dyn steward_channels::ChannelSender,
    error: &str,
) -> Result<Apology, TurnError> {
    let message_id = message.provider_message_id.as_str();
    crate::metrics::dead_letter(message.channel.short_name());
    let parts = match Parts::of(message) {
        Ok(parts) => parts,
        Err(e) => {
            tracing::error!(message = %message_id, channel = %message.channel, error, ids = %e, "message dead-lettered; its ids are unusable, so no apology");
            return Ok(Apology::NotNeeded("unusable ids"));
        }
    };
    let key = &parts.key;
    if message.chat == ChatKind::Group {
        tracing::error!(conversation = %key, message = %message_id, error, "group chat message dead-lettered; groups get no apology");
        return Ok(Apology::NotNeeded("a group chat"));
    }
    let table = agent.table().as_ref();
    let clock = agent.clock().as_ref();
    let ledger = SentParts::apology(table, clock, key, message_id);
    if ledger
        .delivered(0)
        .await
        .map_err(|e| TurnError::Store(StoreError::Backend(e)))?
        .is_some()
    {
        tracing::error!(conversation = %key, message = %message_id, error, "message dead-lettered again; the apology was sent before");
        return Ok(Apology::AlreadySent);
    }
    let turn = match inbox(table, key, message_id).await? {
        Some(record) if record.done => {
            tracing::error!(conversation = %key, message = %message_id, turn = record.turn, error, "message dead-lettered after its turn finished; no apology owed");
            return Ok(Apology::NotNeeded("already answered"));
        }
        Some(record) => Some(record.turn),
        None => claim(agent, &parts, message_id).await,
    };
    if let Some(turn) = turn
        && SentParts::new(table, clock, key, turn)
            .delivered(0)
            .await
            .map_err(|e| TurnError::Store(StoreError::Backend(e)))?
            .is_some()
    {
        tracing::error!(conversation = %key, message = %message_id, turn, error, "message dead-lettered after its reply was delivered; no apology owed");
        return Ok(Apology::NotNeeded("the reply was delivered"));
    }
    tracing::error!(
        conversation = %key,
        message = %message_id,
        turn,
        error,
        "message dead-lettered after every attempt failed; apologising to the person"
    );
    if let Some(turn) = turn
        && let Err(e) = record(agent, key, turn, message).await
    {
        // Better an apology missing from the history than none at all.
        tracing::warn!(conversation = %key, turn, error = %e, "the apology could not be recorded in the visible transcript; sending it anyway");
    }
    let reply = ShapedReply::text(APOLOGY);
    ChannelOutbox::for_message(sender, message)
        .send_resuming(&reply, &ledger)
        .await
        .map_err(TurnError::Send)?;
    // Senders that keep no ledger of their own (the web chat's) leave it to this write; for
    // the others it finds the part recorded already and changes nothing.
    ledger
        .record(0, "apology")
        .await
        .map_err(|e| TurnError::Store(StoreError::Backend(e)))?;
    tracing::info!(conversation = %key, message = %message_id, turn, "apology sent");
    Ok(Apology::Sent { turn })
}

/// The message's `INBOX#` record, if it was claimed.
async fn inbox(
    table: &dyn steward_store::Table,
    key: &crate::ids::ConversationKey,
    message_id: &str,
) -> Result<Option<InboxRecord>, StoreError> {
    let Some(item) = table
        .get(&keys::conversation_pk(key), &keys::inbox_sk(message_id))
        .await?
    else {
        return Ok(None);
    };
    item.parse()
        .map(Some)
        .map_err(|e| StoreError::Backend(format!("corrupt inbox record {}: {e}", item.sk)))
}

/// Claims a message that failed before its own claim, so its apology has a turn to be recorded
/// under; None (logged) when that fails too — the apology still goes out.
async fn claim(agent: &Agent, parts: &Parts, message_id: &str) -> Option<u64> {
    let claimed = conversation::claim(
        agent.table().as_ref(),
        &parts.key,
        &parts.channel,
        None,
        message_id,
        agent.clock().now_millis(),
        agent.limits().messages_per_hour,
        None,
        None,
    )
    .await;
    match claimed {
        Ok(Claim::Turn { turn, .. }) => Some(turn),
        Ok(Claim::Duplicate | Claim::NotOwner) => None,
        Err(e) => {
            tracing::warn!(conversation = %parts.key, error = %e, "a dead-lettered message could not be claimed; its apology is not recorded");
            None
        }
    }
}

/// The person's message (unless recorded already) and the apology, in the visible transcript.
async fn record(
    agent: &Agent,
    key: &crate::ids::ConversationKey,
    turn: u64,
    message: &InboundMessage,
) -> Result<(), StoreError> {
    let table = agent.table().as_ref();
    let now = agent.clock().now_millis();
    if let Some(text) = message
        .text
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        transcript::put_words(table, key, turn, text, now).await?;
    }
    transcript::put_seen(
        table,
        key,
        turn,
        SEEN_APOLOGY,
        SeenRow {
            role: Role::Assistant,
            text: Some(APOLOGY.to_owned()),
            buttons: Vec::new(),
            reaction: None,
            at_ms: now,
        },
    )
    .await
    .map(drop)
}
