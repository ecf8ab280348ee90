//! Criterion benchmark of the per-turn context block (`EventsContext::context`) on the SQLite
//! store `steward serve` uses, against the size of the person's events: every turn builds one,
//! so what it reads is paid once per message.
//!
//! Cases, each the block built for one turn:
//! * `small_active`: one event with three sessions, active (what the turn benchmark's
//!   conversations look like);
//! * `big_active`: an event with 200 sessions, 8 rooms and 120 speakers, active, no timetable;
//! * `big_active_timetable`: the same after its timetable was built;
//! * `small_active_big_newest`: the small event active while the big one (with its
//!   timetable) is the person's newest event.
//!
//! Run with `cargo bench -p steward-events --bench context` (add `--profile profiling` for a
//! quicker build with the release opt-levels). Results: `bench/RESULTS.md`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use steward_events::{EventsConfig, EventsContext, registry};
use steward_harness::{
    Actor, ChannelName, ContextSource, ConversationKey, Ctx, EffectKey, Registry, ToolOutcome,
    ToolUseId, UserId, accounts,
};
use steward_store::testing::TEST_START_MILLIS;
use steward_store::{Clock, ManualClock, SqliteTable, Table};

/// Sessions, rooms and distinct speakers of the big event (the timetable benchmark's 200 × 8).
const SESSIONS: usize = 200;
const ROOMS: usize = 8;
const SPEAKERS: usize = 120;

struct World {
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    registry: Registry,
    user: UserId,
    calls: u64,
}

impl World {
    async fn new() -> Self {
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::at_millis(TEST_START_MILLIS));
        let table: Arc<dyn Table> =
            Arc::new(SqliteTable::in_memory_with_clock(Arc::clone(&clock)).expect("SQLite opens"));
        let user = UserId::parse("bench").expect("a user id");
        accounts::create_account_with_id(
            table.as_ref(),
            clock.as_ref(),
            user.clone(),
            "Owner bench",
            Some("Europe/Berlin"),
        )
        .await
        .expect("the account is created");
        Self {
            table,
            clock,
            registry: registry(&EventsConfig::with_public_base_url("https://steward.test")),
            user,
            calls: 0,
        }
    }

    fn ctx(&self) -> Ctx {
        Ctx::new(
            Arc::clone(&self.table),
            Arc::clone(&self.clock),
            self.user.clone(),
            Actor::Agent,
        )
    }

    /// Runs a tool as the model would; it must succeed. Returns the id it reports.
    async fn ok(&mut self, tool: &str, args: Value) -> String {
        self.calls += 1;
        let effect = EffectKey::new(
            ConversationKey::telegram(42),
            ToolUseId::parse(&format!("toolu_{}", self.calls)).expect("a tool-use id"),
        );
        match self
            .registry
            .call(self.ctx().with_effect(effect), tool, args.clone())
            .await
            .expect("the call runs")
        {
            ToolOutcome::Ok(r) => r
                .data
                .as_ref()
                .and_then(|d| d["id"].as_str())
                .unwrap_or_default()
                .to_owned(),
            ToolOutcome::Err(e) => panic!("{tool}({args}) failed: {e:?}"),
        }
    }

    async fn block(&self, active: &str) -> String {
        EventsContext
            .context(
                &self.ctx(),
                None,
                &ChannelName::parse("wa").expect("a channel"),
                Some(active),
            )
            .await
            .expect("the block is built")
    }
}

fn context(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut w = rt.block_on(World::new());
    let mut group = c.benchmark_group("context_block");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    let small = rt.block_on(async {
        let small = w
            .ok(
                "create_event",
                json!({"name": "Small", "dates": ["2026-12-12"]}),
            )
            .await;
        w.ok(
            "add_room",
            json!({"event_id": small, "name": "Aula", "capacity": 100}),
        )
        .await;
        for title in ["Keynote", "Workshop", "Panel"] {
            w.ok(
                "add_session",
                json!({"event_id": small, "title": title, "duration_minutes": 45, "speakers": ["Dana Lee"]}),
            )
            .await;
        }
        small
    });
    group.bench_function("small_active", |b| {
        b.iter(|| rt.block_on(w.block(black_box(&small))))
    });

    let big = rt.block_on(async {
        let big = w
            .ok(
                "create_event",
                json!({"name": "Big", "dates": ["2026-12-12", "2026-12-13", "2026-12-14"], "capacity": 500}),
            )
            .await;
        for i in 0..ROOMS {
            w.ok(
                "add_room",
                json!({"event_id": big, "name": format!("Room {i}"), "capacity": 50 + i * 10}),
            )
            .await;
        }
        for i in 0..SESSIONS {
            w.ok(
                "add_session",
                json!({"event_id": big, "title": format!("Session {i}"), "duration_minutes": 30 + (i % 3) * 15,
                       "speakers": [format!("Speaker {}", i % SPEAKERS)]}),
            )
            .await;
        }
        big
    });
    group.bench_function("big_active", |b| {
        b.iter(|| rt.block_on(w.block(black_box(&big))))
    });

    rt.block_on(w.ok("build_timetable", json!({"event_id": big})));
    group.bench_function("big_active_timetable", |b| {
        b.iter(|| rt.block_on(w.block(black_box(&big))))
    });
    group.bench_function("small_active_big_newest", |b| {
        b.iter(|| rt.block_on(w.block(black_box(&small))))
    });
    group.finish();
}

criterion_group!(benches, context);
criterion_main!(benches);
