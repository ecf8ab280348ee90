//! A chat rig: the notes domain behind an `Agent`, a scripted model and a recording outbox.

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use steward_channels::ChannelProfile;
use steward_harness::{
    Agent, ChannelName, ContextSource, ConversationKey, Ctx, Domain, MediaPorts, ModelSettings,
    Outbox, ServiceError, ShapedReply, TurnInput, TurnLimits, TurnOutcome, UserId,
};
use steward_llm::{ContentBlock, LlmClient, ScriptedClient};
use steward_store::testing::Backend;

use crate::support::{World, notes};

/// A small context block: the user's notes.
pub struct NotesContext;

#[async_trait]
impl ContextSource for NotesContext {
    async fn context(
        &self,
        ctx: &Ctx,
        _account: Option<&steward_harness::Profile>,
        channel: &ChannelName,
        active: Option<&str>,
    ) -> Result<String, ServiceError> {
        let list = notes::list(ctx).await?;
        let ids: Vec<&str> = list.iter().map(|n| n.id.as_str()).collect();
        Ok(format!(
            "Current time: {}\nUser: {} · channel: {channel}\nNotes ({}): {}\nActive: {}",
            ctx.now_millis(),
            ctx.user(),
            ids.len(),
            json!(ids),
            active.unwrap_or("none")
        ))
    }
}

/// Records what would reach the person.
#[derive(Debug)]
pub struct RecOutbox {
    pub profile: ChannelProfile,
    pub sent: Mutex<Vec<ShapedReply>>,
    pub reactions: Mutex<Vec<String>>,
    pub react_fails: AtomicBool,
    pub send_fails: AtomicBool,
}

impl RecOutbox {
    pub fn new(profile: ChannelProfile) -> Self {
        Self {
            profile,
            sent: Mutex::new(Vec::new()),
            reactions: Mutex::new(Vec::new()),
            react_fails: AtomicBool::new(false),
            send_fails: AtomicBool::new(false),
        }
    }

    pub fn texts(&self) -> Vec<String> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| r.text.clone())
            .collect()
    }
}

#[async_trait]
impl Outbox for RecOutbox {
    fn profile(&self) -> ChannelProfile {
        self.profile
    }
    async fn react(&self, emoji: &str) -> Result<(), String> {
        if self.react_fails.load(Ordering::SeqCst) {
            return Err("the provider refused the reaction".into());
        }
        self.reactions.lock().unwrap().push(emoji.to_owned());
        Ok(())
    }
    async fn send(&self, reply: &ShapedReply) -> Result<(), String> {
        if self.send_fails.load(Ordering::SeqCst) {
            return Err("network down".into());
        }
        self.sent.lock().unwrap().push(reply.clone());
        Ok(())
    }
}

/// The notes domain's agent on `world`'s table and clock.
fn agent_on(
    world: &World,
    llm: Option<Arc<dyn LlmClient>>,
    calls: &Arc<notes::Calls>,
    limits: TurnLimits,
) -> Agent {
    let domain = Domain {
        product: "Steward".into(),
        prompt: "# Notes\nThe user keeps notes. Deleting a note needs confirmation.".into(),
        registry: Arc::new(notes::registry(Arc::clone(calls))),
        context: Arc::new(NotesContext),
    };
    Agent::new(
        Arc::clone(&world.table),
        world.clock_arc(),
        llm,
        ModelSettings::new("claude-test"),
        limits,
        domain,
    )
}

pub struct Rig {
    pub world: World,
    pub agent: Arc<Agent>,
    pub model: ScriptedClient,
    pub outbox: Arc<RecOutbox>,
    pub user: UserId,
    pub conv: ConversationKey,
    pub calls: Arc<notes::Calls>,
}

pub struct RigOptions {
    pub model: bool,
    pub limits: TurnLimits,
    pub profile: ChannelProfile,
    pub media: MediaPorts,
}

impl Default for RigOptions {
    fn default() -> Self {
        Self {
            model: true,
            limits: TurnLimits::default(),
            profile: ChannelProfile::TELEGRAM,
            media: MediaPorts::none(),
        }
    }
}

impl Rig {
    pub async fn on(backend: Backend) -> Option<Rig> {
        Self::with(backend, RigOptions::default()).await
    }

    pub async fn with(backend: Backend, options: RigOptions) -> Option<Rig> {
        let world = World::on(backend).await?;
        Some(Self::build(world, options).await)
    }

    pub async fn build(world: World, options: RigOptions) -> Rig {
        let user = world.account("u1").await;
        let model = ScriptedClient::new();
        let calls = Arc::new(notes::Calls::default());
        let llm = options
            .model
            .then(|| Arc::new(model.clone()) as Arc<dyn LlmClient>);
        let agent = agent_on(&world, llm, &calls, options.limits).with_media(options.media);
        Rig {
            agent: Arc::new(agent),
            model,
            outbox: Arc::new(RecOutbox::new(options.profile)),
            user,
            conv: ConversationKey::telegram(42),
            calls,
            world,
        }
    }

    /// Another agent on the same table, clock and model, with default limits and its own
    /// memory: what another process (another Lambda instance) is.
    pub fn another_instance(&self) -> Agent {
        let llm = Arc::new(self.model.clone()) as Arc<dyn LlmClient>;
        agent_on(&self.world, Some(llm), &self.calls, TurnLimits::default())
    }

    /// [`Rig::say`] through `agent`.
    pub async fn say_through(&self, agent: &Agent, id: &str, text: &str) -> TurnOutcome {
        agent
            .handle(&self.input(id, text), self.outbox.as_ref())
            .await
            .unwrap()
    }

    pub fn input(&self, id: &str, text: &str) -> TurnInput {
        TurnInput {
            conversation: self.conv.clone(),
            channel: ChannelName::parse("tg").unwrap(),
            user: self.user.clone(),
            message_id: id.into(),
            text: text.into(),
        }
    }

    pub async fn say(&self, id: &str, text: &str) -> TurnOutcome {
        self.say_through(&self.agent, id, text).await
    }

    /// The reply text of an outcome.
    pub fn text(outcome: &TurnOutcome) -> String {
        match outcome {
            TurnOutcome::Replied { reply, .. } => reply.text.clone().unwrap_or_default(),
            TurnOutcome::Duplicate => panic!("expected a reply, got a duplicate"),
        }
    }

    /// How many notes the rig's user has (each a change a tool made).
    pub async fn notes_count(&self) -> usize {
        self.world
            .table
            .query(&steward_store::Query::prefix(
                steward_harness::keys::user_pk(&self.user),
                "NOTE#",
            ))
            .await
            .unwrap()
            .items
            .len()
    }

    /// The tool_result blocks of the last request sent to the model, as (id, text, is_error).
    pub fn last_results(&self) -> Vec<(String, String, bool)> {
        let reqs = self.model.requests();
        let last = reqs.last().expect("a request");
        let msg = last.messages.last().expect("a message");
        msg.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some((
                    r.tool_use_id.clone(),
                    match &r.content {
                        Some(steward_llm::ToolResultContent::Text(t)) => t.clone(),
                        _ => String::new(),
                    },
                    r.is_error == Some(true),
                )),
                _ => None,
            })
            .collect()
    }
}
