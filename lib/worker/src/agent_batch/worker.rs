//! [`TurnWorker`]: one queued message → the conversation layer → a reply on its channel. The
//! agent Lambda runs it over SQS batches; `steward serve` and the tests run it as the
//! in-process queue's [`Handler`]. On both, a transient failure is retried within the
//! delivery first ([`retry_transient`]); what still fails goes back to the queue.

use std::sync::Arc;

use async_trait::async_trait;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use steward_channels::{Channel, ChannelSender, InboundMessage, WebSender};
use steward_harness::approval_chat::{self, ApprovalNotice};
use steward_harness::dead_letter::{self, Apology};
use steward_harness::{Agent, InboundOutcome, Links, ServiceError, TurnError, handle_inbound};
use steward_store::{
    Handler, HandlerError, MessageVisibility, QueuedMessage, Sleeper, StoreError, TRACEPARENT,
    TRACESTATE, TokioSleeper, TraceContext,
};
use tokio::time::Instant;
use tracing::Instrument;

use super::{BatchTiming, Invocation, RetryPolicy, process_batch, receive_count, retry_transient};

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

/// Whether a turn's failure may clear within seconds, so retrying it at once is worth it: a
/// retryable send (rate limits, provider 5xx, transport; the outbox fails a turn only for
/// those), a store that was throttled or failed at its backend, and a service conflict (a
/// record changed under a step; read again, it goes through). A failed condition, an
/// oversized item, a malformed transaction or any other service failure is a bug or a fact;
/// trying again at once would repeat it (the redelivery schedule still tries it later).
pub fn is_transient(error: &TurnError) -> bool {
    matches!(
        error,
        TurnError::Send(_)
            | TurnError::Store(StoreError::Throttled(_) | StoreError::Backend(_))
            | TurnError::Service(ServiceError::Conflict { .. })
    )
}

/// Handles queued messages: decodes the [`InboundMessage`], picks its channel's sender and
/// runs [`handle_inbound`], retrying transient failures ([`is_transient`]) within the
/// delivery. A queued [`ApprovalNotice`] (an MCP request held for the person) is sent to their
/// linked chats instead.
#[derive(Debug, Clone)]
pub struct TurnWorker {
    agent: Arc<Agent>,
    senders: Senders,
    links: Links,
    retry: RetryPolicy,
    sleeper: Arc<dyn Sleeper>,
    visibility: Option<Arc<dyn MessageVisibility>>,
    timing: BatchTiming,
}

impl TurnWorker {
    /// A worker for `agent`, replying through `senders`, pointing strangers to `links`, with
    /// the default retry policy and batch timing and no visibility changes.
    pub fn new(agent: Arc<Agent>, senders: Senders, links: Links) -> Self {
        Self {
            agent,
            senders,
            links,
            retry: RetryPolicy::default(),
            sleeper: Arc::new(TokioSleeper),
            visibility: None,
            timing: BatchTiming::default(),
        }
    }

    /// This worker retrying transient failures by `policy`, waiting through `sleeper`.
    pub fn with_retry(mut self, policy: RetryPolicy, sleeper: Arc<dyn Sleeper>) -> Self {
        self.retry = policy;
        self.sleeper = sleeper;
        self
    }

    /// This worker changing its SQS records' visibility through `visibility`: the heartbeat
    /// and the redelivery schedule (see [`process_batch`]).
    pub fn with_visibility(mut self, visibility: Arc<dyn MessageVisibility>) -> Self {
        self.visibility = Some(visibility);
        self
    }

    /// This worker pacing its SQS batches by `timing`.
    pub fn with_timing(mut self, timing: BatchTiming) -> Self {
        self.timing = timing;
        self
    }

    /// Handles one queued body, retrying transient failures. `Ok(None)`: the body was
    /// dropped (unreadable, or its channel has no sender) — retrying would not help, so it is
    /// logged, not failed. `Err`: the queue should retry.
    pub async fn handle_body(&self, body: &str) -> Result<Option<InboundOutcome>, TurnError> {
        self.handle_body_until(body, None).await
    }

    /// [`TurnWorker::handle_body`], starting no retry whose wait would end after `give_up_at`.
    pub async fn handle_body_until(
        &self,
        body: &str,
        give_up_at: Option<Instant>,
    ) -> Result<Option<InboundOutcome>, TurnError> {
        if let Some(notice) = ApprovalNotice::from_body(body) {
            self.deliver_notice(&notice).await?;
            return Ok(None);
        }
        let message: InboundMessage = match steward_edge::inbound::decode(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, bytes = body.len(), "queued message is not an InboundMessage; dropped");
                steward_harness::metrics::reply_not_sent(
                    steward_harness::metrics::NotSentReason::Unreadable,
                );
                return Ok(None);
            }
        };
        let Some(sender) = self.senders.for_channel(message.channel) else {
            tracing::error!(channel = %message.channel, "no sender is configured for this channel; message dropped");
            steward_harness::metrics::reply_not_sent(
                steward_harness::metrics::NotSentReason::NoSender,
            );
            return Ok(None);
        };
        // Every line logged while this message is handled (the claim, the guards, the turn's
        // own `turn` span, the send) carries the conversation and the message id.
        let span = tracing::info_span!(
            "inbound",
            conversation = %message.conversation_key(),
            message = %message.provider_message_id,
        );
        let outcome = retry_transient(
            &self.retry,
            self.sleeper.as_ref(),
            give_up_at,
            is_transient,
            || handle_inbound(&self.agent, &message, sender, &self.links).instrument(span.clone()),
        )
        .await?;
        // Debug, like every per-turn line: a turn's record is its metrics line and the turn
        // inspector; an info line per step was most of the log and a share of a turn's CPU.
        tracing::debug!(
            conversation = %message.conversation_key(),
            message = %message.provider_message_id,
            outcome = outcome_name(&outcome),
            "inbound message handled"
        );
        Ok(Some(outcome))
    }

    /// Sends an MCP approval request to the person's linked chats (see
    /// [`approval_chat::deliver`]): at most once, retried only when the store failed.
    async fn deliver_notice(&self, notice: &ApprovalNotice) -> Result<(), TurnError> {
        let senders: Vec<(Channel, &dyn ChannelSender)> = [Channel::Whatsapp, Channel::Telegram]
            .into_iter()
            .filter_map(|c| self.senders.for_channel(c).map(|s| (c, s)))
            .collect();
        let delivered = approval_chat::deliver_with(&self.agent, notice, &senders).await?;
        tracing::info!(user = %notice.user, confirmation = %notice.confirmation, ?delivered, "approval request notice handled");
        Ok(())
    }

    /// Handles an SQS batch (see [`process_batch`]) for an invocation that ends at
    /// `deadline` (Lambda's, see [`super::lambda_deadline`]): the failures to report.
    pub async fn handle_batch(
        &self,
        event: SqsEvent,
        deadline: Option<Instant>,
    ) -> SqsBatchResponse {
        let invocation = Invocation {
            visibility: self.visibility.clone(),
            deadline,
            timing: self.timing.clone(),
        };
        let give_up_at = invocation.hand_back_at();
        process_batch(event, &invocation, |record| async move {
            // On the last receive a failure goes to the dead-letter queue next: the person is
            // told before the record is handed back.
            let last_receive = receive_count(&record) >= self.timing.receives_max;
            let trace = sqs_trace_context(&record);
            let body = record.body.unwrap_or_default();
            let result = self
                .handle_body_until(&body, give_up_at)
                .instrument(process_span(&trace, Some("aws_sqs")))
                .await
                .map(drop);
            if let Err(e) = &result
                && last_receive
            {
                self.apologise(&body, &e.to_string(), give_up_at).await;
            }
            result
        })
        .await
    }

    /// Tells the person behind a queued `body` that it could not be handled (the last attempt
    /// failed with `error`): [`dead_letter::apologise`], at most once per message, a transient
    /// failure retried like a turn's. Approval notices and unreadable bodies owe no apology.
    pub async fn apologise(
        &self,
        body: &str,
        error: &str,
        give_up_at: Option<Instant>,
    ) -> Option<Apology> {
        if ApprovalNotice::from_body(body).is_some() {
            tracing::error!(
                error,
                "approval notice dead-lettered; its MCP client can ask again"
            );
            return None;
        }
        let message: InboundMessage = match steward_edge::inbound::decode(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error, decode = %e, "unreadable message dead-lettered; no one to apologise to");
                return None;
            }
        };
        let Some(sender) = self.senders.for_channel(message.channel) else {
            tracing::error!(error, channel = %message.channel, "message dead-lettered on a channel without a sender; no apology");
            return None;
        };
        match retry_transient(
            &self.retry,
            self.sleeper.as_ref(),
            give_up_at,
            is_transient,
            || dead_letter::apologise(&self.agent, &message, sender, error),
        )
        .await
        {
            Ok(apology) => Some(apology),
            Err(e) => {
                tracing::error!(
                    conversation = %message.conversation_key(),
                    message = %message.provider_message_id,
                    error = %e,
                    "the dead-letter apology could not be sent"
                );
                None
            }
        }
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

/// The span a queued message is handled in (OpenTelemetry's messaging `process`), made a
/// child of the trace it was enqueued in, so the webhook's request, this and the turn are one
/// trace. A missing or malformed context starts a new trace here.
fn process_span(trace: &TraceContext, system: Option<&'static str>) -> tracing::Span {
    let span = tracing::info_span!(
        "process",
        otel.name = "process turns",
        otel.kind = "consumer",
        messaging.operation.type = "process",
        messaging.system = system,
    );
    steward_edge::telemetry::continue_trace(&span, trace);
    span
}

/// The trace context of an SQS record: its `traceparent` and `tracestate` String attributes
/// (written by `SqsQueue::enqueue_traced`).
fn sqs_trace_context(record: &SqsMessage) -> TraceContext {
    let attribute = |name: &str| {
        record
            .message_attributes
            .get(name)
            .and_then(|a| a.string_value.as_deref())
    };
    TraceContext::new(attribute(TRACEPARENT), attribute(TRACESTATE))
}

#[async_trait]
impl Handler for TurnWorker {
    async fn handle(&self, message: QueuedMessage) -> Result<(), HandlerError> {
        self.handle_body(&message.body)
            .instrument(process_span(&message.trace, None))
            .await
            .map(drop)
            .map_err(|e| HandlerError(e.to_string()))
    }

    async fn dead_lettered(&self, message: QueuedMessage, error: &str) {
        self.apologise(&message.body, error, None).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unwrap_used)]
    #[test]
    fn an_sqs_record_continues_the_trace_of_its_traceparent_and_a_malformed_one_starts_anew() {
        use opentelemetry::trace::SpanId;
        use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
        use steward_edge::telemetry::{LogFormat, subscriber};

        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let record = |traceparent: &str| {
            let mut attribute = aws_lambda_events::sqs::SqsMessageAttribute::default();
            attribute.string_value = Some(traceparent.to_owned());
            attribute.data_type = Some("String".to_owned());
            let mut record = SqsMessage::default();
            record
                .message_attributes
                .insert(TRACEPARENT.to_owned(), attribute);
            record
        };
        let carried = sqs_trace_context(&record(parent));
        assert_eq!(carried.traceparent(), Some(parent));
        assert!(sqs_trace_context(&SqsMessage::default()).is_empty());

        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let tracing = subscriber(
            LogFormat::Terminal,
            tracing_subscriber::filter::Targets::new(),
            Some(&provider),
        );
        tracing::subscriber::with_default(tracing, || {
            for traceparent in [parent, "00-4bf92f3577b34da6a3ce929d0e0e4736-zz-01"] {
                let _process =
                    process_span(&sqs_trace_context(&record(traceparent)), Some("aws_sqs"))
                        .entered();
                let _turn = tracing::info_span!("turn").entered();
            }
        });
        let spans = exporter.get_finished_spans().unwrap();
        let process: Vec<_> = spans.iter().filter(|s| s.name == "process turns").collect();
        assert_eq!(process.len(), 2);
        assert_eq!(
            process[0].span_context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(process[0].parent_span_id.to_string(), "00f067aa0ba902b7");
        assert_ne!(
            process[1].span_context.trace_id(),
            process[0].span_context.trace_id(),
            "a malformed traceparent starts a new trace"
        );
        assert_eq!(process[1].parent_span_id, SpanId::INVALID);
        let turns: Vec<_> = spans.iter().filter(|s| s.name == "turn").collect();
        assert_eq!(turns[0].parent_span_id, process[0].span_context.span_id());
        assert_eq!(
            turns[0].span_context.trace_id(),
            process[0].span_context.trace_id()
        );
    }

    #[test]
    fn throttles_backend_errors_and_retryable_sends_are_transient_bugs_are_not() {
        assert!(is_transient(&TurnError::Send("telegram 502".into())));
        assert!(is_transient(&TurnError::Store(StoreError::Throttled(
            "busy".into()
        ))));
        assert!(is_transient(&TurnError::Store(StoreError::Backend(
            "reset".into()
        ))));
        assert!(!is_transient(&TurnError::Store(
            StoreError::ConditionFailed { op_index: 0 }
        )));
        assert!(!is_transient(&TurnError::Store(
            StoreError::InvalidTransaction("empty".into())
        )));
        assert!(is_transient(&TurnError::Service(ServiceError::conflict(
            "the identity"
        ))));
        assert!(!is_transient(&TurnError::Service(ServiceError::internal(
            "a bug"
        ))));
    }
}
