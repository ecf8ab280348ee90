//! One round of tool calls: each call in order — the conversation's own tools
//! ([`crate::chat_tools`]) here, every other through the gate and the shared registry with its
//! `tool_use` id as the effect key — and the round's results fitted into one stored row.

use serde_json::Value;
use steward_llm::{ContentBlock, Message, Role, ToolUseBlock};

use super::TurnError;
use super::run::ModelRun;
use crate::chat_tools::ChatToolCall;
use crate::conversation;
use crate::gate::{self, GateOutcome, Passage, Surface};
use crate::ids::{EffectKey, ToolUseId};
use crate::limits::TOOL_ROUND_BYTES_MAX;
use crate::telemetry::{self, ToolCallOutcome};
use crate::transcript::{
    self, ModelRow, RowSource, SeenRow, StepNote, TOOL_NOTES_PER_ROUND_MAX, ToolNote, ToolState,
};
use crate::{ToolOutcome, ToolResult};
use tracing::Instrument;

impl ModelRun<'_> {
    /// Runs one round of tool calls in order and returns their result blocks, with a note of
    /// how each call went.
    pub(super) async fn run_round(
        &mut self,
        uses: &[ToolUseBlock],
    ) -> Result<(Vec<ContentBlock>, Vec<ToolNote>), TurnError> {
        let mut out = Vec::with_capacity(uses.len());
        let mut notes = Vec::with_capacity(uses.len());
        for call in uses {
            let mut note = ToolNote {
                id: call.id.clone(),
                state: ToolState::Ran,
                effect: None,
            };
            let known = self.agent.registry().get(&call.name).is_some()
                || self
                    .agent
                    .chat_tools
                    .parse(&call.name, &Value::Null)
                    .is_some();
            let span = telemetry::tool_span(
                telemetry::tool_name_or_unknown(&call.name, known),
                ToolUseId::parse(&call.id)
                    .ok()
                    .as_ref()
                    .map(ToolUseId::as_str),
            );
            let ran = self.run_one(call, &mut note).instrument(span.clone()).await;
            if ran.is_err() {
                telemetry::record_tool_failure(&span);
            }
            let (text, is_error) = ran?;
            self.tally.tool_result(is_error);
            out.push(ContentBlock::tool_result(&call.id, text, is_error));
            notes.push(note);
        }
        notes.truncate(TOOL_NOTES_PER_ROUND_MAX);
        Ok((fit_round(out), notes))
    }

    async fn run_one(
        &mut self,
        call: &ToolUseBlock,
        note: &mut ToolNote,
    ) -> Result<(String, bool), TurnError> {
        let table = self.agent.table().as_ref();
        let key = self.input.conversation.clone();
        if let Some(parsed) = self.agent.chat_tools.parse(&call.name, &call.input) {
            telemetry::record_tool_outcome(match parsed {
                Err(_) => ToolCallOutcome::Refused,
                Ok(_) => ToolCallOutcome::Ran,
            });
            return match parsed {
                Err(message) => {
                    note.state = ToolState::Refused;
                    Ok((message, true))
                }
                Ok(ChatToolCall::SetActiveRecord(id)) => {
                    let focus = id.clone();
                    self.conv = conversation::update_from(table, &self.conv, |m| {
                        m.active_record = Some(focus.clone());
                    })
                    .await?;
                    let summary = format!("Now talking about {id}.");
                    Ok((
                        ToolOutcome::Ok(ToolResult::new(summary)).to_model_text(),
                        false,
                    ))
                }
                Ok(ChatToolCall::React(emoji)) => {
                    if transcript::get_seen(table, &key, self.turn, transcript::SEEN_REACTION)
                        .await?
                        .is_some()
                    {
                        return Ok((
                            "Already reacted this turn; at most one reaction per turn.".into(),
                            true,
                        ));
                    }
                    match self.outbox.react(&emoji).await {
                        Ok(()) => {
                            transcript::put_seen(
                                table,
                                &key,
                                self.turn,
                                transcript::SEEN_REACTION,
                                SeenRow {
                                    role: Role::Assistant,
                                    text: None,
                                    buttons: Vec::new(),
                                    reaction: Some(emoji.clone()),
                                    at_ms: self.agent.clock().now_millis(),
                                },
                            )
                            .await?;
                            let summary = format!("Reacted with {emoji}.");
                            Ok((
                                ToolOutcome::Ok(ToolResult::new(summary)).to_model_text(),
                                false,
                            ))
                        }
                        Err(why) => {
                            tracing::info!(%why, "reaction not delivered");
                            Ok((
                                format!(
                                    "The reaction could not be delivered ({why}). Reply with a short text instead."
                                ),
                                true,
                            ))
                        }
                    }
                }
            };
        }
        let Some(tool) = self.agent.registry().get(&call.name) else {
            note.state = ToolState::Refused;
            telemetry::record_tool_outcome(ToolCallOutcome::Refused);
            return Ok((
                format!(
                    "Unknown tool {}. Use only the tools you were given.",
                    call.name
                ),
                true,
            ));
        };
        let focuses = tool.is_focusing();
        let tool_use = match ToolUseId::parse(&call.id) {
            Ok(id) => id,
            Err(e) => {
                telemetry::record_tool_outcome(ToolCallOutcome::Refused);
                tracing::error!(error = %e, id = %call.id, "model sent an unusable tool_use id");
                note.state = ToolState::Refused;
                return Ok((
                    "Internal error: this call has an unusable id; call the tool again.".into(),
                    true,
                ));
            }
        };
        let effect = EffectKey::new(key.clone(), tool_use.clone());
        let ctx = self.ctx().with_effect(effect);
        let surface = Surface::Chat {
            conversation: key.clone(),
            turn: self.turn,
        };
        note.effect = Some(tool_use.to_string());
        let (outcome, passage) = match gate::run_noting(
            self.agent.registry(),
            ctx,
            &surface,
            &call.name,
            call.input.clone(),
        )
        .await
        {
            Ok(ran) => ran?,
            Err(unknown) => (
                GateOutcome::Ran(ToolOutcome::error(
                    crate::ToolErrorKind::InvalidArguments,
                    format!("Unknown tool {}.", unknown.name),
                )),
                Passage::Refused,
            ),
        };
        note.state = passage.into();
        if matches!(outcome, GateOutcome::Held { .. }) {
            self.tally.held();
        }
        if let GateOutcome::Ran(ran) = &outcome {
            telemetry::record_tool_result(&tracing::Span::current(), ran);
        }
        if focuses
            && let GateOutcome::Ran(ToolOutcome::Ok(result)) = &outcome
            && let Some(id) = result
                .data
                .as_ref()
                .and_then(|d| d.get("id"))
                .and_then(Value::as_str)
        {
            let focus = id.to_owned();
            self.conv = conversation::update_from(table, &self.conv, |m| {
                m.active_record = Some(focus.clone());
            })
            .await?;
        }
        Ok(outcome.to_model_text())
    }
}

pub(super) fn tools_row((blocks, notes): (Vec<ContentBlock>, Vec<ToolNote>)) -> ModelRow {
    ModelRow {
        message: Message::user(blocks).into(),
        source: RowSource::Tools,
        stop_reason: None,
        note: Some(StepNote::Tools(notes)),
    }
}

/// A result for each call saying it was not run, and why.
pub(super) fn not_run(uses: &[ToolUseBlock], why: &str) -> (Vec<ContentBlock>, Vec<ToolNote>) {
    let notes = uses
        .iter()
        .take(TOOL_NOTES_PER_ROUND_MAX)
        .map(|u| ToolNote {
            id: u.id.clone(),
            state: ToolState::NotRun,
            effect: None,
        })
        .collect();
    let blocks = uses
        .iter()
        .map(|u| ContentBlock::tool_result(&u.id, why, true))
        .collect();
    (blocks, notes)
}

/// Trims a round's results so the stored row stays under [`TOOL_ROUND_BYTES_MAX`]: each
/// result gets an equal share, cut on a character boundary with a visible marker.
fn fit_round(blocks: Vec<ContentBlock>) -> Vec<ContentBlock> {
    use steward_llm::ToolResultContent;
    let size: usize = blocks
        .iter()
        .map(|b| serde_json::to_string(b).map_or(0, |s| s.len()))
        .sum();
    if size <= TOOL_ROUND_BYTES_MAX || blocks.is_empty() {
        return blocks;
    }
    // JSON escaping can double a character; leave room for it.
    let share = TOOL_ROUND_BYTES_MAX / blocks.len() / 2;
    blocks
        .into_iter()
        .map(|mut b| {
            if let ContentBlock::ToolResult(r) = &mut b
                && let Some(ToolResultContent::Text(t)) = &mut r.content
                && t.len() > share
            {
                let mut cut = share;
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t.truncate(cut);
                t.push_str(" …[truncated: this round's results were too large together]");
            }
            b
        })
        .collect()
}
