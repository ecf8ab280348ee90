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
//!
//! The steps, one module each: this module claims, guards and replies; `model_run` walks the
//! model loop, `next_step` reads what follows a stored model row (a pure function, so a resumed
//! turn takes the same path), `memo` stores each step once and reuses it on resume,
//! `tool_round` runs one round of tool calls, `repeats` is the loop breaker (the same call
//! [`crate::limits::REPEATED_CALLS_MAX`] times ends the turn with [`GOING_IN_CIRCLES`]), and
//! `model_call` builds and sends a request (also behind compaction's seam,
//! [`crate::compaction::NotesModel`]); a request the model finds too long is compacted and
//! retried once (`model_run`).

mod memo;
mod model_call;
mod model_run;
mod next_step;
mod repeats;
mod run;
mod tool_round;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use steward_channels::ChannelProfile;
use steward_llm::{Effort, LlmClient, Role, ThinkingConfig};
use steward_store::{Clock, Table};
use tracing::Instrument;

use self::run::ModelRun;
use crate::attachments::{Attachment, MediaPorts};
use crate::budget::{self, Budget};
use crate::chat_tools::ChatTools;
use crate::conversation::{self, Claim, ClaimedInbox, Conversation};
pub use crate::error::TurnError;
use crate::history_cache::HistoryCache;
use crate::ids::{ActionId, ChannelName, ConversationKey, UserId};
use crate::limits::{COMPACTION_CHARS_DEFAULT, MESSAGES_PER_HOUR_MAX, MODEL_CALLS_PER_TURN_MAX};
use crate::metrics::{self, TurnEnd, TurnTally};
use crate::prompt::FrozenPrefix;
use crate::shaping::{ShapedReply, shape_reply};
use crate::transcript::{self, SeenRow};
use crate::{AccountStatus, ContextSource, Registry, accounts};

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
/// Said when the model called the same tool with the same arguments
/// [`crate::limits::REPEATED_CALLS_MAX`] times in one turn (the loop breaker).
pub const GOING_IN_CIRCLES: &str = "I kept repeating the same step without getting anywhere, so I stopped there. Could you tell me a little more, or try it another way?";
/// The result of a call the loop breaker did not run.
const NOT_RUN_REPEATED: &str = "Not run: you already made this exact call twice this turn and it cannot return anything new. The turn ends here.";
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
    /// The conversation-scoped tools (`set_active_record`, `react`).
    chat_tools: ChatTools,
    /// Process-wide: once the provider rejected an optional feature, stop sending it.
    lean: AtomicBool,
    /// Where photos and PDFs are fetched from and kept.
    pub(crate) media: MediaPorts,
    /// The default monthly budget per user (see [`crate::budget`]).
    budget: Budget,
    /// Recent conversations' model transcripts, so a turn reads only the rows since the last.
    history: HistoryCache,
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

/// `reply` with `notice` as its first paragraph (the notice alone when the reply is silent).
fn with_notice(reply: ShapedReply, notice: Option<&str>) -> ShapedReply {
    let Some(notice) = notice else {
        return reply;
    };
    let text = match reply.text {
        Some(text) => format!("{notice}\n\n{text}"),
        None => notice.to_owned(),
    };
    ShapedReply {
        text: Some(text),
        buttons: reply.buttons,
    }
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
            chat_tools: ChatTools::new(),
            lean: AtomicBool::new(false),
            media: MediaPorts::none(),
            budget: Budget::NONE,
            history: HistoryCache::default(),
        }
    }

    /// The same agent, fetching and keeping attachments through `media` (without it, every
    /// photo or PDF gets [`crate::attachments::NO_ATTACHMENTS_HERE`]).
    pub fn with_media(mut self, media: MediaPorts) -> Self {
        self.media = media;
        self
    }

    /// This agent with `budget` as every user's default monthly budget (a user's own limits,
    /// set with `steward user budget`, replace it).
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
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
        self.handle_with_notice(input, None, outbox).await
    }

    /// Runs (or resumes) the turn for `input` like [`Agent::handle`], with `notice` (a fixed
    /// line, e.g. that an attached photo was not read) put before the reply. The model's own
    /// row stays as it wrote it; what the person saw is recorded after it.
    pub async fn handle_with_notice(
        &self,
        input: &TurnInput,
        notice: Option<&str>,
        outbox: &dyn Outbox,
    ) -> Result<TurnOutcome, TurnError> {
        self.handle_message(input, notice, None, outbox).await
    }

    /// Runs (or resumes) the turn for `input` like [`Agent::handle_with_notice`], with the
    /// message's `attachment` (a photo or PDF): fetched and stored after the claim and the
    /// cheap guards, before the model ([`crate::attachments`]).
    pub async fn handle_message(
        &self,
        input: &TurnInput,
        notice: Option<&str>,
        attachment: Option<&Attachment>,
        outbox: &dyn Outbox,
    ) -> Result<TurnOutcome, TurnError> {
        self.handle_message_read(input, notice, attachment, outbox, None)
            .await
    }

    /// [`Agent::handle_message`], with the conversation record as the caller just read it
    /// (the claim starts from it; see [`conversation::claim`]).
    pub(crate) async fn handle_message_read(
        &self,
        input: &TurnInput,
        notice: Option<&str>,
        attachment: Option<&Attachment>,
        outbox: &dyn Outbox,
        read: Option<Conversation>,
    ) -> Result<TurnOutcome, TurnError> {
        let tally = TurnTally::start();
        let now = self.clock.now_millis();
        // The person's words are stored with the claim that opens their turn (a resumed turn
        // finds them there; see `run`).
        let words = |turn: u64| transcript::words_op(&input.conversation, turn, &input.text, now);
        let claim = conversation::claim(
            self.table.as_ref(),
            &input.conversation,
            &input.channel,
            Some(&input.user),
            &input.message_id,
            now,
            self.limits.messages_per_hour,
            read,
            Some(&words),
        )
        .await?;
        let Claim::Turn {
            turn,
            resumed,
            capped,
            conversation,
            action,
            inbox,
        } = claim
        else {
            tracing::info!(conversation = %input.conversation, message = %input.message_id, "duplicate message dropped");
            return Ok(TurnOutcome::Duplicate);
        };
        let span = crate::telemetry::turn_span(&input.conversation, turn, resumed);
        let result = self
            .run(
                input,
                notice,
                attachment,
                outbox,
                turn,
                resumed,
                capped,
                conversation,
                action,
                &inbox,
                &tally,
            )
            .instrument(span)
            .await;
        let end = if result.is_ok() {
            TurnEnd::Replied
        } else {
            TurnEnd::Failed
        };
        metrics::turn(&tally.finish(&input.channel, &input.conversation, turn, end));
        result
    }

    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        input: &TurnInput,
        notice: Option<&str>,
        attachment: Option<&Attachment>,
        outbox: &dyn Outbox,
        turn: u64,
        resumed: bool,
        capped: bool,
        conv: Conversation,
        action: ActionId,
        inbox: &ClaimedInbox,
        tally: &TurnTally,
    ) -> Result<TurnOutcome, TurnError> {
        let table = self.table.as_ref();
        let key = &input.conversation;
        // A fresh claim stored the person's words in its own transaction. A resumed one may
        // come from a claim that did not (another surface's, or one made before the words
        // went with it), so they are put here unless present.
        if resumed {
            transcript::put_words(table, key, turn, &input.text, self.clock.now_millis()).await?;
        }

        // A reply already recorded by an earlier attempt: send it again, nothing else. Only a
        // resumed claim can have one: a fresh claim made this turn just now. (A copy of the
        // same delivery racing this attempt resumes the claim; the reply row is written
        // put-if-absent, so both send the words stored first, and the sent-parts ledger
        // spares the parts one of them has already delivered.)
        let recorded = if resumed {
            transcript::get_seen(table, key, turn, transcript::SEEN_REPLY).await?
        } else {
            None
        };
        let reply = match recorded {
            Some(seen) => ShapedReply {
                text: seen.text,
                buttons: seen.buttons,
            },
            None => {
                let (draft, media_notice) = self
                    .decide(input, attachment, outbox, turn, capped, conv, action, tally)
                    .await?;
                let notice = notice.or(media_notice);
                let reacted = transcript::get_seen(table, key, turn, transcript::SEEN_REACTION)
                    .await?
                    .is_some();
                let shaped =
                    with_notice(shape_reply(&draft.text, &outbox.profile(), reacted), notice);
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
            let span = crate::telemetry::send_span(&input.channel, reply.buttons.len());
            let sent = outbox
                .send_resuming(&reply, &parts)
                .instrument(span.clone())
                .await;
            if sent.is_err() {
                crate::telemetry::record_send_failure(&span);
            }
            sent.map_err(TurnError::Send)?;
        }
        conversation::finish_claimed(table, key, &input.message_id, inbox).await?;
        // Debug, like every per-turn line: a turn's record is its metrics line and the turn
        // inspector; an info line per step was most of the log and a share of a turn's CPU.
        tracing::debug!(
            silent = reply.is_silent(),
            buttons = reply.buttons.len(),
            "turn finished"
        );
        Ok(TurnOutcome::Replied { turn, reply })
    }

    /// The cheap guards, then the model loop; with the line to put before the reply when the
    /// message's attachment could not be read.
    #[allow(clippy::too_many_arguments)]
    async fn decide(
        &self,
        input: &TurnInput,
        attachment: Option<&Attachment>,
        outbox: &dyn Outbox,
        turn: u64,
        capped: bool,
        conv: Conversation,
        action: ActionId,
        tally: &TurnTally,
    ) -> Result<(Draft, Option<&'static str>), TurnError> {
        if capped {
            tracing::warn!("hourly message cap reached; answered without the model");
            return Ok((Draft { text: BUSY.into() }, None));
        }
        let profile = match accounts::get_profile(self.table.as_ref(), &input.user).await {
            Ok(p) => Some(p),
            Err(crate::ServiceError::NotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        if profile
            .as_ref()
            .is_some_and(|p| p.status == AccountStatus::Paused)
        {
            tracing::info!("paused account; answered without the model");
            return Ok((
                Draft {
                    text: PAUSED.into(),
                },
                None,
            ));
        }
        let Some(model) = self.model.clone() else {
            return Ok((
                Draft {
                    text: NO_MODEL.into(),
                },
                None,
            ));
        };
        let budget = budget::effective(self.table.as_ref(), &input.user, self.budget).await?;
        let mut run = ModelRun {
            agent: self,
            model,
            input,
            outbox,
            turn,
            conv,
            action,
            account: profile,
            budget,
            history: Vec::new(),
            this_turn: Vec::new(),
            pending_user: None,
            written: Vec::new(),
            compacted_for_length: false,
            attachment,
            media_notice: None,
            tally,
        };
        let draft = run.go().await?;
        let media_notice = run.media_notice;
        let draft = self.with_budget_notice(input, budget, draft).await?;
        Ok((draft, media_notice))
    }

    /// `draft` with the month's 80 % notice before it, the first time usage reaches it (not
    /// on the cap's own answer, which says more).
    async fn with_budget_notice(
        &self,
        input: &TurnInput,
        budget: Budget,
        draft: Draft,
    ) -> Result<Draft, TurnError> {
        let now = self.clock.now_millis();
        if draft.text == budget::cap_text(now)
            || !budget::take_notice(self.table.as_ref(), &input.user, budget, now).await?
        {
            return Ok(draft);
        }
        tracing::info!("budget notice given");
        Ok(Draft {
            text: format!("{}\n\n{}", budget::notice_text(now), draft.text),
        })
    }

    pub(crate) fn limits(&self) -> &TurnLimits {
        &self.limits
    }

    pub(crate) fn table(&self) -> &Arc<dyn Table> {
        &self.table
    }

    pub(crate) fn history(&self) -> &HistoryCache {
        &self.history
    }

    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
}
