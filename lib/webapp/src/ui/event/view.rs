//! What a section of the event page draws from: [`EventData`] (everything about one event the
//! page shows, read at once) and [`View`] (that data with the session, the state and the form
//! that came back with a problem). A leaf below the page and its sections.

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

use super::{Problem, event_path};
use crate::csrf;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::FormProblem;

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
