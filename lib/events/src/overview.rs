//! One event at a glance: the event, its rooms, how many sessions, people and registrations,
//! its program and whether its timetable is built and up to date. Used by `get_event`, the
//! context block and the web UI's event page.

use steward_harness::{Ctx, ServiceError};

use crate::events::{self, Event};
use crate::ids::EventId;
use crate::people;
use crate::program::{self, Program};
use crate::rooms::{self, Room};
use crate::schedule;
use crate::sessions;
use crate::timetable_record;

/// Whether an event has a timetable and whether it still matches its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimetableStatus {
    /// Never built.
    NotBuilt,
    /// Built from the current records.
    UpToDate,
    /// Built, but rooms, sessions, the program or the days changed since.
    OutOfDate,
}

impl TimetableStatus {
    /// The status in words.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotBuilt => "not built",
            Self::UpToDate => "up to date",
            Self::OutOfDate => "out of date (rebuild it)",
        }
    }
}

/// One event at a glance.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// The event.
    pub event: Event,
    /// Registered attendees.
    pub registered: u32,
    /// Its rooms.
    pub rooms: Vec<Room>,
    /// How many sessions.
    pub sessions: usize,
    /// Total session minutes.
    pub session_minutes: u32,
    /// How many people (speakers).
    pub people: usize,
    /// Program settings.
    pub program: Program,
    /// Timetable state.
    pub timetable: TimetableStatus,
}

/// The event `id` at a glance.
pub async fn event_overview(ctx: &Ctx, id: &EventId) -> Result<Overview, ServiceError> {
    let (event, _) = events::load_event(ctx, id).await?;
    let registered = events::registered_count(ctx, id).await?;
    let rooms = rooms::rooms_of(ctx, id).await?;
    let sessions = sessions::sessions_of(ctx, id).await?;
    let people = people::people_count(ctx, id).await?;
    let program = program::program_of(ctx, id).await?;
    // The timetable's stamp only, never the timetable itself (the context block reads this
    // every turn).
    let timetable = match timetable_record::basis(ctx, id).await? {
        None => TimetableStatus::NotBuilt,
        Some(basis)
            if basis.matches(&schedule::engine_input(&event, &program, &rooms, &sessions)) =>
        {
            TimetableStatus::UpToDate
        }
        Some(_) => TimetableStatus::OutOfDate,
    };
    Ok(Overview {
        registered,
        session_minutes: sessions.iter().map(|s| u32::from(s.duration_minutes)).sum(),
        sessions: sessions.len(),
        people,
        rooms,
        program,
        timetable,
        event,
    })
}
