//! Why an input has no timetable, as values: [`Problem`] (one reason, with the numbers a
//! person needs to fix it) and [`Infeasible`] (all of them). A leaf of the engine: the
//! compiler of the input ([`super::instance`]) reports problems, and [`super::explain`] finds
//! the rest, so neither has to depend on the other.

use std::fmt;

use jiff::civil::Date;
use serde::Serialize;

/// One reason the input cannot be turned into a timetable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// Sessions were given but no day to hold them.
    #[error("there is no day to hold the sessions: add at least one day")]
    NoDays,
    /// Two items share an id.
    #[error("{what} {id} appears twice: give each one its own id")]
    DuplicateId {
        /// `"day"`, `"room"` or `"session"`.
        what: String,
        /// The repeated id (a date for days).
        id: String,
    },
    /// A day or availability window that ends before it starts.
    #[error("{what} ends at {end}, which is not after its start at {start}")]
    BadSpan {
        /// What the span belongs to, in words.
        what: String,
        /// Start.
        start: String,
        /// End.
        end: String,
    },
    /// An availability window on a date that is not a day of the event.
    #[error("room {room} has availability on {date}, which is not a day of the event")]
    WindowOnUnknownDay {
        /// The room.
        room: String,
        /// The date.
        date: Date,
    },
    /// A session of zero minutes.
    #[error("\u{201c}{session}\u{201d} lasts 0 minutes: give it a duration")]
    ZeroDuration {
        /// The session's title.
        session: String,
    },
    /// A lunch window shorter than lunch itself.
    #[error(
        "lunch lasts {length} min but must fit between {earliest} and {latest}: widen the window or shorten lunch"
    )]
    BadLunch {
        /// Lunch length in minutes.
        length: u16,
        /// Earliest start.
        earliest: String,
        /// Latest end.
        latest: String,
    },
    /// A dependency on a session that does not exist.
    #[error("\u{201c}{session}\u{201d} must come after {missing}, which is not a session")]
    UnknownDependency {
        /// The dependant's title.
        session: String,
        /// The unknown id.
        missing: String,
    },
    /// A specific or pinned room that does not exist.
    #[error("\u{201c}{session}\u{201d} asks for room {room}, which does not exist")]
    UnknownRoom {
        /// The session's title.
        session: String,
        /// The unknown room id.
        room: String,
    },
    /// Sessions that must each come after the next, round to the first.
    #[error("{}", cycle_words(.cycle))]
    DependencyCycle {
        /// Titles in order: each must come after the next, and the last after the first.
        cycle: Vec<String>,
    },
    /// No room has enough seats.
    #[error(
        "\u{201c}{session}\u{201d} needs {needed} seats but the largest suitable room has {largest}: add a bigger room or lower the need"
    )]
    NoRoomBigEnough {
        /// The session's title.
        session: String,
        /// Seats needed.
        needed: u32,
        /// Seats in the largest room it could use (0 if none).
        largest: u32,
    },
    /// The session is longer than any stretch of time a suitable room is open.
    #[error("\u{201c}{session}\u{201d} lasts {} but the longest time a suitable room is free in one go is {}: shorten it or open a room longer", hours(*.minutes), hours(*.longest))]
    SessionTooLong {
        /// The session's title.
        session: String,
        /// Its length in minutes.
        minutes: u32,
        /// The longest free stretch, in minutes.
        longest: u32,
    },
    /// A pinned placement that breaks a rule on its own.
    #[error("\u{201c}{session}\u{201d} is pinned to {placement}, but {reason}")]
    PinnedInvalid {
        /// The session's title.
        session: String,
        /// The pinned placement in words.
        placement: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Two pinned sessions that cannot both stand.
    #[error("\u{201c}{first}\u{201d} and \u{201c}{second}\u{201d} are both pinned but {reason}")]
    PinnedClash {
        /// One session's title.
        first: String,
        /// The other's title.
        second: String,
        /// What they clash over.
        reason: String,
    },
    /// A speaker or a track with more sessions than the days can hold.
    #[error("{}", overload_words(.who, *.needed, *.available, *.days, *.rest))]
    Overloaded {
        /// `"speaker X"` or `"track Y"`.
        who: String,
        /// Minutes of sessions, plus the rest they need between them.
        needed: u32,
        /// Minutes available over all days (after lunch).
        available: u32,
        /// Number of days.
        days: usize,
        /// Rest included in `needed`, in minutes.
        rest: u32,
    },
    /// Not enough room-hours for the sessions.
    #[error("{}", short_words(*.short, .days, *.min_capacity, .room.as_deref()))]
    ShortOfRoomHours {
        /// Minutes missing.
        short: u32,
        /// The days concerned, in words.
        days: Vec<String>,
        /// Only rooms with at least this many seats count (0 = all rooms).
        min_capacity: u32,
        /// The one room concerned, when sessions require it specifically.
        room: Option<String>,
    },
    /// The search failed to place some sessions.
    #[error("could not fit {}: {reason}", quoted(.sessions))]
    CouldNotFit {
        /// Titles of the sessions left over.
        sessions: Vec<String>,
        /// What blocked them.
        reason: String,
    },
}

/// Every reason no timetable exists; never empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct Infeasible {
    /// The reasons, most fundamental first.
    pub problems: Vec<Problem>,
}

impl fmt::Display for Infeasible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

fn quoted(titles: &[String]) -> String {
    let parts: Vec<String> = titles
        .iter()
        .map(|t| format!("\u{201c}{t}\u{201d}"))
        .collect();
    parts.join(", ")
}

fn cycle_words(cycle: &[String]) -> String {
    let Some(first) = cycle.first() else {
        return String::from("the sessions depend on each other in a circle");
    };
    if cycle.len() == 1 {
        return format!("\u{201c}{first}\u{201d} must come after itself");
    }
    let mut s = format!(
        "\u{201c}{first}\u{201d} must come after \u{201c}{}\u{201d}",
        cycle[1]
    );
    for t in cycle[2..].iter().chain(std::iter::once(first)) {
        s.push_str(&format!(", which must come after \u{201c}{t}\u{201d}"));
    }
    s
}

/// An overload (a speaker's or a track's hours) in words.
pub(super) fn overload_words(
    who: &str,
    needed: u32,
    available: u32,
    days: usize,
    rest: u32,
) -> String {
    let with_rest = if rest > 0 {
        format!(" (counting {} of rest between them)", hours(rest))
    } else {
        String::new()
    };
    if days == 1 {
        format!(
            "{who} has {} of sessions{with_rest} in a {} day: spread them over more days or give some to someone else",
            hours(needed),
            hours(available)
        )
    } else {
        format!(
            "{who} has {} of sessions{with_rest} but the {days} days allow only {}: add a day or give some to someone else",
            hours(needed),
            hours(available)
        )
    }
}

/// A shortage of room hours in words.
pub(super) fn short_words(
    short: u32,
    days: &[String],
    min_capacity: u32,
    room: Option<&str>,
) -> String {
    let amount = room_hours(short);
    let when = match days {
        [one] => format!("on {one}"),
        _ => format!("over the {} days", days.len()),
    };
    match (room, min_capacity) {
        (Some(r), _) => format!(
            "room {r} is short by {amount} hours {when} for the sessions that must use it: move some elsewhere or shorten them"
        ),
        (None, 0) => format!("short by {amount} room-hours {when}: add a room or shorten sessions"),
        (None, c) => format!(
            "short by {amount} room-hours {when} in rooms with at least {c} seats: add a big room or shorten sessions"
        ),
    }
}

/// Minutes as hours with at most one decimal, rounded up: 120 → "2", 90 → "1.5".
pub(super) fn room_hours(minutes: u32) -> String {
    let tenths = (minutes * 10).div_ceil(60);
    if tenths.is_multiple_of(10) {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

/// Minutes in words: "7 h", "45 min", "1 h 30 min".
pub(crate) fn hours(minutes: u32) -> String {
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}
