//! Room tools: add, update, remove.

use serde_json::json;
use steward_harness::{Ctx, ToolDef, ToolResult};

use super::{clearable_time, def, opt_time};
use crate::holds;
use crate::ids::{EventId, RoomId};
use crate::inputs::{AddRoomInput, RoomRefInput, UpdateRoomInput};
use crate::rooms::{self, NewRoom, RoomChanges};
use crate::text::RoomName;
use crate::views;

pub(super) fn add_room() -> ToolDef {
    def::<AddRoomInput, _, _>(
        "add_room",
        "Add a room to an event, with its number of seats and, if it is not usable all day, the hours it is. Add each room once; the timetable places sessions in these rooms. Returns the new room's id in data.id. On a published event it is held until the user confirms.",
        |ctx: Ctx, input: AddRoomInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let new = NewRoom {
                name: RoomName::parse(&input.name)?,
                capacity: input.capacity,
                available_from: opt_time("available_from", input.available_from.as_deref())?,
                available_until: opt_time("available_until", input.available_until.as_deref())?,
            };
            let planned = rooms::add_room(&ctx, &event, new).await?;
            planned
                .commit_with(|r| {
                    let mut data = views::room(r);
                    data["event_id"] = json!(r.event);
                    ToolResult::new(format!("Added room {} ({} seats).", r.quoted(), r.capacity))
                        .with_data(data)
                })
                .await
        },
    )
    .held_when(holds::add_room)
    .focuses()
}

pub(super) fn update_room() -> ToolDef {
    def::<UpdateRoomInput, _, _>(
        "update_room",
        "Change a room's name, seats or hours. Give only the fields that change. On a published event it is held until the user confirms. Rebuild the timetable afterwards if one exists.",
        |ctx: Ctx, input: UpdateRoomInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let room = RoomId::parse(&input.room_id)?;
            let changes = RoomChanges {
                name: input.name.as_deref().map(RoomName::parse).transpose()?,
                capacity: input.capacity,
                available_from: clearable_time("available_from", input.available_from.as_deref())?,
                available_until: clearable_time("available_until", input.available_until.as_deref())?,
            };
            let planned = rooms::update_room(&ctx, &event, &room, changes).await?;
            planned
                .commit_with(|u| {
                    let summary = if u.is_unchanged() {
                        format!("Nothing changed: room {} already is like that.", u.record.quoted())
                    } else {
                        format!("Changed the {} of room {}.", u.changed_phrase(), u.record.quoted())
                    };
                    ToolResult::new(summary).with_data(views::room(&u.record))
                })
                .await
        },
    )
    .held_when(holds::update_room)
    .idempotent()
}

pub(super) fn remove_room() -> ToolDef {
    def::<RoomRefInput, _, _>(
        "remove_room",
        "Remove a room from an event. Refused while a session must be held in it (change that session first). On a published event it is held until the user confirms. Rebuild the timetable afterwards if one exists.",
        |ctx: Ctx, input: RoomRefInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let room = RoomId::parse(&input.room_id)?;
            let planned = rooms::remove_room(&ctx, &event, &room).await?;
            planned
                .commit_with(|r| {
                    ToolResult::new(format!("Removed room {}.", r.quoted()))
                        .with_data(json!({"id": r.id, "event_id": r.event}))
                })
                .await
        },
    )
    .held_when(holds::remove_room)
}
