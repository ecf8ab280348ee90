//! Solves one instance of the benchmark suite (or all of them) a given number of times, for a
//! CPU-time measurement that a shared machine's load does not distort as much as wall time:
//! run it under `/usr/bin/time -v` or `perf stat` and divide the user time by the runs.
//!
//! Usage: `cargo run --release -p steward-events --example timetable_solve -- [NAME|all] [RUNS]`
//! (default: `all`, 10 runs). Prints, per instance, the latest finish and the mean wall time.

use std::hint::black_box;
use std::time::Instant;

use steward_events::timetable::{generator, solve};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let which = std::env::args()
        .nth(1)
        .unwrap_or_else(|| String::from("all"));
    let runs: u32 = match std::env::args().nth(2) {
        Some(n) => n.parse()?,
        None => 10,
    };
    for (name, input) in generator::benchmark_suite() {
        if which != "all" && which != name {
            continue;
        }
        let started = Instant::now();
        let mut finish = None;
        for _ in 0..runs {
            finish = solve(black_box(&input))
                .ok()
                .and_then(|tt| tt.latest_finish());
        }
        let ms = started.elapsed().as_secs_f64() * 1000.0 / f64::from(runs.max(1));
        let finish = finish.map_or(String::from("-"), |t| t.to_string());
        println!("{name:<12} finish {finish:>5}  {ms:8.2} ms/solve (wall, mean of {runs})");
    }
    Ok(())
}
