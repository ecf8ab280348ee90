//! Turns a finished search state into the public [`Timetable`]: assignments in a stable order,
//! each day's lunch and finish, the warnings and the list of moves.

use super::instance::{Inst, Pos};
use super::model::{
    Assignment, DayPlan, Move, MoveReason, Placement, RoomId, SessionId, Slot, SpeakerId,
    TimeOfDay, Timetable, Warning,
};
use super::replan::Carry;

/// When no lunch is held, the afternoon starts at 13:00.
const AFTERNOON: i32 = 13 * 60;

/// A room open for less than this in the afternoon is not worth a warning.
const EMPTY_AFTERNOON_MIN: i32 = 60;

fn tod(m: i32) -> TimeOfDay {
    // The solver only produces times inside a day, which lies within 00:00–24:00.
    TimeOfDay::from_minutes(m.clamp(0, 24 * 60) as u16).unwrap_or(TimeOfDay::MIDNIGHT)
}

fn placement(inst: &Inst, p: Pos) -> Placement {
    Placement {
        room: RoomId(inst.room_ids[p.room].clone()),
        date: inst.days[p.day].date,
        start: tod(p.start),
    }
}

/// Builds the output. `pos` must hold a placement for every session.
pub(crate) fn build(
    inst: &Inst,
    pos: &[Pos],
    lunch: &[Option<i32>],
    carry: Option<&Carry>,
    made_room: &[usize],
) -> Timetable {
    let mut order: Vec<usize> = (0..pos.len()).collect();
    order.sort_by(|&x, &y| {
        let (p, q) = (pos[x], pos[y]);
        (p.day, p.start, p.room, &inst.session_ids[x]).cmp(&(
            q.day,
            q.start,
            q.room,
            &inst.session_ids[y],
        ))
    });
    let assignments = order
        .iter()
        .map(|&s| {
            let p = pos[s];
            Assignment {
                session: SessionId(inst.session_ids[s].clone()),
                room: RoomId(inst.room_ids[p.room].clone()),
                date: inst.days[p.day].date,
                start: tod(p.start),
                end: tod(p.start + inst.sessions[s].dur),
            }
        })
        .collect();
    let days = inst
        .days
        .iter()
        .enumerate()
        .map(|(d, day)| DayPlan {
            date: day.date,
            lunch: lunch[d].map(|l| Slot {
                start: tod(l),
                end: tod(l + inst.lunch_len),
            }),
            finish: (0..pos.len())
                .filter(|&s| pos[s].day == d)
                .map(|s| pos[s].start + inst.sessions[s].dur)
                .max()
                .map(tod),
        })
        .collect();
    Timetable {
        assignments,
        days,
        warnings: warnings(inst, pos, lunch),
        moved: moves(inst, pos, carry, made_room),
    }
}

fn warnings(inst: &Inst, pos: &[Pos], lunch: &[Option<i32>]) -> Vec<Warning> {
    let mut out = Vec::new();
    for (d, day) in inst.days.iter().enumerate() {
        if !pos.iter().any(|p| p.day == d) {
            continue;
        }
        let afternoon = lunch[d].map_or(AFTERNOON, |l| l + inst.lunch_len);
        for (r, room) in inst.rooms.iter().enumerate() {
            let open: i32 = room.windows[d]
                .iter()
                .map(|&(a, b)| (b - a.max(afternoon)).max(0))
                .sum();
            let used = (0..pos.len()).any(|s| {
                pos[s].day == d
                    && pos[s].room == r
                    && pos[s].start + inst.sessions[s].dur > afternoon
            });
            if open >= EMPTY_AFTERNOON_MIN && !used {
                out.push(Warning::RoomEmptyAfternoon {
                    room: RoomId(inst.room_ids[r].clone()),
                    date: day.date,
                });
            }
        }
    }
    for (sp, name) in inst.speaker_ids.iter().enumerate() {
        for (d, day) in inst.days.iter().enumerate() {
            let mut talks: Vec<(i32, i32, usize)> = (0..pos.len())
                .filter(|&s| pos[s].day == d && inst.sessions[s].speakers.contains(&sp))
                .map(|s| (pos[s].start, pos[s].start + inst.sessions[s].dur, s))
                .collect();
            talks.sort_unstable();
            for w in talks.windows(2) {
                let gap = w[1].0 - w[0].1;
                if gap == inst.rest {
                    out.push(Warning::BackToBack {
                        speaker: SpeakerId(name.clone()),
                        date: day.date,
                        first: SessionId(inst.session_ids[w[0].2].clone()),
                        second: SessionId(inst.session_ids[w[1].2].clone()),
                        gap_minutes: gap.max(0) as u16,
                    });
                }
            }
        }
    }
    out
}

fn moves(inst: &Inst, pos: &[Pos], carry: Option<&Carry>, made_room: &[usize]) -> Vec<Move> {
    let Some(carry) = carry else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (s, &p) in pos.iter().enumerate() {
        let Some(from) = &carry.from[s] else { continue };
        let to = placement(inst, p);
        if *from == to {
            continue;
        }
        let reason = carry.reasons[s]
            .clone()
            .unwrap_or_else(|| MoveReason::MadeRoom {
                for_sessions: made_room
                    .iter()
                    .map(|&u| SessionId(inst.session_ids[u].clone()))
                    .collect(),
            });
        out.push(Move {
            session: SessionId(inst.session_ids[s].clone()),
            from: from.clone(),
            to,
            reason,
        });
    }
    out.sort_by(|a, b| (&a.to, &a.session).cmp(&(&b.to, &b.session)));
    out
}
