//! Session tools: add, update, remove, list.

use serde_json::{Value, json};
use steward_harness::{Ctx, ServiceError, ToolDef, ToolResult};

use super::def;
use crate::holds;
use crate::ids::{EventId, RoomId, SessionId};
use crate::inputs::{AddSessionInput, EventRefInput, SessionRefInput, UpdateSessionInput};
use crate::limits::TOOL_LIST_ITEMS_MAX;
use crate::people;
use crate::sessions::{self, NewSession, SessionChanges, SessionWithSpeakers};
use crate::text::SessionTitle;

fn session_ids(texts: &[String]) -> Result<Vec<SessionId>, ServiceError> {
    texts.iter().map(|t| SessionId::parse(t)).collect()
}

fn session_data(s: &SessionWithSpeakers) -> Value {
    let x = &s.session;
    json!({
        "id": x.id,
        "event_id": x.event,
        "title": x.title,
        "duration_minutes": x.duration_minutes,
        "speakers": s.speaker_names,
        "speaker_ids": x.speakers,
        "track": x.track,
        "after": x.after,
        "min_capacity": x.min_capacity,
        "room_id": x.room,
    })
}

fn speakers_phrase(s: &SessionWithSpeakers) -> String {
    if s.speaker_names.is_empty() {
        String::new()
    } else {
        format!(", {}", crate::planned::join_words(&s.speaker_names))
    }
}

pub(super) fn add_session() -> ToolDef {
    def::<AddSessionInput, _, _>(
        "add_session",
        "Add a session (talk, workshop, panel) to an event: title, length, speakers by name, and if needed its track, the sessions it must follow, the seats it needs or one required room. Returns the new session's id in data.id. Add all sessions before building the timetable. On a published event it is held until the user confirms.",
        |ctx: Ctx, input: AddSessionInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let new = NewSession {
                title: SessionTitle::parse(&input.title)?,
                duration_minutes: input.duration_minutes,
                speakers: input.speakers,
                track: input.track.filter(|t| !t.trim().is_empty()),
                after: session_ids(&input.after)?,
                min_capacity: input.min_capacity,
                room: input.room_id.as_deref().map(RoomId::parse).transpose()?,
            };
            let planned = sessions::add_session(&ctx, &event, new).await?;
            planned
                .commit_with(|s| {
                    let mut summary = format!(
                        "Added {} ({} min{}).",
                        s.session.quoted(),
                        s.session.duration_minutes,
                        speakers_phrase(s)
                    );
                    if !s.new_people.is_empty() {
                        summary.push_str(&format!(
                            " New speaker(s): {}.",
                            crate::planned::join_words(&s.new_people)
                        ));
                    }
                    ToolResult::new(summary).with_data(session_data(s))
                })
                .await
        },
    )
    .held_when(holds::add_session)
    .focuses()
}

pub(super) fn update_session() -> ToolDef {
    def::<UpdateSessionInput, _, _>(
        "update_session",
        "Change a session's title, length, speakers, track, the sessions it must follow, seats needed or required room. Give only the fields that change. On a published event it is held until the user confirms. Rebuild the timetable afterwards if one exists.",
        |ctx: Ctx, input: UpdateSessionInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let id = SessionId::parse(&input.session_id)?;
            let changes = SessionChanges {
                title: input.title.as_deref().map(SessionTitle::parse).transpose()?,
                duration_minutes: input.duration_minutes,
                speakers: input.speakers,
                track: input
                    .track
                    .map(|t| (!t.trim().is_empty()).then_some(t)),
                after: input.after.as_deref().map(session_ids).transpose()?,
                min_capacity: input.min_capacity.map(|c| (c != 0).then_some(c)),
                room: super::clearable(input.room_id.as_deref(), RoomId::parse)?,
            };
            let planned = sessions::update_session(&ctx, &event, &id, changes).await?;
            planned
                .commit_with(|u| {
                    let summary = if u.is_unchanged() {
                        format!("Nothing changed: {} already is like that.", u.record.session.quoted())
                    } else {
                        format!("Changed the {} of {}.", u.changed_phrase(), u.record.session.quoted())
                    };
                    ToolResult::new(summary).with_data(session_data(&u.record))
                })
                .await
        },
    )
    .held_when(holds::update_session)
    .idempotent()
}

pub(super) fn remove_session() -> ToolDef {
    def::<SessionRefInput, _, _>(
        "remove_session",
        "Remove a session from an event; sessions that had to follow it no longer do. On a published event it is held until the user confirms. Rebuild the timetable afterwards if one exists.",
        |ctx: Ctx, input: SessionRefInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let id = SessionId::parse(&input.session_id)?;
            let planned = sessions::remove_session(&ctx, &event, &id).await?;
            planned
                .commit_with(|r| {
                    let mut summary = format!("Removed {}.", r.session.quoted());
                    if !r.detached.is_empty() {
                        let titles: Vec<String> = r.detached.iter().map(|t| format!("\"{t}\"")).collect();
                        summary.push_str(&format!(
                            " {} no longer wait(s) for it.",
                            crate::planned::join_words(&titles)
                        ));
                    }
                    ToolResult::new(summary).with_data(json!({"id": r.session.id, "event_id": r.session.event}))
                })
                .await
        },
    )
    .held_when(holds::remove_session)
}

pub(super) fn list_sessions() -> ToolDef {
    def::<EventRefInput, _, _>(
        "list_sessions",
        "List an event's sessions with their ids, lengths, speakers, tracks, order constraints and room needs, plus the event's people. Use it to find a session's id or to check what is planned.",
        |ctx: Ctx, input: EventRefInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let list = sessions::list_sessions(&ctx, &event).await?;
            let people = people::people_of(&ctx, &event).await?;
            let minutes: u32 = list.iter().map(|s| u32::from(s.duration_minutes)).sum();
            let data: Vec<Value> = list
                .iter()
                .take(TOOL_LIST_ITEMS_MAX)
                .map(|s| {
                    session_data(&SessionWithSpeakers {
                        speaker_names: people::names_of(&people, &s.speakers),
                        new_people: Vec::new(),
                        session: s.clone(),
                    })
                })
                .collect();
            let people_data: Vec<Value> = people
                .iter()
                .take(TOOL_LIST_ITEMS_MAX)
                .map(|p| json!({"id": p.id, "name": p.name}))
                .collect();
            let summary = match list.len() {
                0 => "No sessions yet; add them with add_session.".to_owned(),
                n => format!("{n} session(s), {minutes} min in all; {} speaker(s).", people.len()),
            };
            Ok(ToolResult::new(summary).with_data(json!({"sessions": data, "people": people_data})))
        },
    )
    .read_only()
}
