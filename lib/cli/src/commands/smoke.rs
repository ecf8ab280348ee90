//! `steward smoke`: a realistic eight-message conversation against the configured real model
//! on a throwaway in-memory store, printing every reply and every tool call. A smoke alarm to
//! run after changing the prompt, the tool set or the model — not a test (it needs the network
//! and a key, and a model's wording is not an assertion).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use steward_channels::ChannelProfile;
use steward_edge::config::Settings;
use steward_events::EventsConfig;
use steward_harness::{
    Agent, ChannelName, ConversationKey, Outbox, ShapedReply, TurnInput, TurnLimits, TurnOutcome,
    accounts,
};
use steward_llm::{ContentBlock, CreateRequest, CreateResponse, LlmClient, LlmError};
use steward_store::{Clock, SqliteTable, SystemClock, Table};
use steward_worker::model::model_client;

/// What the smoke conversation says, in order: set up an event, rooms, sessions, a timetable,
/// publish (which the gate holds), confirm, and thanks (a reaction is enough).
pub const SCRIPT: [&str; 8] = [
    "Hi! I'm organising a small community conference.",
    "Set up an event called Spring Open for next Saturday, 9am to 6pm, at the Town Hall.",
    "Add two rooms: Main Hall for 200 people and Room B for 40.",
    "Sessions: an opening keynote by Dana Lee (45 min), a panel on community after the keynote (60 min), and three 30-minute talks by Sam, Alex and Priya.",
    "Lunch around noon for an hour, 10 minutes between sessions. Build the timetable.",
    "Great, publish it.",
    "Yes, publish.",
    "Thanks!",
];

/// Prints each tool call the model makes.
struct Printing(Arc<dyn LlmClient>);

#[async_trait]
impl LlmClient for Printing {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let response = self.0.create(request).await?;
        for block in &response.content {
            if let ContentBlock::ToolUse(call) = block {
                println!("  [tool] {} {}", call.name, call.input);
            }
        }
        let u = &response.usage;
        eprintln!(
            "  (tokens: in {} · out {} · cache read {} · cache write {})",
            u.input_tokens,
            u.output_tokens,
            u.cache_read_input_tokens,
            u.cache_creation_input_tokens
        );
        Ok(response)
    }
}

/// Prints what would reach the phone.
struct PrintingOutbox;

#[async_trait]
impl Outbox for PrintingOutbox {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::TELEGRAM
    }
    async fn react(&self, emoji: &str) -> Result<(), String> {
        println!("  [reaction] {emoji}");
        Ok(())
    }
    async fn send(&self, reply: &ShapedReply) -> Result<(), String> {
        if let Some(text) = &reply.text {
            println!("steward: {}", text.replace('\n', "\n         "));
        }
        if !reply.buttons.is_empty() {
            println!("  [buttons] {}", reply.buttons.join(" | "));
        }
        Ok(())
    }
}

/// Runs the smoke conversation.
pub async fn smoke() -> Result<()> {
    let settings = Settings::from_process_env();
    let sdk = super::model_sdk_config(&settings).await?;
    let (client, model) = model_client(&settings, &sdk).context("the model configuration")?;
    let Some(client) = client else {
        bail!(
            "no model is configured: set ANTHROPIC_API_KEY, or STEWARD_MODEL_PROVIDER=bedrock with AWS credentials, or STEWARD_MODEL_PROVIDER=openai with STEWARD_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL)"
        );
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory_with_clock(Arc::clone(&clock))?);
    let profile = accounts::create_account(
        table.as_ref(),
        clock.as_ref(),
        "Smoke Tester",
        Some("Europe/Berlin"),
    )
    .await?;
    let events =
        EventsConfig::with_public_base_url(settings.get("STEWARD_PUBLIC_URL").unwrap_or_default());
    let domain = steward_events::domain(&events);
    eprintln!("smoke: model {} on a throwaway store", model.model);
    let agent = Agent::new(
        table,
        clock,
        Some(Arc::new(Printing(client))),
        model,
        TurnLimits::default(),
        domain,
    );
    let conversation = ConversationKey::telegram(1);
    let channel = ChannelName::parse("tg").map_err(|e| anyhow::anyhow!(e.problem))?;
    for (i, text) in SCRIPT.iter().enumerate() {
        println!("\nyou: {text}");
        let input = TurnInput {
            conversation: conversation.clone(),
            channel: channel.clone(),
            user: profile.user.clone(),
            message_id: format!("smoke-{i}"),
            text: (*text).to_owned(),
        };
        match agent.handle(&input, &PrintingOutbox).await? {
            TurnOutcome::Replied { reply, .. } if reply.is_silent() => {
                println!("  (no text reply)")
            }
            TurnOutcome::Replied { .. } => {}
            TurnOutcome::Duplicate => println!("  (duplicate?)"),
        }
    }
    Ok(())
}
