//! Criterion benchmark of the timetable engine over the generated benchmark suite
//! (20, 50 and 200 sessions; 2, 4 and 8 rooms; 1 to 3 days).
//!
//! Run with `cargo bench -p steward-events --bench timetable`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use steward_events::timetable::{generator, solve};

fn engine(c: &mut Criterion) {
    let mut group = c.benchmark_group("timetable_solve");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (name, input) in generator::benchmark_suite() {
        group.bench_function(name.as_str(), |b| {
            b.iter(|| solve(black_box(&input)).is_ok())
        });
    }
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
