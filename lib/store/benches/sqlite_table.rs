//! Benchmarks of the SQLite `Table` adapter on a file in a temporary folder (WAL, as
//! `steward serve` runs it): a single put, a put-if-absent, a 10-operation transaction, a
//! 100-row query, and reads parsed into types, through a tree of values (`query`) and straight
//! from the stored text (`query_raw`): 100 small records, and 40 rows shaped like a
//! conversation's history (each user row holding a context block of JSON text). Run: `cargo
//! bench -p steward-store --bench sqlite_table`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::json;
use steward_store::{Item, Query, SqliteTable, Table, WriteOp};

/// [`record`] as a reader's type.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Record {
    name: String,
    duration: u32,
    speakers: Vec<String>,
    track: String,
}

/// A history row as a reader's type: a message of tagged blocks, as the harness stores them.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Row {
    message: Message,
    source: String,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Message {
    role: String,
    content: Vec<Block>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
    },
}

/// The `i`th row of a history: a user turn with its context block, the model's tool call, the
/// tool's result, the reply.
fn history_row(i: u64) -> serde_json::Value {
    let events: Vec<serde_json::Value> = (0..15)
        .map(|e| json!({"id": format!("evt_{e:04}"), "name": format!("Event {e}"), "starts": "2026-12-10T09:00:00+01:00", "sessions": e}))
        .collect();
    let context = format!(
        "Current time: 2026-12-04T16:00:00+01:00\nYour events: {}",
        serde_json::Value::from(events)
    );
    match i % 4 {
        0 => {
            json!({"message": {"role": "user", "content": [{"type": "text", "text": format!("<context>\n{context}\n</context>\n\n<user_message>\nCreate the event number {i}\n</user_message>")}]}, "source": "user"})
        }
        1 => {
            json!({"message": {"role": "assistant", "content": [{"type": "tool_use", "id": format!("toolu_{i}"), "name": "create_event", "input": {"name": format!("Event {i}"), "starts": "2026-12-10T09:00:00+01:00", "timezone": "Europe/Berlin"}}]}, "source": "model"})
        }
        2 => {
            json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{}", i - 1), "content": format!("{{\"ok\":true,\"event\":{{\"id\":\"evt_{i}\"}}}}")}]}, "source": "tool"})
        }
        _ => {
            json!({"message": {"role": "assistant", "content": [{"type": "text", "text": format!("Done: Event {} is created for 10 December at 09:00.", i - 3)}]}, "source": "model"})
        }
    }
}

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

    c.bench_function("sqlite 100-row query, typed via a tree", |b| {
        b.iter(|| {
            let page = rt
                .block_on(table.query(&Query::prefix("USER#q", "EVENT#e#SESSION#").limit(100)))
                .unwrap();
            let typed: Vec<Record> = page.items.iter().map(|i| i.parse().unwrap()).collect();
            assert_eq!(typed.len(), 100);
        });
    });
    c.bench_function("sqlite 100-row query, typed from text", |b| {
        b.iter(|| {
            let page = rt
                .block_on(table.query_raw(&Query::prefix("USER#q", "EVENT#e#SESSION#").limit(100)))
                .unwrap();
            let typed: Vec<Record> = page.items.iter().map(|i| i.parse().unwrap()).collect();
            assert_eq!(typed.len(), 100);
        });
    });

    rt.block_on(async {
        let ops = (0..40)
            .map(|i| {
                WriteOp::put(Item::new(
                    "CONV#h",
                    format!("MODEL#0#{i:06}"),
                    history_row(i),
                ))
            })
            .collect();
        table.write(ops).await.unwrap();
    });
    let history = Query::prefix("CONV#h", "MODEL#0#").limit(500);
    c.bench_function("sqlite 40 history rows, typed via a tree", |b| {
        b.iter(|| {
            let items = rt.block_on(table.query_all(&history, 1_000)).unwrap();
            let typed: Vec<Row> = items.iter().map(|i| i.parse().unwrap()).collect();
            assert_eq!(typed.len(), 40);
        });
    });
    c.bench_function("sqlite 40 history rows, typed from text", |b| {
        b.iter(|| {
            let items = rt.block_on(table.query_all_raw(&history, 1_000)).unwrap();
            let typed: Vec<Row> = items.iter().map(|i| i.parse().unwrap()).collect();
            assert_eq!(typed.len(), 40);
        });
    });

    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
