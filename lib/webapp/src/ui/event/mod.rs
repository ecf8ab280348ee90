//! One event's page (`/app/events/{id}`) and its forms: details and status, registration
//! settings, rooms, sessions, the programme settings, the timetable and attendees. Every form
//! posts to its own route, calls the same service function the chat tool calls, and then
//! either redirects back (Post/Redirect/Get, with a fixed notice) or re-renders the page with
//! the problem next to the form and everything as typed (422).
//!
//! Every form whose capability can be held runs through [`confirm::run`]: held actions —
//! decided by the capability's own declaration ([`steward_events::holds`]) from the form
//! converted into the capability's typed input, through the same gate as the chat and MCP —
//! first show a confirmation page, which re-posts the form with `confirm=yes`
//! ([`crate::ui::FORMS`] lists the forms and their capabilities).
//!
//! * [`page`]: drawing the whole page from [`view`]; [`fields`]: posted forms and parsing;
//!   [`form`]: the extractors every form handler takes; [`confirm`]: the confirmation step.
//! * [`details`]: details, status actions and registration settings; [`rooms`];
//!   [`sessions`]; [`program`]: programme settings and the timetable; [`attendees`].

pub mod attendees;
pub mod confirm;
pub mod details;
pub mod fields;
pub mod form;
pub mod page;
pub mod program;
pub mod rooms;
pub mod sessions;
pub mod view;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use steward_events::ids::EventId;
use steward_harness::{Ctx, ServiceError};

use self::fields::Fields;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::{FormProblem, UiError};

/// The path of an event's page.
pub fn event_path(id: &EventId) -> String {
    format!("/app/events/{id}")
}

/// An id from the address as a record id; anything malformed is simply not found.
pub(crate) fn parse_id<T>(
    text: &str,
    what: &str,
    parse: impl FnOnce(&str) -> Result<T, ServiceError>,
) -> Result<T, UiError> {
    parse(text).map_err(|_| {
        let shown: String = text.chars().take(40).collect();
        UiError(ServiceError::not_found(format!("{what} {shown}")))
    })
}

/// The event id of a path.
pub(crate) fn event_id(text: &str) -> Result<EventId, UiError> {
    parse_id(text, "Event", EventId::parse)
}

/// A form that came back with a problem: which form, the readable message, what was typed.
#[derive(Debug, Clone)]
pub struct Problem {
    /// The form's name (each section's forms have one).
    pub form: &'static str,
    /// What is wrong, in words.
    pub message: String,
    /// The `name` of the form field at fault, when one is (marked invalid and focused).
    pub field: Option<String>,
    /// The fields as posted.
    pub fields: Fields,
}

/// What a successful form did, shown once after the redirect. A fixed set, so nothing typed
/// travels in the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// The event was created.
    Created,
    /// Details saved.
    Saved,
    /// Published.
    Published,
    /// Cancelled.
    Cancelled,
    /// Reopened.
    Reopened,
    /// Registration settings saved.
    Registration,
    /// A room was added.
    RoomAdded,
    /// A room was removed.
    RoomRemoved,
    /// A session was added.
    SessionAdded,
    /// A session was removed.
    SessionRemoved,
    /// Programme settings saved.
    Program,
    /// The timetable was built.
    Timetable,
    /// An attendee was withdrawn.
    Withdrawn,
    /// Nothing needed changing.
    Unchanged,
}

impl Done {
    const ALL: [Self; 14] = [
        Self::Created,
        Self::Saved,
        Self::Published,
        Self::Cancelled,
        Self::Reopened,
        Self::Registration,
        Self::RoomAdded,
        Self::RoomRemoved,
        Self::SessionAdded,
        Self::SessionRemoved,
        Self::Program,
        Self::Timetable,
        Self::Withdrawn,
        Self::Unchanged,
    ];

    /// Its code in the address.
    pub fn code(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Saved => "saved",
            Self::Published => "published",
            Self::Cancelled => "cancelled",
            Self::Reopened => "reopened",
            Self::Registration => "registration",
            Self::RoomAdded => "room-added",
            Self::RoomRemoved => "room-removed",
            Self::SessionAdded => "session-added",
            Self::SessionRemoved => "session-removed",
            Self::Program => "program",
            Self::Timetable => "timetable",
            Self::Withdrawn => "withdrawn",
            Self::Unchanged => "unchanged",
        }
    }

    /// The notice shown.
    pub fn text(self) -> &'static str {
        match self {
            Self::Created => "Event created as a draft. Add rooms and sessions, then publish it.",
            Self::Saved => "Details saved.",
            Self::Published => "Published: the public page is live.",
            Self::Cancelled => {
                "Event cancelled. Registrations are kept; the public page says it is cancelled."
            }
            Self::Reopened => "Event reopened as a draft.",
            Self::Registration => "Registration settings saved.",
            Self::RoomAdded => "Room added.",
            Self::RoomRemoved => "Room removed.",
            Self::SessionAdded => "Session added.",
            Self::SessionRemoved => "Session removed.",
            Self::Program => "Programme settings saved.",
            Self::Timetable => "Timetable built.",
            Self::Withdrawn => "Attendee withdrawn.",
            Self::Unchanged => "Nothing needed changing.",
        }
    }

    /// The section the page scrolls to.
    fn anchor(self) -> &'static str {
        match self {
            Self::Created | Self::Saved | Self::Unchanged => "details",
            Self::Published | Self::Cancelled | Self::Reopened => "status",
            Self::Registration => "registration",
            Self::RoomAdded | Self::RoomRemoved => "rooms",
            Self::SessionAdded | Self::SessionRemoved => "sessions",
            Self::Program => "program",
            Self::Timetable => "timetable",
            Self::Withdrawn => "attendees",
        }
    }

    /// The notice for a code from the address, if it is one.
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.code() == code)
    }

    /// This notice, or [`Done::Unchanged`] when the write changed nothing.
    pub fn unless_unchanged(self, unchanged: bool) -> Self {
        if unchanged { Self::Unchanged } else { self }
    }

    /// The redirect back to the event's page showing this notice.
    pub fn redirect(self, id: &EventId) -> Response {
        Redirect::to(&format!(
            "{}?done={}#{}",
            event_path(id),
            self.code(),
            self.anchor()
        ))
        .into_response()
    }
}

/// How a form post ends when nothing went wrong.
#[derive(Debug)]
pub enum Outcome {
    /// Done: back to the event's page with this notice.
    Done(Done),
    /// Answer with this page instead (a confirmation step, or a redirect elsewhere).
    Page(Response),
}

impl From<Done> for Outcome {
    fn from(done: Done) -> Self {
        Self::Done(done)
    }
}

impl<T: Into<Outcome>> From<confirm::Gated<T>> for Outcome {
    fn from(gated: confirm::Gated<T>) -> Self {
        match gated {
            confirm::Gated::Page(page) => Self::Page(page),
            confirm::Gated::Ran(done) => done.into(),
        }
    }
}

/// The `?done=` of the page.
#[derive(Debug, Default, Deserialize)]
pub struct DoneQuery {
    done: Option<String>,
}

/// Ends a form post: the redirect with its notice, or the page again with the problem (422)
/// when the failure is one the person can fix; not found and bugs become error pages.
pub(crate) async fn finish(
    state: &WebState,
    signed: &SignedIn,
    ctx: &Ctx,
    id: &EventId,
    form: &'static str,
    fields: Fields,
    result: Result<Outcome, ServiceError>,
) -> Response {
    match result {
        Ok(Outcome::Done(done)) => done.redirect(id),
        Ok(Outcome::Page(page)) => page,
        Err(e @ ServiceError::NotFound { .. }) => UiError(e).into_response(),
        Err(e) if e.is_expected() => {
            let blamed = FormProblem::of(&e)
                .renamed("start_time", "start")
                .renamed("end_time", "end");
            let problem = Problem {
                form,
                message: e.for_page(),
                field: blamed.field,
                fields,
            };
            page::render(state, signed, ctx, id, None, Some(&problem))
                .await
                .unwrap_or_else(IntoResponse::into_response)
        }
        Err(e) => UiError(e).into_response(),
    }
}

/// `GET /app/events/{id}`.
async fn show(
    State(state): State<WebState>,
    signed: SignedIn,
    form::EventPath(id): form::EventPath,
    Query(q): Query<DoneQuery>,
) -> Result<Response, UiError> {
    let ctx = signed.ctx(&state);
    let done = q.done.as_deref().and_then(Done::from_code);
    page::render(&state, &signed, &ctx, &id, done, None).await
}

/// The event page's routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route("/app/events/{id}", get(show))
        .route("/app/events/{id}/edit", post(details::edit))
        .route("/app/events/{id}/publish", post(details::publish))
        .route("/app/events/{id}/cancel", post(details::cancel))
        .route("/app/events/{id}/reopen", post(details::reopen))
        .route("/app/events/{id}/delete", post(details::delete))
        .route("/app/events/{id}/registration", post(details::registration))
        .route("/app/events/{id}/rooms", post(rooms::add))
        .route("/app/events/{id}/rooms/{room}/remove", post(rooms::remove))
        .route("/app/events/{id}/sessions", post(sessions::add))
        .route(
            "/app/events/{id}/sessions/{session}/remove",
            post(sessions::remove),
        )
        .route("/app/events/{id}/program", post(program::set))
        .route("/app/events/{id}/timetable", post(program::build))
        .route(
            "/app/events/{id}/attendees/{attendee}/withdraw",
            post(attendees::withdraw),
        )
}
