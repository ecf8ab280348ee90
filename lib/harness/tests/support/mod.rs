//! Shared test support: a table factory (the one place to swap the backend) and a tiny
//! "notes" domain that exercises the harness the way a real domain would.
#![allow(clippy::unwrap_used, missing_docs, dead_code)]

pub mod notes;

use std::sync::Arc;

use steward_harness::{Actor, ConversationKey, Ctx, EffectKey, ToolUseId, UserId, accounts};
use steward_store::{Clock, ManualClock, SqliteTable, Table};

/// Start time of every test clock: 2025-06-01T10:00:00Z.
pub const T0_MILLIS: i64 = 1_748_772_000_000;

/// A fresh, empty table whose expiry follows `clock`. Tests only ever see `Arc<dyn Table>`,
/// so running them against another backend means changing this one function.
pub fn new_table(clock: &ManualClock) -> Arc<dyn Table> {
    Arc::new(SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap())
}

/// A table, its clock, and helpers to make accounts and contexts.
#[derive(Debug, Clone)]
pub struct World {
    pub table: Arc<dyn Table>,
    pub clock: ManualClock,
}

impl World {
    /// A world on `backend` (None when that backend is not configured here).
    pub async fn on(backend: steward_store::testing::Backend) -> Option<Self> {
        let clock = ManualClock::at_millis(T0_MILLIS);
        let table = steward_store::testing::fresh_table(backend, Arc::new(clock.clone())).await?;
        Some(Self { table, clock })
    }

    pub fn new() -> Self {
        let clock = ManualClock::at_millis(T0_MILLIS);
        Self {
            table: new_table(&clock),
            clock,
        }
    }

    pub fn clock_arc(&self) -> Arc<dyn Clock> {
        Arc::new(self.clock.clone())
    }

    /// Creates an active account `id` named after it.
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

    /// A context for a model tool call `tool_use` in a Telegram conversation.
    pub fn agent_call(&self, user: &UserId, tool_use: &str) -> Ctx {
        self.ctx(user, Actor::Agent).with_effect(effect(tool_use))
    }

    /// Everything stored under a partition, as (sk, version, data) for byte-level comparison.
    pub async fn dump(&self, pk: &str) -> Vec<(String, u64, serde_json::Value)> {
        self.table
            .query_all(&steward_store::Query::partition(pk), 10_000)
            .await
            .unwrap()
            .into_iter()
            .map(|i| (i.sk, i.version, i.data))
            .collect()
    }
}

pub fn effect(tool_use: &str) -> EffectKey {
    EffectKey::new(
        ConversationKey::telegram(42),
        ToolUseId::parse(tool_use).unwrap(),
    )
}

/// The ids of the `tool_use` blocks in `message`, in order.
pub fn tool_use_ids(message: &steward_llm::Message) -> Vec<&str> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            steward_llm::ContentBlock::ToolUse(u) => Some(u.id.as_str()),
            _ => None,
        })
        .collect()
}

/// The messages of a request with cache breakpoints removed (they move to the newest message
/// by design and are not content), to compare one request's history with the next one's.
pub fn without_cache_marks(messages: &[Arc<steward_llm::Message>]) -> Vec<steward_llm::Message> {
    messages
        .iter()
        .map(|m| {
            let mut m = steward_llm::Message::clone(m);
            for b in &mut m.content {
                b.set_cache_control(None);
            }
            m
        })
        .collect()
}
