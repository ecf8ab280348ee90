//! The reference instances of the timetable engine's quality comparison (issue #16), shared by
//! `tests/timetable_fingerprints.rs` and `examples/timetable_quality.rs` (`#[path]` modules).
//!
//! The instances: the benchmark suite, the 30 small random instances of the ILP comparison
//! (`bench/timetable_ilp`, the `timetable_dump` example's `RANDOM` = 30), a replan of every
//! third of those after an edit, and (optionally) the 24 large generated instances of
//! `generator::large_instance`. For each, the quality of what the engine found: whether it found
//! a timetable, how many sessions it left out, how many it moved (replans), the latest finish
//! of any day, the sum of the days' finishes and the sum of the sessions' ends, in minutes.

#![allow(dead_code)]

use steward_events::timetable::generator;
use steward_events::timetable::{Infeasible, Problem, Timetable, TimetableInput, solve};

/// Large generated instances in the comparison (`generator::large_instance(0..LARGE)`).
pub const LARGE: u64 = 24;

/// `input` edited one way (as the replanning property test does), to replan from `previous`.
pub fn edited(input: &TimetableInput, previous: &Timetable, edit: usize) -> TimetableInput {
    with_edit(
        input,
        previous,
        (edit * 5 + 1) % input.sessions.len(),
        edit % 4,
    )
}

/// `input` with edit `edit` (0: a copy of session `k` added, 1: session `k` 30 minutes longer,
/// 2: the next session's first speaker also speaks in session `k`, 3: the last room removed)
/// and `previous` to replan from. Shared by the replanning property test and [`edited`].
pub fn with_edit(
    input: &TimetableInput,
    previous: &Timetable,
    k: usize,
    edit: usize,
) -> TimetableInput {
    let mut changed = input.clone();
    match edit {
        0 => {
            let mut s = changed.sessions[k].clone();
            s.id = "added".into();
            s.pinned = None;
            s.after.clear();
            changed.sessions.push(s);
        }
        1 => changed.sessions[k].duration_minutes += 30,
        2 => {
            let other = changed.sessions[(k + 1) % changed.sessions.len()]
                .speakers
                .first()
                .cloned();
            if let Some(sp) = other {
                changed.sessions[k].speakers.push(sp);
                changed.sessions[k].speakers.dedup();
            }
        }
        _ => {
            if changed.rooms.len() > 1 {
                let gone = changed.rooms.pop().expect("has rooms");
                for s in &mut changed.sessions {
                    if s.room.as_ref() == Some(&gone.id) {
                        s.room = None;
                    }
                }
            }
        }
    }
    changed.previous = Some(previous.clone());
    changed
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What the engine found on one instance, in the objective's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quality {
    pub name: String,
    /// `feasible`, `left-out` (the search left sessions out) or `precheck` (no search ran).
    pub verdict: String,
    pub unplaced: usize,
    pub moved: usize,
    pub latest: i32,
    pub day_sum: i32,
    pub end_sum: i64,
}

impl Quality {
    pub fn of(name: &str, input: &TimetableInput, result: &Result<Timetable, Infeasible>) -> Self {
        let mut q = Quality {
            name: name.to_string(),
            verdict: String::from("feasible"),
            unplaced: 0,
            moved: 0,
            latest: 0,
            day_sum: 0,
            end_sum: 0,
        };
        match result {
            Ok(tt) => {
                let m = |t: steward_events::timetable::TimeOfDay| i32::from(t.minutes());
                q.moved = tt.moved.len();
                q.latest = tt.latest_finish().map_or(0, m);
                q.day_sum = tt.days.iter().filter_map(|d| d.finish).map(m).sum();
                q.end_sum = tt.assignments.iter().map(|a| i64::from(m(a.end))).sum();
            }
            Err(e) => {
                let left = e.problems.iter().find_map(|p| match p {
                    Problem::CouldNotFit { sessions, .. } => Some(sessions.len()),
                    _ => None,
                });
                match left {
                    Some(k) => {
                        q.verdict = String::from("left-out");
                        q.unplaced = k;
                    }
                    None => {
                        q.verdict = String::from("precheck");
                        q.unplaced = input.sessions.len();
                    }
                }
            }
        }
        q
    }

    /// The part of the objective that must not get worse, compared lexicographically as the
    /// engine does: sessions left out, sessions moved, latest finish, sum of day finishes.
    pub fn primary(&self) -> (usize, usize, i32, i32) {
        (self.unplaced, self.moved, self.latest, self.day_sum)
    }

    pub fn line(&self) -> String {
        format!(
            "{:<16} {:<9} {:>3} {:>3} {:>5} {:>6} {:>8}",
            self.name,
            self.verdict,
            self.unplaced,
            self.moved,
            self.latest,
            self.day_sum,
            self.end_sum
        )
    }

    pub fn parse(line: &str) -> Option<Self> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 7 {
            return None;
        }
        Some(Quality {
            name: f[0].to_string(),
            verdict: f[1].to_string(),
            unplaced: f[2].parse().ok()?,
            moved: f[3].parse().ok()?,
            latest: f[4].parse().ok()?,
            day_sum: f[5].parse().ok()?,
            end_sum: f[6].parse().ok()?,
        })
    }
}

/// One solved reference instance.
pub struct Solved {
    pub name: String,
    pub input: TimetableInput,
    pub result: Result<Timetable, Infeasible>,
    /// FNV-1a of the whole result as JSON (timetable or explanation).
    pub hash: u64,
}

impl Solved {
    pub fn quality(&self) -> Quality {
        Quality::of(&self.name, &self.input, &self.result)
    }
}

fn solved(name: String, input: TimetableInput) -> Solved {
    let result = solve(&input);
    let json = serde_json::to_string(&result).expect("serializes");
    Solved {
        name,
        input,
        result,
        hash: fnv1a(json.as_bytes()),
    }
}

/// Solves the reference instances in order: the suite, the random instances each followed by
/// its replan (every third), then with `large` the large instances.
pub fn solve_all(large: bool) -> Vec<Solved> {
    let mut out = Vec::new();
    for (name, input) in generator::benchmark_suite() {
        out.push(solved(name, input));
    }
    for k in 0..30u64 {
        let (name, input) = generator::random_instance(k);
        let first = solved(name.clone(), input.clone());
        let replan = match &first.result {
            // Every third one is replanned after an edit (the previous timetable in force).
            Ok(tt) if k % 3 == 0 => Some(edited(&input, tt, k as usize / 3)),
            _ => None,
        };
        out.push(first);
        if let Some(changed) = replan {
            out.push(solved(format!("{name}-replan"), changed));
        }
    }
    if large {
        for k in 0..LARGE {
            let (name, input) = generator::large_instance(k);
            out.push(solved(name, input));
        }
    }
    out
}
