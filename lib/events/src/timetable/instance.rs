//! The solver's compiled view of an input: ids resolved to indices, times in minutes, each
//! room's usable windows per day. Building it is where structural problems are found.

use std::collections::BTreeMap;

use jiff::civil::Date;

use super::model::{TimeOfDay, TimetableInput};
use super::problem::Problem;

/// Where a session sits: room index, day index, start in minutes since midnight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Pos {
    pub room: usize,
    pub day: usize,
    pub start: i32,
}

/// Which kinds of constraint a placement query honours (used to diagnose failures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mask(u8);

impl Mask {
    pub const ROOM: Mask = Mask(1);
    pub const SPEAKERS: Mask = Mask(2);
    pub const TRACK: Mask = Mask(4);
    pub const DEPS: Mask = Mask(8);
    pub const ALL: Mask = Mask(15);

    pub const fn with(self, other: Mask) -> Mask {
        Mask(self.0 | other.0)
    }

    pub const fn has(self, other: Mask) -> bool {
        self.0 & other.0 == other.0
    }
}

pub(crate) struct DayI {
    pub date: Date,
    pub start: i32,
    pub end: i32,
    /// Range of lunch starts (inclusive) when this day has a lunch break.
    pub lunch: Option<(i32, i32)>,
}

pub(crate) struct RoomI {
    pub cap: u32,
    /// Usable windows per day, clipped to the day, sorted and merged.
    pub windows: Vec<Vec<(i32, i32)>>,
}

pub(crate) struct SessI {
    pub dur: i32,
    pub min_cap: u32,
    pub required_room: Option<usize>,
    /// Rooms it may use, ascending by (capacity, index): the best fit comes first.
    pub rooms: Vec<usize>,
    pub speakers: Vec<usize>,
    pub track: Option<usize>,
    pub preds: Vec<usize>,
    pub succs: Vec<usize>,
    pub pinned: Option<Pos>,
}

pub(crate) struct Inst {
    pub co: i32,
    pub rest: i32,
    pub lunch_len: i32,
    pub days: Vec<DayI>,
    pub rooms: Vec<RoomI>,
    pub sessions: Vec<SessI>,
    pub session_ids: Vec<String>,
    pub titles: Vec<String>,
    pub room_ids: Vec<String>,
    pub speaker_ids: Vec<String>,
    pub track_ids: Vec<String>,
    room_index: BTreeMap<String, usize>,
    day_index: BTreeMap<Date, usize>,
    session_index: BTreeMap<String, usize>,
}

fn m(t: TimeOfDay) -> i32 {
    i32::from(t.minutes())
}

impl Inst {
    pub fn title(&self, i: usize) -> String {
        if self.titles[i].trim().is_empty() {
            self.session_ids[i].clone()
        } else {
            self.titles[i].clone()
        }
    }

    pub fn room_index(&self, id: &str) -> Option<usize> {
        self.room_index.get(id).copied()
    }

    pub fn day_index(&self, date: Date) -> Option<usize> {
        self.day_index.get(&date).copied()
    }

    pub fn session_index(&self, id: &str) -> Option<usize> {
        self.session_index.get(id).copied()
    }

    /// Resolves ids, converts times and checks the structure (duplicates, unknown ids, empty
    /// spans, cycles). Problems found here stop the engine before any other check.
    pub fn compile(input: &TimetableInput) -> Result<Inst, Vec<Problem>> {
        let mut problems = Vec::new();
        if input.days.is_empty() && !input.sessions.is_empty() {
            problems.push(Problem::NoDays);
        }
        // Days in date order: "a later day" in the dependency rule means a later date.
        let mut sorted_days: Vec<&super::model::Day> = input.days.iter().collect();
        sorted_days.sort_by_key(|d| d.date);
        let mut day_index = BTreeMap::new();
        for (d, day) in sorted_days.iter().enumerate() {
            if day_index.insert(day.date, d).is_some() {
                problems.push(Problem::DuplicateId {
                    what: "day".into(),
                    id: day.date.to_string(),
                });
            }
            if day.end <= day.start {
                problems.push(Problem::BadSpan {
                    what: format!("day {}", day.date),
                    start: day.start.to_string(),
                    end: day.end.to_string(),
                });
            }
        }
        let mut room_index = BTreeMap::new();
        for (r, room) in input.rooms.iter().enumerate() {
            if room_index.insert(room.id.0.clone(), r).is_some() {
                problems.push(Problem::DuplicateId {
                    what: "room".into(),
                    id: room.id.0.clone(),
                });
            }
            for w in &room.availability {
                if w.end <= w.start {
                    problems.push(Problem::BadSpan {
                        what: format!("room {}'s availability on {}", room.id, w.date),
                        start: w.start.to_string(),
                        end: w.end.to_string(),
                    });
                }
                if !day_index.contains_key(&w.date) {
                    problems.push(Problem::WindowOnUnknownDay {
                        room: room.id.0.clone(),
                        date: w.date,
                    });
                }
            }
        }
        let mut session_index = BTreeMap::new();
        for (i, s) in input.sessions.iter().enumerate() {
            if session_index.insert(s.id.0.clone(), i).is_some() {
                problems.push(Problem::DuplicateId {
                    what: "session".into(),
                    id: s.id.0.clone(),
                });
            }
        }
        let lunch_len = input
            .lunch
            .as_ref()
            .map_or(0, |l| i32::from(l.length_minutes));
        if let Some(l) = &input.lunch
            && m(l.latest_end) - m(l.earliest_start) < lunch_len
        {
            problems.push(Problem::BadLunch {
                length: l.length_minutes,
                earliest: l.earliest_start.to_string(),
                latest: l.latest_end.to_string(),
            });
        }

        let titles: Vec<String> = input.sessions.iter().map(|s| s.title.clone()).collect();
        let title = |i: usize| {
            if titles[i].trim().is_empty() {
                input.sessions[i].id.0.clone()
            } else {
                titles[i].clone()
            }
        };

        let days: Vec<DayI> = sorted_days
            .iter()
            .map(|day| {
                let (start, end) = (m(day.start), m(day.end));
                let lunch = input.lunch.as_ref().and_then(|l| {
                    let lo = m(l.earliest_start).max(start);
                    let hi = m(l.latest_end).min(end) - lunch_len;
                    (lunch_len > 0 && lo <= hi).then_some((lo, hi))
                });
                DayI {
                    date: day.date,
                    start,
                    end,
                    lunch,
                }
            })
            .collect();

        let rooms: Vec<RoomI> = input
            .rooms
            .iter()
            .map(|room| {
                let windows = days
                    .iter()
                    .map(|day| {
                        let mut ws: Vec<(i32, i32)> = if room.availability.is_empty() {
                            vec![(day.start, day.end)]
                        } else {
                            room.availability
                                .iter()
                                .filter(|w| w.date == day.date)
                                .map(|w| (m(w.start).max(day.start), m(w.end).min(day.end)))
                                .filter(|&(a, b)| a < b)
                                .collect()
                        };
                        ws.sort_unstable();
                        let mut merged: Vec<(i32, i32)> = Vec::with_capacity(ws.len());
                        for (a, b) in ws {
                            match merged.last_mut() {
                                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                                _ => merged.push((a, b)),
                            }
                        }
                        merged
                    })
                    .collect();
                RoomI {
                    cap: room.capacity,
                    windows,
                }
            })
            .collect();

        let mut speaker_index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut speaker_ids = Vec::new();
        let mut track_index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut track_ids = Vec::new();
        let mut sessions = Vec::with_capacity(input.sessions.len());
        for (i, s) in input.sessions.iter().enumerate() {
            if s.duration_minutes == 0 {
                problems.push(Problem::ZeroDuration { session: title(i) });
            }
            let required_room = match &s.room {
                Some(r) => match room_index.get(&r.0) {
                    Some(&x) => Some(x),
                    None => {
                        problems.push(Problem::UnknownRoom {
                            session: title(i),
                            room: r.0.clone(),
                        });
                        None
                    }
                },
                None => None,
            };
            let mut allowed: Vec<usize> = match required_room {
                Some(r) => vec![r],
                None if s.room.is_some() => vec![],
                None => (0..rooms.len()).collect(),
            };
            allowed.retain(|&r| rooms[r].cap >= s.min_capacity);
            allowed.sort_by_key(|&r| (rooms[r].cap, r));
            let mut speakers = Vec::new();
            for sp in &s.speakers {
                let next = speaker_ids.len();
                let idx = *speaker_index.entry(sp.as_str()).or_insert(next);
                if idx == next {
                    speaker_ids.push(sp.0.clone());
                }
                if !speakers.contains(&idx) {
                    speakers.push(idx);
                }
            }
            let track = s.track.as_ref().map(|t| {
                let next = track_ids.len();
                let idx = *track_index.entry(t.as_str()).or_insert(next);
                if idx == next {
                    track_ids.push(t.0.clone());
                }
                idx
            });
            let mut preds = Vec::new();
            for a in &s.after {
                match session_index.get(&a.0) {
                    Some(&p) => {
                        if !preds.contains(&p) {
                            preds.push(p);
                        }
                    }
                    None => problems.push(Problem::UnknownDependency {
                        session: title(i),
                        missing: a.0.clone(),
                    }),
                }
            }
            let pinned = match &s.pinned {
                None => None,
                Some(p) => {
                    let room = room_index.get(&p.room.0).copied();
                    let day = day_index.get(&p.date).copied();
                    if room.is_none() {
                        problems.push(Problem::UnknownRoom {
                            session: title(i),
                            room: p.room.0.clone(),
                        });
                    }
                    if day.is_none() {
                        problems.push(Problem::PinnedInvalid {
                            session: title(i),
                            placement: format!("{} at {}", p.date, p.start),
                            reason: String::from("that date is not a day of the event"),
                        });
                    }
                    room.zip(day).map(|(room, day)| Pos {
                        room,
                        day,
                        start: m(p.start),
                    })
                }
            };
            sessions.push(SessI {
                dur: i32::from(s.duration_minutes),
                min_cap: s.min_capacity,
                required_room,
                rooms: allowed,
                speakers,
                track,
                preds,
                succs: Vec::new(),
                pinned,
            });
        }
        for i in 0..sessions.len() {
            for k in 0..sessions[i].preds.len() {
                let p = sessions[i].preds[k];
                sessions[p].succs.push(i);
            }
        }
        if problems.is_empty()
            && let Some(cycle) = find_cycle(&sessions)
        {
            problems.push(Problem::DependencyCycle {
                cycle: cycle.into_iter().map(title).collect(),
            });
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Inst {
            co: i32::from(input.changeover_minutes),
            rest: i32::from(input.speaker_rest_minutes),
            lunch_len,
            days,
            rooms,
            sessions,
            session_ids: input.sessions.iter().map(|s| s.id.0.clone()).collect(),
            titles,
            room_ids: input.rooms.iter().map(|r| r.id.0.clone()).collect(),
            speaker_ids,
            track_ids,
            room_index,
            day_index,
            session_index,
        })
    }

    /// Longest chain of durations from each session through everything that must follow it.
    pub fn tails(&self) -> Vec<i32> {
        let n = self.sessions.len();
        let mut tail = vec![-1; n];
        fn visit(inst: &Inst, i: usize, tail: &mut Vec<i32>) -> i32 {
            if tail[i] >= 0 {
                return tail[i];
            }
            let mut best = 0;
            for k in 0..inst.sessions[i].succs.len() {
                let q = inst.sessions[i].succs[k];
                best = best.max(visit(inst, q, tail));
            }
            tail[i] = best + inst.sessions[i].dur;
            tail[i]
        }
        for i in 0..n {
            visit(self, i, &mut tail);
        }
        tail
    }
}

/// A dependency cycle as session indices, each one having to come after the next (the last
/// after the first); `None` when the dependencies form a DAG.
fn find_cycle(sessions: &[SessI]) -> Option<Vec<usize>> {
    // 0 = unvisited, 1 = on the stack, 2 = done. Iterative DFS along "must come after" edges.
    let n = sessions.len();
    let mut mark = vec![0u8; n];
    for root in 0..n {
        if mark[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&p) = sessions[node].preds.get(*next) {
                *next += 1;
                match mark[p] {
                    0 => {
                        mark[p] = 1;
                        stack.push((p, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(x, _)| x == p).unwrap_or(0);
                        return Some(stack[from..].iter().map(|&(x, _)| x).collect());
                    }
                    _ => {}
                }
            } else {
                mark[node] = 2;
                stack.pop();
            }
        }
    }
    None
}
