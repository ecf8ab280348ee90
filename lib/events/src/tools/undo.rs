//! The undo tool: wraps the harness's undo, describing the records it restored by name.

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

/// "removed room \"Aula\"", or `None` for bookkeeping rows.
fn describe(change: &UndoneChange) -> Option<String> {
    let noun = RecordKind::of(&change.pk, &change.sk)?.noun()?;
    let (verb, data) = match change.kind {
        UndoneKind::Created => ("removed", change.discarded.as_ref()),
        UndoneKind::Updated => ("restored", change.restored.as_ref()),
        UndoneKind::Deleted => ("brought back", change.restored.as_ref()),
    };
    Some(match name_of(data) {
        Some(name) => format!("{verb} {noun} {name}"),
        None => format!("{verb} the {noun}"),
    })
}

pub(super) fn undo_last_action() -> ToolDef {
    def::<NoInput, _, _>(
        "undo_last_action",
        "Undo the user's most recent change (one tool call's worth: e.g. an added session, a changed date, a cancellation). Each call undoes one more step back. Registrations made by the public are never undone. If something changed since, it refuses and changes nothing: then make the fix directly (e.g. withdraw_attendee).",
        |ctx: Ctx, _input: NoInput| async move {
            let undo = prepare_undo(&ctx).await?;
            let summary = undo.summary();
            let details: Vec<String> = summary.changes.iter().filter_map(describe).collect();
            let text = match &summary.label {
                Some(label) => format!("Undid the last change: {label}."),
                None => summary.sentence(),
            };
            let result = ToolResult::new(text).with_data(json!({
                "undone_action": summary.undone,
                "label": summary.label,
                "changes": details,
            }));
            undo.commit_with_result(result).await
        },
    )
    .never_held()
}
