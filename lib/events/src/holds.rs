//! The confirmation decisions of the events capabilities: one function per holdable tool,
//! each taking the tool's typed input and answering `Some(description)` (built from the
//! stored records) when the call must wait for the person, `None` when it may run. The tool
//! definitions in [`crate::tools`] declare them with `held_when`; the harness gate asks them
//! for every surface (chat, MCP, the web UI's forms).
//!
//! What is held (ARCHITECTURE.md has the table): deleting an event (drafts too), and on a
//! published event everything other people see — publish, cancel, reopen, withdrawing an
//! attendee, its name, description, dates, times, time zone, venue, capacity, tracks and
//! public address, registration, rooms and sessions, a rebuilt timetable — and an undo whose
//! request touched an event with a public page (the undo is a change other people see too).
//! Drafts are otherwise not held. Names in a description come from the stored records; only the new values of an
//! update come from the input, since they are what is being confirmed. Ids that do not name
//! a record give `None`: the tool itself then reports "not found" and changes nothing.

use serde_json::Value;
use steward_harness::{Ctx, ServiceError, prepare_undo};

use crate::attendees::{self, AttendeeStatus};
use crate::events::{self, Event, EventStatus};
use crate::ids::{AttendeeId, EventId, RoomId, SessionId};
use crate::inputs::{
    AddRoomInput, AddSessionInput, EventRefInput, NoInput, RoomRefInput, SessionRefInput,
    SetRegistrationInput, UpdateEventInput, UpdateRoomInput, UpdateSessionInput,
    WithdrawAttendeeInput,
};
use crate::keys::{EVENT_SK_PREFIX, RecordKind};
use crate::planned::join_words;
use crate::rooms;
use crate::sessions;
use crate::when;

/// What a decision returns.
pub type Hold = Result<Option<String>, ServiceError>;

/// `Ok(None)` for "not found" (the tool will say so), other errors passed on (they hold).
fn found<T>(r: Result<T, ServiceError>) -> Result<Option<T>, ServiceError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ServiceError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The caller's event named by `text`, if it exists.
pub async fn event_of(ctx: &Ctx, text: &str) -> Result<Option<Event>, ServiceError> {
    let Ok(id) = EventId::parse(text) else {
        return Ok(None);
    };
    found(events::get_event(ctx, &id).await)
}

/// The caller's event named by `text` when it exists and is published: the only events
/// whose contents other people see.
pub async fn published_event_of(ctx: &Ctx, text: &str) -> Result<Option<Event>, ServiceError> {
    Ok(event_of(ctx, text)
        .await?
        .filter(|e| e.status == EventStatus::Published))
}

fn people(n: u32) -> String {
    match n {
        0 => "nobody has registered yet".to_owned(),
        1 => "1 registered person will see it".to_owned(),
        n => format!("{n} registered people will see it"),
    }
}

fn on_page(event: &Event) -> String {
    format!(
        "the published event {} ({}) — visible on its public page {}",
        event.quoted(),
        event.when_phrase(),
        event.slug.path()
    )
}

/// `publish_event`: held unless the event is already published.
pub async fn publish(ctx: Ctx, input: EventRefInput) -> Hold {
    let Some(event) = event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    if event.status == EventStatus::Published {
        return Ok(None);
    }
    Ok(Some(format!(
        "Publish {} ({}) — its page becomes public at {}",
        event.quoted(),
        event.when_phrase(),
        event.slug.path()
    )))
}

/// `cancel_event`: held on a published event.
pub async fn cancel(ctx: Ctx, input: EventRefInput) -> Hold {
    let Some(event) = published_event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let n = events::registered_count(&ctx, &event.id).await?;
    Ok(Some(format!(
        "Cancel {}, {} — its public page will say it is cancelled; {}",
        event.quoted(),
        event.when_phrase(),
        people(n)
    )))
}

/// `reopen_event`: held on a cancelled event (its public page changes).
pub async fn reopen(ctx: Ctx, input: EventRefInput) -> Hold {
    let Some(event) = event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    if event.status != EventStatus::Cancelled {
        return Ok(None);
    }
    Ok(Some(format!(
        "Reopen the cancelled event {} ({}) as a draft — its public page {} goes offline until it is published again",
        event.quoted(),
        event.when_phrase(),
        event.slug.path()
    )))
}

/// `delete_event`: always held (drafts too).
pub async fn delete(ctx: Ctx, input: EventRefInput) -> Hold {
    let Some(event) = event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let rooms = rooms::rooms_of(&ctx, &event.id).await?.len();
    let sessions = sessions::sessions_of(&ctx, &event.id).await?.len();
    Ok(Some(format!(
        "Delete the {} event {} with its {rooms} room(s) and {sessions} session(s)",
        event.status.as_str(),
        event.quoted()
    )))
}

/// `withdraw_attendee`: held for a registered attendee.
pub async fn withdraw(ctx: Ctx, input: WithdrawAttendeeInput) -> Hold {
    let Some(event) = event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let Ok(id) = AttendeeId::parse(&input.attendee_id) else {
        return Ok(None);
    };
    let Some(a) = found(attendees::get_attendee(&ctx, &event.id, &id).await)? else {
        return Ok(None);
    };
    if a.status != AttendeeStatus::Registered {
        return Ok(None);
    }
    // The name was typed by a stranger on the public form: quoted and escaped, never bare.
    Ok(Some(format!(
        "Withdraw the registration {} (name {:?}) from {}",
        a.id,
        a.name.to_string(),
        event.quoted()
    )))
}

/// `update_event`: held when it changes anything of a published event.
pub async fn update(ctx: Ctx, input: UpdateEventInput) -> Hold {
    let Some(event) = published_event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    // Changes that do not parse are refused by the tool itself; nothing to confirm.
    let Ok(changes) = input.changes() else {
        return Ok(None);
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(name) = &changes.name
        && name != &event.name
    {
        parts.push(format!("the name to \"{name}\""));
    }
    if let Some(description) = &changes.description
        && description != &event.description
    {
        parts.push(match description {
            Some(_) => "the description".to_owned(),
            None => "the description (removed)".to_owned(),
        });
    }
    if let Some(dates) = &changes.dates
        && dates != &event.dates
    {
        parts.push(format!("the date(s) from {} to {dates}", event.dates));
    }
    let start = changes.start_time.unwrap_or(event.start_time);
    let end = changes.end_time.unwrap_or(event.end_time);
    if start != event.start_time || end != event.end_time {
        parts.push(format!(
            "the times from {}–{} to {}–{}",
            when::fmt_time(event.start_time),
            when::fmt_time(event.end_time),
            when::fmt_time(start),
            when::fmt_time(end)
        ));
    }
    if let Some(tz) = &changes.time_zone
        && tz != &event.time_zone
    {
        parts.push(format!("the time zone from {} to {tz}", event.time_zone));
    }
    if let Some(venue) = &changes.venue
        && venue != &event.venue
    {
        parts.push(match (&event.venue, venue) {
            (Some(old), Some(new)) => format!("the venue from \"{old}\" to \"{new}\""),
            (None, Some(new)) => format!("the venue to \"{new}\""),
            (Some(old), None) => format!("the venue by removing \"{old}\""),
            (None, None) => String::new(),
        });
    }
    if let Some(capacity) = &changes.capacity
        && capacity != &event.capacity
    {
        parts.push(match capacity {
            Some(n) => format!("the capacity to {n}"),
            None => "the capacity (no limit)".to_owned(),
        });
    }
    if let Some(tracks) = &changes.tracks
        && tracks != &event.tracks
    {
        parts.push("the tracks".to_owned());
    }
    if let Some(slug) = &changes.slug
        && slug != &event.slug
    {
        parts.push(format!(
            "the public address from {} to {} (the old link stops working)",
            event.slug.path(),
            slug.path()
        ));
    }
    parts.retain(|p| !p.is_empty());
    if parts.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "Change {} of {}",
        join_words(&parts),
        on_page(&event)
    )))
}

/// `set_registration`: held when it changes the registration of a published event.
pub async fn registration(ctx: Ctx, input: SetRegistrationInput) -> Hold {
    let Some(event) = published_event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    match input.open {
        Some(true) if !event.registration.open => parts.push("open registration".to_owned()),
        Some(false) if event.registration.open => parts.push("close registration".to_owned()),
        _ => {}
    }
    // A deadline that does not parse is refused by the tool itself; one equal to the stored
    // deadline changes nothing.
    if let Ok(Some(closes)) = when::clearable_datetime("closes_at", input.closes_at.as_deref())
        && closes != event.registration.closes_at
    {
        parts.push(match closes {
            None => "remove the registration deadline".to_owned(),
            Some(at) => format!(
                "set the registration deadline to {}",
                when::fmt_datetime(at)
            ),
        });
    }
    if parts.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "{} for {}",
        capitalised(&join_words(&parts)),
        on_page(&event)
    )))
}

/// `add_room`: held on a published event (the programme shows rooms).
pub async fn add_room(ctx: Ctx, input: AddRoomInput) -> Hold {
    let Some(event) = published_event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "Add the room \"{}\" to {}",
        input.name.trim(),
        on_page(&event)
    )))
}

/// `update_room`: held on a published event.
pub async fn update_room(ctx: Ctx, input: UpdateRoomInput) -> Hold {
    room_change(&ctx, &input.event_id, &input.room_id, "Change the room").await
}

/// `remove_room`: held on a published event.
pub async fn remove_room(ctx: Ctx, input: RoomRefInput) -> Hold {
    room_change(&ctx, &input.event_id, &input.room_id, "Remove the room").await
}

async fn room_change(ctx: &Ctx, event: &str, room: &str, verb: &str) -> Hold {
    let Some(event) = published_event_of(ctx, event).await? else {
        return Ok(None);
    };
    let Ok(id) = RoomId::parse(room) else {
        return Ok(None);
    };
    let Some(r) = found(rooms::get_room(ctx, &event.id, &id).await)? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "{verb} {} of {}",
        r.quoted(),
        on_page(&event)
    )))
}

/// `add_session`: held on a published event (the programme shows sessions).
pub async fn add_session(ctx: Ctx, input: AddSessionInput) -> Hold {
    let Some(event) = published_event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "Add the session \"{}\" to {}",
        input.title.trim(),
        on_page(&event)
    )))
}

/// `update_session`: held on a published event.
pub async fn update_session(ctx: Ctx, input: UpdateSessionInput) -> Hold {
    session_change(
        &ctx,
        &input.event_id,
        &input.session_id,
        "Change the session",
    )
    .await
}

/// `remove_session`: held on a published event.
pub async fn remove_session(ctx: Ctx, input: SessionRefInput) -> Hold {
    session_change(
        &ctx,
        &input.event_id,
        &input.session_id,
        "Remove the session",
    )
    .await
}

async fn session_change(ctx: &Ctx, event: &str, session: &str, verb: &str) -> Hold {
    let Some(event) = published_event_of(ctx, event).await? else {
        return Ok(None);
    };
    let Ok(id) = SessionId::parse(session) else {
        return Ok(None);
    };
    let Some(s) = found(sessions::get_session(ctx, &event.id, &id).await)? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "{verb} {} of {}",
        s.quoted(),
        on_page(&event)
    )))
}

/// `build_timetable`: held on a published event (the public programme is rebuilt).
pub async fn rebuild(ctx: Ctx, input: EventRefInput) -> Hold {
    let Some(event) = published_event_of(&ctx, &input.event_id).await? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "Rebuild the timetable of {} — sessions may move to other times or rooms",
        on_page(&event)
    )))
}

/// Whether an event in `status` has a page other people see (a cancelled event's page says
/// so).
fn is_public(status: EventStatus) -> bool {
    matches!(status, EventStatus::Published | EventStatus::Cancelled)
}

/// The event id inside a domain record's sort key (`EVENT#e_…[#…]`).
fn event_in_key(sk: &str) -> Option<&str> {
    sk.strip_prefix(EVENT_SK_PREFIX)?.split('#').next()
}

/// `undo_last_action`: held when the request it would revert touched an event with a public
/// page — published or cancelled now, or again after the undo (an undone cancel or delete).
/// Nothing to undo, or a request that cannot be undone, is not held: the tool says why and
/// changes nothing. The description names the request, so a confirmation given for one undo
/// never reverts another request.
pub async fn undo(ctx: Ctx, _input: NoInput) -> Hold {
    let prepared = match prepare_undo(&ctx).await {
        Ok(prepared) => prepared,
        Err(ServiceError::CannotUndo { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let summary = prepared.summary();
    let mut shown: Vec<String> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for change in &summary.changes {
        let Some(text) = event_in_key(&change.sk) else {
            continue;
        };
        if seen.contains(&text) {
            continue;
        }
        seen.push(text);
        let now = event_of(&ctx, text).await?;
        // The event as the undo would leave it, when the request changed the event itself.
        let after: Option<Event> = (RecordKind::of(&change.pk, &change.sk)
            == Some(RecordKind::Event))
        .then(|| change.restored.clone())
        .flatten()
        .and_then(|v: Value| serde_json::from_value(v).ok());
        let public = now.as_ref().is_some_and(|e| is_public(e.status))
            || after.as_ref().is_some_and(|e| is_public(e.status));
        if public && let Some(event) = now.or(after) {
            shown.push(format!(
                "{} ({}), whose public page {} people can see",
                event.quoted(),
                event.status.as_str(),
                event.slug.path()
            ));
        }
    }
    if shown.is_empty() {
        return Ok(None);
    }
    let what = match summary.labels.as_slice() {
        [] => "your last change".to_owned(),
        labels => labels
            .iter()
            .map(|l| format!("\"{l}\""))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let n = summary.changes.len();
    Ok(Some(format!(
        "Undo your last request — {what}, {n} record{} — which changes the event {}",
        if n == 1 { "" } else { "s" },
        join_words(&shown)
    )))
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
