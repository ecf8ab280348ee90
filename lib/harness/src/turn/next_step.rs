//! What the turn does after a model row: a pure reading of the stored row, so a resumed turn
//! takes exactly the path the first attempt took.

use steward_llm::{ContentBlock, StopReason, ToolUseBlock, text_of};

use crate::transcript::{ModelRow, RowSource};

/// The step after a model row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NextStep {
    /// The harness wrote this row (a failure, the call cap): the turn ends with its text.
    Ended(String),
    /// Run these tool calls as one round, then ask the model again.
    RunTools(Vec<ToolUseBlock>),
    /// The provider paused a long turn: ask the model again.
    Continue,
    /// The model refused.
    Refused,
    /// The answer was cut off: its calls get "not run" results (their arguments may be
    /// incomplete) and the reply is the partial text with a note.
    CutOff {
        /// The calls in the cut-off answer.
        uses: Vec<ToolUseBlock>,
        /// The text it got to write.
        partial: String,
    },
    /// The model's final reply.
    Reply(String),
}

/// Resolves the step after `row`: harness rows end the turn; otherwise the stop reason and
/// the row's tool calls decide (end_turn, stop_sequence, tool_use without calls and unknown
/// reasons are a final reply).
pub(crate) fn next_step(row: &ModelRow) -> NextStep {
    let content = &row.message.content;
    if row.source == RowSource::Harness {
        return NextStep::Ended(text_of(content));
    }
    let uses: Vec<ToolUseBlock> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    match row.stop_reason.as_deref().map(StopReason::parse) {
        Some(StopReason::ToolUse) if !uses.is_empty() => NextStep::RunTools(uses),
        Some(StopReason::PauseTurn) => NextStep::Continue,
        Some(StopReason::Refusal) => NextStep::Refused,
        Some(StopReason::MaxTokens | StopReason::ModelContextWindowExceeded) => NextStep::CutOff {
            uses,
            partial: text_of(content),
        },
        _ => NextStep::Reply(text_of(content)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use steward_llm::Message;

    fn row(source: RowSource, stop: Option<&str>, content: Vec<ContentBlock>) -> ModelRow {
        ModelRow {
            message: Message::assistant(content).into(),
            source,
            stop_reason: stop.map(str::to_owned),
            note: None,
        }
    }

    fn call() -> ContentBlock {
        serde_json::from_value(json!({
            "type": "tool_use", "id": "toolu_1", "name": "list_events", "input": {}
        }))
        .unwrap()
    }

    #[test]
    fn each_stored_row_resolves_to_one_step() {
        let text = ContentBlock::text("Done.");
        assert_eq!(
            next_step(&row(
                RowSource::Harness,
                None,
                vec![ContentBlock::text("Sorry.")]
            )),
            NextStep::Ended("Sorry.".into())
        );
        assert!(matches!(
            next_step(&row(RowSource::Model, Some("tool_use"), vec![text.clone(), call()])),
            NextStep::RunTools(uses) if uses.len() == 1 && uses[0].name == "list_events"
        ));
        assert_eq!(
            next_step(&row(RowSource::Model, Some("tool_use"), vec![text.clone()])),
            NextStep::Reply("Done.".into()),
            "tool_use without calls is a final reply"
        );
        assert_eq!(
            next_step(&row(RowSource::Model, Some("pause_turn"), vec![])),
            NextStep::Continue
        );
        assert_eq!(
            next_step(&row(RowSource::Model, Some("refusal"), vec![])),
            NextStep::Refused
        );
        assert!(matches!(
            next_step(&row(RowSource::Model, Some("max_tokens"), vec![text.clone(), call()])),
            NextStep::CutOff { uses, partial } if uses.len() == 1 && partial == "Done."
        ));
        for stop in [
            Some("end_turn"),
            Some("stop_sequence"),
            Some("something_new"),
            None,
        ] {
            assert_eq!(
                next_step(&row(RowSource::Model, stop, vec![text.clone()])),
                NextStep::Reply("Done.".into()),
                "{stop:?}"
            );
        }
    }
}
