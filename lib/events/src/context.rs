//! [`EventsContext`]: the domain's part of the per-turn `<context>` block — the current time in
//! the user's zone, who they are and on which channel, their events, and the details of the
//! event the conversation is about. At most [`CONTEXT_CHARS_MAX`] characters: the event list
//! is cut first (oldest first), then the active event's details.
//!
//! Text strangers typed reaches the block only fenced: an active attendee's name is rendered
//! as `{"untrusted_text": …}` ([`Untrusted`]), never as plain context the model would trust.

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_harness::{
    ChannelName, ContextSource, Ctx, Profile, ServiceError, Untrusted, accounts,
};

use crate::events::{self, Event};
use crate::ids::{AttendeeId, EventId, PersonId, RoomId, SessionId};
use crate::keys;
use crate::limits::{CONTEXT_CHARS_MAX, CONTEXT_EVENTS_MAX, CONTEXT_ROOMS_MAX};
use crate::overview;
use crate::views;
use crate::when;

/// Characters of an event description shown in the context block.
const CONTEXT_DESCRIPTION_CHARS_MAX: usize = 200;

/// The events domain's context source (see the [module docs](self)).
#[derive(Debug, Clone, Copy, Default)]
pub struct EventsContext;

/// What the active record is, once resolved.
struct Active {
    event: EventId,
    /// For a record inside the event: its kind, id and name (a JSON string, or for an
    /// attendee, whose name a stranger may have typed, the fenced [`Untrusted`] form).
    inner: Option<(&'static str, String, Value)>,
}

/// Finds the event that `id` belongs to: an event id is read by key; a record inside an event
/// is looked for in the `newest` events first (one read per event), then, only when `older`
/// ones exist, in all of them.
async fn resolve_active(
    ctx: &Ctx,
    newest: &[Event],
    older: bool,
    id: &str,
) -> Result<Option<Active>, ServiceError> {
    if let Ok(e) = EventId::parse(id) {
        let exists =
            newest.iter().any(|x| x.id == e) || ctx.get(&keys::event(ctx, &e)).await?.is_some();
        return Ok(exists.then_some(Active {
            event: e,
            inner: None,
        }));
    }
    if let Some(found) = find_record(ctx, newest.iter(), id).await? {
        return Ok(Some(found));
    }
    if !older {
        return Ok(None);
    }
    let all = events::scan_events(ctx).await?;
    let rest = all.iter().filter(|e| !newest.iter().any(|n| n.id == e.id));
    find_record(ctx, rest, id).await
}

/// The record `id` inside one of `events` (one read per event until it is found).
async fn find_record(
    ctx: &Ctx,
    events: impl Iterator<Item = &Event>,
    id: &str,
) -> Result<Option<Active>, ServiceError> {
    for event in events {
        let (kind, key) = if let Ok(r) = RoomId::parse(id) {
            ("room", keys::room(ctx, &event.id, &r))
        } else if let Ok(s) = SessionId::parse(id) {
            ("session", keys::session(ctx, &event.id, &s))
        } else if let Ok(p) = PersonId::parse(id) {
            ("person", keys::person(ctx, &event.id, &p))
        } else if let Ok(a) = AttendeeId::parse(id) {
            ("attendee", keys::attendee(ctx, &event.id, &a))
        } else {
            return Ok(None);
        };
        if let Some(item) = ctx.get(&key).await? {
            let name = ["name", "title"]
                .iter()
                .find_map(|k| item.data.get(*k).and_then(Value::as_str))
                .unwrap_or_default();
            let name = if kind == "attendee" {
                Untrusted::new(name).to_json()
            } else {
                json!(name)
            };
            return Ok(Some(Active {
                event: event.id.clone(),
                inner: Some((kind, id.to_owned(), name)),
            }));
        }
    }
    Ok(None)
}

/// Cuts `text` to at most `max` characters, marking the cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[async_trait]
impl ContextSource for EventsContext {
    async fn context(
        &self,
        ctx: &Ctx,
        account: Option<&Profile>,
        channel: &ChannelName,
        active_record: Option<&str>,
    ) -> Result<String, ServiceError> {
        let read;
        let profile = match account {
            Some(account) => account,
            None => {
                read = accounts::profile(ctx).await?;
                &read
            }
        };
        let tz = profile.time_zone.time_zone()?;
        let now = when::local_now(ctx.now_millis(), &tz);
        let lines = [
            format!(
                "Current time: {} ({}, {})",
                now.strftime("%A, %-d %b %Y, %-I:%M %p"),
                now.date(),
                profile.time_zone
            ),
            format!("User: {} (channel: {channel})", profile.name),
        ];

        // The newest events only: the block lists at most CONTEXT_EVENTS_MAX, so reading more
        // would make every turn cost more as the person's events pile up.
        let (newest, older) = events::newest_events(ctx, CONTEXT_EVENTS_MAX).await?;
        let active = match active_record {
            Some(id) => resolve_active(ctx, &newest, older, id).await?,
            None => None,
        };
        let active_id = active.as_ref().map(|a| a.event.clone());

        // The newest events (their counters in one read), and the active one even when it
        // is older.
        let counts = events::registered_counts(ctx, &newest).await?;
        let mut listed: Vec<Value> = Vec::new();
        for (e, registered) in newest.iter().zip(counts) {
            let is_active = active_id.as_ref() == Some(&e.id);
            let mut v = views::event_brief(e, registered);
            v["active"] = json!(is_active);
            listed.push(v);
        }
        if let Some(id) = &active_id
            && !newest.iter().any(|e| &e.id == id)
            && let Some(item) = ctx.get(&keys::event(ctx, id)).await?
        {
            let e: Event = item.parse()?;
            let mut v = views::event_brief(&e, events::registered_count(ctx, &e.id).await?);
            v["active"] = json!(true);
            listed.push(v);
        }

        let mut active_line = None;
        if let Some(a) = &active {
            let o = overview::event_overview(ctx, &a.event).await?;
            let mut v = views::overview(&o, CONTEXT_ROOMS_MAX);
            if let Some(d) = &o.event.description {
                v["description"] = json!(cut(d.as_str(), CONTEXT_DESCRIPTION_CHARS_MAX));
            }
            v["registration"]["state"] = json!(views::registration_phrase(
                &o.event,
                o.registered,
                ctx.now_millis()
            ));
            if let Some((kind, id, name)) = &a.inner {
                v["active_record"] = json!({"kind": kind, "id": id, "name": name});
            }
            active_line = Some(v);
        }

        let head = lines.join("\n");
        let render = |listed: &[Value], hidden: bool, active: Option<&Value>| {
            let mut out = head.clone();
            if listed.is_empty() {
                out.push_str("\nEvents: none yet");
            } else {
                out.push_str("\nEvents (newest first): ");
                // The slice written as an array, without copying its values into one.
                out.push_str(&serde_json::to_string(listed).unwrap_or_default());
                if hidden {
                    out.push_str(" (and older ones; use list_events)");
                }
            }
            match active {
                Some(v) => {
                    out.push_str("\nActive event: ");
                    out.push_str(&json_text(v));
                }
                None => out.push_str("\nActive event: none"),
            }
            out
        };

        // Shrink to the bound: drop listed events that are not active (oldest first), then
        // the active event's room list, then cut.
        let mut hidden = older;
        let mut text = render(&listed, hidden, active_line.as_ref());
        while text.chars().count() > CONTEXT_CHARS_MAX
            && let Some(pos) = listed.iter().rposition(|v| v["active"] != json!(true))
        {
            listed.remove(pos);
            hidden = true;
            text = render(&listed, hidden, active_line.as_ref());
        }
        if text.chars().count() > CONTEXT_CHARS_MAX
            && let Some(v) = active_line.as_mut()
        {
            v["rooms"] = json!(format!("{} rooms; see get_event", o_rooms(v)));
            v["description"] = Value::Null;
            text = render(&listed, hidden, active_line.as_ref());
        }
        Ok(cut(&text, CONTEXT_CHARS_MAX))
    }
}

fn o_rooms(v: &Value) -> usize {
    v["rooms_total"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or_else(|| v["rooms"].as_array().map_or(0, Vec::len))
}
