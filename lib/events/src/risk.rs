//! [`EventsRiskPolicy`]: which tool calls need the user's confirmation, described from the
//! database, never from the model's words.
//!
//! Held for confirmation: `cancel_event`, `withdraw_attendee`, `publish_event`,
//! `delete_event`, `update_event` of a published event that changes its date(s), times, time
//! zone, venue or public address, and `remove_session` / `remove_room` of a published event.
//! Names in a description come from the stored records (an argument carrying a misleading name
//! is ignored); only the new values of an update come from the arguments, since they are what
//! is being confirmed. Arguments that do not parse, or name records that do not exist, give
//! `None`: the tool itself then reports the problem.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use steward_harness::{Ctx, RiskPolicy, ServiceError};

use crate::attendees::{self, AttendeeStatus};
use crate::events::{self, Event, EventStatus};
use crate::ids::{AttendeeId, EventId, RoomId, SessionId};
use crate::planned::join_words;
use crate::rooms;
use crate::sessions;
use crate::tools::{
    EventRefInput, RoomRefInput, SessionRefInput, UpdateEventInput, WithdrawAttendeeInput,
};
use crate::when;

/// The events domain's risk policy (see the [module docs](self)).
#[derive(Debug, Clone, Copy, Default)]
pub struct EventsRiskPolicy;

/// Arguments as a tool input, or `None` when they do not fit.
fn args_as<T: DeserializeOwned>(args: &Value) -> Option<T> {
    serde_json::from_value(args.clone()).ok()
}

/// `Ok(None)` for "not found" (the tool will say so), other errors passed on.
fn found<T>(r: Result<T, ServiceError>) -> Result<Option<T>, ServiceError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ServiceError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

async fn event_of(ctx: &Ctx, text: &str) -> Result<Option<Event>, ServiceError> {
    let Ok(id) = EventId::parse(text) else {
        return Ok(None);
    };
    found(events::get_event(ctx, &id).await)
}

/// The event named by `text` when it exists, is the caller's and is published: the only
/// events whose logistics or contents are visible to other people.
async fn published_event_of(ctx: &Ctx, text: &str) -> Result<Option<Event>, ServiceError> {
    Ok(event_of(ctx, text)
        .await?
        .filter(|e| e.status == EventStatus::Published))
}

fn registrations(n: u32) -> String {
    if n == 1 {
        "1 registration".to_owned()
    } else {
        format!("{n} registrations")
    }
}

#[async_trait]
impl RiskPolicy for EventsRiskPolicy {
    async fn describe_risk(
        &self,
        ctx: &Ctx,
        tool: &str,
        args: &Value,
    ) -> Result<Option<String>, ServiceError> {
        match tool {
            "cancel_event" => cancel(ctx, args).await,
            "publish_event" => publish(ctx, args).await,
            "delete_event" => delete(ctx, args).await,
            "withdraw_attendee" => withdraw(ctx, args).await,
            "update_event" => update(ctx, args).await,
            "remove_session" => remove_session(ctx, args).await,
            "remove_room" => remove_room(ctx, args).await,
            _ => Ok(None),
        }
    }
}

async fn cancel(ctx: &Ctx, args: &Value) -> Result<Option<String>, ServiceError> {
    let Some(input) = args_as::<EventRefInput>(args) else {
        return Ok(None);
    };
    let Some(event) = event_of(ctx, &input.event_id).await? else {
        return Ok(None);
    };
    if event.status == EventStatus::Cancelled {
        return Ok(None);
    }
    let n = events::registered_count(ctx, &event.id).await?;
    Ok(Some(format!(
        "Cancel {} ({})",
        event.quoted(),
        registrations(n)
    )))
}

async fn publish(ctx: &Ctx, args: &Value) -> Result<Option<String>, ServiceError> {
    let Some(input) = args_as::<EventRefInput>(args) else {
        return Ok(None);
    };
    let Some(event) = event_of(ctx, &input.event_id).await? else {
        return Ok(None);
    };
    if event.status != EventStatus::Draft {
        return Ok(None);
    }
    Ok(Some(format!(
        "Publish {} — its page becomes public at {}",
        event.quoted(),
        event.slug.path()
    )))
}

async fn delete(ctx: &Ctx, args: &Value) -> Result<Option<String>, ServiceError> {
    let Some(input) = args_as::<EventRefInput>(args) else {
        return Ok(None);
    };
    let Some(event) = event_of(ctx, &input.event_id).await? else {
        return Ok(None);
    };
    if event.status != EventStatus::Draft {
        return Ok(None);
    }
    let rooms = rooms::rooms_of(ctx, &event.id).await?.len();
    let sessions = sessions::sessions_of(ctx, &event.id).await?.len();
    Ok(Some(format!(
        "Delete the draft event {} with its {rooms} room(s) and {sessions} session(s)",
        event.quoted()
    )))
}

async fn withdraw(ctx: &Ctx, args: &Value) -> Result<Option<String>, ServiceError> {
    let Some(input) = args_as::<WithdrawAttendeeInput>(args) else {
        return Ok(None);
    };
    let Some(event) = event_of(ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let Ok(id) = AttendeeId::parse(&input.attendee_id) else {
        return Ok(None);
    };
    let Some(a) = found(attendees::get_attendee(ctx, &event.id, &id).await)? else {
        return Ok(None);
    };
    if a.status != AttendeeStatus::Registered {
        return Ok(None);
    }
    Ok(Some(format!("Withdraw {} from {}", a.name, event.quoted())))
}

async fn update(ctx: &Ctx, args: &Value) -> Result<Option<String>, ServiceError> {
    let Some(input) = args_as::<UpdateEventInput>(args) else {
        return Ok(None);
    };
    let Some(event) = published_event_of(ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let Ok(changes) = input.changes() else {
        return Ok(None);
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(dates) = &changes.dates
        && dates != &event.dates
    {
        let noun = if dates.dates().len() > 1 || event.dates.dates().len() > 1 {
            "dates"
        } else {
            "date"
        };
        parts.push(format!("the {noun}|from {} to {dates}", event.dates));
    }
    let start = changes.start_time.unwrap_or(event.start_time);
    let end = changes.end_time.unwrap_or(event.end_time);
    if start != event.start_time || end != event.end_time {
        parts.push(format!(
            "the times|from {}–{} to {}–{}",
            when::fmt_time(event.start_time),
            when::fmt_time(event.end_time),
            when::fmt_time(start),
            when::fmt_time(end)
        ));
    }
    if let Some(tz) = &changes.time_zone
        && tz != &event.time_zone
    {
        parts.push(format!("the time zone|from {} to {tz}", event.time_zone));
    }
    if let Some(venue) = &changes.venue
        && venue != &event.venue
    {
        let part = match (&event.venue, venue) {
            (Some(old), Some(new)) => format!("the venue|from \"{old}\" to \"{new}\""),
            (None, Some(new)) => format!("the venue|to \"{new}\""),
            (Some(old), None) => format!("the venue|by removing \"{old}\""),
            (None, None) => String::new(),
        };
        parts.push(part);
    }
    if let Some(slug) = &changes.slug
        && slug != &event.slug
    {
        parts.push(format!(
            "the public address|from {} to {} (the old link stops working)",
            event.slug.path(),
            slug.path()
        ));
    }
    let parts: Vec<(&str, &str)> = parts.iter().filter_map(|p| p.split_once('|')).collect();
    Ok(match parts.as_slice() {
        [] => None,
        [(what, how)] => Some(format!(
            "Change {what} of the published event {} {how}",
            event.quoted()
        )),
        many => {
            let each: Vec<String> = many.iter().map(|(w, h)| format!("{w} {h}")).collect();
            Some(format!(
                "Change the published event {}: {}",
                event.quoted(),
                join_words(&each)
            ))
        }
    })
}

async fn remove_session(ctx: &Ctx, args: &Value) -> Result<Option<String>, ServiceError> {
    let Some(input) = args_as::<SessionRefInput>(args) else {
        return Ok(None);
    };
    let Some(event) = published_event_of(ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let Ok(id) = SessionId::parse(&input.session_id) else {
        return Ok(None);
    };
    let Some(s) = found(sessions::get_session(ctx, &event.id, &id).await)? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "Remove the session {} from the published event {}",
        s.quoted(),
        event.quoted()
    )))
}

async fn remove_room(ctx: &Ctx, args: &Value) -> Result<Option<String>, ServiceError> {
    let Some(input) = args_as::<RoomRefInput>(args) else {
        return Ok(None);
    };
    let Some(event) = published_event_of(ctx, &input.event_id).await? else {
        return Ok(None);
    };
    let Ok(id) = RoomId::parse(&input.room_id) else {
        return Ok(None);
    };
    let Some(r) = found(rooms::get_room(ctx, &event.id, &id).await)? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "Remove the room {} from the published event {}",
        r.quoted(),
        event.quoted()
    )))
}
