//! The person tool: add a speaker.

use serde_json::json;
use steward_harness::{Ctx, ToolDef, ToolResult};

use super::def;
use crate::ids::EventId;
use crate::inputs::AddPersonInput;
use crate::people;
use crate::text::PersonName;

pub(super) fn add_person() -> ToolDef {
    def::<AddPersonInput, _, _>(
        "add_person",
        "Add a speaker (or anyone who must be present for their sessions) to an event. Usually not needed: add_session creates speakers from their names. Returns the person's id in data.id.",
        |ctx: Ctx, input: AddPersonInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let planned = people::add_person(&ctx, &event, PersonName::parse(&input.name)?).await?;
            planned
                .commit_with(|p| {
                    ToolResult::new(format!("Added {}.", p.name))
                        .with_data(json!({"id": p.id, "event_id": p.event, "name": p.name}))
                })
                .await
        },
    )
    .never_held()
    .focuses()
}
