//! The independent checker: validates a timetable against its input, rule by rule.
//!
//! Written separately from the solver on purpose and sharing no helper with it (only the
//! public data types): it works on the ids and times as written, compares every pair of
//! assignments directly, and so catches a bug in the solver's indexing or bookkeeping instead
//! of repeating it. The service runs it before saving anything.

use std::collections::BTreeMap;
use std::fmt;

use jiff::civil::Date;
use serde::Serialize;

use super::model::{
    Assignment, Room, RoomId, Session, SessionId, SpeakerId, TimeOfDay, Timetable, TimetableInput,
    TrackId,
};

/// One broken rule in a timetable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Violation {
    /// A session of the input has no assignment.
    MissingSession {
        /// The session.
        session: SessionId,
    },
    /// An assignment names a session the input does not have.
    UnknownSession {
        /// The session id as assigned.
        session: SessionId,
    },
    /// A session is assigned more than once.
    DuplicateSession {
        /// The session.
        session: SessionId,
    },
    /// An assignment names a room the input does not have.
    UnknownRoom {
        /// The session.
        session: SessionId,
        /// The room id as assigned.
        room: RoomId,
    },
    /// An assignment is on a date that is not a day of the event.
    UnknownDay {
        /// The session.
        session: SessionId,
        /// The date as assigned.
        date: Date,
    },
    /// The end is not the start plus the session's duration.
    WrongEnd {
        /// The session.
        session: SessionId,
        /// Start plus duration.
        expected: u32,
        /// The end written, in minutes since midnight.
        found: u32,
    },
    /// The session runs outside the day's hours.
    OutsideDay {
        /// The session.
        session: SessionId,
    },
    /// The room is not open for the whole session.
    RoomClosed {
        /// The session.
        session: SessionId,
        /// The room.
        room: RoomId,
    },
    /// The room has too few seats.
    RoomTooSmall {
        /// The session.
        session: SessionId,
        /// The room.
        room: RoomId,
        /// Seats needed.
        needed: u32,
        /// Seats it has.
        capacity: u32,
    },
    /// The session is not in the room it requires.
    WrongRoom {
        /// The session.
        session: SessionId,
        /// The room it requires.
        required: RoomId,
    },
    /// A pinned session is not at its pinned placement.
    PinnedMoved {
        /// The session.
        session: SessionId,
    },
    /// Two sessions in one room overlap or leave less than the changeover between them.
    RoomClash {
        /// The room.
        room: RoomId,
        /// The earlier-starting session.
        first: SessionId,
        /// The other.
        second: SessionId,
    },
    /// A speaker is in two sessions at once.
    SpeakerClash {
        /// The speaker.
        speaker: SpeakerId,
        /// One session.
        first: SessionId,
        /// The other.
        second: SessionId,
    },
    /// A speaker has less than the minimum rest between two sessions.
    SpeakerRest {
        /// The speaker.
        speaker: SpeakerId,
        /// The earlier session.
        first: SessionId,
        /// The later session.
        second: SessionId,
        /// Minutes between them.
        gap: u32,
    },
    /// Two sessions of a track overlap.
    TrackClash {
        /// The track.
        track: TrackId,
        /// One session.
        first: SessionId,
        /// The other.
        second: SessionId,
    },
    /// A session starts before a session it must follow has ended (plus changeover in the
    /// same room).
    Dependency {
        /// The dependant.
        session: SessionId,
        /// The session it must follow.
        after: SessionId,
    },
    /// A day that must have a lunch break has none.
    LunchMissing {
        /// The date.
        date: Date,
    },
    /// A lunch break of the wrong length, outside its window or the day, or on a day without one.
    LunchInvalid {
        /// The date.
        date: Date,
    },
    /// A session overlaps lunch.
    DuringLunch {
        /// The session.
        session: SessionId,
    },
    /// The day list does not match the input's days.
    DaysMismatch,
    /// A day's reported finish is not the end of its last session.
    WrongFinish {
        /// The date.
        date: Date,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The derived JSON names the rule and the items; that is the clearest text for logs.
        match serde_json::to_string(self) {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "{self:?}"),
        }
    }
}

fn mins(t: TimeOfDay) -> u32 {
    u32::from(t.minutes())
}

/// One assignment, resolved against the input.
struct Placed<'a> {
    a: &'a Assignment,
    s: &'a Session,
    start: u32,
    end: u32,
}

/// Validates `timetable` against every rule of `input`; an empty list means it is valid.
///
/// Moves and warnings are not checked: they describe a timetable, they do not constrain it.
pub fn check(input: &TimetableInput, timetable: &Timetable) -> Vec<Violation> {
    let mut out = Vec::new();
    let sessions: BTreeMap<&str, &Session> =
        input.sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let rooms: BTreeMap<&str, &Room> = input.rooms.iter().map(|r| (r.id.as_str(), r)).collect();
    let days: BTreeMap<Date, (u32, u32)> = input
        .days
        .iter()
        .map(|d| (d.date, (mins(d.start), mins(d.end))))
        .collect();

    // Coverage.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for a in &timetable.assignments {
        *seen.entry(a.session.as_str()).or_insert(0) += 1;
    }
    for s in &input.sessions {
        match seen.get(s.id.as_str()) {
            None => out.push(Violation::MissingSession {
                session: s.id.clone(),
            }),
            Some(&k) if k > 1 => out.push(Violation::DuplicateSession {
                session: s.id.clone(),
            }),
            _ => {}
        }
    }

    // Each assignment on its own.
    let mut placed: Vec<Placed> = Vec::new();
    for a in &timetable.assignments {
        let Some(&s) = sessions.get(a.session.as_str()) else {
            out.push(Violation::UnknownSession {
                session: a.session.clone(),
            });
            continue;
        };
        let start = mins(a.start);
        let end = start + u32::from(s.duration_minutes);
        if mins(a.end) != end {
            out.push(Violation::WrongEnd {
                session: s.id.clone(),
                expected: end,
                found: mins(a.end),
            });
        }
        match days.get(&a.date) {
            None => out.push(Violation::UnknownDay {
                session: s.id.clone(),
                date: a.date,
            }),
            Some(&(open, close)) => {
                if start < open || end > close {
                    out.push(Violation::OutsideDay {
                        session: s.id.clone(),
                    });
                }
            }
        }
        match rooms.get(a.room.as_str()) {
            None => out.push(Violation::UnknownRoom {
                session: s.id.clone(),
                room: a.room.clone(),
            }),
            Some(room) => {
                if !room_open(room, a.date, start, end) {
                    out.push(Violation::RoomClosed {
                        session: s.id.clone(),
                        room: a.room.clone(),
                    });
                }
                if room.capacity < s.min_capacity {
                    out.push(Violation::RoomTooSmall {
                        session: s.id.clone(),
                        room: a.room.clone(),
                        needed: s.min_capacity,
                        capacity: room.capacity,
                    });
                }
            }
        }
        if let Some(required) = &s.room
            && *required != a.room
        {
            out.push(Violation::WrongRoom {
                session: s.id.clone(),
                required: required.clone(),
            });
        }
        if let Some(pin) = &s.pinned
            && (pin.room != a.room || pin.date != a.date || pin.start != a.start)
        {
            out.push(Violation::PinnedMoved {
                session: s.id.clone(),
            });
        }
        placed.push(Placed { a, s, start, end });
    }

    // Every pair on the same date.
    let changeover = u32::from(input.changeover_minutes);
    let rest = u32::from(input.speaker_rest_minutes);
    for (i, x) in placed.iter().enumerate() {
        for y in &placed[i + 1..] {
            let (first, second) = if (y.start, y.end) < (x.start, x.end) {
                (y, x)
            } else {
                (x, y)
            };
            if x.a.date == y.a.date {
                // Gap from the end of the earlier one to the start of the later one; None when
                // they overlap.
                let gap = second.start.checked_sub(first.end);
                if x.a.room == y.a.room && gap.is_none_or(|g| g < changeover) {
                    out.push(Violation::RoomClash {
                        room: x.a.room.clone(),
                        first: first.s.id.clone(),
                        second: second.s.id.clone(),
                    });
                }
                for sp in &x.s.speakers {
                    if !y.s.speakers.contains(sp) {
                        continue;
                    }
                    match gap {
                        None => out.push(Violation::SpeakerClash {
                            speaker: sp.clone(),
                            first: first.s.id.clone(),
                            second: second.s.id.clone(),
                        }),
                        Some(g) if g < rest => out.push(Violation::SpeakerRest {
                            speaker: sp.clone(),
                            first: first.s.id.clone(),
                            second: second.s.id.clone(),
                            gap: g,
                        }),
                        Some(_) => {}
                    }
                }
                if let (Some(tx), Some(ty)) = (&x.s.track, &y.s.track)
                    && tx == ty
                    && gap.is_none()
                {
                    out.push(Violation::TrackClash {
                        track: tx.clone(),
                        first: first.s.id.clone(),
                        second: second.s.id.clone(),
                    });
                }
            }
            for (dep, pre) in [(x, y), (y, x)] {
                if dep.s.after.contains(&pre.s.id) && !follows(dep, pre, changeover) {
                    out.push(Violation::Dependency {
                        session: dep.s.id.clone(),
                        after: pre.s.id.clone(),
                    });
                }
            }
        }
    }

    // Days, lunch and finish times.
    let same_days = timetable.days.len() == input.days.len()
        && input
            .days
            .iter()
            .all(|d| timetable.days.iter().filter(|p| p.date == d.date).count() == 1);
    if !same_days {
        out.push(Violation::DaysMismatch);
    }
    for plan in &timetable.days {
        let Some(&(open, close)) = days.get(&plan.date) else {
            continue;
        };
        let must_lunch = input.lunch.as_ref().is_some_and(|l| {
            let len = u32::from(l.length_minutes);
            let from = mins(l.earliest_start).max(open);
            let to = mins(l.latest_end).min(close);
            len > 0 && from + len <= to
        });
        match (&input.lunch, plan.lunch) {
            (Some(l), Some(slot)) => {
                let (ls, le) = (mins(slot.start), mins(slot.end));
                let ok = must_lunch
                    && le == ls + u32::from(l.length_minutes)
                    && ls >= mins(l.earliest_start).max(open)
                    && le <= mins(l.latest_end).min(close);
                if !ok {
                    out.push(Violation::LunchInvalid { date: plan.date });
                }
                for p in placed.iter().filter(|p| p.a.date == plan.date) {
                    if p.start < le && ls < p.end {
                        out.push(Violation::DuringLunch {
                            session: p.s.id.clone(),
                        });
                    }
                }
            }
            (None, Some(_)) => out.push(Violation::LunchInvalid { date: plan.date }),
            (_, None) => {
                if must_lunch {
                    out.push(Violation::LunchMissing { date: plan.date });
                }
            }
        }
        let finish = placed
            .iter()
            .filter(|p| p.a.date == plan.date)
            .map(|p| p.end)
            .max();
        if finish != plan.finish.map(mins) {
            out.push(Violation::WrongFinish { date: plan.date });
        }
    }
    out
}

/// Whether `dep` starts after `pre` is over: a later date, or the same date with at least
/// the changeover between them when they share the room.
fn follows(dep: &Placed, pre: &Placed, changeover: u32) -> bool {
    if dep.a.date != pre.a.date {
        return dep.a.date > pre.a.date;
    }
    let needed = if dep.a.room == pre.a.room {
        changeover
    } else {
        0
    };
    dep.start >= pre.end + needed
}

/// Whether `room` is open for all of `[start, end)` on `date`: windows on the date are joined
/// where they touch or overlap, and one of the joined spans must contain the session.
fn room_open(room: &Room, date: Date, start: u32, end: u32) -> bool {
    if room.availability.is_empty() {
        return true;
    }
    let mut spans: Vec<(u32, u32)> = room
        .availability
        .iter()
        .filter(|w| w.date == date)
        .map(|w| (mins(w.start), mins(w.end)))
        .collect();
    spans.sort_unstable();
    let mut joined: Vec<(u32, u32)> = Vec::new();
    for (a, b) in spans {
        if let Some(last) = joined.last_mut()
            && a <= last.1
        {
            last.1 = last.1.max(b);
            continue;
        }
        joined.push((a, b));
    }
    joined.iter().any(|&(a, b)| a <= start && end <= b)
}
