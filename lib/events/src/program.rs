//! Program settings of an event: the hours sessions may run each day, the lunch break, the
//! changeover a room needs between two sessions, and the rest a speaker needs between two of
//! theirs. An event without settings uses [`Program::default`]: the event's own hours, no
//! lunch, no changeover, no rest.

use jiff::civil::Time;
use serde::{Deserialize, Serialize};
use steward_harness::{Audited, Ctx, ServiceError};
use steward_store::Item;

use crate::events::{self, Event};
use crate::ids::EventId;
use crate::keys;
use crate::limits::BREAK_MINUTES_MAX;
use crate::planned::{Changed, Field, Planned, Record, Updated};
use crate::store;
use crate::when::{self, minutes_of};

/// The lunch break: one slot per day, the same for every room and speaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LunchRule {
    /// Lunch starts no earlier than this.
    pub earliest_start: Time,
    /// Lunch is over by this.
    pub latest_end: Time,
    /// Its length in minutes.
    pub length_minutes: u16,
}

impl LunchRule {
    /// `"45 min between 12:00 and 14:00"`.
    pub fn phrase(&self) -> String {
        format!(
            "{} min between {} and {}",
            self.length_minutes,
            when::fmt_time(self.earliest_start),
            when::fmt_time(self.latest_end)
        )
    }
}

/// A setting of the [`Program`] that an update changes, in the order summaries name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProgramField {
    /// When sessions may start or must end each day.
    SessionHours,
    /// The lunch break.
    Lunch,
    /// The minutes between two sessions in one room.
    Changeover,
    /// The minutes a speaker rests between two talks.
    SpeakerRest,
}

impl Field for ProgramField {
    fn label(self) -> &'static str {
        match self {
            Self::SessionHours => "session hours",
            Self::Lunch => "lunch",
            Self::Changeover => "changeover",
            Self::SpeakerRest => "speaker rest",
        }
    }
}

impl Record for Program {
    type Field = ProgramField;
}

/// An event's program settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Program {
    /// Sessions start no earlier than this (default: the event's start time).
    pub day_start: Option<Time>,
    /// Sessions end no later than this (default: the event's end time).
    pub day_end: Option<Time>,
    /// The lunch break, if any.
    pub lunch: Option<LunchRule>,
    /// Minutes a room needs between two sessions.
    pub changeover_minutes: u16,
    /// Minutes a speaker needs between two of their sessions.
    pub speaker_rest_minutes: u16,
}

impl Program {
    /// The hours sessions may run each day: the program's window, else the event's hours.
    pub fn day_window(&self, event: &Event) -> (Time, Time) {
        (
            self.day_start.unwrap_or(event.start_time),
            self.day_end.unwrap_or(event.end_time),
        )
    }
}

/// Changes to the program settings; `None` leaves a setting as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramChanges {
    /// New start of the session day (`Some(None)`: the event's start time).
    pub day_start: Option<Option<Time>>,
    /// New end of the session day (`Some(None)`: the event's end time).
    pub day_end: Option<Option<Time>>,
    /// New lunch (`Some(None)` removes lunch).
    pub lunch: Option<Option<LunchRule>>,
    /// New changeover.
    pub changeover_minutes: Option<u16>,
    /// New speaker rest.
    pub speaker_rest_minutes: Option<u16>,
}

/// The event's program settings (the defaults when none are set).
pub async fn get_program(ctx: &Ctx, event: &EventId) -> Result<Program, ServiceError> {
    events::load_event(ctx, event).await?;
    program_of(ctx, event).await
}

/// The program settings without checking the event exists.
pub(crate) async fn program_of(ctx: &Ctx, event: &EventId) -> Result<Program, ServiceError> {
    program_in(ctx.get(&keys::program(ctx, event)).await?.as_ref())
}

/// The program settings the item `program` holds (none: the defaults).
pub(crate) fn program_in(program: Option<&Item>) -> Result<Program, ServiceError> {
    Ok(match program {
        Some(item) => item.parse()?,
        None => Program::default(),
    })
}

fn check_minutes(field: &str, minutes: u16) -> Result<(), ServiceError> {
    if minutes > BREAK_MINUTES_MAX {
        return Err(ServiceError::invalid(
            field,
            format!("{minutes} minutes is too long; give 0 to {BREAK_MINUTES_MAX}"),
        ));
    }
    Ok(())
}

fn check_program(event: &Event, p: &Program) -> Result<(), ServiceError> {
    let (start, end) = p.day_window(event);
    if end <= start {
        return Err(ServiceError::invalid(
            "day_end",
            format!(
                "sessions would end by {} but start from {}; the end must be later",
                when::fmt_time(end),
                when::fmt_time(start)
            ),
        ));
    }
    check_minutes("changeover_minutes", p.changeover_minutes)?;
    check_minutes("speaker_rest_minutes", p.speaker_rest_minutes)?;
    if let Some(l) = p.lunch {
        if l.length_minutes == 0 {
            return Err(ServiceError::invalid(
                "lunch_minutes",
                "give lunch a length, or remove lunch",
            ));
        }
        check_minutes("lunch_minutes", l.length_minutes)?;
        let window = i32::from(minutes_of(l.latest_end)) - i32::from(minutes_of(l.earliest_start));
        if window < i32::from(l.length_minutes) {
            return Err(ServiceError::invalid(
                "lunch_latest_end",
                format!(
                    "a {}-minute lunch does not fit between {} and {}",
                    l.length_minutes,
                    when::fmt_time(l.earliest_start),
                    when::fmt_time(l.latest_end)
                ),
            ));
        }
    }
    Ok(())
}

/// Plans changing the program settings. Refuses a cancelled event, a day window that ends
/// before it starts, and a lunch that does not fit its window.
pub async fn set_program(
    ctx: &Ctx,
    event: &EventId,
    changes: ProgramChanges,
) -> Result<Planned<Updated<Program>>, ServiceError> {
    if changes == ProgramChanges::default() {
        return Err(ServiceError::invalid(
            "(arguments)",
            "nothing to change; give at least one setting",
        ));
    }
    let (event, event_item) = events::load_changeable(ctx, event).await?;
    let stored = store::load_opt::<Program>(ctx, &keys::program(ctx, &event.id)).await?;
    let old = stored.as_ref().map(|(p, _)| *p).unwrap_or_default();
    let mut new = old;
    let mut changed = Changed::new();
    changed.set(
        ProgramField::SessionHours,
        &mut new.day_start,
        changes.day_start,
    );
    changed.set(
        ProgramField::SessionHours,
        &mut new.day_end,
        changes.day_end,
    );
    changed.set(ProgramField::Lunch, &mut new.lunch, changes.lunch);
    changed.set(
        ProgramField::Changeover,
        &mut new.changeover_minutes,
        changes.changeover_minutes,
    );
    changed.set(
        ProgramField::SpeakerRest,
        &mut new.speaker_rest_minutes,
        changes.speaker_rest_minutes,
    );
    if changed.is_empty() {
        return Ok(Planned::unchanged(ctx, Updated::unchanged(old)));
    }
    check_program(&event, &new)?;
    let tx = Audited::new(ctx)
        .label(format!("Change the program of {}", event.quoted()))
        .require_unchanged(&event_item);
    let tx = match &stored {
        Some((_, item)) => tx.replace(item, new),
        None => tx.put_new(keys::program(ctx, &event.id), new),
    };
    Ok(Planned::new(
        tx,
        Updated {
            record: new,
            changed,
        },
    ))
}
