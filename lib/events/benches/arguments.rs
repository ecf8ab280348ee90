//! Criterion benchmark of a tool call's argument check on the real `create_event` and
//! `add_session` schemas: the harness's `arg_schema` (what runs) beside the `jsonschema` crate
//! (what ran before, kept as the tests' reference), for a valid call and for one with three
//! violations. Compilation is outside the measured loop: both compile once per tool.
//!
//! Run with `cargo bench -p steward-events --bench arguments`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use steward_events::{EventsConfig, registry};
use steward_harness::arg_schema::ArgSchema;

fn check(c: &mut Criterion) {
    let tools = registry(&EventsConfig::default());
    let cases: [(&str, &str, Value); 4] = [
        (
            "create_event/valid",
            "create_event",
            json!({"name": "Spring Open", "dates": ["2026-11-14", "2026-11-15"], "start_time": "09:00",
                   "time_zone": "Europe/Berlin", "capacity": 120, "tracks": ["Beginners", "Advanced"]}),
        ),
        (
            "create_event/three_problems",
            "create_event",
            json!({"dates": "2026-11-14", "capacity": 0, "tracks": ["A", 2]}),
        ),
        (
            "add_session/valid",
            "add_session",
            json!({"event_id": "e_01", "title": "Keynote", "duration_minutes": 45, "track": "Main"}),
        ),
        (
            "add_session/three_problems",
            "add_session",
            json!({"event_id": 7, "duration_minutes": 0}),
        ),
    ];
    let mut group = c.benchmark_group("argument_check");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, tool, args) in cases {
        let schema = tools.get(tool).expect("the tool exists").input_schema();
        let ours = ArgSchema::compile(schema).expect("compiles");
        let reference = jsonschema::validator_for(schema).expect("compiles");
        group.bench_function(format!("arg_schema/{name}"), |b| {
            b.iter(|| ours.problems(black_box(&args)).len())
        });
        group.bench_function(format!("jsonschema/{name}"), |b| {
            b.iter(|| reference.iter_errors(black_box(&args)).count())
        });
    }
    group.finish();
}

criterion_group!(benches, check);
criterion_main!(benches);
