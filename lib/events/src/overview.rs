//! One event at a glance: the event, its rooms, how many sessions, people and registrations,
//! its program and whether its timetable is built and up to date. Used by `get_event`, the
//! context block and the web UI's event page.

use steward_harness::{Ctx, ServiceError};

use crate::events::{self, Event};
use crate::ids::EventId;
use crate::keys;
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
    // The event, its registration counter, its program and its timetable's stamp (the stamp
    // only, never the timetable itself) in one read: the context block reads this every turn
    // with an active event, and four reads one after another were four round trips to
    // DynamoDB and four read transactions on SQLite.
    let keys = [
        keys::event(ctx, id),
        keys::registrations(ctx, id),
        keys::program(ctx, id),
        keys::timetable(ctx, id),
    ];
    let mut items = ctx.get_many(&keys).await?.into_iter();
    let mut next = || items.next().flatten();
    let (event_item, counter, program_item, stamp) = (next(), next(), next(), next());
    let event: Event = event_item
        .ok_or_else(|| events::event_not_found(id))?
        .parse()?;
    let registered = events::registered_in(counter.as_ref())?;
    let program = program::program_in(program_item.as_ref())?;
    let basis = stamp
        .as_ref()
        .map(timetable_record::Basis::of)
        .transpose()?;
    let rooms = rooms::rooms_of(ctx, id).await?;
    let sessions = sessions::sessions_of(ctx, id).await?;
    let people = people::people_count(ctx, id).await?;
    let timetable = match basis {
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
