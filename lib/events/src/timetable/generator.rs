//! A seeded generator of realistic timetable inputs, for property tests and benchmarks.
//!
//! Every time and duration it produces is a multiple of 10 minutes, so a time-indexed model
//! with 10-minute slots (the ILP comparison under `bench/timetable_ilp`) is exact on them.

use jiff::civil::Date;

use super::model::{
    Day, Lunch, Placement, Room, RoomId, Session, SessionId, SpeakerId, TimeOfDay, TimetableInput,
    TrackId, Window,
};
use super::rng::Rng;

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratorParams {
    /// Seed: the same parameters always give the same instance.
    pub seed: u64,
    /// Number of sessions.
    pub sessions: usize,
    /// Number of rooms.
    pub rooms: usize,
    /// Number of days.
    pub days: usize,
    /// Share of room time (after lunch) the sessions and changeovers should fill, in percent.
    pub utilisation_percent: u32,
    /// Chance, in percent, that a session must come after an earlier one.
    pub dependency_percent: u32,
    /// Whether to pin an opening keynote in the biggest room at the start of the first day.
    pub keynote: bool,
}

impl GeneratorParams {
    /// Typical parameters: 70 % utilisation, 15 % dependencies, a pinned keynote.
    pub fn new(seed: u64, sessions: usize, rooms: usize, days: usize) -> Self {
        Self {
            seed,
            sessions,
            rooms,
            days,
            utilisation_percent: 70,
            dependency_percent: 15,
            keynote: true,
        }
    }
}

const DAY_START: u16 = 9 * 60;
const DAY_END: u16 = 18 * 60;
const LUNCH_FROM: u16 = 11 * 60 + 30;
const LUNCH_TO: u16 = 14 * 60;
const LUNCH_LEN: u16 = 60;
const CHANGEOVER: u16 = 10;
const REST: u16 = 10;
const CAPACITIES: [u32; 8] = [300, 150, 80, 80, 40, 40, 60, 120];

fn tod(minutes: u16) -> TimeOfDay {
    TimeOfDay::from_minutes(minutes.min(24 * 60)).unwrap_or(TimeOfDay::MIDNIGHT)
}

fn round10(x: f64) -> u16 {
    ((x / 10.0).round() * 10.0).clamp(20.0, 180.0) as u16
}

/// Builds one instance. Not every generated instance is feasible, though at the default
/// utilisation nearly all are.
pub fn generate(p: &GeneratorParams) -> TimetableInput {
    let mut rng = Rng::new(p.seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xA5A5);
    let n = p.sessions;
    let first = Date::constant(2026, 6, 5);
    let dates: Vec<Date> = (0..p.days.max(1))
        .map(|k| first.saturating_add(jiff::Span::new().days(k as i64)))
        .collect();
    let days: Vec<Day> = dates
        .iter()
        .map(|&date| Day {
            date,
            start: tod(DAY_START),
            end: tod(DAY_END),
        })
        .collect();

    let rooms: Vec<Room> = (0..p.rooms.max(1))
        .map(|k| {
            // The last of three or more rooms opens late on the first day.
            let availability = if p.rooms >= 3 && k == p.rooms - 1 {
                dates
                    .iter()
                    .enumerate()
                    .map(|(d, &date)| Window {
                        date,
                        start: tod(if d == 0 { 10 * 60 + 30 } else { DAY_START }),
                        end: tod(DAY_END),
                    })
                    .collect()
            } else {
                Vec::new()
            };
            Room {
                id: RoomId(format!("r{}", k + 1)),
                name: format!("Room {}", k + 1),
                capacity: CAPACITIES[k % CAPACITIES.len()],
                availability,
            }
        })
        .collect();

    let room_day = f64::from(DAY_END - DAY_START - LUNCH_LEN);
    let capacity = room_day * rooms.len() as f64 * days.len() as f64;
    let budget = (capacity * f64::from(p.utilisation_percent) / 100.0 / n.max(1) as f64
        - f64::from(CHANGEOVER))
    .max(20.0);
    let durations = [
        round10(budget * 0.5),
        round10(budget * 0.8),
        round10(budget),
        round10(budget * 1.7),
    ];

    let speaker_pool = (n * 2 / 3).max(3);
    let per_speaker_cap = 2 * days.len() + 1;
    let mut speaker_count = vec![0usize; speaker_pool];
    let tracks = (rooms.len() / 2).max(1);
    let big = rooms.iter().map(|r| r.capacity).max().unwrap_or(0);

    let mut sessions: Vec<Session> = Vec::with_capacity(n);
    for i in 0..n {
        let keynote = p.keynote && i == 0;
        let mut speakers = Vec::new();
        let want = if rng.chance(20) { 2 } else { 1 };
        for _ in 0..want {
            for _ in 0..8 {
                let s = rng.below(speaker_pool);
                let id = SpeakerId(format!("speaker-{}", s + 1));
                if speaker_count[s] < per_speaker_cap && !speakers.contains(&id) {
                    speaker_count[s] += 1;
                    speakers.push(id);
                    break;
                }
            }
        }
        let duration = if keynote {
            60
        } else {
            durations[rng.below(durations.len())]
        };
        let track = (!keynote && rng.chance(40))
            .then(|| TrackId(format!("track-{}", rng.below(tracks) + 1)));
        let mut after = Vec::new();
        if i > 0 && rng.chance(p.dependency_percent) {
            after.push(SessionId(format!("s{}", rng.below(i) + 1)));
            if i > 1 && rng.chance(30) {
                let other = SessionId(format!("s{}", rng.below(i) + 1));
                if !after.contains(&other) {
                    after.push(other);
                }
            }
        }
        let min_capacity = if keynote {
            big
        } else if rng.chance(10) && rooms.len() >= 2 {
            150.min(big)
        } else {
            [0, 20, 40][rng.below(3)]
        };
        let room = (!keynote && rng.chance(5))
            .then(|| RoomId(format!("r{}", rng.below(rooms.len()) + 1)))
            .filter(|r| {
                rooms
                    .iter()
                    .any(|x| x.id == *r && x.capacity >= min_capacity)
            });
        let pinned = keynote.then(|| Placement {
            room: RoomId(String::from("r1")),
            date: dates[0],
            start: tod(DAY_START),
        });
        sessions.push(Session {
            id: SessionId(format!("s{}", i + 1)),
            title: if keynote {
                String::from("Opening keynote")
            } else {
                format!("Session {}", i + 1)
            },
            duration_minutes: duration,
            speakers,
            track,
            after,
            min_capacity,
            room,
            pinned,
        });
    }
    TimetableInput {
        days,
        rooms,
        sessions,
        lunch: Some(Lunch {
            earliest_start: tod(LUNCH_FROM),
            latest_end: tod(LUNCH_TO),
            length_minutes: LUNCH_LEN,
        }),
        changeover_minutes: CHANGEOVER,
        speaker_rest_minutes: REST,
        previous: None,
    }
}

/// The named instances the benchmark and the ILP comparison use: 20, 50 and 200 sessions over
/// 2, 4 and 8 rooms and 1 to 3 days.
pub fn benchmark_suite() -> Vec<(String, TimetableInput)> {
    let specs: [(usize, usize, usize, u32); 8] = [
        (20, 2, 1, 70),
        (20, 4, 1, 50),
        (20, 2, 2, 60),
        (50, 4, 1, 75),
        (50, 4, 2, 70),
        (50, 8, 2, 50),
        (200, 8, 2, 75),
        (200, 8, 3, 65),
    ];
    specs
        .iter()
        .enumerate()
        .map(|(k, &(n, rooms, days, util))| {
            let mut params = GeneratorParams::new(1000 + k as u64, n, rooms, days);
            params.utilisation_percent = util;
            (format!("n{n}-r{rooms}-d{days}"), generate(&params))
        })
        .collect()
}

/// Random instance `k` of the ILP cross-check (`bench/timetable_ilp`, `examples/timetable_dump.rs`
/// with `RANDOM`): 6 to 24 sessions, 1 to 4 rooms, 1 to 3 days, named `rand{k}`.
pub fn random_instance(k: u64) -> (String, TimetableInput) {
    let mut p = GeneratorParams::new(
        9000 + k,
        6 + (k as usize * 7) % 19,
        1 + (k as usize) % 4,
        1 + (k as usize / 4) % 3,
    );
    p.utilisation_percent = 40 + (k as u32 * 13) % 51;
    p.dependency_percent = (k as u32 * 11) % 36;
    p.keynote = k.is_multiple_of(2);
    (format!("rand{k}"), generate(&p))
}

/// Shapes of [`large_instance`]: rooms × days with at least 8 room-days, so 100–300 sessions
/// stay about as dense as the suite's 200 × 8 instances.
const LARGE_SHAPES: [(usize, usize); 8] = [
    (4, 2),
    (4, 3),
    (5, 2),
    (6, 2),
    (6, 3),
    (7, 2),
    (8, 1),
    (8, 3),
];

/// Large instance `k` of the quality comparison (issue #16): 100 to 300 sessions, 4 to 8 rooms,
/// 1 to 3 days, 7 to 14 sessions per room and day, 55 to 80 % utilisation, named `large{k}`.
/// A wider net than the suite's two 200 × 8 instances, so a faster search is not tuned to them.
pub fn large_instance(k: u64) -> (String, TimetableInput) {
    let (rooms, days) = LARGE_SHAPES[k as usize % LARGE_SHAPES.len()];
    let per_room_day = 7 + (k as usize * 3 + k as usize / 8) % 8;
    let sessions = (rooms * days * per_room_day).clamp(100, 300);
    let mut p = GeneratorParams::new(5000 + k, sessions, rooms, days);
    p.utilisation_percent = 55 + (k as u32 * 7) % 26;
    (format!("large{k}"), generate(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_instance_with_the_requested_shape() {
        let p = GeneratorParams::new(42, 30, 4, 2);
        let a = generate(&p);
        assert_eq!(a, generate(&p));
        assert_eq!((a.sessions.len(), a.rooms.len(), a.days.len()), (30, 4, 2));
        assert_ne!(a, generate(&GeneratorParams::new(43, 30, 4, 2)));
        // Everything sits on a 10-minute grid, so a 10-minute time-indexed model is exact.
        assert!(a.sessions.iter().all(|s| s.duration_minutes % 10 == 0));
        let names: Vec<String> = benchmark_suite().into_iter().map(|(n, _)| n).collect();
        assert!(names.contains(&String::from("n200-r8-d3")));
    }
}
