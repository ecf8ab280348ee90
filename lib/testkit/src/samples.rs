//! The sample Lambda events in `events/` (written by `infra/sample_events.py`), which each
//! function's tests feed to its handler as the Lambda runtime would.

/// The text of `events/<name>`; panics naming the file when it cannot be read (a test bug).
pub fn sample_event(name: &str) -> String {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
