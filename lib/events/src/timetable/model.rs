//! The engine's input and output types: plain data, serde-serializable, validated by the engine.

use std::fmt;
use std::str::FromStr;

use jiff::civil::Date;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A time of day in whole minutes since midnight, from `00:00` to `24:00` inclusive.
///
/// Serialized as `"HH:MM"`, so a timetable reads naturally in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay(u16);

/// The largest representable time of day: `24:00`, the end of the day.
const END_OF_DAY: u16 = 24 * 60;

impl TimeOfDay {
    /// Midnight at the start of the day.
    pub const MIDNIGHT: Self = Self(0);

    /// The time `hour:minute`, or `None` past `24:00`.
    pub const fn new(hour: u8, minute: u8) -> Option<Self> {
        if minute >= 60 {
            return None;
        }
        Self::from_minutes(hour as u16 * 60 + minute as u16)
    }

    /// The time `minutes` after midnight, or `None` past `24:00`.
    pub const fn from_minutes(minutes: u16) -> Option<Self> {
        if minutes > END_OF_DAY {
            None
        } else {
            Some(Self(minutes))
        }
    }

    /// Minutes since midnight.
    pub const fn minutes(self) -> u16 {
        self.0
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.0 / 60, self.0 % 60)
    }
}

/// Why a `"HH:MM"` string is not a [`TimeOfDay`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a time of day written as HH:MM between 00:00 and 24:00")]
pub struct BadTimeOfDay(pub String);

impl FromStr for TimeOfDay {
    type Err = BadTimeOfDay;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadTimeOfDay(s.to_owned());
        let (h, m) = s.split_once(':').ok_or_else(bad)?;
        if h.is_empty() || h.len() > 2 || m.len() != 2 {
            return Err(bad());
        }
        let h: u8 = h.parse().map_err(|_| bad())?;
        let m: u8 = m.parse().map_err(|_| bad())?;
        Self::new(h, m).ok_or_else(bad)
    }
}

impl Serialize for TimeOfDay {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TimeOfDay {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }
    };
}

string_id!(
    /// Identifies a session within one timetable input.
    SessionId
);
string_id!(
    /// Identifies a room within one timetable input.
    RoomId
);
string_id!(
    /// Identifies a speaker: any person who must be present for a session.
    SpeakerId
);
string_id!(
    /// Names a track: an audience following a series of sessions, which therefore never overlap.
    TrackId
);

/// One day of the event and the hours sessions may run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Day {
    /// The calendar date.
    pub date: Date,
    /// When the first session may start.
    pub start: TimeOfDay,
    /// When the last session must have ended.
    pub end: TimeOfDay,
}

/// A span of time on one date.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// The calendar date.
    pub date: Date,
    /// Start of the span.
    pub start: TimeOfDay,
    /// End of the span (exclusive).
    pub end: TimeOfDay,
}

/// A room sessions can be held in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Room {
    /// Stable id.
    pub id: RoomId,
    /// Name people know the room by.
    pub name: String,
    /// Seats.
    pub capacity: u32,
    /// When the room can be used. Empty means all of every day; otherwise only these
    /// windows (a date with no window means the room is closed that day).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub availability: Vec<Window>,
}

/// Where and when a session is placed: a room, a date and a start time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Placement {
    /// The room.
    pub room: RoomId,
    /// The date.
    pub date: Date,
    /// The start time.
    pub start: TimeOfDay,
}

/// A session to schedule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// Stable id.
    pub id: SessionId,
    /// Title, used in explanations.
    pub title: String,
    /// Length in minutes (at least 1).
    pub duration_minutes: u16,
    /// People who must attend: none of them can be in two places at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub speakers: Vec<SpeakerId>,
    /// The track the session belongs to; sessions of one track never overlap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track: Option<TrackId>,
    /// Sessions that must have finished before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<SessionId>,
    /// Seats the room must have (0 = any room).
    #[serde(default)]
    pub min_capacity: u32,
    /// A specific room the session must use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<RoomId>,
    /// A fixed placement the engine must keep exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<Placement>,
}

/// The lunch break: one slot per day, common to every room and every speaker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lunch {
    /// Lunch may not start before this.
    pub earliest_start: TimeOfDay,
    /// Lunch must be over by this.
    pub latest_end: TimeOfDay,
    /// Length of the break in minutes.
    pub length_minutes: u16,
}

/// Everything the engine needs to build a timetable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimetableInput {
    /// The days of the event.
    pub days: Vec<Day>,
    /// The rooms.
    pub rooms: Vec<Room>,
    /// The sessions to place.
    pub sessions: Vec<Session>,
    /// The lunch break, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lunch: Option<Lunch>,
    /// Minutes a room needs between two consecutive sessions.
    #[serde(default)]
    pub changeover_minutes: u16,
    /// Minutes a speaker needs between two of their sessions on the same day.
    #[serde(default)]
    pub speaker_rest_minutes: u16,
    /// The timetable currently published: when given, the engine keeps every placement that is
    /// still valid and reports what it had to move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Timetable>,
}

/// One session's place in the timetable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The session.
    pub session: SessionId,
    /// The room.
    pub room: RoomId,
    /// The date.
    pub date: Date,
    /// Start time.
    pub start: TimeOfDay,
    /// End time (start plus the session's duration).
    pub end: TimeOfDay,
}

impl Assignment {
    /// The placement part of this assignment (room, date, start).
    pub fn placement(&self) -> Placement {
        Placement {
            room: self.room.clone(),
            date: self.date,
            start: self.start,
        }
    }
}

/// A span of time within one day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// Start.
    pub start: TimeOfDay,
    /// End (exclusive).
    pub end: TimeOfDay,
}

/// What one day of the timetable looks like overall.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayPlan {
    /// The date.
    pub date: Date,
    /// The lunch break chosen for this day (none when no lunch is configured or the day is too
    /// short to contain one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lunch: Option<Slot>,
    /// When the last session of the day ends; none when the day has no session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<TimeOfDay>,
}

/// Something valid but worth a person's attention.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// A room open for an hour or more in the afternoon (after that day's lunch, or after
    /// 13:00 without one) hosts no session then, on a day that has sessions.
    RoomEmptyAfternoon {
        /// The room.
        room: RoomId,
        /// The date.
        date: Date,
    },
    /// A speaker goes from one session to the next with exactly the minimum rest.
    BackToBack {
        /// The speaker.
        speaker: SpeakerId,
        /// The date.
        date: Date,
        /// The earlier session.
        first: SessionId,
        /// The later session.
        second: SessionId,
        /// The gap between them, equal to the minimum rest.
        gap_minutes: u16,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::RoomEmptyAfternoon { room, date } => {
                write!(f, "room {room} is empty all afternoon on {date}")
            }
            Warning::BackToBack {
                speaker,
                date,
                first,
                second,
                gap_minutes,
            } => write!(
                f,
                "{speaker} goes from {first} to {second} on {date} with only {gap_minutes} min between"
            ),
        }
    }
}

/// Why a session of the previous timetable had to move.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MoveReason {
    /// Its date is no longer a day of the event.
    DayRemoved,
    /// It no longer fits inside the day's hours.
    OutsideDay,
    /// Its room no longer exists.
    RoomRemoved,
    /// Its room is not available at that time any more.
    RoomUnavailable,
    /// Its room has fewer seats than the session now needs.
    RoomTooSmall {
        /// Seats needed.
        needed: u32,
        /// Seats the room has.
        capacity: u32,
    },
    /// The session now requires a different room.
    RoomRequired {
        /// The room it must use.
        room: RoomId,
    },
    /// The session is now pinned elsewhere.
    Pinned,
    /// It overlaps the lunch break.
    Lunch,
    /// It clashes with another session that stays (same room, speaker or track).
    Clash {
        /// The session it clashed with.
        with: SessionId,
        /// What they share.
        over: String,
    },
    /// It no longer comes after a session it must follow.
    Dependency {
        /// The session it must follow.
        after: SessionId,
    },
    /// It no longer comes before a session that must follow it.
    Precedes {
        /// The session that must follow it.
        before: SessionId,
    },
    /// It was valid but had to make room for sessions that could not fit otherwise.
    MadeRoom {
        /// The sessions that needed the space.
        for_sessions: Vec<SessionId>,
    },
}

impl fmt::Display for MoveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MoveReason::DayRemoved => f.write_str("its day is no longer part of the event"),
            MoveReason::OutsideDay => f.write_str("it no longer fits in the day's hours"),
            MoveReason::RoomRemoved => f.write_str("its room was removed"),
            MoveReason::RoomUnavailable => f.write_str("its room is not available then"),
            MoveReason::RoomTooSmall { needed, capacity } => {
                write!(f, "it needs {needed} seats and its room has {capacity}")
            }
            MoveReason::RoomRequired { room } => write!(f, "it must now be in room {room}"),
            MoveReason::Pinned => f.write_str("it is now pinned to another place"),
            MoveReason::Lunch => f.write_str("it overlaps the lunch break"),
            MoveReason::Clash { with, over } => write!(f, "it clashed with {with} ({over})"),
            MoveReason::Dependency { after } => write!(f, "it must come after {after}"),
            MoveReason::Precedes { before } => write!(f, "it must come before {before}"),
            MoveReason::MadeRoom { for_sessions } => {
                f.write_str("it moved to make room for ")?;
                for (i, s) in for_sessions.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{s}")?;
                }
                Ok(())
            }
        }
    }
}

/// A session the engine moved relative to the previous timetable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The session.
    pub session: SessionId,
    /// Where it was.
    pub from: Placement,
    /// Where it is now.
    pub to: Placement,
    /// Why it moved.
    pub reason: MoveReason,
}

/// A complete timetable: the engine's output, and the `previous` input of a replan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timetable {
    /// Every session's place, ordered by date, start, room order and session id.
    pub assignments: Vec<Assignment>,
    /// One entry per day of the input, in date order.
    pub days: Vec<DayPlan>,
    /// Things worth a look; none of them breaks a rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Sessions moved relative to the previous timetable, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<Move>,
}

impl Timetable {
    /// The latest finish time over all days, if any session is placed.
    pub fn latest_finish(&self) -> Option<TimeOfDay> {
        self.days.iter().filter_map(|d| d.finish).max()
    }

    /// The assignment of a session, if it has one.
    pub fn assignment(&self, session: &SessionId) -> Option<&Assignment> {
        self.assignments.iter().find(|a| &a.session == session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_of_day_parses_formats_and_round_trips() {
        let t: TimeOfDay = "09:05".parse().expect("valid");
        assert_eq!(t.minutes(), 9 * 60 + 5);
        assert_eq!(t.to_string(), "09:05");
        assert_eq!("24:00".parse::<TimeOfDay>().map(|t| t.minutes()), Ok(1440));
        for bad in ["24:01", "9:5", "09:60", "0900", "", "ab:cd", "-1:00"] {
            assert!(bad.parse::<TimeOfDay>().is_err(), "{bad}");
        }
        let json = serde_json::to_string(&t).expect("serializes");
        assert_eq!(json, "\"09:05\"");
        assert_eq!(serde_json::from_str::<TimeOfDay>(&json).ok(), Some(t));
        assert!(serde_json::from_str::<TimeOfDay>("\"25:00\"").is_err());
    }

    #[test]
    fn move_reasons_read_as_plain_words() {
        let r = MoveReason::MadeRoom {
            for_sessions: vec!["a".into(), "b".into()],
        };
        assert_eq!(r.to_string(), "it moved to make room for a, b");
        let r = MoveReason::RoomTooSmall {
            needed: 80,
            capacity: 40,
        };
        assert_eq!(r.to_string(), "it needs 80 seats and its room has 40");
    }
}
