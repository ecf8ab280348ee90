//! The rooms section: the list with a remove button each, and the add form.

use axum::response::Response;
use maud::{Markup, html};
use steward_events::ids::RoomId;
use steward_events::rooms::{self, NewRoom, Room};
use steward_events::text::RoomName;
use steward_events::when;
use steward_harness::ServiceError;

use super::confirm::Action;
use super::fields::{self, Fields};
use super::form::{EventForm, Record};
use super::view::View;
use super::{Done, Outcome, event_path};
use steward_events::tools::{AddRoomInput, RoomRefInput};

/// The add form's name.
const ADD: &str = "room-add";
/// The remove buttons' name.
const REMOVE: &str = "room-remove";

fn hours(r: &Room) -> String {
    match (r.available_from, r.available_until) {
        (None, None) => "all day".to_owned(),
        (Some(f), None) => format!("from {}", when::fmt_time(f)),
        (None, Some(u)) => format!("until {}", when::fmt_time(u)),
        (Some(f), Some(u)) => format!("{}–{}", when::fmt_time(f), when::fmt_time(u)),
    }
}

/// The rooms section.
pub fn section(v: &View<'_>) -> Markup {
    let rooms = &v.data.rooms;
    html! {
        section #rooms {
            h2 { "Rooms" }
            (v.problem_of(REMOVE))
            @if rooms.is_empty() {
                p.muted { "No rooms yet. The timetable places sessions in the rooms you add here." }
            } @else {
                div.table-wrap {
                    table {
                        thead { tr { th { "Room" } th { "Seats" } th { "Hours" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for r in rooms {
                                tr {
                                    td { (r.name) }
                                    td { (r.capacity) }
                                    td { (hours(r)) }
                                    td {
                                        @if v.changeable() {
                                            form.inline method="post" action=(v.action(&format!("rooms/{}/remove", r.id))) {
                                                (v.csrf())
                                                button.link type="submit" { "Remove" span.visually-hidden { " " (r.name) } }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if v.changeable() {
                (v.problem_of(ADD))
                form.card method="post" action=(v.action("rooms")) {
                    (v.csrf())
                    div.grid-2 {
                        div { label for="room-name" { "Room name" }
                            input #room-name type="text" name="name" required maxlength=(RoomName::CHARS_MAX)
                                value=(v.value(ADD, "name", "")); }
                        div { label for="room-cap" { "Seats" }
                            input #room-cap type="text" inputmode="numeric" name="capacity" required
                                value=(v.value(ADD, "capacity", "")); }
                        div { label for="room-from" { "Usable from (optional)" }
                            input #room-from type="time" name="available_from" value=(v.value(ADD, "available_from", "")); }
                        div { label for="room-until" { "Usable until (optional)" }
                            input #room-until type="time" name="available_until" value=(v.value(ADD, "available_until", "")); }
                    }
                    button type="submit" { "Add room" }
                }
            }
        }
    }
}

fn new_room(f: &Fields) -> Result<NewRoom, ServiceError> {
    let capacity = fields::number::<u32>("capacity", "a number of seats", f.get("capacity"), "40")?
        .ok_or_else(|| ServiceError::invalid("capacity", "give the number of seats"))?;
    // Checked here as the service checks it, so the form names the problem in its words
    // before the input is asked about (the capability's schema would refuse it too).
    steward_events::events::check_capacity("capacity", capacity)?;
    Ok(NewRoom {
        name: RoomName::parse(f.get("name"))?,
        capacity,
        available_from: fields::time("available_from", f.get("available_from"))?,
        available_until: fields::time("available_until", f.get("available_until"))?,
    })
}

/// `POST /app/events/{id}/rooms`.
pub async fn add(form: EventForm) -> Response {
    let EventForm { id, fields: f, .. } = &form;
    let result = async {
        let new = new_room(f)?;
        // The form as `add_room`'s own input, rendered from the parsed values.
        let action = Action {
            tool: "add_room",
            input: AddRoomInput {
                event_id: id.to_string(),
                name: new.name.to_string(),
                capacity: new.capacity,
                available_from: new.available_from.map(when::fmt_time),
                available_until: new.available_until.map(when::fmt_time),
            },
            verb: "add it",
            action: format!("{}/rooms", event_path(id)),
            back: event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                rooms::add_room(&ctx, id, new).await?.commit().await?;
                Ok(Done::RoomAdded)
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(ADD, result).await
}

/// `POST /app/events/{id}/rooms/{room}/remove` (asks first when the event is published).
pub async fn remove(Record(room): Record<RoomId>, form: EventForm) -> Response {
    let id = &form.id;
    let result = async {
        let action = Action {
            tool: "remove_room",
            input: RoomRefInput {
                event_id: id.to_string(),
                room_id: room.to_string(),
            },
            verb: "remove it",
            action: format!("{}/rooms/{room}/remove", event_path(id)),
            back: event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                rooms::remove_room(&ctx, id, &room).await?.commit().await?;
                Ok(Done::RoomRemoved)
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(REMOVE, result).await
}
