//! The test world: a fresh table on one backend, a manual clock, the registry, and helpers to
//! make accounts, contexts and tool calls.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use steward_events::{EventsConfig, registry};
use steward_harness::{
    Actor, ConversationKey, Ctx, EffectKey, Registry, ToolError, ToolOutcome, ToolResult,
    ToolUseId, UserId, accounts,
};
use steward_store::testing::{Backend, TEST_START_MILLIS, fresh_table};
use steward_store::{Clock, ManualClock, Query, Table};

/// A date after the test clock's start (2026-11-30): Saturday 12 Dec 2026.
pub const DAY1: &str = "2026-12-12";
/// The Sunday after.
pub const DAY2: &str = "2026-12-13";

/// Base of public links in tests.
pub const PUBLIC_BASE: &str = "https://steward.test";

#[derive(Clone)]
pub struct World {
    pub table: Arc<dyn Table>,
    pub clock: ManualClock,
    pub registry: Arc<Registry>,
    pub backend: Backend,
}

pub async fn world(backend: Backend) -> Option<World> {
    let clock = ManualClock::at_millis(TEST_START_MILLIS);
    let table = fresh_table(backend, Arc::new(clock.clone())).await?;
    Some(World {
        table,
        clock,
        registry: Arc::new(registry(&EventsConfig::with_public_base_url(PUBLIC_BASE))),
        backend,
    })
}

static CALLS: AtomicU64 = AtomicU64::new(0);

/// A tool-use id no other call in this process uses.
pub fn fresh_tool_use() -> String {
    format!("toolu_{}", CALLS.fetch_add(1, Ordering::SeqCst))
}

pub fn effect(tool_use: &str) -> EffectKey {
    EffectKey::new(
        ConversationKey::telegram(42),
        ToolUseId::parse(tool_use).unwrap(),
    )
}

impl World {
    pub fn clock_arc(&self) -> Arc<dyn Clock> {
        Arc::new(self.clock.clone())
    }

    /// An active account `id` in Europe/Berlin, named "Owner <id>".
    pub async fn account(&self, id: &str) -> UserId {
        let user = UserId::parse(id).unwrap();
        accounts::create_account_with_id(
            self.table.as_ref(),
            &self.clock,
            user.clone(),
            &format!("Owner {id}"),
            Some("Europe/Berlin"),
        )
        .await
        .unwrap();
        user
    }

    pub fn ctx(&self, user: &UserId, actor: Actor) -> Ctx {
        Ctx::new(
            Arc::clone(&self.table),
            self.clock_arc(),
            user.clone(),
            actor,
        )
    }

    /// The organiser acting through the web UI.
    pub fn web(&self, user: &UserId) -> Ctx {
        self.ctx(user, Actor::User)
    }

    /// A model tool call with a fresh effect key.
    pub fn agent_call(&self, user: &UserId) -> Ctx {
        self.ctx(user, Actor::Agent)
            .with_effect(effect(&fresh_tool_use()))
    }

    /// Runs a tool as the agent (fresh action and effect key).
    pub async fn call(&self, user: &UserId, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .call(self.agent_call(user), tool, args)
            .await
            .unwrap()
    }

    /// Runs a tool that must succeed.
    pub async fn ok(&self, user: &UserId, tool: &str, args: Value) -> ToolResult {
        match self.call(user, tool, args.clone()).await {
            ToolOutcome::Ok(r) => r,
            ToolOutcome::Err(e) => panic!("{tool}({args}) failed: {e:?}"),
        }
    }

    /// Runs a tool that must fail.
    pub async fn err(&self, user: &UserId, tool: &str, args: Value) -> ToolError {
        match self.call(user, tool, args.clone()).await {
            ToolOutcome::Ok(r) => panic!("{tool}({args}) succeeded: {r:?}"),
            ToolOutcome::Err(e) => e,
        }
    }

    /// Everything stored under a partition, as (sk, version, ttl, data).
    pub async fn dump(&self, pk: &str) -> Vec<(String, u64, Option<i64>, Value)> {
        self.table
            .query_all(&Query::partition(pk), 100_000)
            .await
            .unwrap()
            .into_iter()
            .map(|i| (i.sk, i.version, i.ttl, i.data))
            .collect()
    }

    /// A user's partition.
    pub async fn dump_user(&self, user: &UserId) -> Vec<(String, u64, Option<i64>, Value)> {
        self.dump(&format!("USER#{user}")).await
    }

    /// A user's domain records only (no profile, audit or action rows): the events with
    /// everything in them, and their timetable documents.
    pub async fn records(&self, user: &UserId) -> Vec<(String, u64, Option<i64>, Value)> {
        self.dump_user(user)
            .await
            .into_iter()
            .filter(|(sk, ..)| sk.starts_with("EVENT#") || sk.starts_with("TIMETABLE#"))
            .collect()
    }
}

/// The ids of a seeded event.
#[derive(Debug, Clone)]
pub struct Seeded {
    pub event: String,
    pub slug: String,
    pub rooms: Vec<String>,
    pub sessions: Vec<String>,
    pub person: String,
    pub attendee: String,
}

pub fn id_of(r: &ToolResult) -> String {
    r.data.as_ref().unwrap()["id"].as_str().unwrap().to_owned()
}

/// Creates "Spring Open" on DAY1 with two rooms, three sessions (one speaker, one order
/// constraint), a lunch, an attendee and a built timetable; published when asked.
pub async fn seed(w: &World, user: &UserId, publish: bool) -> Seeded {
    let e = w
        .ok(
            user,
            "create_event",
            json!({"name": "Spring Open", "dates": [DAY1], "venue": "Town Hall", "capacity": 100, "tracks": ["Main"]}),
        )
        .await;
    let event = id_of(&e);
    let slug = e.data.as_ref().unwrap()["public_path"]
        .as_str()
        .unwrap()
        .trim_start_matches("/e/")
        .to_owned();
    let mut rooms = Vec::new();
    for (name, cap) in [("Aula", 120), ("Lab", 30)] {
        let r = w
            .ok(
                user,
                "add_room",
                json!({"event_id": event, "name": name, "capacity": cap}),
            )
            .await;
        rooms.push(id_of(&r));
    }
    let s1 = w
        .ok(
            user,
            "add_session",
            json!({"event_id": event, "title": "Keynote", "duration_minutes": 60, "speakers": ["Dana Lee"], "track": "Main", "min_capacity": 100}),
        )
        .await;
    let person = s1.data.as_ref().unwrap()["speaker_ids"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let s1 = id_of(&s1);
    let s2 = id_of(
        &w.ok(
            user,
            "add_session",
            json!({"event_id": event, "title": "Workshop", "duration_minutes": 90, "after": [s1]}),
        )
        .await,
    );
    let s3 = id_of(
        &w.ok(
            user,
            "add_session",
            json!({"event_id": event, "title": "Panel", "duration_minutes": 45, "speakers": [person]}),
        )
        .await,
    );
    w.ok(
        user,
        "set_program",
        json!({"event_id": event, "lunch_minutes": 45, "changeover_minutes": 10}),
    )
    .await;
    let attendee = id_of(
        &w.ok(
            user,
            "register_attendee",
            json!({"event_id": event, "name": "Sam Roe", "email": "sam@example.org"}),
        )
        .await,
    );
    w.ok(user, "build_timetable", json!({"event_id": event}))
        .await;
    if publish {
        w.ok(user, "publish_event", json!({"event_id": event}))
            .await;
    }
    Seeded {
        event,
        slug,
        rooms,
        sessions: vec![s1, s2, s3],
        person,
        attendee,
    }
}
