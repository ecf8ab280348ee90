//! The timetable engine: a pure, deterministic function from rooms, sessions and rules to a
//! timetable ([`solve`]), an independent checker ([`check`]) and an instance generator for
//! tests and benchmarks ([`generator`]).
//!
//! # The rules, precisely
//!
//! All times are whole minutes; an interval `[start, end)` excludes its end.
//!
//! - **Day**: a session runs on one day, within `[day.start, day.end)`.
//! - **Room availability**: a room with no availability windows is open all day on every day;
//!   otherwise a session must lie entirely inside one window (windows that touch or overlap on
//!   the same date count as one).
//! - **Room fit**: the room has at least `min_capacity` seats and, if the session names a room,
//!   is that room.
//! - **Room changeover**: two sessions in the same room on the same day are at least
//!   `changeover_minutes` apart (end of one to start of the next), lunch or not between them;
//!   a session may start the minute lunch ends (lunch itself needs no changeover).
//! - **Speakers**: two sessions sharing a speaker on the same day are at least
//!   `speaker_rest_minutes` apart, so in particular never overlap.
//! - **Tracks**: two sessions of the same track never overlap (they may touch).
//! - **Dependencies**: if B must come after A, then B is on a later date than A, or on the same
//!   day with `B.start >= A.end + gap`, where `gap` is `changeover_minutes` when they share the
//!   room and 0 otherwise.
//! - **Lunch**: on every day whose hours leave room for it inside the lunch window, the engine
//!   picks one lunch slot of `length_minutes` inside `[earliest_start, latest_end]` and the
//!   day's hours; the slot is the same for every room and every speaker, and no session overlaps
//!   it. A day too short to hold lunch in the window (a half day) has none.
//! - **Pinned**: a pinned session is exactly at its pinned room, date and start.
//!
//! # What the engine optimises
//!
//! Among valid timetables it looks for the earliest latest finish time of any day, then the
//! earliest finishes of the other days, then sessions as early as possible.
//!
//! # Replanning
//!
//! Set [`TimetableInput::previous`] to the timetable in force. A previous placement stays when,
//! against the new input, its date, room, seats, availability and the day's hours still suit
//! it, it is clear of lunch, and it breaks no rule with the pinned sessions and the other
//! placements that stay (taken in time order, so of two that now clash the later one moves).
//! The previous lunch slot of a day stays while it is still inside the lunch window. Everything
//! else is placed around what stays. Only when the sessions cannot all fit that way may
//! still-valid placements move, as few as possible ([`MoveReason::MadeRoom`]).
//! [`Timetable::moved`] lists every session whose placement changed, with the reason.
//!
//! # Determinism
//!
//! The search is pseudo-random with a fixed seed and a fixed number of rounds; it reads no
//! clock. The same input gives byte-identical output.

mod checker;
mod explain;
pub mod generator;
mod instance;
mod model;
mod problem;
mod replan;
mod report;
mod rng;
mod solver;

pub use checker::{Violation, check};
pub use model::{
    Assignment, BadTimeOfDay, Day, DayPlan, Lunch, Move, MoveReason, Placement, Room, RoomId,
    Session, SessionId, Slot, SpeakerId, TimeOfDay, Timetable, TimetableInput, TrackId, Warning,
    Window,
};
pub use problem::{Infeasible, Problem};

use instance::{Inst, Pos};
use solver::Fixed;

/// Builds a timetable for `input`, or explains in plain words why none exists.
///
/// Pure and deterministic. When `input.previous` is set, this is a replan: every previous
/// placement that is still valid stays, and [`Timetable::moved`] lists the others with reasons.
pub fn solve(input: &TimetableInput) -> Result<Timetable, Infeasible> {
    let inst = Inst::compile(input).map_err(|problems| Infeasible { problems })?;
    let problems = explain::prechecks(&inst, input);
    if !problems.is_empty() {
        return Err(Infeasible { problems });
    }
    let n = inst.sessions.len();
    let pinned: Vec<Option<Pos>> = inst.sessions.iter().map(|s| s.pinned).collect();
    let carry = replan::carry(&inst, input);

    let mut fixed = Fixed {
        pos: pinned.clone(),
        lunch: vec![None; inst.days.len()],
        preferred: vec![None; n],
    };
    if let Some(c) = &carry {
        for s in 0..n {
            if fixed.pos[s].is_none() {
                fixed.pos[s] = c.keep[s];
            }
        }
        fixed.lunch.clone_from(&c.lunch);
    }
    let mut state = solver::search(&inst, &fixed);
    let mut made_room = Vec::new();
    let unplaced =
        |st: &solver::State| -> Vec<usize> { (0..n).filter(|&s| st.pos[s].is_none()).collect() };
    if let Some(c) = &carry {
        let left = unplaced(&state);
        let locked_any = (0..n).any(|s| pinned[s].is_none() && c.keep[s].is_some());
        if !left.is_empty() && locked_any {
            // Keeping every still-valid placement leaves no room: let them move, as few as
            // possible.
            let relaxed = Fixed {
                pos: pinned.clone(),
                lunch: vec![None; inst.days.len()],
                preferred: (0..n)
                    .map(|s| if pinned[s].is_none() { c.keep[s] } else { None })
                    .collect(),
            };
            let second = solver::search(&inst, &relaxed);
            if unplaced(&second).len() < left.len() {
                made_room = left;
                state = second;
            }
        }
    }
    let left = unplaced(&state);
    if !left.is_empty() {
        return Err(Infeasible {
            problems: vec![explain::could_not_fit(&inst, &state, &left)],
        });
    }
    let pos: Vec<Pos> = state.pos.iter().flatten().copied().collect();
    Ok(report::build(
        &inst,
        &pos,
        &state.lunch,
        carry.as_ref(),
        &made_room,
    ))
}
