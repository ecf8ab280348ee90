//! The sessions section: the list (with speakers, track, needs and order) with a remove button
//! each, and the add form.

use axum::response::Response;
use maud::{Markup, html};
use steward_events::ids::{RoomId, SessionId};
use steward_events::people;
use steward_events::sessions::{self, NewSession, Session};
use steward_events::text::SessionTitle;
use steward_harness::ServiceError;

use super::confirm::Action;
use super::fields::{self, Fields};
use super::form::{EventForm, Record};
use super::view::View;
use super::{Done, Outcome, event_path};
use steward_events::tools::{AddSessionInput, SessionRefInput};

/// The add form's name.
const ADD: &str = "session-add";
/// The remove buttons' name.
const REMOVE: &str = "session-remove";

fn needs(v: &View<'_>, s: &Session) -> String {
    let mut parts = Vec::new();
    if let Some(room) = &s.room {
        let name = v
            .data
            .rooms
            .iter()
            .find(|r| &r.id == room)
            .map_or_else(|| room.to_string(), |r| r.name.to_string());
        parts.push(format!("in {name}"));
    }
    if let Some(c) = s.min_capacity {
        parts.push(format!("{c} seats"));
    }
    parts.join(", ")
}

fn after(v: &View<'_>, s: &Session) -> String {
    let titles: Vec<String> = s
        .after
        .iter()
        .map(|a| {
            v.data
                .sessions
                .iter()
                .find(|x| &x.id == a)
                .map_or_else(|| a.to_string(), |x| x.title.to_string())
        })
        .collect();
    titles.join(", ")
}

/// The sessions section.
pub fn section(v: &View<'_>) -> Markup {
    let d = v.data;
    let typed_after: Vec<String> = match v.problem {
        Some(p) if p.form == ADD => p
            .fields
            .all("after")
            .into_iter()
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let typed_room = v.value(ADD, "room", "");
    let typed_track = v.value(ADD, "track", "");
    html! {
        section #sessions {
            h2 { "Sessions" }
            (v.problem_of(REMOVE))
            @if d.sessions.is_empty() {
                p.muted { "No sessions yet. Add talks, workshops and panels; then build the timetable." }
            } @else {
                div.table-wrap {
                    table {
                        thead { tr { th { "Title" } th { "Length" } th { "Speakers" } th { "Track" } th { "Needs" } th { "After" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for s in &d.sessions {
                                tr {
                                    td { (s.title) }
                                    td { (s.duration_minutes) " min" }
                                    td { (people::names_of(&d.people, &s.speakers).join(", ")) }
                                    td { @if let Some(t) = &s.track { (t) } }
                                    td { (needs(v, s)) }
                                    td { (after(v, s)) }
                                    td {
                                        @if v.changeable() {
                                            form.inline method="post" action=(v.action(&format!("sessions/{}/remove", s.id))) {
                                                (v.csrf())
                                                button.link type="submit" { "Remove" span.visually-hidden { " " (s.title) } }
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
                form.card method="post" action=(v.action("sessions")) {
                    (v.csrf())
                    label for="ses-title" { "Title" }
                    input #ses-title type="text" name="title" required maxlength=(SessionTitle::CHARS_MAX)
                        value=(v.value(ADD, "title", ""));
                    div.grid-2 {
                        div { label for="ses-len" { "Length in minutes" }
                            input #ses-len type="text" inputmode="numeric" name="duration_minutes" required
                                value=(v.value(ADD, "duration_minutes", "")); }
                        div { label for="ses-speakers" { "Speakers (names, comma-separated)" }
                            input #ses-speakers type="text" name="speakers" value=(v.value(ADD, "speakers", "")); }
                        @if !d.event.tracks.is_empty() {
                            div { label for="ses-track" { "Track" }
                                select #ses-track name="track" {
                                    option value="" { "(none)" }
                                    @for t in &d.event.tracks {
                                        option value=(t) selected[typed_track == t.as_str()] { (t) }
                                    }
                                } }
                        }
                        div { label for="ses-seats" { "Seats needed (optional)" }
                            input #ses-seats type="text" inputmode="numeric" name="min_capacity"
                                value=(v.value(ADD, "min_capacity", "")); }
                        div { label for="ses-room" { "Must be in room (optional)" }
                            select #ses-room name="room" {
                                option value="" { "(any room)" }
                                @for r in &d.rooms {
                                    option value=(r.id) selected[typed_room == r.id.as_str()] { (r.name) }
                                }
                            } }
                        @if !d.sessions.is_empty() {
                            div { label for="ses-after" { "Comes after (optional)" }
                                select #ses-after name="after" multiple {
                                    @for s in &d.sessions {
                                        option value=(s.id) selected[typed_after.iter().any(|a| a == s.id.as_str())] { (s.title) }
                                    }
                                } }
                        }
                    }
                    button type="submit" { "Add session" }
                }
            }
        }
    }
}

fn new_session(f: &Fields) -> Result<NewSession, ServiceError> {
    let duration = fields::number::<u16>(
        "duration_minutes",
        "a number of minutes",
        f.get("duration_minutes"),
        "45",
    )?
    .ok_or_else(|| ServiceError::invalid("duration_minutes", "give the length in minutes"))?;
    Ok(NewSession {
        title: SessionTitle::parse(f.get("title"))?,
        duration_minutes: duration,
        speakers: fields::list(f.get("speakers")),
        track: f.opt("track").map(str::to_owned),
        after: f
            .all("after")
            .into_iter()
            .filter(|a| !a.trim().is_empty())
            .map(SessionId::parse)
            .collect::<Result<_, _>>()?,
        min_capacity: fields::number::<u32>(
            "min_capacity",
            "a number of seats",
            f.get("min_capacity"),
            "40",
        )?,
        room: f.opt("room").map(RoomId::parse).transpose()?,
    })
}

/// `POST /app/events/{id}/sessions`.
pub async fn add(form: EventForm) -> Response {
    let EventForm { id, fields: f, .. } = &form;
    let result = async {
        let new = new_session(f)?;
        // The form as `add_session`'s own input, rendered from the parsed values.
        let action = Action {
            tool: "add_session",
            input: AddSessionInput {
                event_id: id.to_string(),
                title: new.title.to_string(),
                duration_minutes: new.duration_minutes,
                speakers: new.speakers.clone(),
                track: new.track.clone(),
                after: new.after.iter().map(ToString::to_string).collect(),
                min_capacity: new.min_capacity,
                room_id: new.room.as_ref().map(ToString::to_string),
            },
            verb: "add it",
            action: format!("{}/sessions", event_path(id)),
            back: event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                sessions::add_session(&ctx, id, new).await?.commit().await?;
                Ok(Done::SessionAdded)
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(ADD, result).await
}

/// `POST /app/events/{id}/sessions/{session}/remove` (asks first when the event is
/// published).
pub async fn remove(Record(session): Record<SessionId>, form: EventForm) -> Response {
    let id = &form.id;
    let result = async {
        let action = Action {
            tool: "remove_session",
            input: SessionRefInput {
                event_id: id.to_string(),
                session_id: session.to_string(),
            },
            verb: "remove it",
            action: format!("{}/sessions/{session}/remove", event_path(id)),
            back: event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                sessions::remove_session(&ctx, id, &session)
                    .await?
                    .commit()
                    .await?;
                Ok(Done::SessionRemoved)
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(REMOVE, result).await
}
