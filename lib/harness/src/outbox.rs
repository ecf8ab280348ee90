//! [`ChannelOutbox`]: the turn's [`Outbox`] over a channel's [`ChannelSender`] — reactions on
//! the user's message, replies through `send_reply`, and the rule for what a failed send means:
//! a retryable failure fails the turn (the queue retries it and the stored reply is resent);
//! WhatsApp's closed 24-hour window and a request the provider refuses outright are logged and
//! the turn finishes, since sending the same thing again would fail the same way.

use async_trait::async_trait;
use steward_channels::{
    ChannelProfile, ChannelSender, InboundMessage, NoLedger, PartLedger, Recipient, SendReceipt,
};

use crate::metrics::{self, NotSentReason};

use crate::shaping::ShapedReply;
use crate::turn::Outbox;

/// Delivers one turn's reply to one recipient on one channel.
pub struct ChannelOutbox<'a> {
    sender: &'a dyn ChannelSender,
    to: Recipient,
    message_ref: Option<String>,
}

impl std::fmt::Debug for ChannelOutbox<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelOutbox")
            .field("channel", &self.sender.profile().name)
            .field("to", &self.to)
            .field("message_ref", &self.message_ref)
            .finish()
    }
}

impl<'a> ChannelOutbox<'a> {
    /// An outbox sending to `to` through `sender`; reactions go on the user's message
    /// `message_ref` (none: reactions are refused).
    pub fn new(sender: &'a dyn ChannelSender, to: Recipient, message_ref: Option<String>) -> Self {
        Self {
            sender,
            to,
            message_ref,
        }
    }

    /// The outbox answering `message`: to its sender, reacting on it.
    pub fn for_message(sender: &'a dyn ChannelSender, message: &InboundMessage) -> Self {
        Self::new(sender, Recipient::of(message), message.message_ref.clone())
    }

    /// Who replies go to.
    pub fn recipient(&self) -> &Recipient {
        &self.to
    }
}

#[async_trait]
impl Outbox for ChannelOutbox<'_> {
    fn profile(&self) -> ChannelProfile {
        self.sender.profile()
    }

    async fn react(&self, emoji: &str) -> Result<(), String> {
        if !self.sender.profile().reactions {
            return Err("this channel shows no reactions".into());
        }
        let Some(message_ref) = &self.message_ref else {
            return Err("there is no user message to react to".into());
        };
        self.sender
            .react(&self.to, message_ref, emoji)
            .await
            .map_err(|e| e.to_string())
    }

    async fn send(&self, reply: &ShapedReply) -> Result<(), String> {
        self.send_resuming(reply, &NoLedger).await
    }

    async fn send_resuming(
        &self,
        reply: &ShapedReply,
        parts: &dyn PartLedger,
    ) -> Result<(), String> {
        let Some(text) = reply.text.as_deref() else {
            return Ok(());
        };
        match self
            .sender
            .send_reply_resuming(&self.to, text, &reply.buttons, parts)
            .await
        {
            Ok(SendReceipt::Sent { message_ids, .. }) => {
                tracing::debug!(messages = message_ids.len(), "reply sent");
                Ok(())
            }
            Ok(SendReceipt::OutsideWindow { last_inbound_at }) => {
                tracing::warn!(
                    conversation = %self.to.conversation_id,
                    last_inbound_at,
                    "reply not sent: the channel's session window is closed"
                );
                metrics::reply_not_sent(NotSentReason::OutsideWindow);
                Ok(())
            }
            Err(e) if e.is_retryable() => {
                metrics::reply_not_sent(NotSentReason::Failed);
                Err(e.to_string())
            }
            Err(e) => {
                metrics::reply_not_sent(NotSentReason::Refused);
                tracing::error!(
                    conversation = %self.to.conversation_id,
                    error = %e,
                    "the provider refused the reply; not retrying"
                );
                Ok(())
            }
        }
    }
}
