//! Writes the benchmark instances and the engine's results as JSON, for the ILP comparison in
//! `bench/timetable_ilp`.
//!
//! Usage: `cargo run --release -p steward-events --example timetable_dump -- OUT_DIR [RANDOM]`
//! Writes `OUT_DIR/<name>.json` per instance and `OUT_DIR/engine.json` with, per instance:
//! feasible, latest finish, milliseconds (best of three runs) and the checker's verdict.
//! With `RANDOM` = N, also N small random instances (6–24 sessions, 1–4 rooms, 1–3 days,
//! varied load and dependencies), a wider net for "feasible wherever the ILP is".

use std::time::Instant;

use steward_events::timetable::{check, generator, solve};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: timetable_dump OUT_DIR")?;
    let random: u64 = match std::env::args().nth(2) {
        Some(n) => n.parse()?,
        None => 0,
    };
    std::fs::create_dir_all(&out)?;
    let mut instances = generator::benchmark_suite();
    instances.extend((0..random).map(generator::random_instance));
    let mut results = Vec::new();
    for (name, input) in instances {
        std::fs::write(
            format!("{out}/{name}.json"),
            serde_json::to_string_pretty(&input)?,
        )?;
        let mut best_ms = f64::INFINITY;
        let mut outcome = None;
        for _ in 0..3 {
            let started = Instant::now();
            let result = solve(&input);
            best_ms = best_ms.min(started.elapsed().as_secs_f64() * 1000.0);
            outcome = Some(result);
        }
        let entry = match outcome.ok_or("no run")? {
            Ok(tt) => {
                let violations = check(&input, &tt);
                serde_json::json!({
                    "name": name,
                    "sessions": input.sessions.len(),
                    "rooms": input.rooms.len(),
                    "days": input.days.len(),
                    "feasible": true,
                    "latest_finish": tt.latest_finish().map(|t| t.minutes()),
                    "ms": best_ms,
                    "checker_violations": violations.len(),
                })
            }
            Err(e) => serde_json::json!({
                "name": name,
                "sessions": input.sessions.len(),
                "rooms": input.rooms.len(),
                "days": input.days.len(),
                "feasible": false,
                "latest_finish": null,
                "ms": best_ms,
                "explanation": e.to_string(),
            }),
        };
        eprintln!("{entry}");
        results.push(entry);
    }
    std::fs::write(
        format!("{out}/engine.json"),
        serde_json::to_string_pretty(&results)?,
    )?;
    Ok(())
}
