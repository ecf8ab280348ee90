//! The engine's exact output on a fixed set of instances, as fingerprints (issue #16).
//!
//! A change meant to make the engine faster without changing what it finds must leave every
//! line of the snapshot alone: the benchmark suite, the 30 small random instances of the ILP
//! comparison (`bench/timetable_ilp`, the `timetable_dump` example's `RANDOM` = 30) and a
//! replan of some of them after an edit. Each line holds the instance, whether a timetable
//! was found, its latest finish and a 64-bit FNV-1a hash of the whole result serialized as
//! JSON (the timetable, or the explanation when there is none), so a byte anywhere in the
//! output that differs shows.
//!
//! `TIMETABLE_DUMP=dir` also writes each result in full to `dir/<name>.json`, to diff two
//! versions of the engine.

use steward_events::timetable::generator;
use steward_events::timetable::{Timetable, TimetableInput, solve};

/// The random instances of `examples/timetable_dump.rs` with `RANDOM` = 30.
fn random_instances() -> Vec<(String, TimetableInput)> {
    (0..30u64).map(generator::random_instance).collect()
}

/// `input` edited one way (as the replanning property test does), to replan from `previous`.
fn edited(input: &TimetableInput, previous: &Timetable, edit: usize) -> TimetableInput {
    let mut changed = input.clone();
    let k = (edit * 5 + 1) % changed.sessions.len();
    match edit % 4 {
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

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn engine_output_is_unchanged_on_the_reference_instances() {
    let dump = std::env::var("TIMETABLE_DUMP").ok();
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).expect("dump dir");
    }
    let mut lines = Vec::new();
    let mut run = |name: &str, input: &TimetableInput| {
        let result = solve(input);
        let json = serde_json::to_string(&result).expect("serializes");
        if let Some(dir) = &dump {
            std::fs::write(format!("{dir}/{name}.json"), &json).expect("dump");
        }
        let (feasible, latest) = match &result {
            Ok(tt) => (
                "feasible",
                tt.latest_finish().map_or("-".into(), |t| t.to_string()),
            ),
            Err(_) => ("infeasible", "-".into()),
        };
        lines.push(format!(
            "{name:<16} {feasible:<10} {latest:>5} {:016x}",
            fnv1a(json.as_bytes())
        ));
        result.ok()
    };
    for (name, input) in generator::benchmark_suite() {
        let _ = run(&name, &input);
    }
    for (k, (name, input)) in random_instances().into_iter().enumerate() {
        let first = run(&name, &input);
        // Every third one is replanned after an edit (the previous timetable in force).
        if k % 3 == 0
            && let Some(tt) = first
        {
            let _ = run(&format!("{name}-replan"), &edited(&input, &tt, k / 3));
        }
    }
    insta::assert_snapshot!("timetable_fingerprints", lines.join("\n"));
}
