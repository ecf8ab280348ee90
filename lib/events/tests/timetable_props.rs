//! Property tests of the timetable engine over generated instances.
//!
//! The rules are restated here directly (a third, deliberately naive implementation beside the
//! solver and the checker), and the checker must accept every timetable the solver returns.

use std::collections::BTreeMap;

#[path = "support/timetable_reference.rs"]
mod reference;

use proptest::prelude::*;
use steward_events::timetable::generator::{GeneratorParams, generate};
use steward_events::timetable::{
    Assignment, MoveReason, Session, SpeakerId, Timetable, TimetableInput, check, solve,
};

fn params() -> impl Strategy<Value = GeneratorParams> {
    (
        any::<u64>(),
        3usize..=22,
        1usize..=4,
        1usize..=3,
        30u32..=85,
        0u32..=35,
        any::<bool>(),
    )
        .prop_map(|(seed, sessions, rooms, days, util, deps, keynote)| {
            let mut p = GeneratorParams::new(seed, sessions, rooms, days);
            p.utilisation_percent = util;
            p.dependency_percent = deps;
            p.keynote = keynote;
            p
        })
}

/// `cases` per property, unless `PROPTEST_CASES` asks for more (or fewer) on a longer run.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

fn m(t: steward_events::timetable::TimeOfDay) -> i32 {
    i32::from(t.minutes())
}

fn session<'a>(input: &'a TimetableInput, a: &Assignment) -> &'a Session {
    input
        .sessions
        .iter()
        .find(|s| s.id == a.session)
        .expect("assignment names a known session")
}

/// Every pair of assignments on the same day, the earlier-starting first.
fn same_day_pairs(tt: &Timetable) -> Vec<(&Assignment, &Assignment)> {
    let mut out = Vec::new();
    for (i, a) in tt.assignments.iter().enumerate() {
        for b in &tt.assignments[i + 1..] {
            if a.date == b.date {
                if (a.start, a.end) <= (b.start, b.end) {
                    out.push((a, b));
                } else {
                    out.push((b, a));
                }
            }
        }
    }
    out
}

fn assert_rules(input: &TimetableInput, tt: &Timetable) {
    assert_eq!(tt.assignments.len(), input.sessions.len());
    let co = i32::from(input.changeover_minutes);
    let rest = i32::from(input.speaker_rest_minutes);
    // No person in two places, with rest; no room used twice, with changeover; tracks apart.
    for (a, b) in same_day_pairs(tt) {
        let gap = m(b.start) - m(a.end);
        let (sa, sb) = (session(input, a), session(input, b));
        let shared: Vec<&SpeakerId> = sa
            .speakers
            .iter()
            .filter(|p| sb.speakers.contains(p))
            .collect();
        assert!(
            shared.is_empty() || gap >= rest,
            "{shared:?} in {} and {} {gap} min apart",
            a.session,
            b.session
        );
        assert!(
            a.room != b.room || gap >= co,
            "room {} double-booked by {} and {}",
            a.room,
            b.session,
            a.session
        );
        assert!(
            sa.track.is_none() || sa.track != sb.track || gap >= 0,
            "track overlap"
        );
    }
    // Dependencies.
    let by_id: BTreeMap<&str, &Assignment> = tt
        .assignments
        .iter()
        .map(|a| (a.session.as_str(), a))
        .collect();
    for s in &input.sessions {
        let b = by_id[s.id.as_str()];
        for p in &s.after {
            let a = by_id[p.as_str()];
            let ok = a.date < b.date
                || (a.date == b.date
                    && m(b.start) >= m(a.end) + if a.room == b.room { co } else { 0 });
            assert!(ok, "{} must come after {}", s.id, p);
        }
        // Pinned unchanged.
        if let Some(pin) = &s.pinned {
            assert_eq!(&b.placement(), pin, "pinned {} moved", s.id);
        }
    }
    // Inside the day, the room's availability, and outside lunch.
    for a in &tt.assignments {
        let s = session(input, a);
        assert_eq!(m(a.end) - m(a.start), i32::from(s.duration_minutes));
        let day = input
            .days
            .iter()
            .find(|d| d.date == a.date)
            .expect("a day of the event");
        assert!(
            day.start <= a.start && a.end <= day.end,
            "{} outside day",
            a.session
        );
        let room = input
            .rooms
            .iter()
            .find(|r| r.id == a.room)
            .expect("a known room");
        assert!(room.capacity >= s.min_capacity);
        assert!(
            room.availability.is_empty()
                || room
                    .availability
                    .iter()
                    .any(|w| w.date == a.date && w.start <= a.start && a.end <= w.end),
            "{} outside room {}'s availability",
            a.session,
            a.room
        );
        let plan = tt
            .days
            .iter()
            .find(|p| p.date == a.date)
            .expect("a day plan");
        if let Some(l) = plan.lunch {
            assert!(
                a.end <= l.start || l.end <= a.start,
                "{} during lunch",
                a.session
            );
        }
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn solver_output_obeys_every_rule_and_the_checker_agrees(p in params()) {
        let input = generate(&p);
        match solve(&input) {
            Ok(tt) => {
                assert_rules(&input, &tt);
                prop_assert_eq!(check(&input, &tt), vec![]);
            }
            Err(e) => prop_assert!(!e.problems.is_empty() && !e.to_string().is_empty()),
        }
    }

}

// Two and three solves per case: fewer cases keep the suite at a few seconds in debug builds.
proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn same_input_gives_byte_identical_output(p in params()) {
        let input = generate(&p);
        let once = serde_json::to_string(&solve(&input)).expect("serializes");
        let twice = serde_json::to_string(&solve(&input)).expect("serializes");
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn replanning_keeps_every_still_valid_assignment(p in params(), edit in 0usize..4, pick in any::<usize>()) {
        let input = generate(&p);
        let Ok(first) = solve(&input) else { return Ok(()) };
        // Replanning the same input changes nothing.
        let mut same = input.clone();
        same.previous = Some(first.clone());
        let again = solve(&same).expect("the same input is still feasible");
        prop_assert_eq!(&again.assignments, &first.assignments);
        prop_assert!(again.moved.is_empty());

        // One edit, then replan.
        let k = pick % input.sessions.len();
        let changed = reference::with_edit(&input, &first, k, edit);
        let Ok(second) = solve(&changed) else { return Ok(()) };
        assert_rules(&changed, &second);
        prop_assert_eq!(check(&changed, &second), vec![]);
        let made_room = second.moved.iter().any(|m| matches!(m.reason, MoveReason::MadeRoom { .. }));
        for a in &first.assignments {
            let Some(now) = second.assignment(&a.session) else { continue };
            if now.placement() == a.placement() {
                continue;
            }
            let m = second.moved.iter().find(|m| m.session == a.session);
            prop_assert!(m.is_some(), "{} moved without a reason", a.session);
            let m = m.expect("checked");
            prop_assert_eq!(&m.from, &a.placement());
            prop_assert_eq!(&m.to, &now.placement());
        }
        // An edit that touches one session and no room moves at most the sessions it clashes
        // with, unless the new timetable could not be built around the old one at all.
        if edit < 3 && !made_room {
            for m in &second.moved {
                let touched = m.session == changed.sessions[k].id;
                let clash = matches!(m.reason, MoveReason::Clash { .. } | MoveReason::Dependency { .. } | MoveReason::Precedes { .. });
                prop_assert!(touched || clash || matches!(m.reason, MoveReason::Lunch | MoveReason::OutsideDay | MoveReason::RoomUnavailable), "unexpected move {:?}", m);
            }
        }
    }
}
