//! The events list (`/app`, the signed-in home) and the "New event" form
//! (`POST /app/events`).

use axum::Form;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;
use steward_events::events::{self, NewEvent};
use steward_events::text::{Description, EventName, Venue};
use steward_events::when::EventDates;
use steward_harness::{Ctx, ServiceError};

use super::event::fields::{self, Fields};
use super::event::page::status_badge;
use super::event::{Done, event_path};
use super::respond::{FormProblem, UiError};
use crate::csrf;
use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;

/// Where the create form posts.
pub const CREATE_PATH: &str = "/app/events";

/// The `?done=` of the list (after deleting an event).
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    done: Option<String>,
}

async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    Query(q): Query<ListQuery>,
) -> Result<Response, UiError> {
    let ctx = signed.ctx(&state);
    let notice = (q.done.as_deref() == Some("deleted")).then_some("Event deleted.");
    render(
        &ctx,
        &signed,
        notice,
        None,
        &Fields::default(),
        StatusCode::OK,
    )
    .await
}

async fn render(
    ctx: &Ctx,
    signed: &SignedIn,
    notice: Option<&str>,
    problem: Option<&FormProblem>,
    typed: &Fields,
    status: StatusCode,
) -> Result<Response, UiError> {
    let listing = events::list_events(ctx).await?;
    let body = html! {
        h1 { "Your events" }
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        @if listing.is_empty() {
            p.card.muted { "No events yet. Create your first one below — or ask in the chat, \
                            e.g. “Create a meetup on 14 November, 18:00 to 21:00”." }
        } @else {
            div.table-wrap {
                table.events {
                    thead { tr { th { "Event" } th { "Dates" } th { "Status" } th { "Registered" } } }
                    tbody {
                        @for l in &listing {
                            tr {
                                td { a href=(event_path(&l.event.id)) { (l.event.name) } }
                                td { (l.event.when_phrase()) }
                                td { (status_badge(l.event.status)) }
                                td { (l.registered) @if let Some(c) = l.event.capacity { " / " (c) } }
                            }
                        }
                    }
                }
            }
        }
        h2 #new { "New event" }
        (create_form(signed, problem, typed))
    };
    let page = layout::app_page("Events", crate::paths::APP_HOME, &signed.session, body);
    Ok((status, page).into_response())
}

fn create_form(signed: &SignedIn, problem: Option<&FormProblem>, typed: &Fields) -> Markup {
    html! {
        @if let Some(p) = problem { (p.render("new-event-problem")) }
        form.card method="post" action=(CREATE_PATH) {
            (csrf::field(&signed.session))
            label for="new-name" { "Name" }
            input #new-name type="text" name="name" required maxlength=(EventName::CHARS_MAX) value=(typed.get("name"));
            div.grid-2 {
                div { label for="new-date" { "Date (first day)" }
                    input #new-date type="date" name="date" required value=(typed.get("date")); }
                div { label for="new-last" { "Last day (optional, up to 3 days)" }
                    input #new-last type="date" name="last_date" value=(typed.get("last_date")); }
                div { label for="new-start" { "Starts (default 09:00)" }
                    input #new-start type="time" name="start" value=(typed.get("start")); }
                div { label for="new-end" { "Ends (default 17:00)" }
                    input #new-end type="time" name="end" value=(typed.get("end")); }
            }
            label for="new-venue" { "Venue (optional)" }
            input #new-venue type="text" name="venue" maxlength=(Venue::CHARS_MAX) value=(typed.get("venue"));
            label for="new-desc" { "Description for the public page (optional)" }
            textarea #new-desc name="description" rows="3" maxlength=(Description::CHARS_MAX) { (typed.get("description")) }
            button type="submit" { "Create event" }
        }
    }
}

fn new_event(f: &Fields) -> Result<NewEvent, ServiceError> {
    let name = EventName::parse(f.get("name"))?;
    let first = fields::date("date", f.get("date"))?;
    let last = f
        .opt("last_date")
        .map(|t| fields::date("last_date", t))
        .transpose()?;
    let mut new = NewEvent::new(name, EventDates::new(fields::day_range(first, last)?)?);
    new.start_time = fields::time("start_time", f.get("start"))?;
    new.end_time = fields::time("end_time", f.get("end"))?;
    new.venue = f.opt("venue").map(Venue::parse).transpose()?;
    new.description = f.opt("description").map(Description::parse).transpose()?;
    Ok(new)
}

async fn create(
    State(state): State<WebState>,
    signed: SignedIn,
    Form(f): Form<Fields>,
) -> Result<Response, UiError> {
    let ctx = signed.ctx(&state);
    let result = async {
        let new = new_event(&f)?;
        events::create_event(&ctx, new).await?.commit().await
    }
    .await;
    match result {
        Ok(event) => Ok(Done::Created.redirect(&event.id)),
        Err(e) if e.is_expected() => {
            render(
                &ctx,
                &signed,
                None,
                Some(
                    &FormProblem::of(&e)
                        .renamed("start_time", "start")
                        .renamed("end_time", "end"),
                ),
                &f,
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
        }
        Err(e) => Err(UiError(e)),
    }
}

/// The list and create routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(crate::paths::APP_HOME, get(list))
        .route(CREATE_PATH, post(create))
}
