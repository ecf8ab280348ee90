//! [`TurnWorker`]: one queued message → the conversation layer → a reply on its channel. The
//! agent Lambda runs it over SQS batches; `steward serve` and the tests run it as the
//! in-process queue's [`Handler`].

use std::sync::Arc;

use async_trait::async_trait;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use steward_channels::{Channel, ChannelSender, InboundMessage, WebSender};
use steward_harness::{Agent, InboundOutcome, Links, TurnError, handle_inbound};
use steward_store::{Handler, HandlerError, QueuedMessage};
use tracing::Instrument;

use super::process_batch;

/// The sender of each channel; a channel without one drops its messages (logged).
#[derive(Clone)]
pub struct Senders {
    whatsapp: Option<Arc<dyn ChannelSender>>,
    telegram: Option<Arc<dyn ChannelSender>>,
    web: Arc<dyn ChannelSender>,
}

impl std::fmt::Debug for Senders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Senders")
            .field("whatsapp", &self.whatsapp.is_some())
            .field("telegram", &self.telegram.is_some())
            .finish_non_exhaustive()
    }
}

impl Senders {
    /// Senders for WhatsApp and Telegram (each when configured); the web chat always has one.
    pub fn new(
        whatsapp: Option<Arc<dyn ChannelSender>>,
        telegram: Option<Arc<dyn ChannelSender>>,
    ) -> Self {
        Self {
            whatsapp,
            telegram,
            web: Arc::new(WebSender),
        }
    }

    /// The sender for `channel`, when configured.
    pub fn for_channel(&self, channel: Channel) -> Option<&dyn ChannelSender> {
        match channel {
            Channel::Whatsapp => self.whatsapp.as_deref(),
            Channel::Telegram => self.telegram.as_deref(),
            Channel::Web => Some(self.web.as_ref()),
        }
    }
}

/// Handles queued messages: decodes the [`InboundMessage`], picks its channel's sender and
/// runs [`handle_inbound`].
#[derive(Debug, Clone)]
pub struct TurnWorker {
    agent: Arc<Agent>,
    senders: Senders,
    links: Links,
}

impl TurnWorker {
    /// A worker for `agent`, replying through `senders`, pointing strangers to `links`.
    pub fn new(agent: Arc<Agent>, senders: Senders, links: Links) -> Self {
        Self {
            agent,
            senders,
            links,
        }
    }

    /// Handles one queued body. `Ok(None)`: the body was dropped (unreadable, or its channel
    /// has no sender) — retrying would not help, so it is logged, not failed. `Err`: retry.
    pub async fn handle_body(&self, body: &str) -> Result<Option<InboundOutcome>, TurnError> {
        let message: InboundMessage = match serde_json::from_str(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, bytes = body.len(), "queued message is not an InboundMessage; dropped");
                return Ok(None);
            }
        };
        let Some(sender) = self.senders.for_channel(message.channel) else {
            tracing::error!(channel = %message.channel, "no sender is configured for this channel; message dropped");
            return Ok(None);
        };
        // Every line logged while this message is handled (the claim, the guards, the turn's
        // own `turn` span, the send) carries the conversation and the message id.
        let span = tracing::info_span!(
            "inbound",
            conversation = %message.conversation_key(),
            message = %message.provider_message_id,
        );
        let outcome = handle_inbound(&self.agent, &message, sender, &self.links)
            .instrument(span)
            .await?;
        tracing::info!(
            conversation = %message.conversation_key(),
            message = %message.provider_message_id,
            outcome = outcome_name(&outcome),
            "inbound message handled"
        );
        Ok(Some(outcome))
    }

    /// Handles an SQS batch (see [`process_batch`]): the failures to report.
    pub async fn handle_batch(&self, event: SqsEvent) -> SqsBatchResponse {
        process_batch(event, |record| async move {
            let body = record.body.unwrap_or_default();
            self.handle_body(&body).await.map(drop)
        })
        .await
    }
}

fn outcome_name(outcome: &InboundOutcome) -> &'static str {
    match outcome {
        InboundOutcome::Duplicate => "duplicate",
        InboundOutcome::Ignored { .. } => "ignored",
        InboundOutcome::Capped => "capped",
        InboundOutcome::Answered { .. } => "answered without the model",
        InboundOutcome::Turn { .. } => "turn",
    }
}

#[async_trait]
impl Handler for TurnWorker {
    async fn handle(&self, message: QueuedMessage) -> Result<(), HandlerError> {
        self.handle_body(&message.body)
            .await
            .map(drop)
            .map_err(|e| HandlerError(e.to_string()))
    }
}
