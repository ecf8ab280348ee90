//! The search.
//!
//! 1. Construction: for several lunch positions and four priority rules (critical path, scarce
//!    rooms, busy speakers, longest first), list scheduling that never places a session before
//!    its prerequisites and puts each one where it ends earliest (smallest suitable room on
//!    ties).
//! 2. Improvement: iterated destroy-and-repair from the best construction and from the ones
//!    with lunch earliest and latest, then more rounds on the best of those. Each round rips out
//!    a pseudo-random set of sessions (the ones ending last on the latest day and others that
//!    day; a time band across a day; whatever a moved lunch slot now covers; the sessions in
//!    the way of a left-over one; while sessions are left over, occasionally everything) and
//!    re-inserts them in a perturbed priority order. A round is kept when it is no worse on the
//!    objective and within a shrinking allowance on the sum of ends (threshold accepting);
//!    while sessions are left over, when it leaves no more of them out. A repair stops as soon
//!    as lower bounds on its score show it cannot be kept (and is undone), and a session is
//!    not looked for past the end that would fail the rule; either way the outcome is the
//!    one the full repair would have had. The round count is bounded and the generator
//!    seeded, so the result is deterministic.
//!
//! Objective, compared lexicographically: sessions left unplaced, sessions moved away from a
//! still-valid previous placement (replanning only), the latest finish time of any day, the
//! sum of each day's finish time, the sum of every session's end.

use std::cell::Cell;

use super::instance::{Inst, Mask, Pos};
use super::rng::Rng;

/// Fixed seed: the search is pseudo-random but the same input always gives the same output.
const SEED: u64 = 0x5EED_7AB1_E000_0001;

/// Destroy-and-repair rounds: about `ROUND_WORK / sessions`, within these bounds. A round
/// costs roughly in proportion to the number of sessions, so this bounds the work on large
/// inputs while small ones (cheap rounds) get the most.
const ROUND_WORK: usize = 800_000;
const MIN_ROUNDS: usize = 3000;
const MAX_ROUNDS: usize = 8000;

/// A search stops early after this many rounds (or a quarter of its budget, if more) without
/// improving.
const PATIENCE: usize = 1500;

/// Lunch positions tried per day by the constructions (spread over the lunch window).
const LUNCH_VARIANTS: usize = 9;

/// An interval a room, speaker or track is busy, and the session occupying it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Busy {
    pub a: i32,
    pub b: i32,
    pub s: usize,
}

/// A partial or complete timetable during search.
pub(crate) struct State {
    pub pos: Vec<Option<Pos>>,
    /// Indexed `[room * days + day]`.
    room: Vec<Vec<Busy>>,
    /// Indexed `[speaker * days + day]`.
    speaker: Vec<Vec<Busy>>,
    /// Indexed `[track * days + day]`.
    track: Vec<Vec<Busy>>,
    /// Lunch start per day (days without lunch: `None`).
    pub lunch: Vec<Option<i32>>,
}

impl Clone for State {
    fn clone(&self) -> State {
        State {
            pos: self.pos.clone(),
            room: self.room.clone(),
            speaker: self.speaker.clone(),
            track: self.track.clone(),
            lunch: self.lunch.clone(),
        }
    }

    /// Copies into the lists already allocated (the search keeps its best state this way
    /// every time it improves).
    fn clone_from(&mut self, source: &State) {
        self.pos.clone_from(&source.pos);
        self.room.clone_from(&source.room);
        self.speaker.clone_from(&source.speaker);
        self.track.clone_from(&source.track);
        self.lunch.clone_from(&source.lunch);
    }
}

impl State {
    fn new(inst: &Inst) -> State {
        let d = inst.days.len();
        State {
            pos: vec![None; inst.sessions.len()],
            room: vec![Vec::new(); inst.rooms.len() * d],
            speaker: vec![Vec::new(); inst.speaker_ids.len() * d],
            track: vec![Vec::new(); inst.track_ids.len() * d],
            lunch: vec![None; d],
        }
    }

    /// Busy intervals of room `r` on day `d`.
    pub fn room_busy(&self, r: usize, d: usize) -> Vec<(i32, i32)> {
        let days = self.lunch.len();
        self.room[r * days + d].iter().map(|b| (b.a, b.b)).collect()
    }

    fn place(&mut self, inst: &Inst, s: usize, p: Pos) {
        let days = self.lunch.len();
        let busy = Busy {
            a: p.start,
            b: p.start + inst.sessions[s].dur,
            s,
        };
        insert_sorted(&mut self.room[p.room * days + p.day], busy);
        for &sp in &inst.sessions[s].speakers {
            insert_sorted(&mut self.speaker[sp * days + p.day], busy);
        }
        if let Some(t) = inst.sessions[s].track {
            insert_sorted(&mut self.track[t * days + p.day], busy);
        }
        self.pos[s] = Some(p);
    }

    fn remove(&mut self, inst: &Inst, s: usize) -> Option<Pos> {
        let p = self.pos[s].take()?;
        let days = self.lunch.len();
        // Lists are in order of start: look among the intervals that start with this one.
        let drop = |list: &mut Vec<Busy>| {
            let from = list.partition_point(|b| b.a < p.start);
            let k = list[from..]
                .iter()
                .position(|b| b.s == s)
                .map(|k| from + k)
                .or_else(|| list.iter().position(|b| b.s == s));
            if let Some(k) = k {
                list.remove(k);
            }
        };
        drop(&mut self.room[p.room * days + p.day]);
        for &sp in &inst.sessions[s].speakers {
            drop(&mut self.speaker[sp * days + p.day]);
        }
        if let Some(t) = inst.sessions[s].track {
            drop(&mut self.track[t * days + p.day]);
        }
        Some(p)
    }
}

/// Inserts `busy` into a list kept in order of start (equal starts: in insertion order), so
/// [`earliest_from`] can clear a list in one pass.
fn insert_sorted(list: &mut Vec<Busy>, busy: Busy) {
    let k = list.partition_point(|b| b.a <= busy.a);
    list.insert(k, busy);
}

/// The first start at or after `t` that clears every interval of `list` (sorted by start) by
/// `gap` minutes on both sides, for a session of `dur` minutes; intervals of session `s` itself
/// do not count.
///
/// One pass in order of start: an interval in the way moves `t` to its end plus `gap` (no
/// earlier start clears it), and once an interval starts at or after `t + dur + gap`, so do
/// all that follow. (The lists are short: a binary search past the intervals that end
/// before `t` costs more than it saves.) Stops as soon as `t` passes `last`, the latest start
/// the caller can use.
#[inline]
fn clear_of(list: &[Busy], s: usize, mut t: i32, dur: i32, gap: i32, last: i32) -> i32 {
    for b in list {
        if b.a >= t + dur + gap {
            break;
        }
        if t < b.b + gap && b.s != s {
            t = b.b + gap;
            if t > last {
                break;
            }
        }
    }
    t
}

/// The earliest start of session `s` in room `r` on day `d` that honours the constraints in
/// `mask` against everything placed in `state`, or `None` when there is none that day.
///
/// Each conflict moves the candidate start to the first minute that clears it, so the result is
/// the least feasible start and does not depend on the order of the busy lists.
pub(crate) fn earliest_start(
    inst: &Inst,
    state: &State,
    s: usize,
    r: usize,
    d: usize,
    mask: Mask,
) -> Option<i32> {
    let from = Pos {
        room: r,
        day: d,
        start: inst.days[d].start,
    };
    earliest_from(inst, state, s, from, i32::MAX, mask)
}

/// [`earliest_start`] in `from.room` on `from.day`, at or after `from.start`, ending by
/// `max_end`.
fn earliest_from(
    inst: &Inst,
    state: &State,
    s: usize,
    from: Pos,
    max_end: i32,
    mask: Mask,
) -> Option<i32> {
    earliest_in(
        inst,
        state,
        s,
        Some(from.room),
        from.day,
        from.start,
        max_end,
        mask,
        false,
    )
}

/// [`earliest_from`] in `room` on day `d`; with no room, the least start that honours what
/// every room of the day shares (day hours, lunch, speakers, track, prerequisites without the
/// changeover a shared room adds), so no room can offer an earlier one.
///
/// `shared_clear`: `start` is known to clear lunch, the track and the speakers (it is what
/// the call without a room returned), so unless the room moves it, it needs no second look.
#[allow(clippy::too_many_arguments)]
fn earliest_in(
    inst: &Inst,
    state: &State,
    s: usize,
    room: Option<usize>,
    d: usize,
    start: i32,
    max_end: i32,
    mask: Mask,
    shared_clear: bool,
) -> Option<i32> {
    let sess = &inst.sessions[s];
    let day = &inst.days[d];
    let days = inst.days.len();
    let dur = sess.dur;
    let mut t = start.max(day.start);
    let mut deadline = day.end.min(max_end);
    if mask.has(Mask::DEPS) {
        for &p in &sess.preds {
            if let Some(pp) = state.pos[p] {
                if pp.day > d {
                    return None;
                }
                if pp.day == d {
                    let gap = if Some(pp.room) == room { inst.co } else { 0 };
                    t = t.max(pp.start + inst.sessions[p].dur + gap);
                }
            }
        }
        for &q in &sess.succs {
            if let Some(qq) = state.pos[q] {
                if qq.day < d {
                    return None;
                }
                if qq.day == d {
                    let gap = if Some(qq.room) == room { inst.co } else { 0 };
                    deadline = deadline.min(qq.start - gap);
                }
            }
        }
    }
    let whole_day = [(day.start, day.end)];
    let (windows, busy): (&[(i32, i32)], &[Busy]) = match room {
        Some(r) if mask.has(Mask::ROOM) => (&inst.rooms[r].windows[d], &state.room[r * days + d]),
        Some(r) => (&inst.rooms[r].windows[d], &[]),
        None => (&whole_day, &[]),
    };
    let lunch = state.lunch[d];
    let track: &[Busy] = match sess.track {
        Some(tr) if mask.has(Mask::TRACK) => &state.track[tr * days + d],
        _ => &[],
    };
    // Each constraint in turn moves `t` to the first start that clears it (never past a
    // feasible one), round and round; once every constraint in a row has left `t` where it
    // was, `t` is the least feasible start, the same whatever the order of the checks and of
    // the busy lists. Steps: 0 the windows and lunch, 1 the room, 2 the track, then each
    // speaker.
    let speakers: &[usize] = if mask.has(Mask::SPEAKERS) {
        &sess.speakers
    } else {
        &[]
    };
    let steps = 3 + speakers.len();
    let mut step = 0;
    // Steps 2.. (track, speakers) come just before step 0 in the round: when `start` clears
    // them and nothing moved it, they count as already passed.
    let mut calm = if shared_clear && t == start {
        steps - 2
    } else {
        0
    };
    loop {
        if t + dur > deadline {
            return None;
        }
        let next = match step {
            0 => {
                // Inside one availability window (sorted and merged), then clear of lunch.
                let mut next = None;
                for &(a, b) in windows {
                    let x = t.max(a);
                    if x + dur <= b {
                        next = Some(x);
                        break;
                    }
                }
                let x = next?;
                match lunch {
                    Some(l) if x < l + inst.lunch_len && l < x + dur => l + inst.lunch_len,
                    _ => x,
                }
            }
            1 => clear_of(busy, usize::MAX, t, dur, inst.co, deadline - dur),
            2 => clear_of(track, s, t, dur, 0, deadline - dur),
            k => {
                let list = &state.speaker[speakers[k - 3] * days + d];
                clear_of(list, s, t, dur, inst.rest, deadline - dur)
            }
        };
        if next == t {
            calm += 1;
            if calm == steps {
                return Some(t);
            }
        } else {
            t = next;
            calm = 1;
        }
        step = if step + 1 == steps { 0 } else { step + 1 };
    }
}

/// What the search starts from: placements it must keep, lunch slots it must keep, and
/// (replanning after a failure) placements it should prefer.
pub(crate) struct Fixed {
    /// Pinned sessions and, when replanning, still-valid previous placements.
    pub pos: Vec<Option<Pos>>,
    /// Lunch starts that must not change.
    pub lunch: Vec<Option<i32>>,
    /// Previous placements to keep where possible; counted as moves when left.
    pub preferred: Vec<Option<Pos>>,
}

/// Lexicographic objective; smaller is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    unplaced: usize,
    moved: usize,
    latest: i32,
    day_sum: i32,
    end_sum: i64,
}

impl Score {
    /// The part that decides acceptance; `end_sum` only breaks ties for the best.
    fn primary(&self) -> (usize, usize, i32, i32) {
        (self.unplaced, self.moved, self.latest, self.day_sum)
    }
}

struct Search<'a> {
    inst: &'a Inst,
    fixed: &'a Fixed,
    /// Candidate lunch starts per day (empty: no lunch, or lunch fixed).
    lunch_options: Vec<Vec<i32>>,
    /// Static priority keys (higher first) for each construction rule.
    tails: Vec<i32>,
    speaker_load: Vec<i32>,
    /// A lower bound on the latest finish: no timetable can end before it.
    floor: i32,
    /// A lower bound on each session's end ([`min_ends`]).
    min_end: Vec<i32>,
    /// The unperturbed priority keys of each rule ([`Search::keys`]), computed once.
    base_keys: Vec<Vec<i64>>,
    /// Buffers reused from round to round instead of allocated each time: the perturbed keys
    /// (set for the sessions of the round only),
    /// [`Search::insert_all`]'s waiting flags (all false between calls) and
    /// [`Search::score`]'s finish per day.
    keys_buf: Cell<Vec<i64>>,
    waiting_buf: Cell<Vec<bool>>,
    finish_buf: Cell<Vec<i32>>,
}

/// Runs the search; returns the best state found (possibly with unplaced sessions).
pub(crate) fn search(inst: &Inst, fixed: &Fixed) -> State {
    let tails = inst.tails();
    let mut load = vec![0; inst.speaker_ids.len()];
    for s in &inst.sessions {
        for &sp in &s.speakers {
            load[sp] += s.dur;
        }
    }
    let speaker_load = inst
        .sessions
        .iter()
        .map(|s| s.speakers.iter().map(|&sp| load[sp]).max().unwrap_or(0))
        .collect();
    let min_end = min_ends(inst, fixed);
    let mut search = Search {
        inst,
        fixed,
        lunch_options: lunch_options(inst, fixed),
        // A simple lower bound on the latest finish: every session's earliest possible end.
        floor: min_end.iter().copied().max().unwrap_or(0).max(0),
        min_end,
        tails,
        speaker_load,
        base_keys: Vec::new(),
        keys_buf: Cell::new(Vec::new()),
        waiting_buf: Cell::new(vec![false; inst.sessions.len()]),
        finish_buf: Cell::new(Vec::new()),
    };
    search.base_keys = (0..4).map(|rule| search.keys(rule)).collect();
    search.run()
}

/// Each session's earliest possible end: its end when fixed, otherwise its earliest end in an
/// empty timetable (no session can end before it in any timetable).
fn min_ends(inst: &Inst, fixed: &Fixed) -> Vec<i32> {
    let empty = &State::new(inst);
    inst.sessions
        .iter()
        .enumerate()
        .map(|(s, sess)| match fixed.pos[s] {
            Some(p) => p.start + sess.dur,
            None => sess
                .rooms
                .iter()
                .flat_map(|&r| {
                    (0..inst.days.len())
                        .filter_map(move |d| earliest_start(inst, empty, s, r, d, Mask::ROOM))
                })
                .map(|t| t + sess.dur)
                .min()
                .unwrap_or(0),
        })
        .collect()
}

/// Lunch starts to try on each day: a 5-minute grid over the allowed range, plus the edges
/// of fixed sessions, minus anything overlapping a fixed session.
fn lunch_options(inst: &Inst, fixed: &Fixed) -> Vec<Vec<i32>> {
    (0..inst.days.len())
        .map(|d| {
            let Some((lo, hi)) = inst.days[d].lunch else {
                return Vec::new();
            };
            if fixed.lunch[d].is_some() {
                return Vec::new();
            }
            let len = inst.lunch_len;
            let on_day: Vec<(i32, i32)> = fixed
                .pos
                .iter()
                .enumerate()
                .filter_map(|(s, p)| {
                    p.filter(|p| p.day == d)
                        .map(|p| (p.start, p.start + inst.sessions[s].dur))
                })
                .collect();
            let mut opts: Vec<i32> = (0..).map(|k| lo + 5 * k).take_while(|&x| x <= hi).collect();
            opts.push(hi);
            for &(a, b) in &on_day {
                opts.push(b);
                opts.push(a - len);
            }
            opts.retain(|&x| {
                lo <= x && x <= hi && on_day.iter().all(|&(a, b)| b <= x || x + len <= a)
            });
            opts.sort_unstable();
            opts.dedup();
            opts
        })
        .collect()
}

impl Search<'_> {
    fn n(&self) -> usize {
        self.inst.sessions.len()
    }

    fn is_fixed(&self, s: usize) -> bool {
        self.fixed.pos[s].is_some()
    }

    fn score(&self, st: &State) -> Score {
        let inst = self.inst;
        let mut unplaced = 0;
        let mut moved = 0;
        let mut finish = self.finish_buf.take();
        finish.clear();
        finish.resize(inst.days.len(), i32::MIN);
        let mut end_sum = 0i64;
        for (s, p) in st.pos.iter().enumerate() {
            match p {
                None => unplaced += 1,
                Some(p) => {
                    let end = p.start + inst.sessions[s].dur;
                    finish[p.day] = finish[p.day].max(end);
                    end_sum += i64::from(end);
                    if self.fixed.preferred[s].is_some_and(|q| q != *p) {
                        moved += 1;
                    }
                }
            }
        }
        for (s, p) in self.fixed.preferred.iter().enumerate() {
            if p.is_some() && st.pos[s].is_none() {
                moved += 1;
            }
        }
        let placed_days = finish.iter().filter(|&&f| f > i32::MIN);
        let score = Score {
            unplaced,
            moved,
            latest: placed_days.clone().copied().max().unwrap_or(0),
            day_sum: placed_days.sum(),
            end_sum,
        };
        self.finish_buf.set(finish);
        score
    }

    /// Start state: fixed placements and fixed lunches, nothing else.
    fn base(&self, lunch_pick: usize, lunch_variants: usize) -> State {
        let inst = self.inst;
        let mut st = State::new(inst);
        for (d, day) in inst.days.iter().enumerate() {
            st.lunch[d] = match (self.fixed.lunch[d], day.lunch) {
                (Some(l), _) => Some(l),
                (None, None) => None,
                (None, Some((lo, _))) => {
                    let opts = &self.lunch_options[d];
                    if opts.is_empty() {
                        Some(lo)
                    } else {
                        let k = if lunch_variants <= 1 {
                            opts.len() / 2
                        } else {
                            lunch_pick * (opts.len() - 1) / (lunch_variants - 1)
                        };
                        Some(opts[k.min(opts.len() - 1)])
                    }
                }
            };
        }
        for (s, p) in self.fixed.pos.iter().enumerate() {
            if let Some(p) = p {
                st.place(inst, s, *p);
            }
        }
        st
    }

    /// The placement with the earliest end for `s` (ties: smallest suitable room, then
    /// earliest day), trying a preferred previous placement first; `None` when there is none
    /// ending by `cap` (ending before `cap` is preferred, so the answer is the same whenever
    /// it ends by then).
    fn best_placement(&self, st: &State, s: usize, cap: i32) -> Option<Pos> {
        let inst = self.inst;
        if let Some(p) = self.fixed.preferred[s]
            && earliest_from(inst, st, s, p, i32::MAX, Mask::ALL) == Some(p.start)
        {
            return Some(p);
        }
        let mut best: Option<(i32, Pos)> = None;
        let dur = inst.sessions[s].dur;
        for d in 0..inst.days.len() {
            // No room starts earlier than what the rooms share allows (and when that is
            // nothing, no room has a start).
            let max_end = best.map_or(cap, |(e, _)| e - 1);
            let Some(common) = earliest_in(inst, st, s, None, d, 0, max_end, Mask::ALL, false)
            else {
                continue;
            };
            for &r in &inst.sessions[s].rooms {
                // Only a strictly earlier end can win, so stop looking past the best so far.
                let max_end = best.map_or(cap, |(e, _)| e - 1);
                if common + dur > max_end {
                    // No room of this day can start before `common`.
                    break;
                }
                let found = earliest_in(inst, st, s, Some(r), d, common, max_end, Mask::ALL, true);
                if let Some(t) = found {
                    let end = t + dur;
                    if best.is_none_or(|(e, _)| end < e) {
                        best = Some((
                            end,
                            Pos {
                                room: r,
                                day: d,
                                start: t,
                            },
                        ));
                    }
                }
            }
        }
        best.map(|(_, p)| p)
    }

    /// Places `todo` in priority order (`key`, higher first), never before an unplaced
    /// predecessor that is still waiting in `todo`.
    ///
    /// With a `bound`, stops (returning `false`, the rest of `todo` left out) as soon as the
    /// sessions placed so far show the result cannot meet it: it would be rejected anyway,
    /// and placing the rest cannot change that (see [`Bound`]).
    fn insert_all(
        &self,
        st: &mut State,
        mut todo: Vec<usize>,
        key: &[i64],
        mut bound: Option<&mut Bound>,
    ) -> bool {
        todo.sort_by_key(|&s| (std::cmp::Reverse(key[s]), s));
        let mut waiting = self.waiting_buf.take();
        waiting.resize(self.n(), false);
        for &s in &todo {
            waiting[s] = true;
        }
        let mut complete = true;
        while !todo.is_empty() {
            if bound.as_ref().is_some_and(|b| b.doomed()) {
                complete = false;
                break;
            }
            let k = todo
                .iter()
                .position(|&s| !self.inst.sessions[s].preds.iter().any(|&p| waiting[p]))
                .unwrap_or(0);
            let s = todo.remove(k);
            waiting[s] = false;
            let cap = bound.as_ref().map_or(i32::MAX, |b| b.cap(self.min_end[s]));
            let p = self.best_placement(st, s, cap);
            if let Some(p) = p {
                st.place(self.inst, s, p);
            }
            if let Some(b) = bound.as_mut() {
                b.placed(self, s, p);
            }
        }
        if !complete || bound.as_ref().is_some_and(|b| b.doomed()) {
            complete = false;
            for &s in &todo {
                waiting[s] = false;
            }
        }
        // Every flag set was cleared as its session left `todo` (or above).
        self.waiting_buf.set(waiting);
        complete
    }

    /// The priority keys of construction rule `rule` (higher first).
    fn keys(&self, rule: usize) -> Vec<i64> {
        let inst = self.inst;
        (0..self.n())
            .map(|s| {
                let sess = &inst.sessions[s];
                let tail = i64::from(self.tails[s]);
                let dur = i64::from(sess.dur);
                let load = i64::from(self.speaker_load[s]);
                let scarce = 64 - (sess.rooms.len().min(64) as i64);
                match rule % 4 {
                    0 => tail * 1000 + dur,
                    1 => (scarce * 10_000 + tail) * 1000 + dur,
                    2 => (load * 1000 + tail) * 1000 + dur,
                    _ => (dur * 1000 + tail) * 1000 + load,
                }
            })
            .collect()
    }

    fn construct(&self, rule: usize, lunch_pick: usize, lunch_variants: usize) -> State {
        let mut st = self.base(lunch_pick, lunch_variants);
        let keys = &self.base_keys[rule % 4];
        // Preferred (previous) placements go in first so they keep their place.
        let mut preferred: Vec<usize> = (0..self.n())
            .filter(|&s| !self.is_fixed(s) && self.fixed.preferred[s].is_some())
            .collect();
        preferred.sort_by_key(|&s| self.fixed.preferred[s]);
        for s in preferred {
            if let Some(p) = self.best_placement(&st, s, i32::MAX) {
                st.place(self.inst, s, p);
            }
        }
        let todo: Vec<usize> = (0..self.n())
            .filter(|&s| st.pos[s].is_none() && !self.is_fixed(s))
            .collect();
        self.insert_all(&mut st, todo, keys, None);
        st
    }

    fn run(&self) -> State {
        let n = self.n();
        let variants = self
            .lunch_options
            .iter()
            .map(|o| o.len().min(LUNCH_VARIANTS))
            .max()
            .unwrap_or(1)
            .max(1);
        // The best construction for each lunch variant.
        let mut starts: Vec<(Score, State)> = Vec::with_capacity(variants);
        for pick in 0..variants {
            let mut best: Option<(Score, State)> = None;
            for rule in 0..4 {
                let st = self.construct(rule, pick, variants);
                let sc = self.score(&st);
                if best.as_ref().is_none_or(|(b, _)| sc < *b) {
                    best = Some((sc, st));
                }
            }
            starts.extend(best);
        }
        let Some(overall) = (0..starts.len()).min_by_key(|&k| (starts[k].0, k)) else {
            return State::new(self.inst);
        };
        let movable: Vec<usize> = (0..n).filter(|&s| !self.is_fixed(s)).collect();
        if movable.is_empty() {
            return starts.swap_remove(overall).1;
        }
        // Improve the best start, and also the starts with lunch earliest and latest: a day
        // that can end before a late lunch is a different basin from one with lunch mid-day.
        let mut seeds = vec![overall];
        for k in [starts.len() - 1, 0] {
            if !seeds.contains(&k) {
                seeds.push(k);
            }
        }
        let rounds = (ROUND_WORK / n.max(1)).clamp(MIN_ROUNDS, MAX_ROUNDS);
        let per_seed = rounds / (2 * seeds.len());
        let mut rng = Rng::new(SEED ^ (n as u64));
        let mut results: Vec<(Score, State)> = Vec::with_capacity(seeds.len());
        for &k in &seeds {
            let (sc, st) = &starts[k];
            results.push(self.improve(st.clone(), *sc, per_seed, &mut rng, &movable));
        }
        let best = (0..results.len())
            .min_by_key(|&k| (results[k].0, k))
            .unwrap_or(0);
        let (sc, st) = results.swap_remove(best);
        self.improve(st, sc, rounds - per_seed * seeds.len(), &mut rng, &movable)
            .1
    }

    /// Iterated destroy-and-repair from `start` for at most `rounds` rounds (fewer when it
    /// stops improving). Accepts a change that is no worse on the primary objective and not
    /// much worse on the sum of ends, the allowance shrinking to zero over the rounds.
    fn improve(
        &self,
        start: State,
        start_score: Score,
        rounds: usize,
        rng: &mut Rng,
        movable: &[usize],
    ) -> (Score, State) {
        let inst = self.inst;
        let mean = movable
            .iter()
            .map(|&s| i64::from(inst.sessions[s].dur))
            .sum::<i64>()
            / movable.len().max(1) as i64;
        let patience = PATIENCE.max(rounds / 4);
        let mut best = start.clone();
        let mut best_score = start_score;
        let mut cur = start;
        let mut cur_score = start_score;
        let mut since_best = 0;
        for round in 0..rounds {
            if since_best > patience
                || best_score.unplaced + best_score.moved == 0 && best_score.latest == self.floor
            {
                break;
            }
            since_best += 1;
            let allowance = mean * (rounds - round) as i64 / rounds.max(1) as i64;
            let (undo, complete) =
                self.perturb(&mut cur, rng, movable, round, cur_score, allowance);
            // An incomplete repair was stopped because it could not be accepted.
            let sc = Some(cur_score)
                .filter(|_| complete)
                .map(|_| self.score(&cur))
                .filter(|sc| Bound::accepts(&cur_score, allowance, sc));
            if let Some(sc) = sc {
                cur_score = sc;
                if sc < best_score {
                    best_score = sc;
                    best.clone_from(&cur);
                    since_best = 0;
                }
            } else {
                self.revert(&mut cur, undo);
            }
        }
        (best_score, best)
    }

    /// One destroy-and-repair step from a state scoring `cur`; returns what it takes to undo
    /// it, and whether the repair ran to the end (`false`: it stopped early because the
    /// result could not be accepted with this `allowance`, [`Bound::accepts`]).
    fn perturb(
        &self,
        st: &mut State,
        rng: &mut Rng,
        movable: &[usize],
        round: usize,
        cur: Score,
        allowance: i64,
    ) -> (Undo, bool) {
        let inst = self.inst;
        let n_mov = movable.len();
        let size = (2 + rng.below((n_mov / 6).clamp(2, 12))).min(n_mov);
        let mut out: Vec<usize> = Vec::new();
        let mut undo = Undo {
            before: Vec::new(),
            lunch: Vec::new(),
        };
        // A session to re-insert before the others (the one the move makes space for).
        let mut first: Option<usize> = None;
        // (`cur` counts every session left out: none, no need to look.)
        let unplaced: Vec<usize> = if cur.unplaced == 0 {
            Vec::new()
        } else {
            movable
                .iter()
                .copied()
                .filter(|&s| st.pos[s].is_none())
                .collect()
        };
        let op = rng.below(10);
        if !unplaced.is_empty() && op == 9 {
            // Start again: everything out, new lunch slots, a new random priority order.
            for (d, opts) in self.lunch_options.iter().enumerate() {
                if opts.len() > 1 {
                    undo.lunch.push((d, st.lunch[d]));
                    st.lunch[d] = Some(opts[rng.below(opts.len())]);
                }
            }
            out.extend(movable.iter().copied().filter(|&s| st.pos[s].is_some()));
            first = Some(unplaced[rng.below(unplaced.len())]);
        } else if !unplaced.is_empty() && op < 4 {
            // Make space for an unplaced session where it fits best without rooms' occupants.
            let u = unplaced[rng.below(unplaced.len())];
            first = Some(u);
            let d = rng.below(inst.days.len());
            let rooms = &inst.sessions[u].rooms;
            let r = rooms[rng.below(rooms.len())];
            let day = &inst.days[d];
            let span = (day.end - day.start - inst.sessions[u].dur).max(1);
            let t = day.start + rng.below(span as usize) as i32;
            let (a, b) = (t, t + inst.sessions[u].dur);
            for &s in movable {
                if let Some(p) = st.pos[s]
                    && p.day == d
                {
                    let e = p.start + inst.sessions[s].dur;
                    let overlaps =
                        p.start < b + inst.rest.max(inst.co) && a < e + inst.rest.max(inst.co);
                    let shares = p.room == r
                        || inst.sessions[s]
                            .speakers
                            .iter()
                            .any(|sp| inst.sessions[u].speakers.contains(sp))
                        || (inst.sessions[s].track.is_some()
                            && inst.sessions[s].track == inst.sessions[u].track);
                    if overlaps && shares {
                        out.push(s);
                    }
                }
            }
        } else if op < 5 && self.lunch_options.iter().any(|o| o.len() > 1) {
            // Move one day's lunch and clear what the new slot covers.
            let days: Vec<usize> = (0..inst.days.len())
                .filter(|&d| self.lunch_options[d].len() > 1)
                .collect();
            let d = days[rng.below(days.len())];
            let opts = &self.lunch_options[d];
            let x = opts[rng.below(opts.len())];
            undo.lunch.push((d, st.lunch[d]));
            st.lunch[d] = Some(x);
            if !unplaced.is_empty() {
                first = Some(unplaced[rng.below(unplaced.len())]);
            }
            for &s in movable {
                if let Some(p) = st.pos[s]
                    && p.day == d
                    && p.start < x + inst.lunch_len
                    && x < p.start + inst.sessions[s].dur
                {
                    out.push(s);
                }
            }
            self.random_on_day(st, rng, movable, d, size / 2, &mut out);
        } else if op < 8 {
            // The sessions that end last on the latest day, plus others that day.
            let mut finish = vec![i32::MIN; inst.days.len()];
            for &s in movable {
                if let Some(p) = st.pos[s] {
                    finish[p.day] = finish[p.day].max(p.start + inst.sessions[s].dur);
                }
            }
            let d = if round.is_multiple_of(2) {
                (0..inst.days.len())
                    .max_by_key(|&d| (finish[d], d))
                    .unwrap_or(0)
            } else {
                rng.below(inst.days.len())
            };
            let mut on_day: Vec<(i32, usize)> = movable
                .iter()
                .filter_map(|&s| {
                    st.pos[s]
                        .filter(|p| p.day == d)
                        .map(|p| (p.start + inst.sessions[s].dur, s))
                })
                .collect();
            let take = 1 + rng.below(3.min(on_day.len().max(1)));
            // Only the `take` ending last are used: pick them out rather than sort them all.
            if on_day.len() > take {
                on_day.select_nth_unstable_by(take - 1, |a, b| b.cmp(a));
                on_day.truncate(take);
            }
            out.extend(on_day.iter().map(|&(_, s)| s));
            self.random_on_day(st, rng, movable, d, size, &mut out);
        } else {
            // A time band across every room of one day.
            let d = rng.below(inst.days.len());
            let day = &inst.days[d];
            let width = 60 + rng.below(120) as i32;
            let a = day.start + rng.below(((day.end - day.start - width).max(1)) as usize) as i32;
            for &s in movable {
                if let Some(p) = st.pos[s]
                    && p.day == d
                    && p.start < a + width
                    && a < p.start + inst.sessions[s].dur
                {
                    out.push(s);
                }
            }
            if out.len() > 3 * size {
                out.truncate(3 * size);
            }
            if out.is_empty() {
                for _ in 0..size {
                    out.push(movable[rng.below(n_mov)]);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        for &s in &out {
            // Record unplaced ones too: they are about to be inserted and must be undone.
            let p = st.remove(inst, s);
            undo.before.push((s, p));
        }
        let mut todo = out;
        for &s in &unplaced {
            if !todo.contains(&s) {
                todo.push(s);
                undo.before.push((s, None));
            }
        }
        // The rule's keys, each scaled by a random factor of 75 to 125 % that shuffles
        // near-equal priorities: one draw per session, in session order. Only the sessions
        // to re-insert need theirs (the only keys read), so the others' draws are skipped.
        let mut keys = self.keys_buf.take();
        keys.resize(self.n(), 0);
        let base = &self.base_keys[rng.below(4)];
        for &s in &todo {
            let f = 75 + rng.peek_below(s as u64, 51) as i64;
            keys[s] = base[s] / 100 * f;
        }
        rng.skip(self.n() as u64);
        if let Some(u) = first {
            keys[u] = i64::MAX;
        }
        let mut bound = Bound::new(self, st, cur, allowance, &undo.before);
        let complete = self.insert_all(st, todo, &keys, Some(&mut bound));
        self.finish_buf.set(bound.finish);
        self.keys_buf.set(keys);
        (undo, complete)
    }

    fn random_on_day(
        &self,
        st: &State,
        rng: &mut Rng,
        movable: &[usize],
        d: usize,
        count: usize,
        out: &mut Vec<usize>,
    ) {
        let on_day: Vec<usize> = movable
            .iter()
            .copied()
            .filter(|&s| st.pos[s].is_some_and(|p| p.day == d))
            .collect();
        if on_day.is_empty() {
            return;
        }
        for _ in 0..count {
            out.push(on_day[rng.below(on_day.len())]);
        }
    }

    fn revert(&self, st: &mut State, undo: Undo) {
        let inst = self.inst;
        // A session put back where it was stays (the lists hold the same intervals either
        // way, and no answer depends on their order among equal starts).
        for &(s, p) in &undo.before {
            if st.pos[s] != p {
                st.remove(inst, s);
            }
        }
        // Anything else touched was removed and re-placed: recorded in `before` too.
        for &(s, p) in &undo.before {
            if let Some(p) = p
                && st.pos[s].is_none()
            {
                st.place(inst, s, p);
            }
        }
        for &(d, l) in undo.lunch.iter().rev() {
            st.lunch[d] = l;
        }
    }
}

/// What a repair can still reach while its sessions go back in: lower bounds on the final
/// score's terms, against the score of the state it started from and the acceptance rule
/// ([`Bound::accepts`]).
///
/// Every term only grows as sessions are placed: a day's finish is the latest end on it, the
/// sum of ends counts each session still to place at its earliest possible end
/// ([`min_ends`]), and a session counts as left out or moved once it has been placed (or
/// not). Once the bounds already fail the rule, so would the finished repair: it can stop
/// there, undone, with the same outcome as before and fewer placement queries. For the same
/// reason a session need not be looked for past `cap`: any placement ending later fails the
/// rule (the search stops at `None`, which fails it too).
struct Bound {
    cur: Score,
    allowance: i64,
    unplaced: usize,
    moved: usize,
    /// Per day, the latest end so far (`i32::MIN`: none).
    finish: Vec<i32>,
    end_sum: i64,
}

impl Bound {
    /// Whether a repair ending at `sc` is kept, from a state scoring `cur`. While sessions are
    /// left over, only fitting them in matters: move sideways freely. Otherwise no worse on
    /// the primary objective and within `allowance` on the sum of ends.
    fn accepts(cur: &Score, allowance: i64, sc: &Score) -> bool {
        if cur.unplaced > 0 {
            (sc.unplaced, sc.moved) <= (cur.unplaced, cur.moved)
        } else {
            sc.primary() <= cur.primary() && sc.end_sum <= cur.end_sum + allowance
        }
    }

    /// The bounds once the sessions of `before` (each with its placement in the state scoring
    /// `cur`) have been taken out of `st`.
    fn new(
        search: &Search,
        st: &State,
        cur: Score,
        allowance: i64,
        before: &[(usize, Option<Pos>)],
    ) -> Bound {
        let inst = search.inst;
        let days = inst.days.len();
        let mut finish = search.finish_buf.take();
        finish.clear();
        finish.resize(days, i32::MIN);
        // Within a room the intervals do not overlap: the last to start ends last.
        for (k, list) in st.room.iter().enumerate() {
            if let Some(b) = list.last() {
                finish[k % days] = finish[k % days].max(b.b);
            }
        }
        let mut b = Bound {
            cur,
            allowance,
            unplaced: cur.unplaced,
            moved: cur.moved,
            finish,
            end_sum: cur.end_sum,
        };
        for &(s, p) in before {
            match p {
                Some(p) => b.end_sum -= i64::from(p.start + inst.sessions[s].dur),
                None => b.unplaced -= 1,
            }
            if search.fixed.preferred[s].is_some_and(|q| Some(q) != p) {
                b.moved -= 1;
            }
            b.end_sum += i64::from(search.min_end[s]);
        }
        b
    }

    /// Accounts for session `s` placed at `p` (or left out).
    fn placed(&mut self, search: &Search, s: usize, p: Option<Pos>) {
        self.end_sum -= i64::from(search.min_end[s]);
        match p {
            Some(p) => {
                let end = p.start + search.inst.sessions[s].dur;
                self.end_sum += i64::from(end);
                self.finish[p.day] = self.finish[p.day].max(end);
            }
            None => self.unplaced += 1,
        }
        if search.fixed.preferred[s].is_some_and(|q| Some(q) != p) {
            self.moved += 1;
        }
    }

    /// Whether the repair can no longer be accepted.
    fn doomed(&self) -> bool {
        let cur = &self.cur;
        if cur.unplaced > 0 {
            return (self.unplaced, self.moved) > (cur.unplaced, cur.moved);
        }
        let placed = self.finish.iter().filter(|&&f| f > i32::MIN);
        let latest = placed.clone().copied().max().unwrap_or(0);
        let day_sum: i32 = placed.sum();
        (self.unplaced, self.moved, latest, day_sum) > cur.primary()
            || self.end_sum > cur.end_sum + self.allowance
    }

    /// The latest end at which session `s` (earliest possible end `min_end`, still counted
    /// at it) can be placed without failing the rule.
    fn cap(&self, min_end: i32) -> i32 {
        let cur = &self.cur;
        if cur.unplaced > 0 {
            return i32::MAX;
        }
        let room = cur.end_sum + self.allowance - (self.end_sum - i64::from(min_end));
        let mut cap = i32::try_from(room).unwrap_or(if room < 0 { i32::MIN } else { i32::MAX });
        if (self.unplaced, self.moved) == (cur.unplaced, cur.moved) {
            cap = cap.min(cur.latest);
        }
        cap
    }
}

/// How to undo one perturbation: every touched session's previous placement, and the lunch
/// change if any.
struct Undo {
    before: Vec<(usize, Option<Pos>)>,
    lunch: Vec<(usize, Option<i32>)>,
}
