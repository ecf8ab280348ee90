//! MCP approval requests in the person's linked chat: "Your MCP client *Claude desktop* wants
//! to cancel "Summer Meetup" … Allow it?" with *Approve* / *Decline* buttons.
//!
//! The MCP surface has no channel sender (on AWS its function has only the store and the
//! queue), so a held MCP call enqueues an [`ApprovalNotice`] job and the worker delivers it
//! ([`deliver`]): at most once per request (a put-if-absent record first, the sends after, as
//! the group note does), to each linked WhatsApp or Telegram chat that belongs to the person.
//! Each sent message is recorded under its provider message id (`APPROVALMSG#…`), bound to the
//! one request it shows.
//!
//! A press of one of those buttons comes back as an inbound message naming the message it was
//! on; [`find_press`] recognises it and the conversation layer answers it without the model
//! ([`settle_press`], through [`gate::approve_request`] / [`gate::decline_request`]). Only
//! messages Steward sent as approval requests count: a model's reply is never recorded as
//! one, so nothing the model writes — buttons included — can approve. A press delivered twice
//! approves once (the inbox claim drops the copy, and a settled request stays settled); a
//! press on a lapsed request, or one that belongs to another account, gets a plain sentence.

use serde::{Deserialize, Serialize};
use steward_channels::{Channel, ChannelSender, InboundMessage, Recipient, SendReceipt};
use steward_store::{Clock, Item, QueueError, StoreError, Table, TurnQueue, WriteOp};

use crate::conversation;
use crate::gate::{self, ApprovalError, ConfirmState, Confirmation};
use crate::identity;
use crate::ids::{ConversationKey, UserId};
use crate::keys;
use crate::limits::INBOX_TTL_SECS;
use crate::turn::Agent;

/// The `job` field that marks a queued body as an approval notice (not an inbound message).
pub const APPROVAL_NOTICE_JOB: &str = "approval_notice";

/// The title of the button that approves.
pub const APPROVE_TITLE: &str = "Approve";
/// The title of the button that declines.
pub const DECLINE_TITLE: &str = "Decline";

/// How long a sent approval message is remembered: as long as a redelivered press can arrive
/// (the inbox TTL), so a late press is told the request lapsed instead of reaching the model
/// as words.
const APPROVAL_MESSAGE_TTL_SECS: i64 = INBOX_TTL_SECS;

/// A queued job: tell `user`'s linked chats about their MCP request `confirmation`, filed at
/// `created_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalNotice {
    /// Always [`APPROVAL_NOTICE_JOB`].
    pub job: String,
    /// The person.
    pub user: UserId,
    /// The confirmation record's id.
    pub confirmation: String,
    /// When that request was filed (epoch ms): a later request for the same call is another.
    pub created_ms: i64,
}

impl ApprovalNotice {
    /// The notice for the request `c`.
    pub fn for_request(c: &Confirmation) -> Self {
        Self {
            job: APPROVAL_NOTICE_JOB.to_owned(),
            user: c.owner.clone(),
            confirmation: c.id.clone(),
            created_ms: c.created_ms,
        }
    }

    /// The queued body.
    pub fn to_body(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The notice a queued body holds, or `None` when the body is something else (an inbound
    /// message).
    pub fn from_body(body: &str) -> Option<Self> {
        let notice: Self = serde_json::from_str(body).ok()?;
        (notice.job == APPROVAL_NOTICE_JOB).then_some(notice)
    }

    /// The queue group: one person's notices in order, apart from every conversation.
    pub fn group(&self) -> String {
        format!("approval-{}", self.user)
    }

    /// The dedupe id: the same request is queued once however often the client repeats it.
    pub fn dedupe_id(&self) -> String {
        format!("n{}-{}", self.confirmation, self.created_ms)
    }
}

/// Queues the notice of the pending MCP request `c` for the worker.
pub async fn enqueue(queue: &dyn TurnQueue, c: &Confirmation) -> Result<(), QueueError> {
    let notice = ApprovalNotice::for_request(c);
    queue
        .enqueue(&notice.group(), &notice.dedupe_id(), &notice.to_body())
        .await
}

/// What [`deliver`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// The request is no longer pending (settled, used, lapsed or filed anew): nothing sent.
    Stale,
    /// Its chats were told already (a repeated job): nothing sent.
    AlreadySent,
    /// Sent to this many chats (0: the person has no linked chat that could be reached).
    Sent(usize),
}

/// A sent approval message, as recorded under the chat it went to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalMessage {
    /// The person it was sent to.
    pub user: UserId,
    /// The confirmation record's id.
    pub confirmation: String,
    /// When that request was filed (epoch ms).
    pub created_ms: i64,
    /// The provider id of the button that approves.
    pub approve_id: String,
    /// The provider id of the button that declines.
    pub decline_id: String,
}

/// The text of the request for the person.
pub fn notice_text(c: &Confirmation) -> String {
    let client = c.client.as_deref().unwrap_or("MCP client");
    format!(
        "Your MCP client *{client}* wants to {}. Allow it? If you approve within the hour, its next identical call runs once.",
        lower_first(&c.description)
    )
}

/// "Cancel …" → "cancel …", so the description reads on after "wants to".
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.clone().next()) {
        (Some(first), Some(second)) if first.is_uppercase() && !second.is_uppercase() => {
            first.to_lowercase().chain(chars).collect()
        }
        _ => text.to_owned(),
    }
}

/// Delivers `notice` to the person's linked chats through `senders` (one per channel). The
/// "sent" record is written first with put-if-absent, so a repeated job or a crash sends at
/// most once; a failed send is logged and not retried.
pub async fn deliver(
    table: &dyn Table,
    clock: &dyn Clock,
    notice: &ApprovalNotice,
    senders: &[(Channel, &dyn ChannelSender)],
) -> Result<Delivered, StoreError> {
    let now_ms = clock.now_millis();
    let request = gate::get_request(table, &notice.user, &notice.confirmation, now_ms).await?;
    let Some(request) =
        request.filter(|c| c.state == ConfirmState::Pending && c.created_ms == notice.created_ms)
    else {
        return Ok(Delivered::Stale);
    };
    let sent = Item::from_value(
        keys::user_pk(&notice.user),
        keys::notice_sk(&notice.confirmation, notice.created_ms),
        &serde_json::json!({"sent_ms": now_ms}),
    )
    .map_err(|e| StoreError::Backend(e.to_string()))?
    .with_ttl(request.expires_ms().div_euclid(1000));
    match table.write(vec![WriteOp::put_if_absent(sent)]).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. }) => return Ok(Delivered::AlreadySent),
        Err(e) => return Err(e),
    }
    let identities = identity::list_identities(table, &notice.user)
        .await
        .map_err(|e| StoreError::Backend(e.to_string()))?;
    let text = notice_text(&request);
    let buttons = [APPROVE_TITLE.to_owned(), DECLINE_TITLE.to_owned()];
    let mut count = 0;
    for ident in identities {
        let Some((_, sender)) = senders
            .iter()
            .find(|(channel, _)| channel.short_name() == ident.identity.channel.as_str())
        else {
            continue;
        };
        let key = conversation::private_key(&ident.identity)?;
        let conv = conversation::load(table, &key, &ident.identity.channel).await?;
        if !conversation::may_write(&conv, &notice.user) {
            continue;
        }
        let to = Recipient::new(
            ident.identity.external.as_str(),
            conv.meta.last_inbound_ms.div_euclid(1000),
        );
        match sender.send_reply(&to, &text, &buttons).await {
            Ok(SendReceipt::Sent {
                message_ids,
                buttons: sent,
            }) => {
                let id_of =
                    |title: &str| sent.iter().find(|b| b.title == title).map(|b| b.id.clone());
                let (Some(message), Some(approve_id), Some(decline_id)) = (
                    message_ids.last(),
                    id_of(APPROVE_TITLE),
                    id_of(DECLINE_TITLE),
                ) else {
                    tracing::warn!(conversation = %key, "approval request sent without its buttons");
                    continue;
                };
                let record = ApprovalMessage {
                    user: notice.user.clone(),
                    confirmation: notice.confirmation.clone(),
                    created_ms: notice.created_ms,
                    approve_id,
                    decline_id,
                };
                let item = Item::from_value(
                    keys::conversation_pk(&key),
                    keys::approval_message_sk(message),
                    &record,
                )
                .map_err(|e| StoreError::Backend(e.to_string()))?
                .with_ttl(now_ms.div_euclid(1000) + APPROVAL_MESSAGE_TTL_SECS);
                table.write(vec![WriteOp::put(item)]).await?;
                count += 1;
                tracing::info!(conversation = %key, confirmation = %notice.confirmation, "approval request sent to a linked chat");
            }
            Ok(SendReceipt::OutsideWindow { .. }) => {
                tracing::info!(conversation = %key, "approval request not sent: the chat's 24-hour window is closed");
            }
            Err(e) => {
                tracing::warn!(conversation = %key, error = %e, "approval request not sent to a linked chat; not retried");
            }
        }
    }
    Ok(Delivered::Sent(count))
}

/// [`deliver`] on the store and clock of `agent` (the worker's).
pub async fn deliver_with(
    agent: &Agent,
    notice: &ApprovalNotice,
    senders: &[(Channel, &dyn ChannelSender)],
) -> Result<Delivered, StoreError> {
    deliver(
        agent.table().as_ref(),
        agent.clock().as_ref(),
        notice,
        senders,
    )
    .await
}

/// The approval message a button press in `conversation` was made on, when `message` is a
/// press on one Steward sent; `None` for anything else (typed text, a button of a model's reply).
pub async fn find_press(
    table: &dyn Table,
    conversation: &ConversationKey,
    message: &InboundMessage,
) -> Result<Option<ApprovalMessage>, StoreError> {
    let (Some(_), Some(on)) = (&message.button_id, &message.replied_to_id) else {
        return Ok(None);
    };
    let Some(item) = table
        .get(
            &keys::conversation_pk(conversation),
            &keys::approval_message_sk(on),
        )
        .await?
    else {
        return Ok(None);
    };
    item.parse::<ApprovalMessage>()
        .map(Some)
        .map_err(|e| StoreError::Backend(format!("corrupt approval message record: {e}")))
}

/// Records the press of `button_id` on `on` by `presser` at `now_ms`: the answer for the chat.
pub async fn settle_press(
    table: &dyn Table,
    presser: &UserId,
    on: &ApprovalMessage,
    button_id: &str,
    now_ms: i64,
) -> Result<String, StoreError> {
    if presser != &on.user {
        return Ok(
            "That request belongs to another account, so nothing was approved or declined."
                .to_owned(),
        );
    }
    let approve = if button_id == on.approve_id {
        true
    } else if button_id == on.decline_id {
        false
    } else {
        return Ok("That is not one of this request's buttons; nothing changed.".to_owned());
    };
    let settled = if approve {
        gate::approve_request(table, presser, &on.confirmation, on.created_ms, now_ms).await
    } else {
        gate::decline_request(table, presser, &on.confirmation, on.created_ms, now_ms).await
    };
    Ok(match settled {
        Ok(c) if approve => format!(
            "Approved: {}. {} can run it once within the hour, by repeating the same call.",
            c.description,
            c.client.as_deref().unwrap_or("The MCP client")
        ),
        Ok(c) => format!("Declined: {}. It will not run.", c.description),
        Err(ApprovalError::Gone | ApprovalError::WrongSurface) => {
            "That request has expired or no longer exists, so nothing was approved. If you still want it, ask your MCP client to try again.".to_owned()
        }
        Err(ApprovalError::AlreadyDecided(how)) => {
            format!("That request was already {how}; nothing changed.")
        }
        Err(ApprovalError::Store(e)) => return Err(e),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_and_inbound_messages_are_not_notices() {
        let notice = ApprovalNotice {
            job: APPROVAL_NOTICE_JOB.to_owned(),
            user: UserId::parse("u1").unwrap(),
            confirmation: "ab".repeat(32),
            created_ms: 5,
        };
        assert_eq!(ApprovalNotice::from_body(&notice.to_body()), Some(notice));
        assert_eq!(ApprovalNotice::from_body(r#"{"channel":"tg"}"#), None);
        assert_eq!(
            ApprovalNotice::from_body(
                r#"{"job":"other","user":"u1","confirmation":"ab","created_ms":1}"#
            ),
            None
        );
    }

    #[test]
    fn descriptions_read_on_after_wants_to() {
        assert_eq!(
            lower_first("Cancel \"Summer Meetup\""),
            "cancel \"Summer Meetup\""
        );
        assert_eq!(lower_first("URL change"), "URL change");
        assert_eq!(lower_first(""), "");
    }
}
