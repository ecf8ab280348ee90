//! The event's details (and their edit form), its status actions — publish, cancel, reopen,
//! delete — and its registration settings.

use axum::response::{IntoResponse, Redirect, Response};
use jiff::civil::DateTime;
use maud::{Markup, html};
use steward_events::events::{self, Event, EventStatus};
use steward_events::text::{Description, EventName, TrackName, Venue};
use steward_events::tools::{EventRefInput, SetRegistrationInput, UpdateEventInput};
use steward_events::when;
use steward_harness::ServiceError;

use super::confirm::Action;
use super::fields::{self, Fields};
use super::form::EventForm;
use super::view::View;
use super::{Done, Outcome};

/// The edit form's name (for its problem and typed values).
const EDIT: &str = "details";
/// The status actions' name.
const STATUS: &str = "status";
/// The registration form's name.
const REGISTRATION: &str = "registration";

/// A date-time as a `datetime-local` input writes it.
fn datetime_input(dt: DateTime) -> String {
    dt.strftime("%Y-%m-%dT%H:%M").to_string()
}

/// The details section.
pub fn section(v: &View<'_>) -> Markup {
    let e = &v.data.event;
    let last = (e.dates.last() != e.dates.first()).then(|| e.dates.last().to_string());
    let tracks: Vec<&str> = e.tracks.iter().map(TrackName::as_str).collect();
    html! {
        section #details {
            h2 { "Details" }
            (v.problem_of(EDIT))
            div.card {
                p { strong { (e.dates) } ", " (when::fmt_time(e.start_time)) "–" (when::fmt_time(e.end_time))
                    " " span.muted { "(" (e.time_zone) ")" } }
                p { "Venue: " @match &e.venue { Some(venue) => (venue), None => span.muted { "not set" } } }
                p { "Capacity: " @match e.capacity { Some(c) => (c), None => span.muted { "no limit" } } }
                @if !tracks.is_empty() { p { "Tracks: " (tracks.join(", ")) } }
                @if let Some(d) = &e.description {
                    @for line in d.as_str().lines() { @if !line.trim().is_empty() { p { (line) } } }
                }
            }
            @if v.changeable() {
                details open[v.has_problem(EDIT)] {
                    summary { "Edit details" }
                    form.card method="post" action=(v.action("edit")) {
                        (v.csrf())
                        label for="ed-name" { "Name" }
                        input #ed-name type="text" name="name" required maxlength=(EventName::CHARS_MAX)
                            value=(v.value(EDIT, "name", e.name.as_str()));
                        div.grid-2 {
                            div { label for="ed-date" { "First day" }
                                input #ed-date type="date" name="date" required
                                    value=(v.value(EDIT, "date", e.dates.first().to_string())); }
                            div { label for="ed-last" { "Last day (if more than one)" }
                                input #ed-last type="date" name="last_date"
                                    value=(v.value(EDIT, "last_date", last.unwrap_or_default())); }
                            div { label for="ed-start" { "Starts (HH:MM)" }
                                input #ed-start type="time" name="start"
                                    value=(v.value(EDIT, "start", when::fmt_time(e.start_time))); }
                            div { label for="ed-end" { "Ends (HH:MM)" }
                                input #ed-end type="time" name="end"
                                    value=(v.value(EDIT, "end", when::fmt_time(e.end_time))); }
                        }
                        label for="ed-tz" { "Time zone" }
                        input #ed-tz type="text" name="time_zone" value=(v.value(EDIT, "time_zone", e.time_zone.to_string()));
                        label for="ed-venue" { "Venue" }
                        input #ed-venue type="text" name="venue" maxlength=(Venue::CHARS_MAX)
                            value=(v.value(EDIT, "venue", e.venue.as_ref().map(ToString::to_string).unwrap_or_default()));
                        label for="ed-desc" { "Description" }
                        textarea #ed-desc name="description" rows="4" maxlength=(Description::CHARS_MAX) {
                            (v.value(EDIT, "description", e.description.as_ref().map(ToString::to_string).unwrap_or_default()))
                        }
                        div.grid-2 {
                            div { label for="ed-cap" { "Capacity (empty: no limit)" }
                                input #ed-cap type="text" inputmode="numeric" name="capacity"
                                    value=(v.value(EDIT, "capacity", e.capacity.map(|c| c.to_string()).unwrap_or_default())); }
                            div { label for="ed-tracks" { "Tracks (comma-separated)" }
                                input #ed-tracks type="text" name="tracks" value=(v.value(EDIT, "tracks", tracks.join(", "))); }
                        }
                        label for="ed-slug" { "Public address: /e/…" }
                        input #ed-slug type="text" name="slug" value=(v.value(EDIT, "slug", e.slug.to_string()));
                        button type="submit" { "Save details" }
                    }
                }
            }
        }
    }
}

/// The status section: the public link and the actions the status allows.
pub fn status_section(v: &View<'_>) -> Markup {
    let e = &v.data.event;
    let path = e.slug.path();
    let url = v
        .state
        .config()
        .events
        .url(&path)
        .unwrap_or_else(|| path.clone());
    html! {
        section #status {
            h2 { "Status" }
            (v.problem_of(STATUS))
            div.card {
                @match e.status {
                    EventStatus::Draft => {
                        p { "A draft: only you can see it. Publishing makes its page public at " code { (url) } "." }
                    }
                    EventStatus::Published => {
                        p { "Published. Public page: " a href=(path) { (url) } }
                    }
                    EventStatus::Cancelled => {
                        p { "Cancelled. The public page " a href=(path) { (url) } " says so; nothing can be changed until you reopen it." }
                    }
                }
                div.actions {
                    @if e.status == EventStatus::Draft {
                        (action_button(v, "publish", "Publish", ""))
                        (action_button(v, "delete", "Delete", "danger"))
                    }
                    @if e.status != EventStatus::Cancelled {
                        (action_button(v, "cancel", "Cancel event", "danger"))
                    } @else {
                        (action_button(v, "reopen", "Reopen", "secondary"))
                    }
                }
            }
        }
    }
}

fn action_button(v: &View<'_>, action: &str, label: &str, class: &str) -> Markup {
    html! {
        form.inline method="post" action=(v.action(action)) {
            (v.csrf())
            button class=(class) type="submit" { (label) }
        }
    }
}

/// The registration section: counts and the settings form.
pub fn registration_section(v: &View<'_>) -> Markup {
    let e = &v.data.event;
    let open = if e.registration.open { "yes" } else { "no" };
    let chosen = v.value(REGISTRATION, "open", open);
    let closes = e
        .registration
        .closes_at
        .map(datetime_input)
        .unwrap_or_default();
    html! {
        section #registration {
            h2 { "Registration" }
            (v.problem_of(REGISTRATION))
            div.card {
                p {
                    strong { (v.data.registered) } " registered"
                    @if let Some(c) = e.capacity { " of " (c) " places" }
                    ". Registration is " (if e.registration.open { "open" } else { "closed" })
                    @if let Some(at) = e.registration.closes_at { " until " (when::fmt_datetime(at)) }
                    @if e.status == EventStatus::Draft { " (once published)" }
                    "."
                }
                @if v.changeable() {
                    form.stack method="post" action=(v.action("registration")) {
                        (v.csrf())
                        label for="reg-open" { "Public registration" }
                        select #reg-open name="open" {
                            option value="yes" selected[chosen == "yes"] { "Open" }
                            option value="no" selected[chosen == "no"] { "Closed" }
                        }
                        label for="reg-closes" { "Closes at (local time; empty: no closing time)" }
                        input #reg-closes type="datetime-local" name="closes_at"
                            value=(v.value(REGISTRATION, "closes_at", closes));
                        p.muted { "The capacity is under Details." }
                        button type="submit" { "Save registration settings" }
                    }
                }
            }
        }
    }
}

/// The edit form as `update_event`'s own input (each field checked here first, so a problem
/// names the form's field): the same type the chat and MCP send.
fn edit_input(event: &Event, f: &Fields) -> Result<UpdateEventInput, ServiceError> {
    let first = fields::date("date", f.get("date"))?;
    let last = f
        .opt("last_date")
        .map(|t| fields::date("last_date", t))
        .transpose()?;
    let dates = if first == event.dates.first() && last.unwrap_or(first) == event.dates.last() {
        None
    } else {
        let days = fields::day_range(first, last)?;
        Some(days.iter().map(ToString::to_string).collect())
    };
    let time = |field: &str, form: &str| -> Result<Option<String>, ServiceError> {
        Ok(fields::time(field, f.get(form))?.map(when::fmt_time))
    };
    let capacity =
        fields::number::<u32>("capacity", "a number of people", f.get("capacity"), "120")?;
    Ok(UpdateEventInput {
        event_id: event.id.to_string(),
        name: Some(f.get("name").to_owned()),
        dates,
        start_time: time("start_time", "start")?,
        end_time: time("end_time", "end")?,
        time_zone: f.opt("time_zone").map(str::to_owned),
        // An empty venue or description removes it; an empty capacity removes the limit.
        venue: Some(f.opt("venue").unwrap_or_default().to_owned()),
        description: Some(f.opt("description").unwrap_or_default().to_owned()),
        capacity: Some(capacity.unwrap_or(0)),
        tracks: Some(fields::list(f.get("tracks"))),
        slug: f.opt("slug").map(str::to_owned),
    })
}

/// `POST /app/events/{id}/edit`.
pub async fn edit(form: EventForm) -> Response {
    let EventForm {
        ctx, id, fields: f, ..
    } = &form;
    let result = async {
        let event = events::get_event(ctx, id).await?;
        let input = edit_input(&event, f)?;
        let changes = input.changes()?;
        let action = Action {
            tool: "update_event",
            input,
            verb: "change it",
            action: format!("{}/edit", super::event_path(id)),
            back: super::event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                let u = events::update_event(&ctx, id, changes)
                    .await?
                    .commit()
                    .await?;
                Ok(Done::Saved.unless_unchanged(u.is_unchanged()))
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(EDIT, result).await
}

/// A status change: which service function, its risk tool, the button's verb, the notice.
#[derive(Debug, Clone, Copy)]
enum StatusAction {
    Publish,
    Cancel,
    Reopen,
    Delete,
}

async fn status_change(form: EventForm, action: StatusAction) -> Response {
    let id = &form.id;
    let (tool, verb, path) = match action {
        StatusAction::Publish => ("publish_event", "publish", "publish"),
        StatusAction::Cancel => ("cancel_event", "cancel the event", "cancel"),
        StatusAction::Reopen => ("reopen_event", "reopen", "reopen"),
        StatusAction::Delete => ("delete_event", "delete", "delete"),
    };
    let result = async {
        let gated = Action {
            tool,
            input: EventRefInput {
                event_id: id.to_string(),
            },
            verb,
            action: format!("{}/{path}", super::event_path(id)),
            back: super::event_path(id),
        };
        let ran = form
            .run(gated, async |ctx| {
                let (updated, done) = match action {
                    StatusAction::Publish => (
                        events::publish_event(&ctx, id).await?.commit().await?,
                        Done::Published,
                    ),
                    StatusAction::Cancel => (
                        events::cancel_event(&ctx, id).await?.commit().await?,
                        Done::Cancelled,
                    ),
                    StatusAction::Reopen => (
                        events::reopen_event(&ctx, id).await?.commit().await?,
                        Done::Reopened,
                    ),
                    StatusAction::Delete => {
                        events::delete_event(&ctx, id).await?.commit().await?;
                        let to = format!("{}?done=deleted", crate::paths::APP_HOME);
                        return Ok(Outcome::Page(Redirect::to(&to).into_response()));
                    }
                };
                Ok(Outcome::Done(done.unless_unchanged(updated.is_unchanged())))
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(STATUS, result).await
}

/// `POST /app/events/{id}/publish` (asks first).
pub async fn publish(form: EventForm) -> Response {
    status_change(form, StatusAction::Publish).await
}

/// `POST /app/events/{id}/cancel` (asks first).
pub async fn cancel(form: EventForm) -> Response {
    status_change(form, StatusAction::Cancel).await
}

/// `POST /app/events/{id}/reopen`.
pub async fn reopen(form: EventForm) -> Response {
    status_change(form, StatusAction::Reopen).await
}

/// `POST /app/events/{id}/delete` (asks first).
pub async fn delete(form: EventForm) -> Response {
    status_change(form, StatusAction::Delete).await
}

/// `POST /app/events/{id}/registration`.
pub async fn registration(form: EventForm) -> Response {
    let EventForm { id, fields: f, .. } = &form;
    let result = async {
        let open = match f.get("open") {
            "yes" => true,
            "no" => false,
            _ => {
                return Err(ServiceError::invalid(
                    "open",
                    "choose whether registration is open or closed",
                ));
            }
        };
        let closes_at = f
            .opt("closes_at")
            .map(|t| when::parse_datetime("closes_at", t))
            .transpose()?;
        // The form as `set_registration`'s own input, rendered from the parsed values.
        let action = Action {
            tool: "set_registration",
            input: SetRegistrationInput {
                event_id: id.to_string(),
                open: Some(open),
                closes_at: Some(closes_at.map(datetime_input).unwrap_or_default()),
            },
            verb: "change registration",
            action: format!("{}/registration", super::event_path(id)),
            back: super::event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                let u = events::set_registration(&ctx, id, Some(open), Some(closes_at))
                    .await?
                    .commit()
                    .await?;
                Ok(Done::Registration.unless_unchanged(u.is_unchanged()))
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(REGISTRATION, result).await
}
