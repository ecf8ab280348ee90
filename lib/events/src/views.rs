//! Compact JSON views of the records and short phrases about them, written for the model:
//! the tools' `data` and the context block use the same shapes.

use serde_json::{Value, json};

use crate::events::{Event, EventStatus};
use crate::overview::Overview;
use crate::program::Program;
use crate::rooms::Room;
use crate::when;

/// An event in a list: id, name, status, dates, registrations.
pub fn event_brief(event: &Event, registered: u32) -> Value {
    json!({
        "id": event.id,
        "name": event.name,
        "status": event.status,
        "dates": event.dates.to_strings(),
        "registered": registered,
    })
}

/// An event's own fields.
pub fn event_fields(event: &Event) -> Value {
    json!({
        "id": event.id,
        "name": event.name,
        "status": event.status,
        "dates": event.dates.to_strings(),
        "start_time": when::fmt_time(event.start_time),
        "end_time": when::fmt_time(event.end_time),
        "time_zone": event.time_zone,
        "venue": event.venue,
        "description": event.description,
        "capacity": event.capacity,
        "tracks": event.tracks,
        "registration": {
            "open": event.registration.open,
            "closes_at": event.registration.closes_at.map(|c| format!("{}T{}", c.date(), when::fmt_time(c.time()))),
        },
        "public_path": event.slug.path(),
    })
}

/// A room: id, name, seats, hours.
pub fn room(room: &Room) -> Value {
    json!({
        "id": room.id,
        "name": room.name,
        "capacity": room.capacity,
        "available_from": room.available_from.map(when::fmt_time),
        "available_until": room.available_until.map(when::fmt_time),
    })
}

/// Program settings, with the effective session hours.
pub fn program(event: &Event, program: &Program) -> Value {
    let (start, end) = program.day_window(event);
    json!({
        "session_hours": format!("{}–{}", when::fmt_time(start), when::fmt_time(end)),
        "lunch": program.lunch.map(|l| l.phrase()),
        "changeover_minutes": program.changeover_minutes,
        "speaker_rest_minutes": program.speaker_rest_minutes,
    })
}

/// An event at a glance: its fields, rooms, counts, program and timetable state. At most
/// `rooms_max` rooms are listed (the count is always given).
pub fn overview(o: &Overview, rooms_max: usize) -> Value {
    let mut v = event_fields(&o.event);
    v["registered"] = json!(o.registered);
    v["rooms"] = Value::Array(o.rooms.iter().take(rooms_max).map(room).collect());
    if o.rooms.len() > rooms_max {
        v["rooms_total"] = json!(o.rooms.len());
    }
    v["sessions"] = json!(o.sessions);
    v["session_minutes"] = json!(o.session_minutes);
    v["people"] = json!(o.people);
    v["program"] = program(&o.event, &o.program);
    v["timetable"] = json!(o.timetable.as_str());
    v
}

/// Registration in words at `now_ms`: "open until Thu 12 Nov 2026, 18:00; 14 of 120 places taken".
pub fn registration_phrase(event: &Event, registered: u32, now_ms: i64) -> String {
    let passed = |c| event.tz().is_ok_and(|tz| when::has_passed(c, &tz, now_ms));
    let state = if event.status == EventStatus::Cancelled {
        "closed (the event is cancelled)".to_owned()
    } else if !event.registration.open {
        "closed".to_owned()
    } else {
        let live = if event.status == EventStatus::Published {
            ""
        } else {
            " once the event is published"
        };
        match event.registration.closes_at {
            Some(c) if passed(c) => format!("closed on {}", when::fmt_datetime(c)),
            Some(c) => format!("open{live} until {}", when::fmt_datetime(c)),
            None => format!("open{live}"),
        }
    };
    let taken = match event.capacity {
        Some(c) => format!("{registered} of {c} places taken"),
        None => format!("{registered} registered, no limit"),
    };
    format!("{state}; {taken}")
}
