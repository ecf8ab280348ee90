//! The turn: one user message in, one reply out, with every step persisted as it happens.
//!
//! Order (DESIGN.md, "The turn"): claim the message (duplicate → drop; unfinished → resume);
//! cheap guards before any model call (hourly cap, paused account, no model); the user row (a
//! fresh context block and the user's words, stored verbatim); then at most
//! [`MODEL_CALLS_PER_TURN_MAX`] model calls — a step whose response is already stored is
//! reused, never re-asked; tool calls run in order through the gate and the registry, each
//! with its `tool_use` id as the effect key, and a round's results are stored together; then
//! the reply is shaped, recorded in the visible transcript, sent, and the message marked done.
//!
//! A crash anywhere repeats at most one model call and never a data change; the reply is sent
//! at least once (a crash between sending and marking done sends it again).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::Value;
use steward_channels::ChannelProfile;
use steward_llm::{
    CacheControl, ContentBlock, CreateRequest, CreateResponse, Effort, InvalidKind, LlmClient,
    LlmError, Message, OutputConfig, Role, StopReason, ThinkingConfig, ToolUseBlock, text_of,
};
use steward_store::{Clock, StoreError, Table};
use tracing::Instrument;

use crate::chat_tools::{self, ChatToolCall};
use crate::conversation::{self, Claim, Conversation};
use crate::gate::{self, GateOutcome, Surface};
use crate::ids::{ActionId, ChannelName, ConversationKey, EffectKey, ToolUseId, UserId};
use crate::limits::{
    COMPACTION_CHARS_DEFAULT, MESSAGES_PER_HOUR_MAX, MODEL_CALLS_PER_TURN_MAX, TOOL_ROUND_BYTES_MAX,
};
use crate::prompt::FrozenPrefix;
use crate::shaping::{ShapedReply, shape_reply};
use crate::transcript::{self, ModelRow, PlacedRow, RowSource, SeenRow};
use crate::{
    AccountStatus, Actor, ContextSource, Ctx, Registry, ToolOutcome, ToolResult, accounts,
    compaction, usage,
};

/// Said when the model keeps calling tools past the cap.
pub const BAIL_OUT: &str =
    "I got tangled up in that. Can you say it again, or break it into smaller steps?";
/// Said when the provider is rate-limiting or overloaded (after the client's one retry).
pub const SWAMPED: &str = "I'm swamped right now — please try again in a minute.";
/// Said when the model call timed out (after the client's one retry).
pub const TIMED_OUT: &str = "That took too long on my side — please try again in a minute.";
/// Said when the model call failed for any other reason.
pub const BROKEN: &str =
    "Something went wrong on my side and I couldn't finish that. Please try again in a moment.";
/// Said when the model refused.
pub const REFUSED: &str = "Sorry, I can't help with that one.";
/// Appended when the model's answer was cut off.
pub const CUT_OFF: &str =
    "(My answer was cut off there — ask me to continue, or to keep it shorter.)";
/// Said, without calling the model, when the hourly cap is reached.
pub const BUSY: &str =
    "You're sending messages faster than I can keep up with. Give me a few minutes and try again.";
/// Said, without calling the model, to a paused account.
pub const PAUSED: &str = "Your account is paused, so I can't make changes right now. Check your account settings or contact support to resume it.";
/// Said, without calling the model, when no model is configured.
pub const NO_MODEL: &str = "My brain isn't plugged in yet: no AI model is configured for this Steward. Everything else (the web app, links, public pages) works; ask whoever runs it to set a model key.";
/// The result of a tool call that was cut off with the model's answer.
const NOT_RUN_CUT_OFF: &str = "Not run: your response was cut off before this call was complete.";

/// How a turn's reply reaches the person: the channel's profile, reactions, and sending.
#[async_trait]
pub trait Outbox: Send + Sync {
    /// What the channel can show.
    fn profile(&self) -> ChannelProfile;
    /// Puts `emoji` on the user's message. `Err` with a reason when it did not go out.
    async fn react(&self, emoji: &str) -> Result<(), String>;
    /// Sends the reply. `Err` makes the turn fail so it is retried (and the reply resent).
    async fn send(&self, reply: &ShapedReply) -> Result<(), String>;
    /// Sends the reply, skipping the parts `parts` holds as delivered by an earlier attempt
    /// and recording each part delivered now. The default sends it whole (an outbox with
    /// nothing to resume).
    async fn send_resuming(
        &self,
        reply: &ShapedReply,
        parts: &dyn steward_channels::PartLedger,
    ) -> Result<(), String> {
        let _ = parts;
        self.send(reply).await
    }
}

/// The model settings of every request: set explicitly, never left to a provider default.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// Model id.
    pub model: String,
    /// Output tokens per response (reasoning included).
    pub max_tokens: u32,
    /// Reasoning configuration.
    pub thinking: Option<ThinkingConfig>,
    /// Effort of normal turns.
    pub effort: Option<Effort>,
}

impl ModelSettings {
    /// Adaptive thinking at medium effort with the default output budget.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            max_tokens: steward_llm::OUTPUT_TOKENS_MAX,
            thinking: Some(ThinkingConfig::adaptive()),
            effort: Some(Effort::Medium),
        }
    }
}

/// Limits of a turn; the operator-facing ones are configurable.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnLimits {
    /// Model calls per message.
    pub model_calls_max: u32,
    /// Messages per conversation per hour.
    pub messages_per_hour: u32,
    /// Characters of non-reasoning history at which a segment is compacted.
    pub compaction_chars: usize,
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self {
            model_calls_max: MODEL_CALLS_PER_TURN_MAX,
            messages_per_hour: MESSAGES_PER_HOUR_MAX,
            compaction_chars: COMPACTION_CHARS_DEFAULT,
        }
    }
}

/// A message to run a turn for, from a known user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInput {
    /// The conversation.
    pub conversation: ConversationKey,
    /// Its channel.
    pub channel: ChannelName,
    /// The verified user (from the channel identity or the web session).
    pub user: UserId,
    /// The provider's message id (dedupe).
    pub message_id: String,
    /// What the person wrote (or the title of the button they pressed).
    pub text: String,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    /// The message had been handled completely before: nothing was done.
    Duplicate,
    /// The turn finished and this reply was sent (or, when silent, a reaction answered).
    Replied {
        /// The turn's number.
        turn: u64,
        /// What was sent.
        reply: ShapedReply,
    },
}

/// Why a turn could not finish; the message should be retried (the turn resumes).
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The reply could not be sent.
    #[error("sending the reply failed: {0}")]
    Send(String),
}

/// The chat runtime: everything a turn needs, built once per process.
pub struct Agent {
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    model: Option<Arc<dyn LlmClient>>,
    settings: ModelSettings,
    limits: TurnLimits,
    registry: Arc<Registry>,
    context: Arc<dyn ContextSource>,
    prefix: FrozenPrefix,
    /// Process-wide: once the provider rejected an optional feature, stop sending it.
    lean: AtomicBool,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.settings.model)
            .field("configured", &self.model.is_some())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The domain's parts an [`Agent`] is built from.
pub struct Domain {
    /// The product name the assistant goes by.
    pub product: String,
    /// The domain's part of the system prompt.
    pub prompt: String,
    /// The shared tool registry; each capability declares which of its calls are held.
    pub registry: Arc<Registry>,
    /// The per-turn context block.
    pub context: Arc<dyn ContextSource>,
}

/// A reply the turn settled on, before shaping.
struct Draft {
    text: String,
}

impl Agent {
    /// An agent over `table` for `domain`; `model` None means no model is configured.
    pub fn new(
        table: Arc<dyn Table>,
        clock: Arc<dyn Clock>,
        model: Option<Arc<dyn LlmClient>>,
        settings: ModelSettings,
        limits: TurnLimits,
        domain: Domain,
    ) -> Self {
        let prefix = FrozenPrefix::new(&domain.product, &domain.prompt, &domain.registry);
        Self {
            table,
            clock,
            model,
            settings,
            limits,
            registry: domain.registry,
            context: domain.context,
            prefix,
            lean: AtomicBool::new(false),
        }
    }

    /// The frozen prefix every request starts with.
    pub fn prefix(&self) -> &FrozenPrefix {
        &self.prefix
    }

    /// The shared registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Whether an optional feature was rejected and requests now go without them.
    pub fn is_lean(&self) -> bool {
        self.lean.load(Ordering::Relaxed)
    }

    /// Runs (or resumes) the turn for `input`, replying through `outbox`.
    pub async fn handle(
        &self,
        input: &TurnInput,
        outbox: &dyn Outbox,
    ) -> Result<TurnOutcome, TurnError> {
        let now = self.clock.now_millis();
        let claim = conversation::claim(
            self.table.as_ref(),
            &input.conversation,
            &input.channel,
            Some(&input.user),
            &input.message_id,
            now,
            self.limits.messages_per_hour,
        )
        .await?;
        let Claim::Turn {
            turn,
            resumed,
            capped,
            conversation,
            action,
        } = claim
        else {
            tracing::info!(conversation = %input.conversation, message = %input.message_id, "duplicate message dropped");
            return Ok(TurnOutcome::Duplicate);
        };
        let span = tracing::info_span!("turn", conversation = %input.conversation, turn, resumed);
        self.run(input, outbox, turn, capped, conversation, action)
            .instrument(span)
            .await
    }

    async fn run(
        &self,
        input: &TurnInput,
        outbox: &dyn Outbox,
        turn: u64,
        capped: bool,
        conv: Conversation,
        action: ActionId,
    ) -> Result<TurnOutcome, TurnError> {
        let table = self.table.as_ref();
        let key = &input.conversation;
        let now = self.clock.now_millis();
        transcript::put_seen(
            table,
            key,
            turn,
            transcript::SEEN_USER,
            SeenRow {
                role: Role::User,
                text: Some(input.text.clone()),
                buttons: Vec::new(),
                reaction: None,
                at_ms: now,
            },
        )
        .await?;

        // A reply already recorded by an earlier attempt: send it again, nothing else.
        let reply = match transcript::get_seen(table, key, turn, transcript::SEEN_REPLY).await? {
            Some(seen) => ShapedReply {
                text: seen.text,
                buttons: seen.buttons,
            },
            None => {
                let draft = self
                    .decide(input, outbox, turn, capped, conv, action)
                    .await?;
                let reacted = transcript::get_seen(table, key, turn, transcript::SEEN_REACTION)
                    .await?
                    .is_some();
                let shaped = shape_reply(&draft.text, &outbox.profile(), reacted);
                transcript::record_shown(
                    table,
                    key,
                    &input.channel,
                    turn,
                    &draft.text,
                    &shaped,
                    self.clock.now_millis(),
                )
                .await?;
                let stored = transcript::put_seen(
                    table,
                    key,
                    turn,
                    transcript::SEEN_REPLY,
                    SeenRow {
                        role: Role::Assistant,
                        text: shaped.text.clone(),
                        buttons: shaped.buttons.clone(),
                        reaction: None,
                        at_ms: self.clock.now_millis(),
                    },
                )
                .await?;
                ShapedReply {
                    text: stored.text,
                    buttons: stored.buttons,
                }
            }
        };
        if !reply.is_silent() {
            let parts = crate::sent_parts::SentParts::new(table, self.clock.as_ref(), key, turn);
            outbox
                .send_resuming(&reply, &parts)
                .await
                .map_err(TurnError::Send)?;
        }
        conversation::finish(table, key, &input.message_id).await?;
        tracing::info!(
            silent = reply.is_silent(),
            buttons = reply.buttons.len(),
            "turn finished"
        );
        Ok(TurnOutcome::Replied { turn, reply })
    }

    /// The cheap guards, then the model loop.
    async fn decide(
        &self,
        input: &TurnInput,
        outbox: &dyn Outbox,
        turn: u64,
        capped: bool,
        conv: Conversation,
        action: ActionId,
    ) -> Result<Draft, TurnError> {
        if capped {
            tracing::warn!("hourly message cap reached; answered without the model");
            return Ok(Draft { text: BUSY.into() });
        }
        let profile = match accounts::get_profile(self.table.as_ref(), &input.user).await {
            Ok(p) => Some(p),
            Err(crate::ServiceError::NotFound { .. }) => None,
            Err(e) => return Err(service_to_store(e).into()),
        };
        if profile
            .as_ref()
            .is_some_and(|p| p.status == AccountStatus::Paused)
        {
            tracing::info!("paused account; answered without the model");
            return Ok(Draft {
                text: PAUSED.into(),
            });
        }
        let Some(model) = self.model.clone() else {
            return Ok(Draft {
                text: NO_MODEL.into(),
            });
        };
        let mut run = ModelRun {
            agent: self,
            model,
            input,
            outbox,
            turn,
            conv,
            action,
            history: Vec::new(),
            this_turn: Vec::new(),
        };
        run.go().await
    }

    fn base_request(&self, messages: Vec<Message>, effort: Option<Effort>) -> CreateRequest {
        let mut req = CreateRequest::new(&self.settings.model, self.settings.max_tokens, messages);
        req.system = self.prefix.system().to_vec();
        req.tools = self.prefix.tools().to_vec();
        if !self.is_lean() {
            req.thinking = self.settings.thinking.clone();
            req.output_config = effort.map(|e| OutputConfig { effort: Some(e) });
        }
        req
    }

    /// Calls the model with `messages`, handling the recoverable rejections: a replayed
    /// reasoning signature (strip reasoning up to `floor_at` and retry once) and an optional
    /// feature (switch to lean mode and retry once).
    pub(crate) async fn call(
        &self,
        model: &dyn LlmClient,
        conv: &mut Conversation,
        rows: &[PlacedRow],
        extra: Option<Message>,
        effort: Option<Effort>,
        floor_at: &str,
    ) -> Result<CreateResponse, LlmError> {
        let build = |conv: &Conversation, agent: &Agent| {
            let mut messages = transcript::to_messages(rows, conv.meta.reasoning_floor.as_deref());
            if let Some(extra) = &extra {
                match messages.last_mut() {
                    Some(last) if last.role == extra.role => {
                        last.content.extend(extra.content.clone())
                    }
                    _ => messages.push(extra.clone()),
                }
            }
            if let Some(last) = messages.last_mut() {
                last.set_cache_control_on_last(Some(CacheControl::ephemeral()));
            }
            agent.base_request(messages, effort)
        };
        let mut retried = false;
        loop {
            let req = build(conv, self);
            match model.create(&req).await {
                Ok(resp) => return Ok(resp),
                Err(LlmError::InvalidRequest {
                    kind: InvalidKind::ThinkingSignatureRejected,
                    message,
                }) if !retried => {
                    tracing::warn!(%message, "replayed reasoning rejected; stripping reasoning from earlier rows and retrying once");
                    let floor = floor_at.to_owned();
                    if let Ok(updated) = conversation::update(
                        self.table.as_ref(),
                        &conv.key,
                        &conv.meta.channel,
                        |m| m.reasoning_floor = Some(floor.clone()),
                    )
                    .await
                    {
                        *conv = updated;
                    } else {
                        conv.meta.reasoning_floor = Some(floor);
                    }
                }
                Err(LlmError::InvalidRequest {
                    kind: InvalidKind::OptionalFeatureRejected,
                    message,
                }) if !retried => {
                    tracing::warn!(%message, "an optional model feature was rejected; switching to lean mode");
                    self.lean.store(true, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
            retried = true;
        }
    }

    pub(crate) async fn record_usage(
        &self,
        user: &UserId,
        conv: &ConversationKey,
        turn: u64,
        resp: &CreateResponse,
    ) {
        let u = &resp.usage;
        tracing::info!(
            conversation = %conv,
            turn,
            input_tokens = u.input_tokens,
            output_tokens = u.output_tokens,
            cache_read_tokens = u.cache_read_input_tokens,
            cache_write_tokens = u.cache_creation_input_tokens,
            "model usage"
        );
        if let Err(e) = usage::record(self.table.as_ref(), user, self.clock.now_millis(), u).await {
            tracing::warn!(error = %e, "could not record usage");
        }
    }

    pub(crate) fn limits(&self) -> &TurnLimits {
        &self.limits
    }

    pub(crate) fn table(&self) -> &Arc<dyn Table> {
        &self.table
    }

    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
}

/// One turn's walk through the model loop.
struct ModelRun<'a> {
    agent: &'a Agent,
    model: Arc<dyn LlmClient>,
    input: &'a TurnInput,
    outbox: &'a dyn Outbox,
    turn: u64,
    conv: Conversation,
    /// The turn's request id: every tool call of the turn is one undo unit.
    action: ActionId,
    /// Rows sent to the model so far, in order.
    history: Vec<PlacedRow>,
    /// Rows of this turn after the user row, from an earlier attempt, by step.
    this_turn: Vec<PlacedRow>,
}

impl ModelRun<'_> {
    async fn go(&mut self) -> Result<Draft, TurnError> {
        let table = self.agent.table.as_ref();
        let key = self.input.conversation.clone();
        let mut rows = transcript::load_segment(table, &key, self.conv.meta.segment).await?;
        let has_user_row = rows.iter().any(|r| r.turn == self.turn && r.step == 0);
        if !has_user_row {
            if transcript::content_chars(&rows) > self.agent.limits().compaction_chars {
                match compaction::compact(
                    self.agent,
                    self.model.as_ref(),
                    &mut self.conv,
                    &rows,
                    self.turn,
                    &self.input.user,
                )
                .await
                {
                    Ok(()) => {
                        rows = transcript::load_segment(table, &key, self.conv.meta.segment).await?
                    }
                    Err(why) => {
                        tracing::warn!(%why, "compaction failed; carrying on with the full history")
                    }
                }
            }
            let ctx = self.ctx();
            let context = match self
                .agent
                .context
                .context(
                    &ctx,
                    &self.input.channel,
                    self.conv.meta.active_record.as_deref(),
                )
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(error = %e, "context source failed; sending a minimal context");
                    format!(
                        "Current time (UTC, epoch ms): {}",
                        self.agent.clock.now_millis()
                    )
                }
            };
            let row = ModelRow {
                message: Message::user_text(transcript::user_turn_text(&context, &self.input.text)),
                source: RowSource::User,
                stop_reason: None,
            };
            let now = self.agent.clock().now_millis();
            let stored =
                transcript::append(table, &key, self.conv.meta.segment, self.turn, 0, row, now)
                    .await?;
            rows.push(PlacedRow {
                sk: crate::keys::model_sk(self.conv.meta.segment, self.turn, 0),
                turn: self.turn,
                step: 0,
                row: stored,
            });
        }
        let (history, this_turn): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .partition(|r| r.turn != self.turn || r.step == 0);
        self.history = history;
        self.this_turn = this_turn;
        self.walk().await
    }

    fn ctx(&self) -> Ctx {
        Ctx::for_request(
            Arc::clone(self.agent.table()),
            Arc::clone(self.agent.clock()),
            self.input.user.clone(),
            Actor::Agent,
            self.action,
        )
    }

    fn stored(&self, step: u32) -> Option<ModelRow> {
        self.this_turn
            .iter()
            .find(|r| r.step == step)
            .map(|r| r.row.clone())
    }

    async fn store(&mut self, step: u32, row: ModelRow) -> Result<ModelRow, StoreError> {
        let segment = self.conv.meta.segment;
        let stored = transcript::append(
            self.agent.table.as_ref(),
            &self.input.conversation,
            segment,
            self.turn,
            step,
            row,
            self.agent.clock().now_millis(),
        )
        .await?;
        Ok(stored)
    }

    fn push(&mut self, step: u32, row: ModelRow) {
        self.history.push(PlacedRow {
            sk: crate::keys::model_sk(self.conv.meta.segment, self.turn, step),
            turn: self.turn,
            step,
            row,
        });
    }

    /// Records a reply the harness wrote (so the model later sees what the person saw).
    async fn finish_with(&mut self, step: u32, text: &str) -> Result<Draft, TurnError> {
        let row = ModelRow {
            message: Message::assistant(vec![ContentBlock::text(text)]),
            source: RowSource::Harness,
            stop_reason: None,
        };
        let stored = self.store(step, row).await?;
        Ok(Draft {
            text: text_of(&stored.message.content),
        })
    }

    async fn walk(&mut self) -> Result<Draft, TurnError> {
        let mut step: u32 = 1;
        let mut calls: u32 = 0;
        loop {
            let response = match self.stored(step) {
                Some(row) => row,
                None => {
                    if calls >= self.agent.limits().model_calls_max {
                        tracing::warn!(calls, "model call cap reached; bailing out");
                        return self.finish_with(step, BAIL_OUT).await;
                    }
                    let floor_at = crate::keys::model_sk(self.conv.meta.segment, self.turn, step);
                    let result = self
                        .agent
                        .call(
                            self.model.as_ref(),
                            &mut self.conv,
                            &self.history,
                            None,
                            self.agent.settings.effort,
                            &floor_at,
                        )
                        .await;
                    match result {
                        Ok(resp) => {
                            self.agent
                                .record_usage(
                                    &self.input.user,
                                    &self.input.conversation,
                                    self.turn,
                                    &resp,
                                )
                                .await;
                            let row = ModelRow {
                                message: resp.to_message(),
                                source: RowSource::Model,
                                stop_reason: resp
                                    .stop_reason
                                    .as_ref()
                                    .map(|s| s.as_str().to_owned()),
                            };
                            self.store(step, row).await?
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "model call failed");
                            crate::metrics::model_failure(crate::metrics::ModelFailureKind::of(&e));
                            return self.finish_with(step, failure_text(&e)).await;
                        }
                    }
                }
            };
            calls += 1;
            if response.source == RowSource::Harness {
                // An earlier attempt ended the turn here.
                return Ok(Draft {
                    text: text_of(&response.message.content),
                });
            }
            self.push(step, response.clone());
            step += 1;

            let stop = response.stop_reason.as_deref().map(StopReason::parse);
            let content = &response.message.content;
            let uses: Vec<ToolUseBlock> = content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse(u) => Some(u.clone()),
                    _ => None,
                })
                .collect();
            match stop {
                Some(StopReason::ToolUse) if !uses.is_empty() => {
                    let results = match self.stored(step) {
                        Some(row) => row,
                        None => {
                            let blocks = self.run_round(&uses).await?;
                            self.store(step, tools_row(blocks)).await?
                        }
                    };
                    self.push(step, results);
                    step += 1;
                }
                Some(StopReason::PauseTurn) => {}
                Some(StopReason::Refusal) => {
                    tracing::info!("the model refused");
                    crate::metrics::model_failure(crate::metrics::ModelFailureKind::Refused);
                    return self.finish_with(step, REFUSED).await;
                }
                Some(StopReason::MaxTokens | StopReason::ModelContextWindowExceeded) => {
                    tracing::warn!(?stop, "the model's answer was cut off");
                    if !uses.is_empty() {
                        // Keep every tool_use paired with a result, without running a call
                        // whose arguments may be incomplete.
                        let row = match self.stored(step) {
                            Some(row) => row,
                            None => {
                                let blocks = uses
                                    .iter()
                                    .map(|u| {
                                        ContentBlock::tool_result(&u.id, NOT_RUN_CUT_OFF, true)
                                    })
                                    .collect();
                                self.store(step, tools_row(blocks)).await?
                            }
                        };
                        self.push(step, row);
                        step += 1;
                    }
                    let partial = text_of(content);
                    let text = if partial.trim().is_empty() {
                        CUT_OFF.to_owned()
                    } else {
                        format!("{}\n\n{CUT_OFF}", partial.trim_end())
                    };
                    self.finish_with(step, CUT_OFF).await?;
                    return Ok(Draft { text });
                }
                // end_turn, stop_sequence, tool_use without calls, unknown: final text.
                _ => {
                    return Ok(Draft {
                        text: text_of(content),
                    });
                }
            }
        }
    }

    /// Runs one round of tool calls in order and returns their result blocks.
    async fn run_round(&mut self, uses: &[ToolUseBlock]) -> Result<Vec<ContentBlock>, TurnError> {
        let mut out = Vec::with_capacity(uses.len());
        for call in uses {
            let (text, is_error) = self.run_one(call).await?;
            out.push(ContentBlock::tool_result(&call.id, text, is_error));
        }
        Ok(fit_round(out))
    }

    async fn run_one(&mut self, call: &ToolUseBlock) -> Result<(String, bool), TurnError> {
        let table = self.agent.table.as_ref();
        let key = self.input.conversation.clone();
        if let Some(parsed) = chat_tools::parse(&call.name, &call.input) {
            return match parsed {
                Err(message) => Ok((message, true)),
                Ok(ChatToolCall::SetActiveRecord(id)) => {
                    let focus = id.clone();
                    self.conv = conversation::update(table, &key, &self.input.channel, |m| {
                        m.active_record = Some(focus.clone());
                    })
                    .await?;
                    let summary = format!("Now talking about {id}.");
                    Ok((
                        ToolOutcome::Ok(ToolResult::new(summary)).to_model_text(),
                        false,
                    ))
                }
                Ok(ChatToolCall::React(emoji)) => {
                    if transcript::get_seen(table, &key, self.turn, transcript::SEEN_REACTION)
                        .await?
                        .is_some()
                    {
                        return Ok((
                            "Already reacted this turn; at most one reaction per turn.".into(),
                            true,
                        ));
                    }
                    match self.outbox.react(&emoji).await {
                        Ok(()) => {
                            transcript::put_seen(
                                table,
                                &key,
                                self.turn,
                                transcript::SEEN_REACTION,
                                SeenRow {
                                    role: Role::Assistant,
                                    text: None,
                                    buttons: Vec::new(),
                                    reaction: Some(emoji.clone()),
                                    at_ms: self.agent.clock.now_millis(),
                                },
                            )
                            .await?;
                            let summary = format!("Reacted with {emoji}.");
                            Ok((
                                ToolOutcome::Ok(ToolResult::new(summary)).to_model_text(),
                                false,
                            ))
                        }
                        Err(why) => {
                            tracing::info!(%why, "reaction not delivered");
                            Ok((
                                format!(
                                    "The reaction could not be delivered ({why}). Reply with a short text instead."
                                ),
                                true,
                            ))
                        }
                    }
                }
            };
        }
        let Some(tool) = self.agent.registry.get(&call.name) else {
            return Ok((
                format!(
                    "Unknown tool {}. Use only the tools you were given.",
                    call.name
                ),
                true,
            ));
        };
        let focuses = tool.is_focusing();
        let tool_use = match ToolUseId::parse(&call.id) {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(error = %e, id = %call.id, "model sent an unusable tool_use id");
                return Ok((
                    "Internal error: this call has an unusable id; call the tool again.".into(),
                    true,
                ));
            }
        };
        let effect = EffectKey::new(key.clone(), tool_use.clone());
        let ctx = self.ctx().with_effect(effect);
        let surface = Surface::Chat {
            conversation: key.clone(),
            turn: self.turn,
        };
        let outcome = match gate::run(
            &self.agent.registry,
            ctx,
            &surface,
            &call.name,
            call.input.clone(),
        )
        .await
        {
            Ok(ran) => ran?,
            Err(unknown) => GateOutcome::Ran(ToolOutcome::error(
                crate::ToolErrorKind::InvalidArguments,
                format!("Unknown tool {}.", unknown.name),
            )),
        };
        if focuses
            && let GateOutcome::Ran(ToolOutcome::Ok(result)) = &outcome
            && let Some(id) = result
                .data
                .as_ref()
                .and_then(|d| d.get("id"))
                .and_then(Value::as_str)
        {
            let focus = id.to_owned();
            self.conv = conversation::update(table, &key, &self.input.channel, |m| {
                m.active_record = Some(focus.clone());
            })
            .await?;
        }
        Ok(outcome.to_model_text())
    }
}

fn tools_row(blocks: Vec<ContentBlock>) -> ModelRow {
    ModelRow {
        message: Message::user(blocks),
        source: RowSource::Tools,
        stop_reason: None,
    }
}

/// Trims a round's results so the stored row stays under [`TOOL_ROUND_BYTES_MAX`]: each
/// result gets an equal share, cut on a character boundary with a visible marker.
fn fit_round(blocks: Vec<ContentBlock>) -> Vec<ContentBlock> {
    use steward_llm::ToolResultContent;
    let size: usize = blocks
        .iter()
        .map(|b| serde_json::to_string(b).map_or(0, |s| s.len()))
        .sum();
    if size <= TOOL_ROUND_BYTES_MAX || blocks.is_empty() {
        return blocks;
    }
    // JSON escaping can double a character; leave room for it.
    let share = TOOL_ROUND_BYTES_MAX / blocks.len() / 2;
    blocks
        .into_iter()
        .map(|mut b| {
            if let ContentBlock::ToolResult(r) = &mut b
                && let Some(ToolResultContent::Text(t)) = &mut r.content
                && t.len() > share
            {
                let mut cut = share;
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t.truncate(cut);
                t.push_str(" …[truncated: this round's results were too large together]");
            }
            b
        })
        .collect()
}

fn failure_text(e: &LlmError) -> &'static str {
    match e {
        LlmError::RateLimited { .. } | LlmError::Overloaded => SWAMPED,
        LlmError::Timeout => TIMED_OUT,
        _ => BROKEN,
    }
}

fn service_to_store(e: crate::ServiceError) -> StoreError {
    match e {
        crate::ServiceError::Store(s) => s,
        other => StoreError::Backend(other.to_string()),
    }
}
