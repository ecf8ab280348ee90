//! Loading everything the event page shows, and drawing it: a header with the status and the
//! public link, then one section per part, each with its forms.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use steward_events::attendees::{self, Attendee};
use steward_events::events::{self, Event, EventStatus};
use steward_events::ids::EventId;
use steward_events::people::{self, Person};
use steward_events::program::{self, Program};
use steward_events::rooms::{self, Room};
use steward_events::schedule::{self, TimetableView};
use steward_events::sessions::{self, Session};
use steward_harness::{Ctx, ServiceError};

use super::{Done, Problem, attendees as attendees_ui, details, program as program_ui};
use super::{event_path, rooms as rooms_ui, sessions as sessions_ui};
use crate::app::WebState;
use crate::auth::{SignedIn, csrf};
use crate::ui::layout;
use crate::ui::respond::{FormProblem, UiError};

/// Everything about one event the page shows.
#[derive(Debug, Clone)]
pub struct EventData {
    /// The event.
    pub event: Event,
    /// Registered attendees.
    pub registered: u32,
    /// Rooms.
    pub rooms: Vec<Room>,
    /// Sessions.
    pub sessions: Vec<Session>,
    /// People (speakers).
    pub people: Vec<Person>,
    /// Programme settings.
    pub program: Program,
    /// The stored timetable, if built.
    pub timetable: Option<TimetableView>,
    /// Attendees, registered and withdrawn.
    pub attendees: Vec<Attendee>,
}

impl EventData {
    /// Reads it all (not found when the event is not the caller's).
    pub async fn load(ctx: &Ctx, id: &EventId) -> Result<Self, ServiceError> {
        let event = events::get_event(ctx, id).await?;
        Ok(Self {
            registered: events::registered_count(ctx, id).await?,
            rooms: rooms::list_rooms(ctx, id).await?,
            sessions: sessions::list_sessions(ctx, id).await?,
            people: people::list_people(ctx, id).await?,
            program: program::get_program(ctx, id).await?,
            timetable: schedule::get_timetable(ctx, id).await?,
            attendees: attendees::list_attendees(ctx, id).await?,
            event,
        })
    }
}

/// What a section needs to draw itself: the data, the session (for form tokens), and the
/// form that came back with a problem, if any.
pub struct View<'a> {
    /// The event's data.
    pub data: &'a EventData,
    /// The signed-in request.
    pub signed: &'a SignedIn,
    /// A form with a problem.
    pub problem: Option<&'a Problem>,
    /// The app's state (its configuration gives the public link's full address).
    pub state: &'a WebState,
}

impl View<'_> {
    /// The hidden token field.
    pub fn csrf(&self) -> Markup {
        csrf::field(&self.signed.session)
    }

    /// A form target under the event: `/app/events/{id}/{rest}`.
    pub fn action(&self, rest: &str) -> String {
        format!("{}/{rest}", event_path(&self.data.event.id))
    }

    /// The value to show in `field` of `form`: as typed when that form came back, else
    /// `current`.
    pub fn value(&self, form: &str, field: &str, current: impl Into<String>) -> String {
        match self.problem {
            Some(p) if p.form == form => p.fields.get(field).to_owned(),
            _ => current.into(),
        }
    }

    /// Whether `form` came back with a problem.
    pub fn has_problem(&self, form: &str) -> bool {
        self.problem.is_some_and(|p| p.form == form)
    }

    /// The problem's message, where `form` is drawn (just before the form): announced, with
    /// the id `<form>-problem` and the field at fault for the page script
    /// ([`FormProblem::render`]).
    pub fn problem_of(&self, form: &str) -> Markup {
        html! {
            @if let Some(p) = self.problem.filter(|p| p.form == form) {
                (FormProblem::new(p.message.clone(), p.field.as_deref()).render(&format!("{form}-problem")))
            }
        }
    }

    /// Whether the event can be changed (not cancelled).
    pub fn changeable(&self) -> bool {
        self.data.event.status != EventStatus::Cancelled
    }
}

/// The page, with a notice after a successful form, or a form's problem (then 422).
pub async fn render(
    state: &WebState,
    signed: &SignedIn,
    ctx: &Ctx,
    id: &EventId,
    done: Option<Done>,
    problem: Option<&Problem>,
) -> Result<Response, UiError> {
    let data = EventData::load(ctx, id).await?;
    let view = View {
        data: &data,
        signed,
        problem,
        state,
    };
    let status = if problem.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let e = &data.event;
    let body = html! {
        p { a href=(crate::ui::APP_HOME) { "← All events" } }
        h1 { (e.name) " " (status_badge(e.status)) }
        @if let Some(done) = done { p.notice role="status" { (done.text()) } }
        @if let Some(p) = problem {
            p.error role="alert" { "Not saved — see below: " (p.message) }
        }
        nav.sections aria-label="Sections of this event" {
            a href="#details" { "Details" } " · "
            a href="#registration" { "Registration" } " · "
            a href="#rooms" { "Rooms" } " · "
            a href="#sessions" { "Sessions" } " · "
            a href="#program" { "Programme" } " · "
            a href="#timetable" { "Timetable" } " · "
            a href="#attendees" { "Attendees" }
        }
        (details::section(&view))
        (details::status_section(&view))
        (details::registration_section(&view))
        (rooms_ui::section(&view))
        (sessions_ui::section(&view))
        (program_ui::section(&view))
        (program_ui::timetable_section(&view))
        (attendees_ui::section(&view))
    };
    let page = layout::app_page(e.name.as_str(), "/app", &signed.session, body);
    Ok((status, page).into_response())
}

/// The status as a badge (class `badge` plus the status).
pub fn status_badge(status: EventStatus) -> Markup {
    html! { span class={ "badge " (status.as_str()) } { (status.as_str()) } }
}
