//! The engine's exact output on a fixed set of instances, as fingerprints (issue #16).
//!
//! A change meant to make the engine faster without changing what it finds must leave every
//! line of the snapshot alone: the benchmark suite, the 30 small random instances of the ILP
//! comparison (`bench/timetable_ilp`, the `timetable_dump` example's `RANDOM` = 30), a replan
//! of some of them after an edit, and the 24 large generated instances
//! (`generator::large_instance`, 100–300 sessions, so a change is not judged on the suite's
//! two 200 × 8 instances alone). Each line holds the instance, whether a timetable was found,
//! its latest finish and a 64-bit FNV-1a hash of the whole result serialized as JSON (the
//! timetable, or the explanation when there is none), so a byte anywhere in the output that
//! differs shows. The same input always gives the same line (the search is deterministic).
//!
//! A change that does alter what the engine finds must show it is no worse instead: the
//! `timetable_quality` example prints each instance's score (sessions left out, moved, latest
//! finish, sum of day finishes, sum of ends) to compare two engines by.
//!
//! `TIMETABLE_DUMP=dir` also writes each result in full to `dir/<name>.json`, to diff two
//! versions of the engine.

#[path = "support/timetable_reference.rs"]
mod reference;

#[test]
fn engine_output_is_unchanged_on_the_reference_instances() {
    let dump = std::env::var("TIMETABLE_DUMP").ok();
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).expect("dump dir");
    }
    let mut lines = Vec::new();
    for solved in reference::solve_all(true) {
        if let Some(dir) = &dump {
            let json = serde_json::to_string(&solved.result).expect("serializes");
            std::fs::write(format!("{dir}/{}.json", solved.name), &json).expect("dump");
        }
        let (feasible, latest) = match &solved.result {
            Ok(tt) => (
                "feasible",
                tt.latest_finish().map_or("-".into(), |t| t.to_string()),
            ),
            Err(_) => ("infeasible", "-".into()),
        };
        lines.push(format!(
            "{:<16} {feasible:<10} {latest:>5} {:016x}",
            solved.name, solved.hash
        ));
    }
    insta::assert_snapshot!("timetable_fingerprints", lines.join("\n"));
}
