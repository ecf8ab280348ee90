//! Minimal change: which placements of the previous timetable are still valid (and so stay,
//! locked), and why each of the others must move.
//!
//! A previous placement stays when, against the new input, its date is still a day, its room
//! still exists, suits the session and is open for the whole session inside the day's hours,
//! it is clear of the day's lunch, and it breaks no rule with the pinned sessions and with the
//! previous placements that stay. Previous placements are considered in time order, so when
//! two of them now clash, the later one moves. The previous lunch slot of a day stays when it
//! is still inside the lunch window and clear of pinned sessions; otherwise the new slot is the
//! one that displaces the fewest previous placements (then the nearest to the old one). A day
//! that had no lunch before gets whichever slot the search finds best.

use super::instance::{Inst, Pos};
use super::model::{MoveReason, Placement, SessionId, TimeOfDay, TimetableInput};

/// What the previous timetable contributes to a replan.
pub(crate) struct Carry {
    /// Each current session's previous placement, as it was written.
    pub from: Vec<Option<Placement>>,
    /// Why a previous placement cannot stay (`None`: it stays, or there was none).
    pub reasons: Vec<Option<MoveReason>>,
    /// Previous placements that stay.
    pub keep: Vec<Option<Pos>>,
    /// Lunch start per day that stays or was chosen to displace the fewest placements.
    pub lunch: Vec<Option<i32>>,
}

fn minutes(t: TimeOfDay) -> i32 {
    i32::from(t.minutes())
}

/// Sorts the previous timetable into what stays and what must move; `None` without one.
pub(crate) fn carry(inst: &Inst, input: &TimetableInput) -> Option<Carry> {
    let previous = input.previous.as_ref()?;
    let n = inst.sessions.len();
    let mut from: Vec<Option<Placement>> = vec![None; n];
    for a in &previous.assignments {
        if let Some(s) = inst.session_index(a.session.as_str()) {
            from[s] = Some(a.placement());
        }
    }
    let mut reasons: Vec<Option<MoveReason>> = vec![None; n];
    let mut candidate: Vec<Option<Pos>> = vec![None; n];
    for s in 0..n {
        let Some(pl) = &from[s] else { continue };
        match individually_valid(inst, s, pl) {
            Ok(p) => candidate[s] = Some(p),
            Err(reason) => reasons[s] = Some(reason),
        }
    }

    // Lunch per day.
    let mut lunch = vec![None; inst.days.len()];
    for (d, day) in inst.days.iter().enumerate() {
        let Some((lo, hi)) = day.lunch else { continue };
        let len = inst.lunch_len;
        let pinned: Vec<(i32, i32)> = inst
            .sessions
            .iter()
            .filter_map(|s| {
                s.pinned
                    .filter(|p| p.day == d)
                    .map(|p| (p.start, p.start + s.dur))
            })
            .collect();
        let clear = |x: i32| pinned.iter().all(|&(a, b)| b <= x || x + len <= a);
        let old = previous
            .days
            .iter()
            .find(|p| p.date == day.date)
            .and_then(|p| p.lunch)
            .map(|l| minutes(l.start));
        let Some(x) = old else {
            // A day without a previous lunch: the search chooses freely.
            continue;
        };
        if lo <= x && x <= hi && clear(x) {
            lunch[d] = Some(x);
            continue;
        }
        let mut options: Vec<i32> = (0..).map(|k| lo + 5 * k).take_while(|&x| x <= hi).collect();
        options.push(hi);
        let displaced = |x: i32| {
            candidate
                .iter()
                .enumerate()
                .filter(|(s, p)| {
                    p.is_some_and(|p| {
                        p.day == d && p.start < x + len && x < p.start + inst.sessions[*s].dur
                    })
                })
                .count()
        };
        lunch[d] = options
            .into_iter()
            .filter(|&y| clear(y))
            .min_by_key(|&y| (displaced(y), (x - y).abs(), y));
    }

    // Lunch overlaps.
    for s in 0..n {
        if let Some(p) = candidate[s]
            && let Some(l) = lunch[p.day]
            && p.start < l + inst.lunch_len
            && l < p.start + inst.sessions[s].dur
            && inst.sessions[s].pinned.is_none()
        {
            candidate[s] = None;
            reasons[s] = Some(MoveReason::Lunch);
        }
    }

    // Pairwise: every pinned session stays (previous placement or not), then previous
    // placements in time order.
    let mut keep: Vec<Option<Pos>> = inst.sessions.iter().map(|s| s.pinned).collect();
    let mut kept: Vec<usize> = (0..n).filter(|&s| keep[s].is_some()).collect();
    let mut order: Vec<usize> = (0..n)
        .filter(|&s| candidate[s].is_some() && keep[s].is_none())
        .collect();
    order.sort_by_key(|&s| (candidate[s], s));
    for s in order {
        let Some(p) = candidate[s] else { continue };
        let clash = kept
            .iter()
            .find_map(|&k| keep[k].and_then(|q| conflict(inst, s, p, k, q)));
        match clash {
            Some(reason) => reasons[s] = Some(reason),
            None => {
                keep[s] = Some(p);
                kept.push(s);
            }
        }
    }
    Some(Carry {
        from,
        reasons,
        keep,
        lunch,
    })
}

/// The previous placement resolved against the new input, or why it cannot stand on its own.
fn individually_valid(inst: &Inst, s: usize, pl: &Placement) -> Result<Pos, MoveReason> {
    let sess = &inst.sessions[s];
    let day = inst.day_index(pl.date).ok_or(MoveReason::DayRemoved)?;
    let room = inst
        .room_index(pl.room.as_str())
        .ok_or(MoveReason::RoomRemoved)?;
    let p = Pos {
        room,
        day,
        start: minutes(pl.start),
    };
    if let Some(pin) = sess.pinned {
        return if pin == p {
            Ok(p)
        } else {
            Err(MoveReason::Pinned)
        };
    }
    if let Some(r) = sess.required_room
        && r != room
    {
        return Err(MoveReason::RoomRequired {
            room: inst.room_ids[r].as_str().into(),
        });
    }
    if inst.rooms[room].cap < sess.min_cap {
        return Err(MoveReason::RoomTooSmall {
            needed: sess.min_cap,
            capacity: inst.rooms[room].cap,
        });
    }
    let end = p.start + sess.dur;
    let d = &inst.days[day];
    if p.start < d.start || end > d.end {
        return Err(MoveReason::OutsideDay);
    }
    if !inst.rooms[room].windows[day]
        .iter()
        .any(|&(a, b)| a <= p.start && end <= b)
    {
        return Err(MoveReason::RoomUnavailable);
    }
    Ok(p)
}

/// Why placement `p` of `s` cannot stand beside placement `q` of `k`, if it cannot.
fn conflict(inst: &Inst, s: usize, p: Pos, k: usize, q: Pos) -> Option<MoveReason> {
    let (ss, sk) = (&inst.sessions[s], &inst.sessions[k]);
    let (pe, qe) = (p.start + ss.dur, q.start + sk.dur);
    let with = SessionId(inst.session_ids[k].clone());
    if p.day == q.day {
        let apart = |gap: i32| pe + gap <= q.start || qe + gap <= p.start;
        if p.room == q.room && !apart(inst.co) {
            return Some(MoveReason::Clash {
                with,
                over: format!("room {}", inst.room_ids[p.room]),
            });
        }
        if let Some(&sp) = ss.speakers.iter().find(|sp| sk.speakers.contains(sp))
            && !apart(inst.rest)
        {
            return Some(MoveReason::Clash {
                with,
                over: format!("speaker {}", inst.speaker_ids[sp]),
            });
        }
        if let Some(t) = ss.track
            && ss.track == sk.track
            && !apart(0)
        {
            return Some(MoveReason::Clash {
                with,
                over: format!("track {}", inst.track_ids[t]),
            });
        }
    }
    let precedes = |a: Pos, ae: i32, b: Pos| {
        a.day < b.day
            || (a.day == b.day && ae + if a.room == b.room { inst.co } else { 0 } <= b.start)
    };
    if ss.preds.contains(&k) && !precedes(q, qe, p) {
        return Some(MoveReason::Dependency { after: with });
    }
    if sk.preds.contains(&s) && !precedes(p, pe, q) {
        return Some(MoveReason::Precedes { before: with });
    }
    None
}
