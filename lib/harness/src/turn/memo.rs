//! Stored steps: every step of a turn (a model response, a round of tool results, a sentence
//! the harness wrote) is written once at its position, and a resumed turn reuses what an
//! earlier attempt stored instead of doing it again.

use std::sync::Arc;

use steward_store::StoreError;

use steward_llm::ToolUseBlock;

use super::TurnError;
use super::run::ModelRun;
use super::tool_round::{not_run, tools_row};
use crate::keys;
use crate::transcript::{self, ModelRow, PlacedRow};

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
    /// stored, noting it among the rows this attempt wrote.
    pub(super) async fn store(
        &mut self,
        step: u32,
        row: ModelRow,
    ) -> Result<Arc<ModelRow>, StoreError> {
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

    /// The row at `step`: the stored one when an earlier attempt got this far, else the one
    /// `work` produces, stored now.
    pub(super) async fn memo(
        &mut self,
        step: u32,
        work: Work<'_>,
    ) -> Result<Arc<ModelRow>, TurnError> {
        if let Some(row) = self.stored(step) {
            return Ok(row);
        }
        let row = match work {
            Work::AskModel { calls } => self.ask_model(step, calls).await?,
            Work::RunTools(uses) => tools_row(self.run_round(uses).await?),
            Work::NotRun(uses, why) => tools_row(not_run(uses, why)),
        };
        Ok(self.store(step, row).await?)
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
