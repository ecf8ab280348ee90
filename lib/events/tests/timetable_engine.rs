//! The timetable engine from the outside: hand-made timetables the checker must reject (one per
//! rule), every kind of infeasibility and its explanation, and replanning scenarios.

use jiff::civil::{Date, date};
use steward_events::timetable::{
    Assignment, Day, DayPlan, Lunch, MoveReason, Placement, Problem, Room, Session, SessionId,
    Slot, SpeakerId, TimeOfDay, Timetable, TimetableInput, TrackId, Violation, Warning, Window,
    check, solve,
};

fn t(s: &str) -> TimeOfDay {
    s.parse().expect("test times are well formed")
}

const FRI: Date = date(2026, 6, 5);
const SAT: Date = date(2026, 6, 6);

fn day(date: Date, start: &str, end: &str) -> Day {
    Day {
        date,
        start: t(start),
        end: t(end),
    }
}

fn room(id: &str, capacity: u32) -> Room {
    Room {
        id: id.into(),
        name: format!("Room {id}"),
        capacity,
        availability: Vec::new(),
    }
}

fn session(id: &str, title: &str, minutes: u16, speakers: &[&str]) -> Session {
    Session {
        id: id.into(),
        title: title.into(),
        duration_minutes: minutes,
        speakers: speakers.iter().map(|s| SpeakerId::from(*s)).collect(),
        track: None,
        after: Vec::new(),
        min_capacity: 0,
        room: None,
        pinned: None,
    }
}

fn input(days: Vec<Day>, rooms: Vec<Room>, sessions: Vec<Session>) -> TimetableInput {
    TimetableInput {
        days,
        rooms,
        sessions,
        lunch: None,
        changeover_minutes: 0,
        speaker_rest_minutes: 0,
        previous: None,
    }
}

fn lunch(from: &str, to: &str, minutes: u16) -> Option<Lunch> {
    Some(Lunch {
        earliest_start: t(from),
        latest_end: t(to),
        length_minutes: minutes,
    })
}

fn assign(session: &str, room: &str, date: Date, start: &str, end: &str) -> Assignment {
    Assignment {
        session: session.into(),
        room: room.into(),
        date,
        start: t(start),
        end: t(end),
    }
}

fn problems(input: &TimetableInput) -> Vec<Problem> {
    match solve(input) {
        Ok(_) => panic!("expected no timetable"),
        Err(e) => e.problems,
    }
}

fn message(input: &TimetableInput) -> String {
    match solve(input) {
        Ok(_) => panic!("expected no timetable"),
        Err(e) => e.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// The checker, one hand-made invalid timetable per rule.

/// Two days, two rooms (B small and only open some hours), a pinned keynote, a track, a
/// dependency, a required room, lunch, changeover and rest.
fn base_input() -> TimetableInput {
    let mut b = room("B", 30);
    b.availability = vec![
        Window {
            date: FRI,
            start: t("10:00"),
            end: t("17:00"),
        },
        Window {
            date: SAT,
            start: t("09:00"),
            end: t("12:00"),
        },
    ];
    let mut k = session("k", "Keynote", 60, &["ana"]);
    k.min_capacity = 80;
    k.pinned = Some(Placement {
        room: "A".into(),
        date: FRI,
        start: t("09:00"),
    });
    let mut t1 = session("t1", "Talk one", 45, &["bob"]);
    t1.track = Some(TrackId::from("web"));
    t1.after = vec!["k".into()];
    let mut t2 = session("t2", "Talk two", 45, &["bob"]);
    t2.track = Some(TrackId::from("web"));
    let mut w = session("w", "Workshop", 90, &["cy"]);
    w.room = Some("B".into());
    let mut i = input(
        vec![day(FRI, "09:00", "17:00"), day(SAT, "09:00", "17:00")],
        vec![room("A", 100), b],
        vec![k, t1, t2, w],
    );
    i.lunch = lunch("12:00", "13:30", 60);
    i.changeover_minutes = 10;
    i.speaker_rest_minutes = 15;
    i
}

fn base_timetable() -> Timetable {
    Timetable {
        assignments: vec![
            assign("k", "A", FRI, "09:00", "10:00"),
            assign("t1", "A", FRI, "10:10", "10:55"),
            assign("w", "B", FRI, "10:00", "11:30"),
            assign("t2", "A", FRI, "11:10", "11:55"),
        ],
        days: vec![
            DayPlan {
                date: FRI,
                lunch: Some(Slot {
                    start: t("12:00"),
                    end: t("13:00"),
                }),
                finish: Some(t("11:55")),
            },
            DayPlan {
                date: SAT,
                lunch: Some(Slot {
                    start: t("12:00"),
                    end: t("13:00"),
                }),
                finish: None,
            },
        ],
        warnings: Vec::new(),
        moved: Vec::new(),
    }
}

/// Applies `edit` to the valid base timetable and returns the violations found.
fn violations(edit: impl FnOnce(&mut Timetable)) -> Vec<Violation> {
    let mut tt = base_timetable();
    edit(&mut tt);
    check(&base_input(), &tt)
}

fn set(tt: &mut Timetable, session: &str, a: Assignment) {
    let slot = tt
        .assignments
        .iter_mut()
        .find(|x| x.session.as_str() == session)
        .expect("session is in the base timetable");
    *slot = a;
}

#[test]
fn checker_accepts_the_hand_made_valid_timetable() {
    assert_eq!(check(&base_input(), &base_timetable()), vec![]);
}

#[test]
fn checker_rejects_a_missing_session() {
    let v = violations(|tt| tt.assignments.retain(|a| a.session.as_str() != "w"));
    assert!(v.contains(&Violation::MissingSession {
        session: "w".into()
    }));
}

#[test]
fn checker_rejects_an_unknown_session() {
    let v = violations(|tt| {
        tt.assignments
            .push(assign("ghost", "A", SAT, "09:00", "10:00"))
    });
    assert!(v.contains(&Violation::UnknownSession {
        session: "ghost".into()
    }));
}

#[test]
fn checker_rejects_a_session_placed_twice() {
    let v = violations(|tt| tt.assignments.push(assign("w", "B", SAT, "09:00", "10:30")));
    assert!(v.contains(&Violation::DuplicateSession {
        session: "w".into()
    }));
}

#[test]
fn checker_rejects_an_unknown_room() {
    let v = violations(|tt| set(tt, "t2", assign("t2", "Z", FRI, "11:10", "11:55")));
    assert!(v.contains(&Violation::UnknownRoom {
        session: "t2".into(),
        room: "Z".into()
    }));
}

#[test]
fn checker_rejects_an_unknown_day() {
    let sunday = date(2026, 6, 7);
    let v = violations(|tt| set(tt, "t2", assign("t2", "A", sunday, "09:00", "09:45")));
    assert!(v.contains(&Violation::UnknownDay {
        session: "t2".into(),
        date: sunday
    }));
}

#[test]
fn checker_rejects_a_wrong_end_time() {
    let v = violations(|tt| set(tt, "t2", assign("t2", "A", FRI, "11:10", "11:40")));
    assert!(v.contains(&Violation::WrongEnd {
        session: "t2".into(),
        expected: 11 * 60 + 55,
        found: 11 * 60 + 40
    }));
}

#[test]
fn checker_rejects_a_session_outside_the_day() {
    let v = violations(|tt| set(tt, "t2", assign("t2", "A", SAT, "16:30", "17:15")));
    assert!(v.contains(&Violation::OutsideDay {
        session: "t2".into()
    }));
}

#[test]
fn checker_rejects_a_room_outside_its_availability() {
    // B is open on Saturday only until 12:00.
    let v = violations(|tt| set(tt, "w", assign("w", "B", SAT, "14:00", "15:30")));
    assert!(v.contains(&Violation::RoomClosed {
        session: "w".into(),
        room: "B".into()
    }));
}

#[test]
fn checker_rejects_a_room_too_small() {
    let mut input = base_input();
    input.sessions[1].min_capacity = 50;
    let mut tt = base_timetable();
    set(&mut tt, "t1", assign("t1", "B", SAT, "09:00", "09:45"));
    let v = check(&input, &tt);
    assert!(v.contains(&Violation::RoomTooSmall {
        session: "t1".into(),
        room: "B".into(),
        needed: 50,
        capacity: 30
    }));
}

#[test]
fn checker_rejects_a_session_outside_its_required_room() {
    let v = violations(|tt| set(tt, "w", assign("w", "A", SAT, "09:00", "10:30")));
    assert!(v.contains(&Violation::WrongRoom {
        session: "w".into(),
        required: "B".into()
    }));
}

#[test]
fn checker_rejects_a_moved_pinned_session() {
    let v = violations(|tt| set(tt, "k", assign("k", "A", FRI, "09:00", "10:00")));
    assert!(v.is_empty(), "unchanged pin is fine: {v:?}");
    let v = violations(|tt| {
        set(tt, "k", assign("k", "A", SAT, "09:00", "10:00"));
        tt.days[0].finish = Some(t("11:55"));
        tt.days[1].finish = Some(t("10:00"));
    });
    assert!(v.contains(&Violation::PinnedMoved {
        session: "k".into()
    }));
}

#[test]
fn checker_rejects_a_double_booked_room() {
    // t2 moved into room A while t1 is still running there.
    let v = violations(|tt| set(tt, "t2", assign("t2", "A", FRI, "10:30", "11:15")));
    assert!(v.contains(&Violation::RoomClash {
        room: "A".into(),
        first: "t1".into(),
        second: "t2".into()
    }));
}

#[test]
fn checker_rejects_a_room_changeover_that_is_too_short() {
    // t1 ends 10:55; t2 at 11:00 leaves 5 min in room A where 10 are needed.
    let v = violations(|tt| {
        set(tt, "t2", assign("t2", "A", FRI, "11:00", "11:45"));
        tt.days[0].finish = Some(t("11:45"));
    });
    assert!(v.contains(&Violation::RoomClash {
        room: "A".into(),
        first: "t1".into(),
        second: "t2".into()
    }));
}

#[test]
fn checker_rejects_a_speaker_in_two_places() {
    // Bob gives t1 in A at 10:10–10:55 and t2 in B at 10:30–11:15.
    let v = violations(|tt| set(tt, "t2", assign("t2", "B", FRI, "10:30", "11:15")));
    assert!(v.contains(&Violation::SpeakerClash {
        speaker: "bob".into(),
        first: "t1".into(),
        second: "t2".into()
    }));
}

#[test]
fn checker_rejects_a_speaker_without_rest() {
    // Bob: t1 ends 10:55, t2 in room B at 11:00 leaves 5 min where 15 are needed.
    let mut input = base_input();
    input.sessions[3].pinned = None;
    let mut tt = base_timetable();
    set(&mut tt, "w", assign("w", "B", SAT, "09:00", "10:30"));
    set(&mut tt, "t2", assign("t2", "B", FRI, "11:00", "11:45"));
    tt.days[0].finish = Some(t("11:45"));
    tt.days[1].finish = Some(t("10:30"));
    let v = check(&input, &tt);
    assert_eq!(
        v,
        vec![Violation::SpeakerRest {
            speaker: "bob".into(),
            first: "t1".into(),
            second: "t2".into(),
            gap: 5
        }]
    );
}

#[test]
fn checker_rejects_overlapping_sessions_of_one_track() {
    let mut input = base_input();
    input.sessions[2].speakers = vec!["dan".into()];
    let mut tt = base_timetable();
    set(&mut tt, "w", assign("w", "B", SAT, "09:00", "10:30"));
    set(&mut tt, "t2", assign("t2", "B", FRI, "10:30", "11:15"));
    tt.days[0].finish = Some(t("11:15"));
    tt.days[1].finish = Some(t("10:30"));
    let v = check(&input, &tt);
    assert_eq!(
        v,
        vec![Violation::TrackClash {
            track: "web".into(),
            first: "t1".into(),
            second: "t2".into()
        }]
    );
}

#[test]
fn checker_rejects_a_broken_dependency() {
    // t1 must come after the keynote: put it on Friday before it ends, in room B.
    let mut input = base_input();
    input.sessions[1].track = None;
    let mut tt = base_timetable();
    set(&mut tt, "t1", assign("t1", "B", FRI, "09:00", "09:45"));
    let v = check(&input, &tt);
    assert!(v.contains(&Violation::Dependency {
        session: "t1".into(),
        after: "k".into()
    }));
}

#[test]
fn checker_demands_the_changeover_after_a_dependency_in_the_same_room() {
    // The keynote ends 10:00 in A; t1 at 10:05 in A is after it, but without the changeover.
    let v = violations(|tt| set(tt, "t1", assign("t1", "A", FRI, "10:05", "10:50")));
    assert!(v.contains(&Violation::Dependency {
        session: "t1".into(),
        after: "k".into()
    }));
}

#[test]
fn checker_rejects_a_session_during_lunch() {
    let v = violations(|tt| {
        set(tt, "w", assign("w", "B", FRI, "11:00", "12:30"));
        tt.days[0].finish = Some(t("12:30"));
    });
    assert!(v.contains(&Violation::DuringLunch {
        session: "w".into()
    }));
}

#[test]
fn checker_rejects_a_missing_or_misplaced_lunch() {
    let v = violations(|tt| tt.days[1].lunch = None);
    assert_eq!(v, vec![Violation::LunchMissing { date: SAT }]);
    let v = violations(|tt| {
        tt.days[1].lunch = Some(Slot {
            start: t("13:00"),
            end: t("14:00"),
        })
    });
    assert_eq!(v, vec![Violation::LunchInvalid { date: SAT }]);
    let v = violations(|tt| {
        tt.days[1].lunch = Some(Slot {
            start: t("12:00"),
            end: t("12:30"),
        })
    });
    assert_eq!(v, vec![Violation::LunchInvalid { date: SAT }]);
}

#[test]
fn checker_rejects_wrong_days_and_finish_times() {
    let v = violations(|tt| {
        tt.days.pop();
    });
    assert_eq!(v, vec![Violation::DaysMismatch]);
    let v = violations(|tt| tt.days[0].finish = Some(t("17:00")));
    assert_eq!(v, vec![Violation::WrongFinish { date: FRI }]);
}

// ---------------------------------------------------------------------------------------------
// The solver on small hand-made inputs.

#[test]
fn solves_the_base_input_and_the_checker_agrees() {
    let input = base_input();
    let tt = solve(&input).expect("feasible");
    assert_eq!(check(&input, &tt), vec![]);
    let k = tt.assignment(&"k".into()).expect("keynote placed");
    assert_eq!((k.room.as_str(), k.date, k.start), ("A", FRI, t("09:00")));
    // Everything fits on Friday morning; nothing should spill into Saturday or after lunch.
    assert!(
        tt.latest_finish().expect("has sessions") <= t("12:00"),
        "{tt:?}"
    );
}

#[test]
fn same_input_gives_byte_identical_output() {
    let input = base_input();
    let a = serde_json::to_string(&solve(&input).expect("feasible")).expect("serializes");
    let b = serde_json::to_string(&solve(&input).expect("feasible")).expect("serializes");
    assert_eq!(a, b);
}

#[test]
fn input_round_trips_through_json() {
    let input = base_input();
    let json = serde_json::to_string(&input).expect("serializes");
    assert!(json.contains("\"start\":\"09:00\""), "{json}");
    let back: TimetableInput = serde_json::from_str(&json).expect("parses");
    assert_eq!(back, input);
}

#[test]
fn lunch_is_placed_and_respected() {
    let mut input = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 50)],
        (0..6)
            .map(|k| session(&format!("s{k}"), &format!("Talk {k}"), 60, &[]))
            .collect(),
    );
    input.lunch = lunch("11:30", "14:00", 60);
    let tt = solve(&input).expect("feasible");
    assert_eq!(check(&input, &tt), vec![]);
    // Six hours of talks and an hour of lunch in one room: done at 16:00 at best.
    assert_eq!(tt.latest_finish(), Some(t("16:00")));
    assert!(tt.days[0].lunch.is_some());
}

#[test]
fn warns_about_back_to_back_speakers_and_empty_afternoons() {
    let mut input = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 50), room("B", 50)],
        vec![
            session("a", "A talk", 60, &["ana"]),
            session("b", "Another talk", 60, &["ana"]),
        ],
    );
    input.speaker_rest_minutes = 15;
    input.lunch = lunch("12:00", "13:00", 60);
    let tt = solve(&input).expect("feasible");
    assert!(tt.warnings.iter().any(|w| matches!(
        w,
        Warning::BackToBack { speaker, gap_minutes: 15, .. } if speaker.as_str() == "ana"
    )));
    assert!(
        tt.warnings
            .iter()
            .any(|w| matches!(w, Warning::RoomEmptyAfternoon { .. }))
    );
}

// ---------------------------------------------------------------------------------------------
// Every kind of infeasibility, with its explanation.

#[test]
fn explains_a_dependency_cycle_in_order() {
    let mut k = session("k", "the keynote", 60, &[]);
    k.after = vec!["p".into()];
    let mut p = session("p", "the panel", 60, &[]);
    p.after = vec!["k".into()];
    let i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 10)],
        vec![k, p],
    );
    assert_eq!(
        message(&i),
        "\u{201c}the keynote\u{201d} must come after \u{201c}the panel\u{201d}, which must come after \u{201c}the keynote\u{201d}"
    );
}

#[test]
fn explains_a_longer_dependency_cycle() {
    let mut a = session("a", "A", 30, &[]);
    a.after = vec!["b".into()];
    let mut b = session("b", "B", 30, &[]);
    b.after = vec!["c".into()];
    let mut c = session("c", "C", 30, &[]);
    c.after = vec!["a".into()];
    let i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 10)],
        vec![a, b, c],
    );
    assert!(matches!(&problems(&i)[..], [Problem::DependencyCycle { cycle }] if cycle.len() == 3));
    assert_eq!(
        message(&i),
        "\u{201c}A\u{201d} must come after \u{201c}B\u{201d}, which must come after \u{201c}C\u{201d}, which must come after \u{201c}A\u{201d}"
    );
}

#[test]
fn explains_a_shortage_of_room_hours() {
    // One room, 8 h day, 1 h lunch: 7 room-hours for 9 h of talks.
    let mut i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 50)],
        (0..9)
            .map(|k| session(&format!("s{k}"), &format!("Talk {k}"), 60, &[]))
            .collect(),
    );
    i.lunch = lunch("12:00", "14:00", 60);
    assert_eq!(
        message(&i),
        "short by 2 room-hours on Friday 2026-06-05: add a room or shorten sessions"
    );
}

#[test]
fn counts_changeovers_in_the_room_hours() {
    // 7 talks of 60 min with 10 min changeover in one 7.5 h window: 7 h + 6 × 10 min > 7.5 h.
    let mut i = input(
        vec![day(FRI, "09:00", "16:30")],
        vec![room("A", 50)],
        (0..7)
            .map(|k| session(&format!("s{k}"), &format!("Talk {k}"), 60, &[]))
            .collect(),
    );
    i.changeover_minutes = 10;
    assert_eq!(
        message(&i),
        "short by 0.5 room-hours on Friday 2026-06-05: add a room or shorten sessions"
    );
}

#[test]
fn explains_a_shortage_of_big_rooms() {
    let mut sessions: Vec<Session> = (0..4)
        .map(|k| session(&format!("s{k}"), &format!("Talk {k}"), 120, &[]))
        .collect();
    for s in &mut sessions {
        s.min_capacity = 100;
    }
    let i = input(
        vec![day(FRI, "09:00", "15:00"), day(SAT, "09:00", "10:00")],
        vec![room("big", 200), room("small", 20)],
        sessions,
    );
    assert_eq!(
        message(&i),
        "short by 1 room-hours over the 2 days in rooms with at least 100 seats: add a big room or shorten sessions"
    );
}

#[test]
fn explains_a_shortage_in_a_required_room() {
    let mut sessions: Vec<Session> = (0..3)
        .map(|k| session(&format!("s{k}"), &format!("Lab {k}"), 120, &[]))
        .collect();
    for s in &mut sessions {
        s.room = Some("lab".into());
    }
    let i = input(
        vec![day(FRI, "09:00", "14:00")],
        vec![room("lab", 20), room("hall", 200)],
        sessions,
    );
    assert_eq!(
        message(&i),
        "room lab is short by 1 hours on Friday 2026-06-05 for the sessions that must use it: move some elsewhere or shorten them"
    );
}

#[test]
fn explains_an_overloaded_speaker() {
    // A 7 h day with a 1 h lunch leaves 6 h; Ana has 7 h of talks.
    let mut i = input(
        vec![day(FRI, "09:00", "16:00")],
        vec![room("A", 50), room("B", 50), room("C", 50)],
        vec![
            session("a", "One", 140, &["Ana"]),
            session("b", "Two", 140, &["Ana"]),
            session("c", "Three", 140, &["Ana"]),
        ],
    );
    i.lunch = lunch("12:00", "14:00", 60);
    assert_eq!(
        message(&i),
        "Ana has 7 h of sessions in a 6 h day: spread them over more days or give some to someone else"
    );
}

#[test]
fn explains_an_overloaded_speaker_over_several_days_with_rest() {
    let mut i = input(
        vec![day(FRI, "09:00", "11:00"), day(SAT, "09:00", "11:00")],
        vec![room("A", 50), room("B", 50)],
        (0..4)
            .map(|k| session(&format!("s{k}"), &format!("Talk {k}"), 60, &["Bo"]))
            .collect(),
    );
    i.speaker_rest_minutes = 30;
    assert_eq!(
        message(&i),
        "Bo has 5 h of sessions (counting 1 h of rest between them) but the 2 days allow only 4 h: add a day or give some to someone else"
    );
}

#[test]
fn explains_an_overloaded_track() {
    let mut sessions: Vec<Session> = (0..5)
        .map(|k| session(&format!("s{k}"), &format!("Talk {k}"), 60, &[]))
        .collect();
    for s in &mut sessions {
        s.track = Some("ai".into());
    }
    let i = input(
        vec![day(FRI, "09:00", "13:00")],
        vec![room("A", 50), room("B", 50)],
        sessions,
    );
    assert!(message(&i).starts_with("track ai has 5 h of sessions in a 4 h day"));
}

#[test]
fn explains_a_session_longer_than_any_room_window() {
    let mut i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 50)],
        vec![session("long", "Hackathon", 300, &[])],
    );
    i.lunch = lunch("12:00", "13:30", 60);
    // Lunch at 12:00 leaves 13:00–17:00, the longest stretch: 4 h.
    assert_eq!(
        message(&i),
        "\u{201c}Hackathon\u{201d} lasts 5 h but the longest time a suitable room is free in one go is 4 h: shorten it or open a room longer"
    );
}

#[test]
fn explains_that_no_room_is_big_enough() {
    let mut s = session("gala", "Gala", 60, &[]);
    s.min_capacity = 500;
    let i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 100), room("B", 300)],
        vec![s],
    );
    assert_eq!(
        message(&i),
        "\u{201c}Gala\u{201d} needs 500 seats but the largest suitable room has 300: add a bigger room or lower the need"
    );
}

#[test]
fn explains_a_required_room_that_is_too_small_or_unknown() {
    let mut s = session("gala", "Gala", 60, &[]);
    s.min_capacity = 150;
    s.room = Some("A".into());
    let i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 100), room("B", 300)],
        vec![s.clone()],
    );
    assert_eq!(
        problems(&i),
        vec![Problem::NoRoomBigEnough {
            session: "Gala".into(),
            needed: 150,
            largest: 100
        }]
    );
    s.room = Some("Z".into());
    let i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 100)],
        vec![s],
    );
    assert_eq!(
        message(&i),
        "\u{201c}Gala\u{201d} asks for room Z, which does not exist"
    );
}

#[test]
fn explains_invalid_pinned_placements() {
    let base = || {
        let mut i = input(
            vec![day(FRI, "09:00", "17:00")],
            vec![room("A", 100), room("B", 10)],
            vec![session("k", "Keynote", 60, &["ana"])],
        );
        i.lunch = lunch("12:00", "13:00", 60);
        i
    };
    let pin = |i: &mut TimetableInput, room: &str, date: Date, start: &str| {
        i.sessions[0].pinned = Some(Placement {
            room: room.into(),
            date,
            start: t(start),
        });
    };
    let mut i = base();
    pin(&mut i, "A", FRI, "16:30");
    assert_eq!(
        message(&i),
        "\u{201c}Keynote\u{201d} is pinned to room A on Friday 2026-06-05 at 16:30, but it would run 16:30–17:30, outside the day's hours 09:00–17:00"
    );
    let mut i = base();
    i.sessions[0].min_capacity = 50;
    pin(&mut i, "B", FRI, "09:00");
    assert!(message(&i).ends_with("but that room has 10 seats and it needs 50"));
    let mut i = base();
    pin(&mut i, "A", SAT, "09:00");
    assert!(message(&i).contains("that date is not a day of the event"));
    let mut i = base();
    pin(&mut i, "A", FRI, "12:30");
    assert!(message(&i).ends_with("it overlaps every possible lunch slot"));
    let mut i = base();
    i.rooms[0].availability = vec![Window {
        date: FRI,
        start: t("13:00"),
        end: t("17:00"),
    }];
    pin(&mut i, "A", FRI, "09:00");
    assert!(message(&i).ends_with("but the room is not available then"));
}

#[test]
fn explains_clashing_pinned_sessions() {
    let mut a = session("a", "Opening", 60, &["ana"]);
    a.pinned = Some(Placement {
        room: "A".into(),
        date: FRI,
        start: t("09:00"),
    });
    let mut b = session("b", "Welcome", 60, &["ana"]);
    b.pinned = Some(Placement {
        room: "B".into(),
        date: FRI,
        start: t("09:30"),
    });
    let i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 100), room("B", 100)],
        vec![a, b],
    );
    assert_eq!(
        message(&i),
        "\u{201c}Opening\u{201d} and \u{201c}Welcome\u{201d} are both pinned but ana speaks at both without the 0 min rest"
    );
}

#[test]
fn explains_structural_mistakes() {
    let mut i = input(
        vec![day(FRI, "09:00", "17:00"), day(FRI, "10:00", "09:00")],
        vec![room("A", 10), room("A", 20)],
        vec![session("x", "X", 0, &[]), session("x", "Y", 30, &[])],
    );
    i.sessions[1].after = vec!["nope".into()];
    i.lunch = lunch("12:00", "12:30", 60);
    let all = message(&i);
    for expected in [
        "day 2026-06-05 appears twice",
        "ends at 09:00, which is not after its start at 10:00",
        "room A appears twice",
        "session x appears twice",
        "\u{201c}X\u{201d} lasts 0 minutes",
        "lunch lasts 60 min but must fit between 12:00 and 12:30",
        "\u{201c}Y\u{201d} must come after nope, which is not a session",
    ] {
        assert!(all.contains(expected), "{expected:?} missing from {all:?}");
    }
    let none = input(
        Vec::new(),
        vec![room("A", 10)],
        vec![session("x", "X", 30, &[])],
    );
    assert_eq!(problems(&none), vec![Problem::NoDays]);
}

#[test]
fn explains_when_the_search_cannot_fit_sessions() {
    // Two rooms have time enough, but a chain of three 3 h sessions cannot fit in an 8 h day.
    let mut b = session("b", "Part two", 180, &[]);
    b.after = vec!["a".into()];
    let mut c = session("c", "Part three", 180, &[]);
    c.after = vec!["b".into()];
    let i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 50), room("B", 50)],
        vec![session("a", "Part one", 180, &[]), b, c],
    );
    let msg = message(&i);
    assert!(
        msg.starts_with("could not fit \u{201c}Part three\u{201d}: \u{201c}Part three\u{201d} must come after \u{201c}Part two\u{201d}, which ends too late"),
        "{msg}"
    );
    assert!(msg.ends_with("add a room or a day, lengthen the day, or shorten sessions"));
}

#[test]
fn explains_a_speaker_whose_rest_leaves_no_time() {
    // Two 2 h sessions for one speaker, a 4.5 h day, 60 min rest: 5 h needed.
    let mut i = input(
        vec![day(FRI, "09:00", "13:30")],
        vec![room("A", 50), room("B", 50)],
        vec![
            session("a", "Morning", 120, &["Kim"]),
            session("b", "Noon", 120, &["Kim"]),
        ],
    );
    i.speaker_rest_minutes = 60;
    assert!(message(&i).starts_with(
        "Kim has 5 h of sessions (counting 1 h of rest between them) in a 4 h 30 min day"
    ));
}

#[test]
fn a_speakers_rest_may_fall_over_lunch() {
    // 3 h and 4 h for one speaker in an 8 h day with a 1 h lunch: 09–12, lunch, 13–17.
    let mut i = input(
        vec![day(FRI, "09:00", "17:00")],
        vec![room("A", 50), room("B", 50)],
        vec![
            session("a", "Morning", 180, &["Kim"]),
            session("b", "Afternoon", 240, &["Kim"]),
        ],
    );
    i.speaker_rest_minutes = 15;
    i.lunch = lunch("12:00", "13:00", 60);
    let tt = solve(&i).expect("feasible: the rest is taken at lunch");
    assert_eq!(check(&i, &tt), vec![]);
    assert_eq!(tt.latest_finish(), Some(t("17:00")));
}

// ---------------------------------------------------------------------------------------------
// Replanning.

fn with_previous(mut input: TimetableInput, previous: &Timetable) -> TimetableInput {
    input.previous = Some(previous.clone());
    input
}

fn conference() -> TimetableInput {
    let mut i = input(
        vec![day(FRI, "09:00", "17:00"), day(SAT, "09:00", "17:00")],
        vec![room("A", 200), room("B", 80), room("C", 40)],
        (0..12)
            .map(|k| {
                session(
                    &format!("s{k}"),
                    &format!("Talk {k}"),
                    [45, 60, 90][k % 3],
                    &[["ana", "bob", "cy", "dee"][k % 4]],
                )
            })
            .collect(),
    );
    i.lunch = lunch("12:00", "14:00", 60);
    i.changeover_minutes = 10;
    i.speaker_rest_minutes = 10;
    i
}

#[test]
fn replanning_an_unchanged_input_moves_nothing() {
    let input = conference();
    let first = solve(&input).expect("feasible");
    let again = solve(&with_previous(input.clone(), &first)).expect("feasible");
    assert_eq!(again.assignments, first.assignments);
    assert_eq!(again.days, first.days);
    assert!(again.moved.is_empty());
}

#[test]
fn replanning_with_a_new_session_keeps_everything_else() {
    let input = conference();
    let first = solve(&input).expect("feasible");
    let mut changed = input.clone();
    changed
        .sessions
        .push(session("new", "Late addition", 60, &["ana"]));
    let second = solve(&with_previous(changed.clone(), &first)).expect("feasible");
    assert_eq!(check(&changed, &second), vec![]);
    assert!(second.moved.is_empty());
    for a in &first.assignments {
        assert_eq!(second.assignment(&a.session), Some(a));
    }
}

#[test]
fn replanning_after_a_room_is_removed_moves_only_its_sessions() {
    let input = conference();
    let first = solve(&input).expect("feasible");
    let mut changed = input.clone();
    changed.rooms.retain(|r| r.id.as_str() != "C");
    let second = solve(&with_previous(changed.clone(), &first)).expect("feasible");
    assert_eq!(check(&changed, &second), vec![]);
    let in_c: Vec<&SessionId> = first
        .assignments
        .iter()
        .filter(|a| a.room.as_str() == "C")
        .map(|a| &a.session)
        .collect();
    assert!(!in_c.is_empty(), "the test needs a session in room C");
    let moved: Vec<&SessionId> = second.moved.iter().map(|m| &m.session).collect();
    assert_eq!(moved.len(), in_c.len());
    for m in &second.moved {
        assert!(in_c.contains(&&m.session));
        assert_eq!(m.reason, MoveReason::RoomRemoved);
    }
    for a in first.assignments.iter().filter(|a| a.room.as_str() != "C") {
        assert_eq!(second.assignment(&a.session), Some(a));
    }
}

#[test]
fn replanning_reports_clashes_and_lunch_changes() {
    let input = conference();
    let first = solve(&input).expect("feasible");
    // Move lunch to a window the old slot no longer fits in.
    let mut changed = input.clone();
    let old = first.days[0].lunch.expect("lunch on Friday");
    let new_start = if old.start < t("13:00") {
        "13:00"
    } else {
        "11:00"
    };
    changed.lunch = lunch(
        new_start,
        if new_start == "13:00" {
            "14:00"
        } else {
            "12:00"
        },
        60,
    );
    let second = solve(&with_previous(changed.clone(), &first)).expect("feasible");
    assert_eq!(check(&changed, &second), vec![]);
    for m in &second.moved {
        assert_eq!(m.reason, MoveReason::Lunch, "{m:?}");
    }
    // A new speaker on a session makes it clash with another of that speaker's talks.
    let mut changed = input.clone();
    let a = &first.assignments[0];
    let b = first
        .assignments
        .iter()
        .find(|b| b.date == a.date && b.start < a.end && a.start < b.end && b.session != a.session)
        .expect("two sessions run in parallel");
    let a_speaker = changed
        .sessions
        .iter()
        .find(|s| s.id == a.session)
        .map(|s| s.speakers[0].clone())
        .expect("has a speaker");
    let bs = changed
        .sessions
        .iter_mut()
        .find(|s| s.id == b.session)
        .expect("b exists");
    bs.speakers.push(a_speaker.clone());
    let second = solve(&with_previous(changed.clone(), &first)).expect("feasible");
    assert_eq!(check(&changed, &second), vec![]);
    assert!(second.moved.iter().any(|m| matches!(
        &m.reason,
        MoveReason::Clash { over, .. } if over == &format!("speaker {a_speaker}")
    )));
}

#[test]
fn replanning_moves_valid_sessions_only_when_nothing_else_fits() {
    // One room, 09:00–12:00. Previously s1 09:30–10:30 and s2 10:30–11:30; a new 60 min
    // session only fits if both move.
    let i = input(
        vec![day(FRI, "09:00", "12:00")],
        vec![room("A", 50)],
        vec![
            session("s1", "One", 60, &[]),
            session("s2", "Two", 60, &[]),
            session("s3", "Three", 60, &[]),
        ],
    );
    let previous = Timetable {
        assignments: vec![
            assign("s1", "A", FRI, "09:30", "10:30"),
            assign("s2", "A", FRI, "10:30", "11:30"),
        ],
        days: vec![DayPlan {
            date: FRI,
            lunch: None,
            finish: Some(t("11:30")),
        }],
        warnings: Vec::new(),
        moved: Vec::new(),
    };
    let tt = solve(&with_previous(i.clone(), &previous)).expect("feasible");
    assert_eq!(check(&i, &tt), vec![]);
    assert_eq!(tt.moved.len(), 2, "{:?}", tt.moved);
    for m in &tt.moved {
        assert_eq!(
            m.reason,
            MoveReason::MadeRoom {
                for_sessions: vec!["s3".into()]
            }
        );
    }
}

#[test]
fn replanning_keeps_a_pinned_session_and_moves_what_clashes_with_it() {
    let input = conference();
    let first = solve(&input).expect("feasible");
    let victim = first.assignments[3].clone();
    let mut changed = input.clone();
    // Pin a new session exactly where the victim was.
    let mut s = session("vip", "VIP", 30, &[]);
    s.pinned = Some(victim.placement());
    changed.sessions.push(s);
    let second = solve(&with_previous(changed.clone(), &first)).expect("feasible");
    assert_eq!(check(&changed, &second), vec![]);
    let m = second
        .moved
        .iter()
        .find(|m| m.session == victim.session)
        .expect("the displaced session moved");
    assert_eq!(
        m.reason,
        MoveReason::Clash {
            with: "vip".into(),
            over: format!("room {}", victim.room)
        }
    );
    assert_eq!(second.moved.len(), 1, "{:?}", second.moved);
}
