//! Room tools: add, update, remove.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use steward_harness::{Ctx, ToolDef, ToolResult};

use super::{clearable_time, def, opt_time};
use crate::holds;
use crate::ids::{EventId, RoomId};
use crate::rooms::{self, NewRoom, RoomChanges};
use crate::text::RoomName;
use crate::views;

/// Input of `add_room`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = super::model_facing)]
pub struct AddRoomInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The room's name, unique in the event, e.g. "Aula".
    pub name: String,
    /// Number of seats.
    #[schemars(range(min = 1, max = 100_000))]
    pub capacity: u32,
    /// Usable from this time each day, HH:MM. Default: all day.
    pub available_from: Option<String>,
    /// Usable until this time each day, HH:MM. Default: all day.
    pub available_until: Option<String>,
}

/// Input of `update_room`. Only the fields given change.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = super::model_facing)]
pub struct UpdateRoomInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The room's id (r_…).
    pub room_id: String,
    /// New name.
    pub name: Option<String>,
    /// New number of seats.
    #[schemars(range(min = 1, max = 100_000))]
    pub capacity: Option<u32>,
    /// New "usable from", HH:MM ("" removes it).
    pub available_from: Option<String>,
    /// New "usable until", HH:MM ("" removes it).
    pub available_until: Option<String>,
}

/// Input of the tools that name one room.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = super::model_facing)]
pub struct RoomRefInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The room's id (r_…).
    pub room_id: String,
}

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
