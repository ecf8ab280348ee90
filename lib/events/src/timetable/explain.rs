//! Why no timetable exists, in plain words with the numbers a person needs to fix it.
//!
//! The cheap necessary conditions (unknown ids, cycles, rooms too small, speakers and rooms
//! short of hours, pinned sessions that cannot stand) are checked before any search; when the
//! search itself fails, [`could_not_fit`] says what blocked the sessions left over.

use std::collections::BTreeMap;

use jiff::civil::Date;

use super::instance::{Inst, Mask, Pos};
use super::model::TimetableInput;
use super::problem::{Problem, hours};
use super::solver::{State, earliest_start};

/// A date in words: "Saturday 2026-03-14".
pub(crate) fn day_words(date: Date) -> String {
    format!("{:?} {date}", date.weekday())
}

fn clock(m: i32) -> String {
    format!("{:02}:{:02}", m / 60, m % 60)
}

/// Checks the necessary conditions that need no search. `inst` is already known to be
/// structurally sound (ids resolve, no cycle).
pub(crate) fn prechecks(inst: &Inst, input: &TimetableInput) -> Vec<Problem> {
    let mut problems = Vec::new();
    rooms_and_lengths(inst, input, &mut problems);
    if !problems.is_empty() {
        return problems;
    }
    pinned(inst, &mut problems);
    overloads(inst, &mut problems);
    room_hours_check(inst, &mut problems);
    problems
}

/// The longest stretch a room window offers once lunch (pushed to whichever edge helps most)
/// is taken out of it.
fn longest_free(inst: &Inst, d: usize, a: i32, b: i32) -> i32 {
    let Some((lo, hi)) = inst.days[d].lunch else {
        return b - a;
    };
    let len = inst.lunch_len;
    [lo, hi]
        .iter()
        .map(|&x| {
            let before = (x.min(b) - a).max(0);
            let after = (b - (x + len).max(a)).max(0);
            if x + len <= a || x >= b {
                b - a
            } else {
                before.max(after)
            }
        })
        .max()
        .unwrap_or(0)
}

fn rooms_and_lengths(inst: &Inst, input: &TimetableInput, out: &mut Vec<Problem>) {
    for (i, s) in inst.sessions.iter().enumerate() {
        let title = inst.title(i);
        if s.rooms.is_empty() {
            let candidates: Vec<usize> = match &input.sessions[i].room {
                Some(r) => inst.room_index(r.as_str()).into_iter().collect(),
                None => (0..inst.rooms.len()).collect(),
            };
            let largest = candidates
                .iter()
                .map(|&r| inst.rooms[r].cap)
                .max()
                .unwrap_or(0);
            out.push(Problem::NoRoomBigEnough {
                session: title,
                needed: s.min_cap,
                largest,
            });
            continue;
        }
        let longest = s
            .rooms
            .iter()
            .flat_map(|&r| {
                (0..inst.days.len()).flat_map(move |d| {
                    inst.rooms[r].windows[d]
                        .iter()
                        .map(move |&(a, b)| longest_free(inst, d, a, b))
                })
            })
            .max()
            .unwrap_or(0);
        if longest < s.dur {
            out.push(Problem::SessionTooLong {
                session: title,
                minutes: s.dur as u32,
                longest: longest.max(0) as u32,
            });
        }
    }
}

fn placement_words(inst: &Inst, p: Pos) -> String {
    format!(
        "room {} on {} at {}",
        inst.room_ids[p.room],
        day_words(inst.days[p.day].date),
        clock(p.start)
    )
}

fn pinned(inst: &Inst, out: &mut Vec<Problem>) {
    let pins: Vec<(usize, Pos)> = inst
        .sessions
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.pinned.map(|p| (i, p)))
        .collect();
    let mut bad = vec![false; inst.sessions.len()];
    for &(i, p) in &pins {
        let s = &inst.sessions[i];
        let day = &inst.days[p.day];
        let end = p.start + s.dur;
        let reason = if !s.rooms.contains(&p.room) {
            Some(match s.required_room {
                Some(r) if r != p.room => {
                    format!("it must be held in room {}", inst.room_ids[r])
                }
                _ => format!(
                    "that room has {} seats and it needs {}",
                    inst.rooms[p.room].cap, s.min_cap
                ),
            })
        } else if p.start < day.start || end > day.end {
            Some(format!(
                "it would run {}–{}, outside the day's hours {}–{}",
                clock(p.start),
                clock(end),
                clock(day.start),
                clock(day.end)
            ))
        } else if !inst.rooms[p.room].windows[p.day]
            .iter()
            .any(|&(a, b)| a <= p.start && end <= b)
        {
            Some(String::from("the room is not available then"))
        } else {
            None
        };
        if let Some(reason) = reason {
            bad[i] = true;
            out.push(Problem::PinnedInvalid {
                session: inst.title(i),
                placement: placement_words(inst, p),
                reason,
            });
        }
    }
    // Pairs of pinned sessions.
    for (x, &(i, p)) in pins.iter().enumerate() {
        for &(j, q) in &pins[x + 1..] {
            if bad[i] || bad[j] {
                continue;
            }
            if let Some(reason) = pinned_pair(inst, i, p, j, q) {
                out.push(Problem::PinnedClash {
                    first: inst.title(i),
                    second: inst.title(j),
                    reason,
                });
            }
        }
    }
    // Lunch must still find a place among the pinned sessions of each day.
    for (d, day) in inst.days.iter().enumerate() {
        let Some((lo, hi)) = day.lunch else { continue };
        let on_day: Vec<(usize, i32, i32)> = pins
            .iter()
            .filter(|&&(i, p)| p.day == d && !bad[i])
            .map(|&(i, p)| (i, p.start, p.start + inst.sessions[i].dur))
            .collect();
        let blocks = |a: i32, b: i32, x: i32| !(b <= x || x + inst.lunch_len <= a);
        let mut alone = false;
        for &(i, a, b) in &on_day {
            // A pinned session overlapping every possible lunch slot on its own.
            if (lo..=hi).all(|x| blocks(a, b, x)) {
                alone = true;
                out.push(Problem::PinnedInvalid {
                    session: inst.title(i),
                    placement: placement_words(inst, pin_of(inst, i, d, a)),
                    reason: String::from("it overlaps every possible lunch slot"),
                });
            }
        }
        let fits = (lo..=hi).any(|x| on_day.iter().all(|&(_, a, b)| !blocks(a, b, x)));
        if !fits
            && !alone
            && let Some(&(i, a, _)) = on_day.first()
        {
            out.push(Problem::PinnedInvalid {
                session: inst.title(i),
                placement: placement_words(inst, pin_of(inst, i, d, a)),
                reason: format!(
                    "together with the other pinned sessions that day it leaves no {} for lunch between {} and {}",
                    hours(inst.lunch_len as u32),
                    clock(lo),
                    clock(hi + inst.lunch_len)
                ),
            });
        }
    }
}

fn pin_of(inst: &Inst, i: usize, day: usize, start: i32) -> Pos {
    inst.sessions[i].pinned.unwrap_or(Pos {
        room: 0,
        day,
        start,
    })
}

fn pinned_pair(inst: &Inst, i: usize, p: Pos, j: usize, q: Pos) -> Option<String> {
    let (si, sj) = (&inst.sessions[i], &inst.sessions[j]);
    let (pe, qe) = (p.start + si.dur, q.start + sj.dur);
    if p.day == q.day {
        if p.room == q.room && !(pe + inst.co <= q.start || qe + inst.co <= p.start) {
            return Some(format!(
                "they share room {} without the {} min changeover",
                inst.room_ids[p.room], inst.co
            ));
        }
        if let Some(&sp) = si.speakers.iter().find(|sp| sj.speakers.contains(sp))
            && !(pe + inst.rest <= q.start || qe + inst.rest <= p.start)
        {
            return Some(format!(
                "{} speaks at both without the {} min rest",
                inst.speaker_ids[sp], inst.rest
            ));
        }
        if si.track.is_some() && si.track == sj.track && !(pe <= q.start || qe <= p.start) {
            return Some(String::from("they overlap and belong to the same track"));
        }
    }
    let before = |a: Pos, ae: i32, b: Pos| a.day < b.day || (a.day == b.day && ae <= b.start);
    if sj.preds.contains(&i) && !before(p, pe, q) {
        return Some(format!(
            "\u{201c}{}\u{201d} must come after \u{201c}{}\u{201d}",
            inst.title(j),
            inst.title(i)
        ));
    }
    if si.preds.contains(&j) && !before(q, qe, p) {
        return Some(format!(
            "\u{201c}{}\u{201d} must come after \u{201c}{}\u{201d}",
            inst.title(i),
            inst.title(j)
        ));
    }
    None
}

/// Minutes usable per day by everyone (day length less lunch).
fn day_minutes(inst: &Inst, d: usize) -> i32 {
    let day = &inst.days[d];
    let lunch = if day.lunch.is_some() {
        inst.lunch_len
    } else {
        0
    };
    (day.end - day.start - lunch).max(0)
}

fn overloads(inst: &Inst, out: &mut Vec<Problem>) {
    let days = inst.days.len();
    let available: i32 = (0..days).map(|d| day_minutes(inst, d)).sum();
    let lunch_days = inst.days.iter().filter(|d| d.lunch.is_some()).count() as i32;
    let mut groups: Vec<(String, Vec<usize>, i32)> = Vec::new();
    let mut by_speaker: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut by_track: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, s) in inst.sessions.iter().enumerate() {
        for &sp in &s.speakers {
            by_speaker.entry(sp).or_default().push(i);
        }
        if let Some(t) = s.track {
            by_track.entry(t).or_default().push(i);
        }
    }
    for (sp, list) in by_speaker {
        groups.push((inst.speaker_ids[sp].clone(), list, inst.rest));
    }
    for (t, list) in by_track {
        groups.push((format!("track {}", inst.track_ids[t]), list, 0));
    }
    for (who, list, rest) in groups {
        let total: i32 = list.iter().map(|&i| inst.sessions[i].dur).sum();
        // Sessions on one day need rest between them: a day with k of them has k - 1 gaps, and
        // one of those may fall over lunch, where it costs nothing extra.
        let gaps = (list.len() as i32 - days as i32 - lunch_days).max(0);
        let needed = total + gaps * rest;
        if needed > available {
            out.push(Problem::Overloaded {
                who,
                needed: needed as u32,
                available: available as u32,
                days,
                rest: (gaps * rest) as u32,
            });
        }
    }
}

/// Minutes of room time per day in `rooms`, less the least lunch can take out of them.
fn room_supply(inst: &Inst, rooms: &[usize], d: usize) -> (i32, i32) {
    let windows: Vec<(i32, i32)> = rooms
        .iter()
        .flat_map(|&r| inst.rooms[r].windows[d].iter().copied())
        .collect();
    let total: i32 = windows.iter().map(|&(a, b)| b - a).sum();
    let mut pieces = windows.len() as i32;
    let lost = match inst.days[d].lunch {
        None => 0,
        Some((lo, hi)) => {
            let len = inst.lunch_len;
            // Lunch can split a window in two: count the extra piece as a place a changeover
            // is not needed.
            pieces += windows
                .iter()
                .filter(|&&(a, b)| a < hi + len && lo < b)
                .count() as i32;
            (lo..=hi)
                .map(|x| {
                    windows
                        .iter()
                        .map(|&(a, b)| ((x + len).min(b) - x.max(a)).max(0))
                        .sum::<i32>()
                })
                .min()
                .unwrap_or(0)
        }
    };
    (total - lost, pieces)
}

fn room_hours_check(inst: &Inst, out: &mut Vec<Problem>) {
    let days: Vec<usize> = (0..inst.days.len()).collect();
    let day_names: Vec<String> = inst.days.iter().map(|d| day_words(d.date)).collect();
    // Sessions whose every usable room has at least `c` seats compete for those rooms only.
    let mut thresholds: Vec<u32> = inst.sessions.iter().map(|s| s.min_cap).collect();
    thresholds.push(0);
    thresholds.sort_unstable();
    thresholds.dedup();
    let mut reported_general = false;
    for &c in &thresholds {
        let rooms: Vec<usize> = (0..inst.rooms.len())
            .filter(|&r| inst.rooms[r].cap >= c)
            .collect();
        let sessions: Vec<usize> = (0..inst.sessions.len())
            .filter(|&i| {
                inst.sessions[i]
                    .rooms
                    .iter()
                    .all(|&r| inst.rooms[r].cap >= c)
            })
            .collect();
        if let Some(p) = shortage(inst, &rooms, &sessions, &days, &day_names, c, None) {
            if reported_general {
                continue;
            }
            reported_general = true;
            out.push(p);
        }
    }
    for r in 0..inst.rooms.len() {
        let sessions: Vec<usize> = (0..inst.sessions.len())
            .filter(|&i| inst.sessions[i].required_room == Some(r))
            .collect();
        // With a single room the general shortage already says it all.
        if sessions.is_empty() || (reported_general && inst.rooms.len() == 1) {
            continue;
        }
        if let Some(p) = shortage(
            inst,
            &[r],
            &sessions,
            &days,
            &day_names,
            0,
            Some(inst.room_ids[r].clone()),
        ) {
            out.push(p);
        }
    }
}

fn shortage(
    inst: &Inst,
    rooms: &[usize],
    sessions: &[usize],
    days: &[usize],
    day_names: &[String],
    min_capacity: u32,
    room: Option<String>,
) -> Option<Problem> {
    if sessions.is_empty() {
        return None;
    }
    let mut supply = 0;
    let mut pieces = 0;
    for &d in days {
        let (s, p) = room_supply(inst, rooms, d);
        supply += s;
        pieces += p;
    }
    let work: i32 = sessions.iter().map(|&i| inst.sessions[i].dur).sum();
    let changeovers = (sessions.len() as i32 - pieces).max(0) * inst.co;
    let demand = work + changeovers;
    (demand > supply).then(|| Problem::ShortOfRoomHours {
        short: (demand - supply) as u32,
        days: day_names.to_vec(),
        min_capacity,
        room,
    })
}

/// Explains sessions the search could not place, by finding which constraint shuts them out
/// of the final partial timetable.
pub(crate) fn could_not_fit(inst: &Inst, state: &State, unplaced: &[usize]) -> Problem {
    let titles: Vec<String> = unplaced.iter().map(|&i| inst.title(i)).collect();
    let mut reasons: Vec<String> = Vec::new();
    for &i in unplaced {
        let fits = |mask: Mask| {
            inst.sessions[i].rooms.iter().any(|&r| {
                (0..inst.days.len()).any(|d| earliest_start(inst, state, i, r, d, mask).is_some())
            })
        };
        let s = &inst.sessions[i];
        let why = if !fits(Mask::ROOM) {
            let longest = longest_gap(inst, state, i);
            format!(
                "the rooms that suit \u{201c}{}\u{201d} have no free {} left (the longest free stretch is {})",
                inst.title(i),
                hours(s.dur as u32),
                hours(longest as u32)
            )
        } else if !fits(Mask::ROOM.with(Mask::DEPS)) {
            let preds: Vec<String> = s
                .preds
                .iter()
                .map(|&p| format!("\u{201c}{}\u{201d}", inst.title(p)))
                .collect();
            format!(
                "\u{201c}{}\u{201d} must come after {}, which {} too late for a free room",
                inst.title(i),
                preds.join(", "),
                if preds.len() == 1 { "ends" } else { "end" }
            )
        } else if !fits(Mask::ROOM.with(Mask::SPEAKERS)) {
            let names: Vec<&str> = s
                .speakers
                .iter()
                .map(|&sp| inst.speaker_ids[sp].as_str())
                .collect();
            format!(
                "{} {} busy (or resting) whenever a suitable room is free for \u{201c}{}\u{201d}",
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
                inst.title(i)
            )
        } else if !fits(Mask::ROOM.with(Mask::TRACK)) {
            format!(
                "its track is busy whenever a suitable room is free for \u{201c}{}\u{201d}",
                inst.title(i)
            )
        } else {
            format!(
                "no time suits the room, speakers, track and prerequisites of \u{201c}{}\u{201d} together",
                inst.title(i)
            )
        };
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    reasons.push(String::from(
        "add a room or a day, lengthen the day, or shorten sessions",
    ));
    Problem::CouldNotFit {
        sessions: titles,
        reason: reasons.join("; "),
    }
}

/// The longest free stretch (rooms and lunch only) in any room that suits session `i`.
fn longest_gap(inst: &Inst, state: &State, i: usize) -> i32 {
    let mut best = 0;
    for &r in &inst.sessions[i].rooms {
        for d in 0..inst.days.len() {
            // (start, end, gap needed next to it): sessions need the changeover, lunch not.
            let mut busy: Vec<(i32, i32, i32)> = state
                .room_busy(r, d)
                .into_iter()
                .map(|(a, b)| (a, b, inst.co))
                .collect();
            if let Some(l) = state.lunch[d] {
                busy.push((l, l + inst.lunch_len, 0));
            }
            busy.sort_unstable();
            for &(a, b) in &inst.rooms[r].windows[d] {
                let mut t = a;
                for &(x, y, pad) in &busy {
                    if y <= t || x >= b {
                        continue;
                    }
                    best = best.max(x - pad - t);
                    t = t.max(y + pad);
                }
                best = best.max(b - t);
            }
        }
    }
    best.max(0)
}

#[cfg(test)]
mod tests {
    use super::super::problem::{hours, room_hours};

    #[test]
    fn durations_read_naturally() {
        assert_eq!(hours(45), "45 min");
        assert_eq!(hours(420), "7 h");
        assert_eq!(hours(90), "1 h 30 min");
        assert_eq!(room_hours(120), "2");
        assert_eq!(room_hours(90), "1.5");
        // Rounded up: 61 minutes is short by more than one hour.
        assert_eq!(room_hours(61), "1.1");
    }
}
