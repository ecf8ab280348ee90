//! One turn's walk through the model loop: the user row (compacting first when the segment
//! is long), then model calls and tool rounds, each a stored step, until a reply.

use std::sync::Arc;

use steward_llm::{ContentBlock, LlmError, Message};
use steward_store::StoreError;

use super::memo::Work;
use super::model_call::{TurnNotes, failure_text};
use super::next_step::{NextStep, next_step};
use super::repeats::Repeats;
pub(super) use super::run::ModelRun;
use super::{
    BAIL_OUT, CUT_OFF, Draft, GOING_IN_CIRCLES, NOT_RUN_CUT_OFF, NOT_RUN_REPEATED, REFUSED,
    TurnError,
};
use crate::attachments::{self, Taken};
use crate::history_cache::LoadedSegment;
use crate::transcript::{self, CallNote, ModelRow, PlacedRow, RowSource, StepNote};
use crate::{Actor, Ctx, budget, compaction, keys};

/// A row the harness wrote in the model's place (the person sees it as the reply).
fn harness_row(text: &str) -> ModelRow {
    ModelRow {
        message: Message::assistant(vec![ContentBlock::text(text)]).into(),
        source: RowSource::Harness,
        stop_reason: None,
        note: None,
    }
}

impl ModelRun<'_> {
    /// Runs (or resumes) the model loop of the turn.
    pub(super) async fn go(&mut self) -> Result<Draft, TurnError> {
        let table = self.agent.table().as_ref();
        let key = self.input.conversation.clone();
        let loaded = self.load_segment().await?;
        let mut rows = loaded.rows;
        let has_user_row = rows.iter().any(|r| r.turn == self.turn && r.step == 0);
        if !has_user_row {
            if loaded.chars > self.agent.limits().compaction_chars {
                let notes = TurnNotes {
                    agent: self.agent,
                    model: self.model.as_ref(),
                    user: &self.input.user,
                    turn: self.turn,
                    tally: self.tally,
                };
                match compaction::compact(
                    &notes,
                    table,
                    &mut self.conv,
                    &rows,
                    &[],
                    self.turn,
                    self.agent.clock().now_millis(),
                )
                .await
                {
                    Ok(()) => rows = self.load_segment().await?.rows,
                    Err(why) => {
                        tracing::warn!(%why, "compaction failed; carrying on with the full history")
                    }
                }
            }
            let media = match self.attachment {
                Some(attachment) => Some(
                    attachments::take(
                        &self.agent.media,
                        table,
                        self.agent.clock().now_millis(),
                        &self.input.user,
                        attachment,
                    )
                    .await?,
                ),
                None => None,
            };
            let (block, note) = match media {
                Some(Taken::Stored(block)) => (Some(block), None),
                Some(Taken::Refused(line)) => {
                    let captioned = self.attachment.is_some_and(|a| a.captioned);
                    if !captioned {
                        // Nothing else to go on: the line is the whole answer, without the
                        // model (and no model row, so the next turn's history stays paired).
                        return Ok(Draft { text: line.into() });
                    }
                    self.media_notice = Some(line);
                    (None, Some(line))
                }
                None => (None, None),
            };
            let row = self.user_row(block, note).await;
            let now = self.agent.clock().now_millis();
            let pending =
                transcript::prepare_row(&key, self.conv.meta.segment, self.turn, 0, row, now)?;
            if self.attachment.is_some() || !pending.fits() {
                // Taking the attachment charged the day's allowance: the row that refers to
                // it is stored now, so a resumed turn never takes it twice. A row too large
                // for the store fails here, before a model call is paid for.
                let stored = transcript::store_row(table, &key, pending).await?;
                rows.push(stored.placed.clone());
                self.written.push(stored);
            } else {
                // Stored with the first response, in one commit. A crash before then loses
                // only this row and the model's answer to it (nothing else refers to either),
                // and the resumed turn makes both again.
                rows.push(pending.placed().clone());
                self.pending_user = Some(pending);
            }
        }
        // The segment the history cache now holds for the conversation.
        let segment = self.conv.meta.segment;
        let (history, this_turn): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .partition(|r| r.turn != self.turn || r.step == 0);
        self.history = history;
        self.this_turn = this_turn;
        let draft = self.walk().await?;
        // Every row the walk stored is in the store at its key now; the next turn finds them
        // in memory. Not after compacting for length: those rows straddle two segments.
        if self.conv.meta.segment == segment {
            self.agent
                .history()
                .remember_written(&key, segment, std::mem::take(&mut self.written));
        }
        Ok(draft)
    }

    /// The conversation's current segment, from the agent's [`crate::history_cache`].
    async fn load_segment(&self) -> Result<LoadedSegment, StoreError> {
        let agent = self.agent;
        agent
            .history()
            .load_segment(
                agent.table().as_ref(),
                &self.input.conversation,
                self.conv.meta.segment,
                agent.clock().now_secs(),
            )
            .await
    }

    /// The turn's user row: the stored attachment (a reference, never its bytes), if any, then
    /// a fresh context block and the person's words (with `note`, the line they were told when
    /// their attachment could not be read).
    async fn user_row(&self, block: Option<ContentBlock>, note: Option<&str>) -> ModelRow {
        let ctx = self.ctx();
        let context = match self
            .agent
            .context
            .context(
                &ctx,
                self.account.as_ref(),
                &self.input.channel,
                self.conv.meta.active_record.as_deref(),
            )
            .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "context source failed; sending a minimal context");
                format!(
                    "Current time (UTC, epoch ms): {}",
                    self.agent.clock().now_millis()
                )
            }
        };
        let words = match note {
            Some(line) => format!(
                "{}\n(The attachment could not be read; they were told: {line})",
                self.input.text
            ),
            None => self.input.text.clone(),
        };
        let mut content: Vec<ContentBlock> = block.into_iter().collect();
        content.push(ContentBlock::text(transcript::user_turn_text(
            &context, &words,
        )));
        ModelRow {
            message: Message::user(content).into(),
            source: RowSource::User,
            stop_reason: None,
            note: None,
        }
    }

    /// The context every tool call of the turn runs with (the request is the turn).
    pub(super) fn ctx(&self) -> Ctx {
        Ctx::for_request(
            Arc::clone(self.agent.table()),
            Arc::clone(self.agent.clock()),
            self.input.user.clone(),
            Actor::Agent,
            self.action,
        )
    }

    /// Records a reply the harness wrote (so the model later sees what the person saw).
    async fn finish_with(&mut self, step: u32, text: &str) -> Result<Draft, TurnError> {
        let stored = self.store(step, harness_row(text)).await?;
        Ok(Draft {
            text: steward_llm::text_of(&stored.message.content),
        })
    }

    /// One model call for `step`, as the row to store: the model's response, or the harness's
    /// sentence when the call cap is reached or the call failed (the turn ends there).
    pub(super) async fn ask_model(&mut self, step: u32, calls: u32) -> Result<ModelRow, TurnError> {
        if calls >= self.agent.limits().model_calls_max {
            tracing::warn!(calls, "model call cap reached; bailing out");
            return Ok(harness_row(BAIL_OUT));
        }
        let table = self.agent.table().as_ref();
        let holder = format!("{}/{}", self.input.conversation, self.turn);
        let clock = Arc::clone(self.agent.clock());
        let now = move || clock.now_millis();
        if budget::before_call(table, &now, &self.input.user, self.budget, &holder).await?
            == budget::Gate::Capped
        {
            tracing::info!("monthly budget reached; answered without the model");
            return Ok(harness_row(&budget::cap_text(now())));
        }
        let effort = self.agent.settings.effort;
        let started = std::time::Instant::now();
        let rows_sent = self.history.len();
        let result = loop {
            let floor_at = keys::model_sk(self.conv.meta.segment, self.turn, step);
            let result = self
                .agent
                .call(
                    self.model.as_ref(),
                    &self.input.user,
                    &mut self.conv,
                    &self.history,
                    None,
                    effort,
                    &floor_at,
                )
                .await;
            match result {
                Err(LlmError::ContextWindowExceeded { message }) if !self.compacted_for_length => {
                    self.compacted_for_length = true;
                    tracing::warn!(%message, "the model says the prompt is too long; compacting and retrying once");
                    if !self.compact_for_length().await? {
                        break Err(LlmError::ContextWindowExceeded { message });
                    }
                }
                result => break result,
            }
        };
        match result {
            Ok(resp) => {
                self.tally.model_answered(&resp.usage);
                self.agent
                    .record_usage(&self.input.user, &self.input.conversation, self.turn, &resp)
                    .await;
                let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                let model = if resp.model.is_empty() {
                    &self.agent.settings.model
                } else {
                    &resp.model
                };
                let note = CallNote::new(model, &resp.usage, latency_ms, rows_sent);
                Ok(ModelRow {
                    message: resp.to_message().into(),
                    source: RowSource::Model,
                    stop_reason: resp.stop_reason.as_ref().map(|s| s.as_str().to_owned()),
                    note: Some(StepNote::Call(note)),
                })
            }
            Err(e) => {
                if let Err(e) = budget::release(table, &self.input.user, now(), &holder).await {
                    tracing::warn!(error = %e, "could not release the budget's reservation");
                }
                tracing::warn!(error = %e, "model call failed");
                self.tally
                    .model_failed(crate::metrics::ModelFailureKind::of(&e), true);
                Ok(harness_row(failure_text(&e)))
            }
        }
    }

    /// Compacts the rows before this turn into a new segment, carrying this turn's rows into it
    /// unchanged, so the call can be retried on a shorter history; whether it happened (a
    /// failure to compact is logged, and the turn answers with the usual failure line). `Err`
    /// when the person's row, still waiting, could not be stored first: the turn fails there,
    /// as at any failed write, rather than store a step after a person's row it does not have.
    async fn compact_for_length(&mut self) -> Result<bool, StoreError> {
        // The person's row goes into the old segment first, as every row before the new one.
        self.flush_user().await?;
        let (this_turn, earlier): (Vec<PlacedRow>, Vec<PlacedRow>) = self
            .history
            .iter()
            .cloned()
            .partition(|r| r.turn == self.turn);
        if earlier.is_empty() {
            tracing::warn!("nothing before this turn to compact; the turn alone is too long");
            return Ok(false);
        }
        let notes = TurnNotes {
            agent: self.agent,
            model: self.model.as_ref(),
            user: &self.input.user,
            turn: self.turn,
            tally: self.tally,
        };
        let table = self.agent.table().as_ref();
        let now = self.agent.clock().now_millis();
        let key = self.input.conversation.clone();
        if let Err(why) = compaction::compact(
            &notes,
            table,
            &mut self.conv,
            &earlier,
            &this_turn,
            self.turn,
            now,
        )
        .await
        {
            tracing::warn!(%why, "compaction after a too-long prompt failed");
            return Ok(false);
        }
        match transcript::load_segment(table, &key, self.conv.meta.segment).await {
            Ok(rows) => {
                self.history = rows;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the new segment could not be read back");
                Ok(false)
            }
        }
    }

    /// The loop: a model step, then what [`next_step`] reads from it, until a reply.
    async fn walk(&mut self) -> Result<Draft, TurnError> {
        let mut step: u32 = 1;
        let mut calls: u32 = 0;
        let mut repeats = Repeats::default();
        loop {
            let response = self.memo(step, Work::AskModel { calls }).await?;
            calls += 1;
            let next = next_step(&response);
            if !matches!(next, NextStep::Ended(_)) {
                self.push(step, response);
                step += 1;
            }
            match next {
                // The harness ended the turn at this step (now or on an earlier attempt).
                NextStep::Ended(text) | NextStep::Reply(text) => return Ok(Draft { text }),
                NextStep::RunTools(uses) => {
                    // Counted from the stored rows, so a resumed turn stops at the same step.
                    if let Some(tool) = repeats.count(&uses) {
                        tracing::warn!(
                            %tool,
                            times = crate::limits::REPEATED_CALLS_MAX,
                            "the model repeated the same tool call; the loop breaker ends the turn"
                        );
                        let row = self
                            .memo(step, Work::NotRun(&uses, NOT_RUN_REPEATED))
                            .await?;
                        self.push(step, row);
                        step += 1;
                        return self.finish_with(step, GOING_IN_CIRCLES).await;
                    }
                    let results = self.memo(step, Work::RunTools(&uses)).await?;
                    self.push(step, results);
                    step += 1;
                }
                NextStep::Continue => {}
                NextStep::Refused => {
                    tracing::info!("the model refused");
                    // The refusal is an answer, counted when it came.
                    self.tally
                        .model_failed(crate::metrics::ModelFailureKind::Refused, false);
                    return self.finish_with(step, REFUSED).await;
                }
                NextStep::CutOff { uses, partial } => {
                    tracing::warn!("the model's answer was cut off");
                    if !uses.is_empty() {
                        // Keep every tool_use paired with a result, without running a call
                        // whose arguments may be incomplete.
                        let row = self
                            .memo(step, Work::NotRun(&uses, NOT_RUN_CUT_OFF))
                            .await?;
                        self.push(step, row);
                        step += 1;
                    }
                    let text = if partial.trim().is_empty() {
                        CUT_OFF.to_owned()
                    } else {
                        format!("{}\n\n{CUT_OFF}", partial.trim_end())
                    };
                    self.finish_with(step, CUT_OFF).await?;
                    return Ok(Draft { text });
                }
            }
        }
    }
}
