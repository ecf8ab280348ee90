//! Stored steps: every step of a turn (a model response, a round of tool results, a sentence
//! the harness wrote) is written once at its position, and a resumed turn reuses what an
//! earlier attempt stored instead of doing it again. The person's row is stored with the
//! turn's first model answer, in one commit where the store has one
//! ([`transcript::append_pair`]).

use std::sync::Arc;

use steward_store::StoreError;

use steward_llm::ToolUseBlock;

use super::TurnError;
use super::run::ModelRun;
use super::tool_round::{not_run, tools_row};
use crate::keys;
use crate::transcript::{self, ModelRow, PendingRow, PlacedRow};

/// The work of one step, done only when no earlier attempt stored its row.
#[derive(Debug, Clone, Copy)]
pub(super) enum Work<'a> {
    /// Call the model (`calls` made so far this turn).
    AskModel {
        /// Model calls made so far this turn (the cap is checked against it).
        calls: u32,
    },
    /// Run these tool calls as one round.
    RunTools(&'a [ToolUseBlock]),
    /// Answer these calls with "not run", saying why.
    NotRun(&'a [ToolUseBlock], &'static str),
}

impl ModelRun<'_> {
    /// The row an earlier attempt stored at `step` of this turn, if any.
    pub(super) fn stored(&self, step: u32) -> Option<Arc<ModelRow>> {
        self.this_turn
            .iter()
            .find(|r| r.step == step)
            .map(|r| Arc::clone(&r.row))
    }

    /// Stores `row` at `step` (written once; a racing copy's row wins) and returns what is
    /// stored, noting it among the rows this attempt wrote. The person's row goes first if it
    /// is still waiting.
    pub(super) async fn store(
        &mut self,
        step: u32,
        row: ModelRow,
    ) -> Result<Arc<ModelRow>, StoreError> {
        self.flush_user().await?;
        let stored = transcript::append(
            self.agent.table().as_ref(),
            &self.input.conversation,
            self.conv.meta.segment,
            self.turn,
            step,
            row,
            self.agent.clock().now_millis(),
        )
        .await?;
        let row = Arc::clone(&stored.placed.row);
        self.written.push(stored);
        Ok(row)
    }

    /// Stores the person's row if it is still waiting (alone: before work that is not a model
    /// call, or before compacting).
    pub(super) async fn flush_user(&mut self) -> Result<(), StoreError> {
        if let Some(user) = self.pending_user.take() {
            let table = self.agent.table().as_ref();
            let stored = transcript::store_row(table, &self.input.conversation, user).await?;
            self.adopt_user(stored);
        }
        Ok(())
    }

    /// Notes the person's row as stored, and sends the stored one from now on (another
    /// attempt's, when it got there first).
    pub(super) fn adopt_user(&mut self, stored: transcript::ReadRow) {
        let turn = self.turn;
        if let Some(sent) = self
            .history
            .iter_mut()
            .find(|r| r.turn == turn && r.step == 0)
        {
            sent.row = Arc::clone(&stored.placed.row);
        }
        self.written.push(stored);
    }

    /// Stores the waiting person's row and `row`, the model's answer to it at `step`, in one
    /// commit; what is stored at `step`, or `None` when another attempt stored a different
    /// person's row first and no answer to it yet (its row is adopted now; `row` answered this
    /// attempt's, so it is not stored).
    async fn store_with_user(
        &mut self,
        user: PendingRow,
        step: u32,
        row: ModelRow,
    ) -> Result<Option<Arc<ModelRow>>, StoreError> {
        let conversation = &self.input.conversation;
        let now = self.agent.clock().now_millis();
        let answer = transcript::prepare_row(
            conversation,
            self.conv.meta.segment,
            self.turn,
            step,
            row,
            now,
        )?;
        let table = self.agent.table().as_ref();
        let (user, answer) = transcript::append_pair(table, conversation, user, answer).await?;
        self.adopt_user(user);
        Ok(answer.map(|stored| {
            let row = Arc::clone(&stored.placed.row);
            self.written.push(stored);
            row
        }))
    }

    /// The row at `step`: the stored one when an earlier attempt got this far, else the one
    /// `work` produces, stored now (with the person's row, if it is waiting, when `work` is a
    /// model call).
    pub(super) async fn memo(
        &mut self,
        step: u32,
        work: Work<'_>,
    ) -> Result<Arc<ModelRow>, TurnError> {
        if let Some(row) = self.stored(step) {
            return Ok(row);
        }
        if !matches!(work, Work::AskModel { .. }) {
            // Only a model call is made again when its row is not stored (it changes nothing
            // else): the person's row is stored before anything else is done.
            self.flush_user().await?;
        }
        loop {
            let row = match work {
                Work::AskModel { calls } => self.ask_model(step, calls).await?,
                Work::RunTools(uses) => tools_row(self.run_round(uses).await?),
                Work::NotRun(uses, why) => tools_row(not_run(uses, why)),
            };
            let Some(user) = self.pending_user.take() else {
                return Ok(self.store(step, row).await?);
            };
            if let Some(stored) = self.store_with_user(user, step, row).await? {
                return Ok(stored);
            }
            tracing::info!(
                step,
                "another attempt stored the person's row first; asking the model again in answer to it"
            );
        }
    }

    /// Adds a row to what the next model call sees.
    pub(super) fn push(&mut self, step: u32, row: Arc<ModelRow>) {
        self.history.push(PlacedRow {
            sk: keys::model_sk(self.conv.meta.segment, self.turn, step),
            turn: self.turn,
            step,
            row,
        });
    }
}
