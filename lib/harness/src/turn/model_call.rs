//! The model call of a turn: the request (frozen prefix, history, settings; lean mode once a
//! provider rejected an optional feature), the recoverable rejections retried once, usage
//! recorded — and [`TurnNotes`], the same call behind compaction's narrow seam.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use steward_llm::{
    CacheControl, CreateRequest, CreateResponse, Effort, InvalidKind, LlmClient, LlmError, Message,
    OutputConfig,
};
use tracing::Instrument;

use super::{Agent, BROKEN, SWAMPED, TIMED_OUT};
use crate::attachments;
use crate::compaction::{NotesError, NotesModel};
use crate::conversation::{self, Conversation};
use crate::ids::{ConversationKey, UserId};
use crate::telemetry;
use crate::transcript::{self, PlacedRow};
use crate::usage;

impl Agent {
    fn base_request(&self, messages: Vec<Arc<Message>>, effort: Option<Effort>) -> CreateRequest {
        let mut req = CreateRequest::new(&self.settings.model, self.settings.max_tokens, messages);
        req.system = self.prefix.shared_system();
        req.tools = self.prefix.shared_tools();
        if !self.is_lean() {
            req.thinking = self.settings.thinking.clone();
            req.output_config = effort.map(|e| OutputConfig { effort: Some(e) });
        }
        req
    }

    /// Calls the model with `messages`, handling the recoverable rejections: a replayed
    /// reasoning signature (strip reasoning up to `floor_at` and retry once) and an optional
    /// feature (switch to lean mode and retry once).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call(
        &self,
        model: &dyn LlmClient,
        owner: &UserId,
        conv: &mut Conversation,
        rows: &[PlacedRow],
        extra: Option<Message>,
        effort: Option<Effort>,
        floor_at: &str,
    ) -> Result<CreateResponse, LlmError> {
        let build = async |conv: &Conversation, agent: &Agent| {
            let mut messages = transcript::to_messages(rows, conv.meta.reasoning_floor.as_deref());
            if let Some(extra) = &extra {
                match messages.last_mut() {
                    Some(last) if last.role == extra.role => Arc::make_mut(last)
                        .content
                        .extend(extra.content.iter().cloned()),
                    _ => messages.push(Arc::new(extra.clone())),
                }
            }
            // Stored photos and PDFs become their bytes again, the same on every call.
            let mut messages =
                attachments::resolve(agent.media.blobs.as_deref(), owner, messages).await;
            if let Some(last) = messages.last_mut() {
                // The request's own copy of the newest message: the stored one stays as it is.
                Arc::make_mut(last).set_cache_control_on_last(Some(CacheControl::ephemeral()));
            }
            agent.base_request(messages, effort)
        };
        let mut retried = false;
        loop {
            let req = build(conv, self).await;
            let span = telemetry::chat_span(model.provider_name(), &req.model);
            let answer = model.create(&req).instrument(span.clone()).await;
            match &answer {
                Ok(resp) => telemetry::record_response(&span, resp),
                Err(e) => telemetry::record_model_error(&span, e),
            }
            drop(span);
            match answer {
                Ok(resp) => return Ok(resp),
                Err(LlmError::InvalidRequest {
                    kind: InvalidKind::ThinkingSignatureRejected,
                    message,
                }) if !retried => {
                    tracing::warn!(%message, "replayed reasoning rejected; stripping reasoning from earlier rows and retrying once");
                    let floor = floor_at.to_owned();
                    if let Ok(updated) = conversation::update_from(self.table.as_ref(), conv, |m| {
                        m.reasoning_floor = Some(floor.clone())
                    })
                    .await
                    {
                        *conv = updated;
                    } else {
                        conv.meta.reasoning_floor = Some(floor);
                    }
                }
                Err(LlmError::InvalidRequest {
                    kind: InvalidKind::OptionalFeatureRejected,
                    message,
                }) if !retried => {
                    tracing::warn!(%message, "an optional model feature was rejected; switching to lean mode");
                    self.lean.store(true, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
            retried = true;
        }
    }

    /// Logs and records the tokens of one response (a failure to record is only logged).
    pub(super) async fn record_usage(
        &self,
        user: &UserId,
        conv: &ConversationKey,
        turn: u64,
        resp: &CreateResponse,
    ) {
        let u = &resp.usage;
        // Debug, like every per-turn line: a turn's record is its metrics line and the turn
        // inspector; an info line per step was most of the log and a share of a turn's CPU.
        tracing::debug!(
            conversation = %conv,
            turn,
            input_tokens = u.input_tokens,
            output_tokens = u.output_tokens,
            cache_read_tokens = u.cache_read_input_tokens,
            cache_write_tokens = u.cache_creation_input_tokens,
            "model usage"
        );
        // The holder's reservation (taken by `budget::before_call`) is released in this write.
        let holder = format!("{conv}/{turn}");
        let recorded = usage::record(
            self.table.as_ref(),
            user,
            self.clock.now_millis(),
            &self.settings.model,
            u,
            Some(&holder),
        )
        .await;
        if let Err(e) = recorded {
            tracing::warn!(error = %e, "could not record usage");
        }
    }
}

/// The turn's model call as compaction's seam: the notes call runs at low effort like any
/// other call of the turn, and its tokens count for the person.
pub(super) struct TurnNotes<'a> {
    pub(super) agent: &'a Agent,
    pub(super) model: &'a dyn LlmClient,
    pub(super) user: &'a UserId,
    pub(super) turn: u64,
    pub(super) tally: &'a crate::metrics::TurnTally,
}

#[async_trait]
impl NotesModel for TurnNotes<'_> {
    async fn write_notes(
        &self,
        conv: &mut Conversation,
        rows: &[PlacedRow],
        request: Message,
        floor_at: &str,
    ) -> Result<CreateResponse, NotesError> {
        let resp = self
            .agent
            .call(
                self.model,
                self.user,
                conv,
                rows,
                Some(request),
                Some(Effort::Low),
                floor_at,
            )
            .await
            .map_err(|e| {
                self.tally
                    .model_failed(crate::metrics::ModelFailureKind::of(&e), true);
                match e {
                    LlmError::ContextWindowExceeded { message } => NotesError::TooLong(message),
                    e => NotesError::Failed(e.to_string()),
                }
            })?;
        self.tally.model_answered(&resp.usage);
        self.agent
            .record_usage(self.user, &conv.key, self.turn, &resp)
            .await;
        Ok(resp)
    }
}

/// What the person reads when the model call failed.
pub(super) fn failure_text(e: &LlmError) -> &'static str {
    match e {
        LlmError::RateLimited { .. } | LlmError::Overloaded => SWAMPED,
        LlmError::Timeout => TIMED_OUT,
        _ => BROKEN,
    }
}
