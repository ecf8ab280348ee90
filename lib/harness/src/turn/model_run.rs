//! One turn's walk through the model loop: the user row (compacting first when the segment
//! is long), then model calls and tool rounds, each a stored step, until a reply.

use std::sync::Arc;

use steward_llm::{ContentBlock, Message};

use super::memo::Work;
use super::model_call::{TurnNotes, failure_text};
use super::next_step::{NextStep, next_step};
pub(super) use super::run::ModelRun;
use super::{BAIL_OUT, CUT_OFF, Draft, REFUSED, TurnError};
use crate::transcript::{self, ModelRow, PlacedRow, RowSource};
use crate::{Actor, Ctx, budget, compaction, keys};

/// A row the harness wrote in the model's place (the person sees it as the reply).
fn harness_row(text: &str) -> ModelRow {
    ModelRow {
        message: Message::assistant(vec![ContentBlock::text(text)]),
        source: RowSource::Harness,
        stop_reason: None,
    }
}

impl ModelRun<'_> {
    /// Runs (or resumes) the model loop of the turn.
    pub(super) async fn go(&mut self) -> Result<Draft, TurnError> {
        let table = self.agent.table().as_ref();
        let key = self.input.conversation.clone();
        let mut rows = transcript::load_segment(table, &key, self.conv.meta.segment).await?;
        let has_user_row = rows.iter().any(|r| r.turn == self.turn && r.step == 0);
        if !has_user_row {
            if transcript::content_chars(&rows) > self.agent.limits().compaction_chars {
                let notes = TurnNotes {
                    agent: self.agent,
                    model: self.model.as_ref(),
                    user: &self.input.user,
                    turn: self.turn,
                };
                match compaction::compact(
                    &notes,
                    table,
                    &mut self.conv,
                    &rows,
                    self.turn,
                    self.agent.clock().now_millis(),
                )
                .await
                {
                    Ok(()) => {
                        rows = transcript::load_segment(table, &key, self.conv.meta.segment).await?
                    }
                    Err(why) => {
                        tracing::warn!(%why, "compaction failed; carrying on with the full history")
                    }
                }
            }
            let row = self.user_row().await;
            let now = self.agent.clock().now_millis();
            let stored =
                transcript::append(table, &key, self.conv.meta.segment, self.turn, 0, row, now)
                    .await?;
            rows.push(PlacedRow {
                sk: keys::model_sk(self.conv.meta.segment, self.turn, 0),
                turn: self.turn,
                step: 0,
                row: stored,
            });
        }
        let (history, this_turn): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .partition(|r| r.turn != self.turn || r.step == 0);
        self.history = history;
        self.this_turn = this_turn;
        self.walk().await
    }

    /// The turn's user row: a fresh context block and the person's words.
    async fn user_row(&self) -> ModelRow {
        let ctx = self.ctx();
        let context = match self
            .agent
            .context
            .context(
                &ctx,
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
        ModelRow {
            message: Message::user_text(transcript::user_turn_text(&context, &self.input.text)),
            source: RowSource::User,
            stop_reason: None,
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
        let floor_at = keys::model_sk(self.conv.meta.segment, self.turn, step);
        let effort = self.agent.settings.effort;
        let result = self
            .agent
            .call(
                self.model.as_ref(),
                &mut self.conv,
                &self.history,
                None,
                effort,
                &floor_at,
            )
            .await;
        match result {
            Ok(resp) => {
                self.agent
                    .record_usage(&self.input.user, &self.input.conversation, self.turn, &resp)
                    .await;
                Ok(ModelRow {
                    message: resp.to_message(),
                    source: RowSource::Model,
                    stop_reason: resp.stop_reason.as_ref().map(|s| s.as_str().to_owned()),
                })
            }
            Err(e) => {
                if let Err(e) = budget::release(table, &self.input.user, now(), &holder).await {
                    tracing::warn!(error = %e, "could not release the budget's reservation");
                }
                tracing::warn!(error = %e, "model call failed");
                crate::metrics::model_failure(crate::metrics::ModelFailureKind::of(&e));
                Ok(harness_row(failure_text(&e)))
            }
        }
    }

    /// The loop: a model step, then what [`next_step`] reads from it, until a reply.
    async fn walk(&mut self) -> Result<Draft, TurnError> {
        let mut step: u32 = 1;
        let mut calls: u32 = 0;
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
                    let results = self.memo(step, Work::RunTools(&uses)).await?;
                    self.push(step, results);
                    step += 1;
                }
                NextStep::Continue => {}
                NextStep::Refused => {
                    tracing::info!("the model refused");
                    crate::metrics::model_failure(crate::metrics::ModelFailureKind::Refused);
                    return self.finish_with(step, REFUSED).await;
                }
                NextStep::CutOff { uses, partial } => {
                    tracing::warn!("the model's answer was cut off");
                    if !uses.is_empty() {
                        // Keep every tool_use paired with a result, without running a call
                        // whose arguments may be incomplete.
                        let row = self.memo(step, Work::NotRun(&uses)).await?;
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
