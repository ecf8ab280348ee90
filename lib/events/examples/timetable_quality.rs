//! Prints the engine's quality on every reference instance (issue #16): the suite, the 30
//! random instances and their replans, and the 24 large generated instances, one line each
//! (name, verdict, sessions left out, moved, latest finish, sum of day finishes, sum of ends,
//! in minutes), then the hash of each whole result (as in the snapshot of
//! `tests/timetable_fingerprints.rs`, which pins the same instances). Compare two engines'
//! tables to compare their quality.
//!
//! Usage: `cargo run --release -p steward-events --example timetable_quality`

#[path = "../tests/support/timetable_reference.rs"]
mod reference;

fn main() {
    for s in reference::solve_all(true) {
        println!("{}  {:016x}", s.quality().line(), s.hash);
    }
}
