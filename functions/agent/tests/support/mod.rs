//! Shared by this function's scenario tests: a channel that records (and can refuse) replies,
//! the agent over SQLite with the events domain and a given model, and inbound bodies as the
//! webhook enqueues them.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde_json::json;
use steward_channels::{
    ChannelProfile, ChannelSender, InboundMessage, Recipient, SendError, SendReceipt, telegram,
};
use steward_edge::config::Settings;
use steward_events::EventsConfig;
use steward_harness::{
    Agent, ChannelIdentity, ModelSettings, TurnLimits, UserId, accounts, identity,
};
use steward_llm::LlmClient;
use steward_store::{ManualClock, SqliteTable, Table};
use steward_worker::agent_batch::{Senders, TurnWorker};
use steward_worker::wiring;

/// The Telegram chat (and user) every scenario talks from.
pub const CHAT: i64 = 4242;

/// A Telegram channel that records what it sent, after refusing the first `refusals` sends
/// with a retryable provider error (HTTP 502).
pub struct RecordingSender {
    sent: Mutex<Vec<String>>,
    refusals: AtomicUsize,
}

impl RecordingSender {
    /// Refuses the first `refusals` sends, then sends.
    pub fn refusing(refusals: usize) -> Arc<Self> {
        Arc::new(Self {
            sent: Mutex::new(Vec::new()),
            refusals: AtomicUsize::new(refusals),
        })
    }

    /// The texts sent, in order.
    pub fn sent(&self) -> Vec<String> {
        self.sent.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChannelSender for RecordingSender {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::TELEGRAM
    }

    async fn send_reply(
        &self,
        _to: &Recipient,
        text: &str,
        _buttons: &[String],
    ) -> Result<SendReceipt, SendError> {
        let refuse = self
            .refusals
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refuse {
            return Err(SendError::Api {
                channel: "telegram",
                status: 502,
                code: 502,
                message: "Bad Gateway".into(),
            });
        }
        let mut sent = self.sent.lock().unwrap();
        sent.push(text.to_owned());
        Ok(SendReceipt::Sent {
            message_ids: vec![format!("sent-{}", sent.len())],
            buttons: Vec::new(),
        })
    }

    async fn react(
        &self,
        _to: &Recipient,
        _message_ref: &str,
        _emoji: &str,
    ) -> Result<(), SendError> {
        Ok(())
    }

    async fn typing(&self, _to: &Recipient, _message_ref: Option<&str>) -> Result<(), SendError> {
        Ok(())
    }
}

/// A store whose Telegram user [`CHAT`] is the linked account `ada`.
pub async fn store() -> (Arc<dyn Table>, Arc<ManualClock>, UserId) {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let clock = Arc::new(ManualClock::at_millis(now_ms));
    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
    let user = UserId::parse("ada").unwrap();
    accounts::create_account_with_id(
        table.as_ref(),
        clock.as_ref(),
        user.clone(),
        "Ada",
        Some("Europe/Berlin"),
    )
    .await
    .unwrap();
    let identity = ChannelIdentity::parse("tg", &CHAT.to_string()).unwrap();
    identity::bind(table.as_ref(), clock.as_ref(), &identity, &user)
        .await
        .unwrap();
    (table, clock, user)
}

/// The events domain's agent over `table`, answering with `model`.
pub fn agent(
    table: &Arc<dyn Table>,
    clock: &Arc<ManualClock>,
    model: Arc<dyn LlmClient>,
) -> Arc<Agent> {
    let events = EventsConfig::with_public_base_url("https://steward.example.org");
    Arc::new(Agent::new(
        table.clone(),
        clock.clone(),
        Some(model),
        ModelSettings::new("scripted"),
        TurnLimits::default(),
        steward_events::domain(&events),
    ))
}

/// A turn worker for `agent` replying through `sender` on Telegram.
pub fn worker(agent: Arc<Agent>, sender: Arc<RecordingSender>) -> TurnWorker {
    let settings = Settings::from_pairs([("STEWARD_PUBLIC_URL", "https://steward.example.org")]);
    TurnWorker::new(
        agent,
        Senders::new(None, Some(sender)),
        wiring::links(
            &settings,
            steward_events::PRODUCT,
            steward_events::FIRST_REQUEST,
        ),
    )
}

/// Telegram update `update_id` from [`CHAT`] saying `text`, as the webhook parses it.
pub fn inbound(update_id: i64, text: &str) -> InboundMessage {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let raw = serde_json::to_vec(&json!({
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "from": { "id": CHAT, "is_bot": false, "first_name": "Ada" },
            "chat": { "id": CHAT, "first_name": "Ada", "type": "private" },
            "date": now,
            "text": text
        }
    }))
    .unwrap();
    telegram::parse_update(&raw).unwrap().unwrap()
}

/// The queued body of `message`, as the webhook enqueues it.
pub fn body(message: &InboundMessage) -> String {
    serde_json::to_string(message).unwrap()
}
