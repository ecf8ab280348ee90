//! The undo tool: wraps the harness's undo (the user's last request, reverted as a whole),
//! describing the records it restored by name (attendees by id).

use serde_json::{Value, json};
use steward_harness::undo::{UndoneChange, UndoneKind};
use steward_harness::{Ctx, ToolDef, ToolResult, prepare_undo};

use super::{NoInput, def};
use crate::keys::RecordKind;

/// A record's name from its data, when it has one.
fn name_of(data: Option<&Value>) -> Option<String> {
    let d = data?;
    ["name", "title"]
        .iter()
        .find_map(|k| d.get(*k).and_then(Value::as_str))
        .map(|s| format!("\"{s}\""))
}

/// "removed room \"Aula\"", or `None` for bookkeeping rows. An attendee is named by id: a
/// stranger may have typed their name.
fn describe(change: &UndoneChange) -> Option<String> {
    let kind = RecordKind::of(&change.pk, &change.sk)?;
    let noun = kind.noun()?;
    let (verb, data) = match change.kind {
        UndoneKind::Created => ("removed", change.discarded.as_ref()),
        UndoneKind::Updated => ("restored", change.restored.as_ref()),
        UndoneKind::Deleted => ("brought back", change.restored.as_ref()),
    };
    let name = if kind == RecordKind::Attendee {
        data.and_then(|d| d.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    } else {
        name_of(data)
    };
    Some(match name {
        Some(name) => format!("{verb} {noun} {name}"),
        None => format!("{verb} the {noun}"),
    })
}

pub(super) fn undo_last_action() -> ToolDef {
    def::<NoInput, _, _>(
        "undo_last_action",
        "Undo the user's most recent request as a whole: everything done for one of their messages (all its tool calls, e.g. an event created and three rooms added), one web form they sent, or one call of an MCP client. Each call undoes one more request back. Registrations made by the public are never undone. If something changed since, or the request was too large to revert at once, it refuses and changes nothing: then make the fix directly (e.g. withdraw_attendee). When the request touched a published or cancelled event it is held until the user confirms.",
        |ctx: Ctx, _input: NoInput| async move {
            let undo = prepare_undo(&ctx).await?;
            let summary = undo.summary();
            let details: Vec<String> = summary.changes.iter().filter_map(describe).collect();
            let text = match summary.labels.as_slice() {
                [] => summary.sentence(),
                [one] => format!("Undid the last change: {one}."),
                steps => format!(
                    "Undid the last request, all {} steps: {}.",
                    steps.len(),
                    steps.join("; ")
                ),
            };
            let result = ToolResult::new(text).with_data(json!({
                "undone_action": summary.undone,
                "steps": summary.labels,
                "changes": details,
            }));
            undo.commit_with_result(result).await
        },
    )
    .held_when(crate::holds::undo)
}
