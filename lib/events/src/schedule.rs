//! The stored timetable of an event: built by the [`crate::timetable`] engine from the event's
//! records, re-validated by the engine's independent checker before anything is saved, and
//! kept with a stamp of the input it was built from, so reading it can tell whether the
//! records have changed since ("out of date"); where the two are kept: [`crate::timetable_record`].
//!
//! Rebuilding passes the stored timetable as the previous one: every placement that is still
//! valid stays, and the result says what moved and why.

use std::collections::BTreeMap;

use jiff::civil::{Date, Time};
use serde::Serialize;
use steward_harness::{Audited, Ctx, ServiceError};

use crate::events::{self, Event};
use crate::ids::EventId;
use crate::people::{self, Person};
use crate::planned::Planned;
use crate::program::{self, Program};
use crate::rooms::{self, Room};
use crate::sessions::{self, Session};
use crate::timetable::{
    self, Day, Lunch, MoveReason, TimeOfDay, Timetable, TimetableInput, Warning, Window,
};
use crate::when::{self, minutes_of};

use crate::timetable_record as stored;
pub use crate::timetable_record::StoredTimetable;

/// Names of the ids in a timetable, for sentences people read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    rooms: BTreeMap<String, String>,
    sessions: BTreeMap<String, String>,
    people: BTreeMap<String, String>,
}

impl Names {
    fn new(rooms: &[Room], sessions: &[Session], people: &[Person]) -> Self {
        Self {
            rooms: rooms
                .iter()
                .map(|r| (r.id.to_string(), r.name.to_string()))
                .collect(),
            sessions: sessions
                .iter()
                .map(|s| (s.id.to_string(), s.title.to_string()))
                .collect(),
            people: people
                .iter()
                .map(|p| (p.id.to_string(), p.name.to_string()))
                .collect(),
        }
    }

    /// The room's name (its id if unknown).
    pub fn room(&self, id: &str) -> String {
        self.rooms.get(id).cloned().unwrap_or_else(|| id.to_owned())
    }

    /// The session's title, quoted (its id if unknown).
    pub fn session(&self, id: &str) -> String {
        format!("\"{}\"", self.sessions.get(id).map_or(id, String::as_str))
    }

    /// The person's name (their id if unknown).
    pub fn person(&self, id: &str) -> String {
        self.people
            .get(id)
            .cloned()
            .unwrap_or_else(|| id.to_owned())
    }

    /// `text` with every known id replaced by its name (for the engine's explanations).
    pub fn humanize(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (id, name) in self
            .rooms
            .iter()
            .chain(self.sessions.iter())
            .chain(self.people.iter())
        {
            out = out.replace(id.as_str(), name);
        }
        out
    }

    /// A warning in words.
    pub fn warning(&self, w: &Warning) -> String {
        match w {
            Warning::RoomEmptyAfternoon { room, date } => format!(
                "room {} is empty all afternoon on {}",
                self.room(room.as_str()),
                when::fmt_day(*date)
            ),
            Warning::BackToBack {
                speaker,
                date,
                first,
                second,
                gap_minutes,
            } => format!(
                "{} goes from {} to {} on {} with only {gap_minutes} min between",
                self.person(speaker.as_str()),
                self.session(first.as_str()),
                self.session(second.as_str()),
                when::fmt_day(*date)
            ),
        }
    }

    /// Why a session moved, in words.
    pub fn move_reason(&self, r: &MoveReason) -> String {
        match r {
            MoveReason::RoomRequired { room } => {
                format!("it must now be in room {}", self.room(room.as_str()))
            }
            MoveReason::Clash { with, over } => {
                format!("it clashed with {} ({over})", self.session(with.as_str()))
            }
            MoveReason::Dependency { after } => {
                format!("it must come after {}", self.session(after.as_str()))
            }
            MoveReason::Precedes { before } => {
                format!("it must come before {}", self.session(before.as_str()))
            }
            MoveReason::MadeRoom { for_sessions } => {
                let names: Vec<String> = for_sessions
                    .iter()
                    .map(|s| self.session(s.as_str()))
                    .collect();
                format!("it made room for {}", crate::planned::join_words(&names))
            }
            other => other.to_string(),
        }
    }
}

fn time_of_day(t: Time) -> TimeOfDay {
    // minutes_of is at most 23*60+59, always a valid time of day.
    TimeOfDay::from_minutes(minutes_of(t)).unwrap_or(TimeOfDay::MIDNIGHT)
}

fn civil_time(t: TimeOfDay) -> Time {
    let m = t.minutes();
    if m >= 24 * 60 {
        return Time::MAX;
    }
    // m < 1440, so the hour and minute fit an i8.
    Time::new(
        i8::try_from(m / 60).unwrap_or(0),
        i8::try_from(m % 60).unwrap_or(0),
        0,
        0,
    )
    .unwrap_or(Time::MIN)
}

/// The engine's input for an event's records (no previous timetable).
pub fn engine_input(
    event: &Event,
    program: &Program,
    rooms: &[Room],
    sessions: &[Session],
) -> TimetableInput {
    let (day_start, day_end) = program.day_window(event);
    let days = event
        .dates
        .dates()
        .iter()
        .map(|d| Day {
            date: *d,
            start: time_of_day(day_start),
            end: time_of_day(day_end),
        })
        .collect();
    let rooms = rooms
        .iter()
        .map(|r| timetable::Room {
            id: timetable::RoomId(r.id.to_string()),
            name: r.name.to_string(),
            capacity: r.capacity,
            availability: if r.available_from.is_none() && r.available_until.is_none() {
                Vec::new()
            } else {
                event
                    .dates
                    .dates()
                    .iter()
                    .map(|d| Window {
                        date: *d,
                        start: r.available_from.map_or(TimeOfDay::MIDNIGHT, time_of_day),
                        end: r.available_until.map_or(
                            TimeOfDay::from_minutes(24 * 60).unwrap_or(TimeOfDay::MIDNIGHT),
                            time_of_day,
                        ),
                    })
                    .collect()
            },
        })
        .collect();
    let sessions = sessions
        .iter()
        .map(|s| timetable::Session {
            id: timetable::SessionId(s.id.to_string()),
            title: s.title.to_string(),
            duration_minutes: s.duration_minutes,
            speakers: s
                .speakers
                .iter()
                .map(|p| timetable::SpeakerId(p.to_string()))
                .collect(),
            track: s
                .track
                .as_ref()
                .map(|t| timetable::TrackId(t.as_str().to_lowercase())),
            after: s
                .after
                .iter()
                .map(|a| timetable::SessionId(a.to_string()))
                .collect(),
            min_capacity: s.min_capacity.unwrap_or(0),
            room: s.room.as_ref().map(|r| timetable::RoomId(r.to_string())),
            pinned: None,
        })
        .collect();
    TimetableInput {
        days,
        rooms,
        sessions,
        lunch: program.lunch.map(|l| Lunch {
            earliest_start: time_of_day(l.earliest_start),
            latest_end: time_of_day(l.latest_end),
            length_minutes: l.length_minutes,
        }),
        changeover_minutes: program.changeover_minutes,
        speaker_rest_minutes: program.speaker_rest_minutes,
        previous: None,
    }
}

/// Everything the timetable of one event is made from.
struct Sources {
    event: Event,
    event_item: steward_store::Item,
    rooms: Vec<Room>,
    sessions: Vec<Session>,
    people: Vec<Person>,
    input: TimetableInput,
    stored: Option<stored::Stored>,
}

async fn sources(ctx: &Ctx, event: &EventId) -> Result<Sources, ServiceError> {
    let (event, event_item) = events::load_event(ctx, event).await?;
    let program = program::program_of(ctx, &event.id).await?;
    let rooms = rooms::rooms_of(ctx, &event.id).await?;
    let sessions = sessions::sessions_of(ctx, &event.id).await?;
    let people = people::people_of(ctx, &event.id).await?;
    let input = engine_input(&event, &program, &rooms, &sessions);
    let stored = stored::load(ctx, &event.id).await?;
    Ok(Sources {
        event,
        event_item,
        rooms,
        sessions,
        people,
        input,
        stored,
    })
}

/// A freshly built timetable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The event.
    pub event: Event,
    /// The timetable.
    pub timetable: Timetable,
    /// Names for its ids.
    pub names: Names,
    /// Whether a previous timetable was kept as far as possible.
    pub replanned: bool,
}

impl Built {
    /// One or two sentences: each day's finish time, then the warnings and moves.
    pub fn summary(&self) -> String {
        let days: Vec<String> = self
            .timetable
            .days
            .iter()
            .map(|d| match d.finish {
                Some(f) => format!("{} finishes at {f}", when::fmt_day(d.date)),
                None => format!("{} has no sessions", when::fmt_day(d.date)),
            })
            .collect();
        let mut s = format!(
            "Timetable built for {}: {}.",
            self.event.quoted(),
            crate::planned::join_words(&days)
        );
        let warnings: Vec<String> = self
            .timetable
            .warnings
            .iter()
            .map(|w| self.names.warning(w))
            .collect();
        match warnings.len() {
            0 => s.push_str(" No warnings."),
            1 => s.push_str(&format!(" Warning: {}.", warnings[0])),
            n => s.push_str(&format!(" {n} warnings: {}.", warnings.join("; "))),
        }
        if !self.timetable.moved.is_empty() {
            s.push_str(&format!(
                " {} session(s) moved from the previous timetable.",
                self.timetable.moved.len()
            ));
        }
        s
    }
}

/// Runs the timetable search on tokio's blocking pool and hands `input` back with its answer.
/// The search is the longest CPU work a tool does (tens of milliseconds for hundreds of
/// sessions); on the runtime's thread it would hold every other request that thread serves
/// (Steward's processes run one by default). A search that panicked is an internal error.
async fn solve_on_the_blocking_pool(
    input: TimetableInput,
) -> Result<(TimetableInput, Result<Timetable, timetable::Infeasible>), ServiceError> {
    tokio::task::spawn_blocking(move || {
        let solved = timetable::solve(&input);
        (input, solved)
    })
    .await
    .map_err(|e| ServiceError::internal(format!("the timetable search stopped: {e}")))
}

/// Plans building (or rebuilding) the event's timetable. Needs rooms and sessions; refuses a
/// cancelled event. When no timetable fits, the error explains why with the numbers to fix
/// it. A timetable the checker rejects is a bug: logged with its input, reported as an
/// internal error, never saved.
pub async fn build_timetable(ctx: &Ctx, event: &EventId) -> Result<Planned<Built>, ServiceError> {
    let src = sources(ctx, event).await?;
    src.event.ensure_not_cancelled()?;
    if src.rooms.is_empty() {
        return Err(ServiceError::invalid(
            "rooms",
            format!(
                "event {} has no rooms yet; add them with add_room first",
                src.event.quoted()
            ),
        ));
    }
    if src.sessions.is_empty() {
        return Err(ServiceError::invalid(
            "sessions",
            format!(
                "event {} has no sessions yet; add them with add_session first",
                src.event.quoted()
            ),
        ));
    }
    let names = Names::new(&src.rooms, &src.sessions, &src.people);
    let mut input = src.input.clone();
    input.previous = src.stored.as_ref().map(|s| s.doc.timetable.clone());
    let replanned = input.previous.is_some();
    let (input, solved) = solve_on_the_blocking_pool(input).await?;
    let tt = solved.map_err(|infeasible| {
        ServiceError::invalid(
            "timetable",
            format!(
                "no timetable fits these sessions and rooms: {}",
                names.humanize(&infeasible.to_string())
            ),
        )
    })?;
    let violations = timetable::check(&input, &tt);
    if !violations.is_empty() {
        tracing::error!(
            action = %ctx.action(),
            event = %src.event.id,
            input = %serde_json::to_string(&input).unwrap_or_default(),
            violations = %serde_json::to_string(&violations).unwrap_or_default(),
            "the timetable checker rejected the engine's timetable"
        );
        return Err(ServiceError::internal(format!(
            "the timetable checker found {} violation(s) in the engine's output for event {}",
            violations.len(),
            src.event.id
        )));
    }
    let built = Built {
        event: src.event.clone(),
        timetable: tt.clone(),
        names,
        replanned,
    };
    if let Some(stored) = &src.stored
        && stored.built_from(&src.input)
        && stored.doc.timetable == tt
    {
        return Ok(Planned::unchanged(ctx, built));
    }
    let doc = StoredTimetable {
        timetable: tt,
        built_ms: ctx.now_millis(),
    };
    let tx = Audited::new(ctx)
        .label(format!("Build the timetable of {}", src.event.quoted()))
        .require_unchanged(&src.event_item);
    let tx = stored::write(
        ctx,
        tx,
        &src.event.id,
        src.stored.as_ref(),
        &src.input,
        &doc,
    );
    Ok(Planned::new(tx, built))
}

/// One session's place, with names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Slot {
    /// The session's id.
    pub session_id: String,
    /// Its title.
    pub title: String,
    /// The room's name.
    pub room: String,
    /// Day.
    pub date: Date,
    /// Start (local).
    pub start: String,
    /// End (local).
    pub end: String,
}

/// The stored timetable of an event, with names, and whether it still matches the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimetableView {
    /// The event.
    pub event: Event,
    /// The stored document.
    pub stored: StoredTimetable,
    /// Every session's place, in time order.
    pub slots: Vec<Slot>,
    /// False when rooms, sessions, the program or the event's days changed since it was
    /// built: build it again.
    pub up_to_date: bool,
    /// Names for its ids.
    pub names: Names,
}

/// The event's stored timetable, or `None` when none has been built.
pub async fn get_timetable(
    ctx: &Ctx,
    event: &EventId,
) -> Result<Option<TimetableView>, ServiceError> {
    let src = sources(ctx, event).await?;
    let Some(stored) = src.stored else {
        return Ok(None);
    };
    let up_to_date = stored.built_from(&src.input);
    let stored = stored.doc;
    let names = Names::new(&src.rooms, &src.sessions, &src.people);
    let slots = stored
        .timetable
        .assignments
        .iter()
        .map(|a| Slot {
            session_id: a.session.to_string(),
            title: names
                .sessions
                .get(a.session.as_str())
                .cloned()
                .unwrap_or_else(|| a.session.to_string()),
            room: names.room(a.room.as_str()),
            date: a.date,
            start: a.start.to_string(),
            end: a.end.to_string(),
        })
        .collect();
    Ok(Some(TimetableView {
        up_to_date,
        event: src.event,
        stored,
        slots,
        names,
    }))
}

/// One session on the public timetable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublicSlot {
    /// Day.
    pub date: Date,
    /// Start (local).
    pub start: Time,
    /// End (local).
    pub end: Time,
    /// Room name.
    pub room: String,
    /// Session title.
    pub title: String,
    /// Speaker names.
    pub speakers: Vec<String>,
    /// Track name.
    pub track: Option<String>,
}

/// The public timetable of an event (empty when none is built).
pub(crate) async fn public_slots(
    ctx: &Ctx,
    event: &Event,
) -> Result<Vec<PublicSlot>, ServiceError> {
    let Some(stored) = stored::load(ctx, &event.id).await? else {
        return Ok(Vec::new());
    };
    let stored = stored.doc;
    let rooms = rooms::rooms_of(ctx, &event.id).await?;
    let sessions = sessions::sessions_of(ctx, &event.id).await?;
    let people = people::people_of(ctx, &event.id).await?;
    let names = Names::new(&rooms, &sessions, &people);
    Ok(stored
        .timetable
        .assignments
        .iter()
        .filter_map(|a| {
            // A session or room removed since the build is not shown.
            let s = sessions
                .iter()
                .find(|s| s.id.as_str() == a.session.as_str())?;
            rooms.iter().find(|r| r.id.as_str() == a.room.as_str())?;
            Some(PublicSlot {
                date: a.date,
                start: civil_time(a.start),
                end: civil_time(a.end),
                room: names.room(a.room.as_str()),
                title: s.title.to_string(),
                speakers: people::names_of(&people, &s.speakers),
                track: s.track.as_ref().map(ToString::to_string),
            })
        })
        .collect())
}
