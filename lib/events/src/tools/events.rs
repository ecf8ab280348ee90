//! Event tools: list, get, create, update, publish, cancel, reopen, delete, registration
//! settings and the public link.

use std::sync::Arc;

use serde_json::{Value, json};
use steward_harness::{Ctx, ServiceError, TimeZoneName, ToolDef, ToolResult};

use super::{clearable, clearable_datetime, def, opt_time, page_address, with_link};
use crate::config::EventsConfig;
use crate::events::{self, EventChanges, EventStatus, NewEvent};
use crate::holds;
use crate::ids::EventId;
use crate::inputs::{
    CreateEventInput, EventRefInput, NoInput, SetRegistrationInput, UpdateEventInput,
};
use crate::limits::CONTEXT_ROOMS_MAX;
use crate::overview;
use crate::slug::Slug;
use crate::text::{Description, EventName, TrackName, Venue};
use crate::views;
use crate::when::EventDates;

impl UpdateEventInput {
    /// The checked changes.
    pub fn changes(&self) -> Result<EventChanges, ServiceError> {
        Ok(EventChanges {
            name: self.name.as_deref().map(EventName::parse).transpose()?,
            dates: self.dates.as_deref().map(EventDates::parse).transpose()?,
            start_time: opt_time("start_time", self.start_time.as_deref())?,
            end_time: opt_time("end_time", self.end_time.as_deref())?,
            time_zone: self
                .time_zone
                .as_deref()
                .map(TimeZoneName::parse)
                .transpose()?,
            venue: clearable(self.venue.as_deref(), Venue::parse)?,
            description: clearable(self.description.as_deref(), Description::parse)?,
            capacity: self.capacity.map(|c| (c != 0).then_some(c)),
            tracks: self.tracks.as_deref().map(parse_tracks).transpose()?,
            slug: self.slug.as_deref().map(Slug::parse).transpose()?,
        })
    }
}

fn parse_tracks(names: &[String]) -> Result<Vec<TrackName>, ServiceError> {
    names.iter().map(|t| TrackName::parse(t)).collect()
}

fn event_id(text: &str) -> Result<EventId, ServiceError> {
    EventId::parse(text)
}

pub(super) fn list_events() -> ToolDef {
    def::<NoInput, _, _>(
        "list_events",
        "List all of the user's events, newest first: id, name, status (draft, published, cancelled), dates and how many are registered. The context block already lists recent events; use this when the user asks about older ones or all of them.",
        |ctx: Ctx, _input: NoInput| async move {
            let events = events::list_events(&ctx).await?;
            let data: Vec<Value> = events
                .iter()
                .map(|l| views::event_brief(&l.event, l.registered))
                .collect();
            let summary = match events.len() {
                0 => "No events yet. Create one with create_event.".to_owned(),
                1 => "1 event.".to_owned(),
                n => format!("{n} events, newest first."),
            };
            Ok(ToolResult::new(summary).with_data(json!(data)))
        },
    )
    .read_only()
}

pub(super) fn get_event() -> ToolDef {
    def::<EventRefInput, _, _>(
        "get_event",
        "Show one event in full: dates, times, time zone, venue, capacity, tracks, registration, rooms, how many sessions and speakers, program settings and whether the timetable is built and up to date. Use it before changing an event you have not looked at this turn.",
        |ctx: Ctx, input: EventRefInput| async move {
            let o = overview::event_overview(&ctx, &event_id(&input.event_id)?).await?;
            let e = &o.event;
            let venue = e
                .venue
                .as_ref()
                .map_or_else(String::new, |v| format!(" at {v}"));
            let summary = format!(
                "{} ({}): {} ({}){venue}. {} room(s), {} session(s); registration {}; timetable {}.",
                e.quoted(),
                e.status.as_str(),
                e.when_phrase(),
                e.time_zone,
                o.rooms.len(),
                o.sessions,
                views::registration_phrase(e, o.registered, ctx.now_millis()),
                o.timetable.as_str()
            );
            Ok(ToolResult::new(summary).with_data(views::overview(&o, CONTEXT_ROOMS_MAX * 2)))
        },
    )
    .read_only()
}

pub(super) fn create_event(config: &Arc<EventsConfig>) -> ToolDef {
    let config = Arc::clone(config);
    def::<CreateEventInput, _, _>(
        "create_event",
        "Create a new event as a draft (not public yet). Needs a name and the date(s); ask for them if the user has not said. Times default to 09:00-17:00 and the time zone to the user's; mention defaults you used in a few words. Returns the new event's id in data.id. Next: add rooms and sessions, or publish it when the user wants its page public.",
        move |ctx: Ctx, input: CreateEventInput| {
            let config = Arc::clone(&config);
            async move {
                let mut new = NewEvent::new(
                    EventName::parse(&input.name)?,
                    EventDates::parse(&input.dates)?,
                );
                new.start_time = opt_time("start_time", input.start_time.as_deref())?;
                new.end_time = opt_time("end_time", input.end_time.as_deref())?;
                new.time_zone = input
                    .time_zone
                    .as_deref()
                    .map(TimeZoneName::parse)
                    .transpose()?;
                new.venue = input.venue.as_deref().map(Venue::parse).transpose()?;
                new.description = input
                    .description
                    .as_deref()
                    .map(Description::parse)
                    .transpose()?;
                new.capacity = input.capacity;
                new.tracks = parse_tracks(&input.tracks)?;
                new.slug = input.slug.as_deref().map(Slug::parse).transpose()?;
                let defaults_used = input.start_time.is_none() && input.end_time.is_none();
                let planned = events::create_event(&ctx, new).await?;
                planned
                    .commit_with(|e| {
                        let mut summary = format!(
                            "Created the draft {} for {} ({}).",
                            e.quoted(),
                            e.when_phrase(),
                            e.time_zone
                        );
                        if defaults_used {
                            summary.push_str(" The times are the default; say if they differ.");
                        }
                        summary.push_str(&format!(
                            " Once published, its page will be {}.",
                            page_address(&config, &e.slug.path())
                        ));
                        ToolResult::new(summary).with_data(views::event_fields(e))
                    })
                    .await
            }
        },
    )
    .never_held()
    .focuses()
}

pub(super) fn update_event() -> ToolDef {
    def::<UpdateEventInput, _, _>(
        "update_event",
        "Change an event's name, dates, times, time zone, venue, description, capacity, tracks or public address. Give only the fields that change. On a published event every change is held until the user confirms. Returns what changed; if the timetable exists, rebuild it after changing dates or times.",
        |ctx: Ctx, input: UpdateEventInput| async move {
            let id = event_id(&input.event_id)?;
            let changes = input.changes()?;
            let planned = events::update_event(&ctx, &id, changes).await?;
            planned
                .commit_with(|u| {
                    let e = &u.record;
                    let summary = if u.is_unchanged() {
                        format!("Nothing changed: {} already has those values.", e.quoted())
                    } else {
                        format!(
                            "Changed the {} of {}: now {} ({}){}.",
                            u.changed_phrase(),
                            e.quoted(),
                            e.when_phrase(),
                            e.time_zone,
                            e.venue
                                .as_ref()
                                .map_or_else(String::new, |v| format!(" at {v}"))
                        )
                    };
                    ToolResult::new(summary).with_data(views::event_fields(e))
                })
                .await
        },
    )
    .held_when(holds::update)
    .idempotent()
}

pub(super) fn publish_event(config: &Arc<EventsConfig>) -> ToolDef {
    let config = Arc::clone(config);
    def::<EventRefInput, _, _>(
        "publish_event",
        "Publish an event: its public page goes live and, if registration is open, people can register there. Held until the user confirms. Returns the page's link; give it to the user on its own line.",
        move |ctx: Ctx, input: EventRefInput| {
            let config = Arc::clone(&config);
            async move {
                let id = event_id(&input.event_id)?;
                let registered = events::registered_count(&ctx, &id).await?;
                let now = ctx.now_millis();
                let planned = events::publish_event(&ctx, &id).await?;
                planned
                    .commit_with(|u| {
                        let e = &u.record;
                        let path = e.slug.path();
                        let summary = format!(
                            "{} {}: its page is live at {}. Registration is {}.",
                            if u.is_unchanged() { "Already published:" } else { "Published" },
                            e.quoted(),
                            page_address(&config, &path),
                            views::registration_phrase(e, registered, now)
                        );
                        with_link(
                            ToolResult::new(summary).with_data(json!({"id": e.id, "status": e.status, "public_path": path})),
                            &config,
                            &path,
                        )
                    })
                    .await
            }
        },
    )
    .held_when(holds::publish)
    .idempotent()
}

pub(super) fn cancel_event() -> ToolDef {
    def::<EventRefInput, _, _>(
        "cancel_event",
        "Cancel an event. Registrations are kept, the public page says it is cancelled, and the event becomes read-only until reopened. On a published event it is held until the user confirms. It can be undone with undo_last_action or reversed with reopen_event.",
        |ctx: Ctx, input: EventRefInput| async move {
            let id = event_id(&input.event_id)?;
            let registered = events::registered_count(&ctx, &id).await?;
            let planned = events::cancel_event(&ctx, &id).await?;
            planned
                .commit_with(|u| {
                    let e = &u.record;
                    let summary = if u.is_unchanged() {
                        format!("{} was already cancelled.", e.quoted())
                    } else {
                        format!(
                            "Cancelled {}. Its {registered} registration(s) are kept and its page now says it is cancelled.",
                            e.quoted()
                        )
                    };
                    ToolResult::new(summary).with_data(json!({"id": e.id, "status": e.status}))
                })
                .await
        },
    )
    .held_when(holds::cancel)
    .idempotent()
}

pub(super) fn reopen_event() -> ToolDef {
    def::<EventRefInput, _, _>(
        "reopen_event",
        "Reopen a cancelled event as a draft so it can be changed again. Its page stays offline until it is published again with publish_event. Held until the user confirms.",
        |ctx: Ctx, input: EventRefInput| async move {
            let id = event_id(&input.event_id)?;
            let planned = events::reopen_event(&ctx, &id).await?;
            planned
                .commit_with(|u| {
                    let e = &u.record;
                    let summary = if u.is_unchanged() {
                        format!("{} is not cancelled ({}); nothing to reopen.", e.quoted(), e.status.as_str())
                    } else {
                        format!("Reopened {} as a draft; publish it again to put its page back online.", e.quoted())
                    };
                    ToolResult::new(summary).with_data(json!({"id": e.id, "status": e.status}))
                })
                .await
        },
    )
    .held_when(holds::reopen)
    .idempotent()
}

pub(super) fn delete_event() -> ToolDef {
    def::<EventRefInput, _, _>(
        "delete_event",
        "Delete a draft event with its rooms, sessions, speakers and settings, e.g. one created by mistake. Only drafts without attendees can be deleted; cancel a published event instead. Held until the user confirms; undo_last_action brings it back.",
        |ctx: Ctx, input: EventRefInput| async move {
            let id = event_id(&input.event_id)?;
            let planned = events::delete_event(&ctx, &id).await?;
            planned
                .commit_with(|d| {
                    ToolResult::new(format!(
                        "Deleted the draft {} and {} record(s) in it.",
                        d.event.quoted(),
                        d.records
                    ))
                    .with_data(json!({"id": d.event.id}))
                })
                .await
        },
    )
    .held_when(holds::delete)
}

pub(super) fn set_registration() -> ToolDef {
    def::<SetRegistrationInput, _, _>(
        "set_registration",
        "Open or close registration for an event, or set or remove the time it closes (local time of the event). Registration only takes people once the event is published; the capacity is set with update_event. On a published event it is held until the user confirms. Returns the registration state in words.",
        |ctx: Ctx, input: SetRegistrationInput| async move {
            let id = event_id(&input.event_id)?;
            let closes_at = clearable_datetime("closes_at", input.closes_at.as_deref())?;
            let registered = events::registered_count(&ctx, &id).await?;
            let now = ctx.now_millis();
            let planned = events::set_registration(&ctx, &id, input.open, closes_at).await?;
            planned
                .commit_with(|u| {
                    let e = &u.record;
                    let summary = format!(
                        "{} for {} is {}.",
                        if u.is_unchanged() { "Nothing changed: registration" } else { "Registration" },
                        e.quoted(),
                        views::registration_phrase(e, registered, now)
                    );
                    ToolResult::new(summary).with_data(json!({"id": e.id, "registration": views::event_fields(e)["registration"]}))
                })
                .await
        },
    )
    .held_when(holds::registration)
    .idempotent()
}

pub(super) fn get_public_link(config: &Arc<EventsConfig>) -> ToolDef {
    let config = Arc::clone(config);
    def::<EventRefInput, _, _>(
        "get_public_link",
        "Get the link to an event's public page (with the registration form). Says whether the page is live: only published events are public.",
        move |ctx: Ctx, input: EventRefInput| {
            let config = Arc::clone(&config);
            async move {
                let e = events::get_event(&ctx, &event_id(&input.event_id)?).await?;
                let path = e.slug.path();
                let live = e.status == EventStatus::Published;
                let state = match e.status {
                    EventStatus::Published => "live".to_owned(),
                    EventStatus::Draft => "not public yet: publish the event first".to_owned(),
                    EventStatus::Cancelled => "online, saying the event is cancelled".to_owned(),
                };
                let summary = format!("The page of {} is {} ({state}).", e.quoted(), page_address(&config, &path));
                let result = ToolResult::new(summary).with_data(json!({"id": e.id, "public_path": path, "live": live}));
                Ok(with_link(result, &config, &path))
            }
        },
    )
    .read_only()
}
