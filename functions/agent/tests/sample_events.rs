//! `events/agent-sqs-batch.json` through the agent function's handler
//! (`TurnWorker::handle_batch`) with a scripted model: both conversations are answered, the
//! WhatsApp one twice and in order, and no record is reported as failed.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_lambda_events::sqs::SqsEvent;
use steward_channels::{ChannelProfile, ChannelSender, Recipient, SendError, SendReceipt};
use steward_edge::config::Settings;
use steward_events::EventsConfig;
use steward_harness::{
    Agent, ChannelIdentity, ModelSettings, TurnLimits, UserId, accounts, identity,
};
use steward_llm::{ContentBlock, CreateResponse, ScriptedClient, StopReason};
use steward_store::{ManualClock, SqliteTable, Table};
use steward_testkit::samples::sample_event;
use steward_worker::agent_batch::{Senders, TurnWorker};
use steward_worker::wiring;

/// A channel that records what it would have sent: (recipient, text).
struct RecordingSender {
    profile: ChannelProfile,
    sent: Mutex<Vec<(String, String)>>,
}

impl RecordingSender {
    fn new(profile: ChannelProfile) -> Arc<Self> {
        Arc::new(Self {
            profile,
            sent: Mutex::new(Vec::new()),
        })
    }

    fn sent(&self) -> Vec<(String, String)> {
        self.sent.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChannelSender for RecordingSender {
    fn profile(&self) -> ChannelProfile {
        self.profile
    }

    async fn send_reply(
        &self,
        to: &Recipient,
        text: &str,
        _buttons: &[String],
    ) -> Result<SendReceipt, SendError> {
        let mut sent = self.sent.lock().unwrap();
        sent.push((to.conversation_id.clone(), text.to_owned()));
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

fn reply(text: &str) -> CreateResponse {
    CreateResponse::new(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

#[tokio::test]
async fn the_sqs_sample_batch_answers_both_conversations_in_order() {
    let clock = Arc::new(ManualClock::at_millis(1_780_304_460_000));
    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
    // The two senders are linked accounts, so each message is a model turn.
    for (id, name, channel, external) in [
        ("sheena", "Sheena Nelson", "wa", "16505551234"),
        ("ada", "Ada", "tg", "111222333"),
    ] {
        let user = UserId::parse(id).unwrap();
        accounts::create_account_with_id(table.as_ref(), clock.as_ref(), user.clone(), name, None)
            .await
            .unwrap();
        let identity = ChannelIdentity::parse(channel, external).unwrap();
        identity::bind(table.as_ref(), clock.as_ref(), &identity, &user)
            .await
            .unwrap();
    }
    // The groups run concurrently, so which answer goes where depends on the order of calls;
    // every answer is the same text.
    let model = ScriptedClient::new()
        .respond(reply("On it."))
        .respond(reply("On it."))
        .respond(reply("On it."));
    let settings = Settings::from_pairs([("STEWARD_PUBLIC_URL", "https://steward.example.org")]);
    let events = EventsConfig::with_public_base_url("https://steward.example.org");
    let agent = Agent::new(
        table.clone(),
        clock.clone(),
        Some(Arc::new(model.clone())),
        ModelSettings::new("scripted"),
        TurnLimits::default(),
        steward_events::domain(&events),
    );
    let whatsapp = RecordingSender::new(ChannelProfile::WHATSAPP);
    let telegram = RecordingSender::new(ChannelProfile::TELEGRAM);
    let worker = TurnWorker::new(
        Arc::new(agent),
        Senders::new(Some(whatsapp.clone()), Some(telegram.clone())),
        wiring::links(
            &settings,
            steward_events::PRODUCT,
            steward_events::FIRST_REQUEST,
        ),
    );

    let event: SqsEvent = serde_json::from_str(&sample_event("agent-sqs-batch.json")).unwrap();
    assert_eq!(event.records.len(), 3);
    let response = worker.handle_batch(event, None).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "{:?}",
        response.batch_item_failures
    );
    assert_eq!(model.calls(), 3, "one model call per message");
    assert_eq!(
        whatsapp.sent(),
        [
            ("16505551234".to_owned(), "On it.".to_owned()),
            ("16505551234".to_owned(), "On it.".to_owned())
        ]
    );
    assert_eq!(
        telegram.sent(),
        [("111222333".to_owned(), "On it.".to_owned())]
    );

    // Redelivered (a Lambda retry), the same batch changes nothing: every message is a duplicate.
    let again: SqsEvent = serde_json::from_str(&sample_event("agent-sqs-batch.json")).unwrap();
    assert!(
        worker
            .handle_batch(again, None)
            .await
            .batch_item_failures
            .is_empty()
    );
    assert_eq!(model.calls(), 3);
    assert_eq!(whatsapp.sent().len() + telegram.sent().len(), 3);
}
