//! Benchmarks of the SQLite `Table` adapter on a file in a temporary folder (WAL, as
//! `steward serve` runs it): a single put, a put-if-absent, a 10-operation transaction and a
//! 100-row query. Run: `cargo bench -p steward-store --bench sqlite_table`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use steward_store::{Item, Query, SqliteTable, Table, WriteOp};

fn record(i: u64) -> serde_json::Value {
    json!({ "name": format!("Session {i}"), "duration": 45, "speakers": ["p1", "p2"], "track": "main" })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("steward-bench-{}", std::process::id()));
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(dir.join("bench.db")).unwrap());
    let n = AtomicU64::new(0);

    c.bench_function("sqlite put", |b| {
        b.iter(|| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            rt.block_on(table.write(vec![WriteOp::put(Item::new(
                "USER#b",
                format!("PUT#{i}"),
                record(i),
            ))]))
            .unwrap();
        });
    });

    c.bench_function("sqlite put-if-absent", |b| {
        b.iter(|| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            rt.block_on(table.write(vec![WriteOp::put_if_absent(Item::new(
                "USER#b",
                format!("ABSENT#{i}"),
                record(i),
            ))]))
            .unwrap();
        });
    });

    c.bench_function("sqlite 10-op transaction", |b| {
        b.iter(|| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            let ops = (0..10)
                .map(|k| {
                    WriteOp::put_if_absent(Item::new("USER#b", format!("TX#{i}#{k}"), record(k)))
                })
                .collect();
            rt.block_on(table.write(ops)).unwrap();
        });
    });

    rt.block_on(async {
        for chunk in 0..4 {
            let ops = (0..25)
                .map(|k| {
                    WriteOp::put(Item::new(
                        "USER#q",
                        format!("EVENT#e#SESSION#{:03}", chunk * 25 + k),
                        record(k),
                    ))
                })
                .collect();
            table.write(ops).await.unwrap();
        }
    });
    c.bench_function("sqlite 100-row query", |b| {
        b.iter(|| {
            let page = rt
                .block_on(table.query(&Query::prefix("USER#q", "EVENT#e#SESSION#").limit(100)))
                .unwrap();
            assert_eq!(page.items.len(), 100);
        });
    });

    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
