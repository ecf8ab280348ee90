//! The conversation layer: what happens to an inbound message before — and often instead of —
//! the model.
//!
//! First the refusals: a message older than the dedupe record's lifetime
//! ([`INBOX_TTL_SECS`]) is dropped, since a replayed old delivery would otherwise look new; a
//! message in a Telegram group gets, once per group, the note that Steward works in private
//! chats only ([`private_chats_only_text`]) and nothing else; a known user writing in a
//! conversation that belongs to someone else is refused (logged, nothing written).
//!
//! Then, in order: an attachment Steward cannot read gets a short fixed answer for its kind
//! ([`media_answer`]: a voice note is asked to be typed …) — unless it has a caption, which
//! goes on as the text with the answer put before the reply; a photo or PDF from a known
//! sender goes into the turn ([`crate::attachments`]: fetched after the claim, stored, shown
//! to the model), from a stranger it gets the onboarding steps; a linking code
//! anywhere in the text is consumed (atomically) and the sender's identity bound, with a
//! welcome; a known sender's message becomes a turn ([`Agent::handle`], which claims it); an
//! unknown sender gets the onboarding steps. None of the answers without the model calls it.
//!
//! Every path is guarded by the same `INBOX#<message id>` claim as a turn
//! ([`conversation::claim`]): a redelivered webhook is dropped once answered, and resumed
//! (its stored reply sent again) when an earlier attempt stopped part-way. The claim also
//! records when the user last wrote (WhatsApp's 24-hour window starts there), counts the
//! hourly cap — which, before a code is tried, also bounds guessing linking codes — and the
//! answers are recorded in the visible transcript like any reply.

use serde::{Deserialize, Serialize};
use steward_channels::{
    Channel, ChannelSender, ChatKind, InboundMessage, MediaAnswer, button_index, is_fetchable,
    media_answer, with_typing,
};
use steward_llm::Role;
use steward_store::{Item, Query, StoreError, Table, WriteOp};

use crate::approval_chat::{self, ApprovalMessage};
use crate::attachments::Attachment;
use crate::conversation::{self, Claim, Conversation, InboxRecord};
use crate::identity::{self, IdentityRecord};
use crate::ids::{ChannelIdentity, ChannelName, ConversationKey, ExternalId, IdError, UserId};
use crate::keys;
use crate::limits::{INBOX_TTL_SECS, LINK_CODE_LEN};
use crate::linking::{self, CountedAttempt, LinkOutcome};
use crate::outbox::ChannelOutbox;
use crate::shaping::ShapedReply;
use crate::transcript::{self, SeenRow};
use crate::turn::{Agent, Outbox, TurnError, TurnInput, TurnOutcome};

/// Where a signed-out visitor signs up (or in) and links a phone, under the public base URL.
pub const SIGNUP_PATH: &str = "/app";

/// Visible rows read (newest first) to find the reply a clicked button was on.
const BUTTON_LOOKBACK_ROWS: usize = 12;

/// What the answers without the model may point to and say: the wiring fills it in, since the
/// harness names no domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Links {
    /// The public base URL (`STEWARD_PUBLIC_URL`), without a trailing slash; `None` when not
    /// configured (the onboarding steps then say to ask the operator for the link).
    pub public_url: Option<String>,
    /// The product name the assistant goes by.
    pub product: String,
    /// A first request to suggest in the welcome, e.g. "create an event called Spring Meetup
    /// next Saturday".
    pub first_request: Option<String>,
}

impl Links {
    /// Links under `public_url` (blank: none) for a product called "Steward".
    pub fn new(public_url: Option<&str>) -> Self {
        let public_url = public_url
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .filter(|u| !u.is_empty());
        Self {
            public_url,
            product: "Steward".to_owned(),
            first_request: None,
        }
    }

    /// The same links for a product called `product`.
    pub fn with_product(mut self, product: impl Into<String>) -> Self {
        self.product = product.into();
        self
    }

    /// The same links, suggesting `request` as a first thing to try after linking.
    pub fn with_first_request(mut self, request: impl Into<String>) -> Self {
        self.first_request = Some(request.into());
        self
    }

    /// The sign-up page, when a public URL is configured.
    pub fn signup_url(&self) -> Option<String> {
        self.public_url
            .as_ref()
            .map(|base| format!("{base}{SIGNUP_PATH}"))
    }
}

/// Which answer was given without the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The message carried an attachment.
    Media,
    /// An unknown sender got the steps to sign up and link.
    Onboarding,
    /// A linking code bound the sender (or they were already bound to its account).
    Linked,
    /// A linking code could not be used; the reason was given.
    LinkRefused,
    /// An earlier attempt had settled on a reply; it was sent again.
    Repeated,
    /// A group chat was told, for the only time, that Steward works in private chats only.
    PrivateChatsOnly,
    /// A press of Approve or Decline on an MCP approval request Steward sent
    /// ([`crate::approval_chat`]); the person's own act, never the model's.
    ApprovalButton,
}

/// What became of an inbound message.
#[derive(Debug, Clone, PartialEq)]
pub enum InboundOutcome {
    /// Already handled completely (a redelivery): nothing was done.
    Duplicate,
    /// Nothing to act on (no text, no attachment, or ids unusable as keys); logged.
    Ignored {
        /// Why.
        reason: &'static str,
    },
    /// An unknown sender over the hourly cap: recorded, not answered.
    Capped,
    /// Answered without the model.
    Answered {
        /// Which answer.
        answer: Answer,
        /// What was sent.
        reply: ShapedReply,
    },
    /// A turn ran (see [`Agent::handle`]) and this reply was sent.
    Turn {
        /// The turn's number.
        turn: u64,
        /// What was sent (silent when a reaction answered).
        reply: ShapedReply,
    },
}

/// Handles one inbound message: the paths before the model, then the turn. `sender` is the
/// message's channel; `links` says where strangers sign up. An `Err` means "retry the
/// message": the store failed or a retryable send failed (the claim makes the retry resume).
pub async fn handle_inbound(
    agent: &Agent,
    message: &InboundMessage,
    sender: &dyn ChannelSender,
    links: &Links,
) -> Result<InboundOutcome, TurnError> {
    let parts = match Parts::of(message) {
        Ok(parts) => parts,
        Err(e) => {
            tracing::warn!(error = %e, channel = %message.channel, "inbound message with unusable ids; dropped");
            return Ok(InboundOutcome::Ignored {
                reason: "unusable ids",
            });
        }
    };
    let now_secs = agent.clock().now_secs();
    if message.timestamp < now_secs - INBOX_TTL_SECS {
        // Its dedupe record may have expired, so it could run as a new turn: a replayed
        // capture of an old signed delivery, not something the person just wrote.
        tracing::warn!(
            conversation = %parts.key,
            message = %message.provider_message_id,
            age_secs = now_secs - message.timestamp,
            "inbound message older than the dedupe window; dropped"
        );
        return Ok(InboundOutcome::Ignored {
            reason: "older than the dedupe window",
        });
    }
    if message.chat == ChatKind::Group {
        return private_chats_only(agent, message, sender, links, &parts.key).await;
    }
    let table = agent.table().as_ref();
    let user = known_user(table, message, &parts.identity).await?;
    let mut conv = None;
    if let Some(user) = &user {
        let read = conversation::load(table, &parts.key, &parts.channel).await?;
        if !conversation::may_write(&read, user) {
            tracing::warn!(
                conversation = %parts.key,
                %user,
                "message from a user who does not own this conversation refused; no turn runs"
            );
            return Ok(InboundOutcome::Ignored {
                reason: "the conversation belongs to another user",
            });
        }
        conv = Some(read);
    }
    let media = media_answer(message);
    // A photo or PDF is read by the model: fetched inside a known user's turn, after the claim
    // (so a duplicate delivery downloads nothing). The web chat carries no attachments.
    let attachment = message
        .media
        .as_ref()
        .filter(|m| is_fetchable(m.kind) && message.channel != Channel::Web)
        .map(|m| Attachment {
            media: m.clone(),
            channel: message.channel,
            captioned: message
                .text
                .as_deref()
                .is_some_and(|t| !t.trim().is_empty()),
        });
    let inbound = Inbound {
        agent,
        message,
        sender,
        links,
        parts,
        user,
        conv,
        notice: match media {
            Some(MediaAnswer::BeforeReply(line)) => Some(line),
            _ => None,
        },
        attachment,
    };
    // A press on an approval request Steward sent is the person's own answer to it: settled
    // here, before and without the model.
    if inbound.user.is_some()
        && let Some(on) = approval_chat::find_press(table, &inbound.parts.key, message).await?
    {
        let text = if message.button_id.as_deref() == Some(on.approve_id.as_str()) {
            approval_chat::APPROVE_TITLE
        } else {
            approval_chat::DECLINE_TITLE
        };
        let text = text.to_owned();
        return inbound
            .answer_without_model(Route::Approval(Box::new(on)), text)
            .await;
    }
    if let Some(MediaAnswer::Only(line)) = media {
        let text = transcript_text_for_media(message);
        return inbound.answer_without_model(Route::Media(line), text).await;
    }
    let caption = user_text(table, &inbound.parts.key, message).await?;
    let Some(text) = caption.or_else(|| {
        inbound
            .attachment
            .as_ref()
            .map(|_| transcript_text_for_media(message))
    }) else {
        tracing::info!(conversation = %inbound.parts.key, "inbound message without text; dropped");
        return Ok(InboundOutcome::Ignored { reason: "no text" });
    };
    // The web chat's sender is signed in already: nothing there is a linking code.
    if message.channel != Channel::Web && linking::find_code_in_text(&text).is_some() {
        return inbound.answer_without_model(Route::Link, text).await;
    }
    // With an attachment, the person's words are its kind and the caption ("[photo] set this
    // up"): what the visible transcript shows and the model reads beside the image.
    let text = match &inbound.attachment {
        Some(_) => transcript_text_for_media(message),
        None => text,
    };
    match inbound.user.clone() {
        Some(user) => inbound.run_turn(user, text).await,
        None => inbound.answer_without_model(Route::Onboard, text).await,
    }
}

/// The one note a group chat ever gets.
pub fn private_chats_only_text(links: &Links) -> String {
    format!(
        "I only work in private chats, so I won't read or answer anything here. To use {}, message me directly.",
        links.product
    )
}

/// The record that a group chat was told.
#[derive(Debug, Serialize, Deserialize)]
struct GroupNote {
    noted_ms: i64,
}

/// Tells a group chat, once ever, that Steward works in private chats only: the record is
/// written first (put-if-absent) and the note sent after, so a crash or a failed send means no
/// note rather than two. Nothing else happens: no claim, no transcript, no model.
async fn private_chats_only(
    agent: &Agent,
    message: &InboundMessage,
    sender: &dyn ChannelSender,
    links: &Links,
    key: &ConversationKey,
) -> Result<InboundOutcome, TurnError> {
    let note = GroupNote {
        noted_ms: agent.clock().now_millis(),
    };
    let item = Item::from_value(keys::conversation_pk(key), keys::GROUP_NOTE_SK, &note)
        .map_err(|e| StoreError::Backend(e.to_string()))?;
    match agent
        .table()
        .write(vec![WriteOp::put_if_absent(item)])
        .await
    {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. }) => {
            tracing::info!(conversation = %key, "group chat message dropped (already told)");
            return Ok(InboundOutcome::Ignored {
                reason: "a group chat, already told",
            });
        }
        Err(e) => return Err(e.into()),
    }
    let reply = ShapedReply::text(private_chats_only_text(links));
    let outbox = ChannelOutbox::for_message(sender, message);
    match outbox.send(&reply).await {
        Ok(()) => tracing::info!(conversation = %key, "group chat told: private chats only"),
        Err(e) => {
            tracing::warn!(conversation = %key, error = %e, "private-chats note to a group not sent; not retried")
        }
    }
    Ok(InboundOutcome::Answered {
        answer: Answer::PrivateChatsOnly,
        reply,
    })
}

/// The steps an unknown sender on `channel` gets: sign up, get a code, send it here.
pub fn onboarding_text(links: &Links, channel: Channel) -> String {
    let product = &links.product;
    let first = match links.signup_url() {
        Some(url) => format!("1. Sign up (or sign in) at {url}"),
        None => format!("1. Ask whoever runs this {product} for its sign-up link, and sign up."),
    };
    format!(
        "Hi! I'm {product}, an assistant that does the work for you. I don't know this {} yet, \
         so I can't act for you. To connect it:\n\
         {first}\n\
         2. Open \"Connect a phone\" there to get a code of {LINK_CODE_LEN} letters and digits.\n\
         3. Send me that code here, in any message.",
        identity_noun(channel)
    )
}

/// The reply when a code linked the sender (`already`: it was linked to that account before).
pub fn welcome_text(links: &Links, channel: Channel, already: bool) -> String {
    let noun = identity_noun(channel);
    let product = &links.product;
    let try_this = match &links.first_request {
        Some(request) => format!("try '{request}'."),
        None => "tell me what you'd like to do.".to_owned(),
    };
    if already {
        format!("This {noun} was already linked to your {product} account — {try_this}")
    } else {
        format!("Linked! This {noun} is now connected to your {product} account — {try_this}")
    }
}

fn identity_noun(channel: Channel) -> &'static str {
    match channel {
        Channel::Whatsapp => "WhatsApp number",
        Channel::Telegram => "Telegram account",
        Channel::Web => "account",
    }
}

/// The keys of a message, checked.
pub(crate) struct Parts {
    pub(crate) key: ConversationKey,
    pub(crate) channel: ChannelName,
    pub(crate) identity: ChannelIdentity,
}

impl Parts {
    pub(crate) fn of(message: &InboundMessage) -> Result<Self, IdError> {
        let channel = ChannelName::parse(message.channel.short_name())?;
        let key = ConversationKey::new(&channel, &message.conversation_id)?;
        let identity = ChannelIdentity::new(
            channel.clone(),
            ExternalId::parse(&message.external_user_id)?,
        );
        Ok(Self {
            key,
            channel,
            identity,
        })
    }
}

/// A path that answers without the model.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    /// An attachment answered with this line.
    Media(&'static str),
    Link,
    Onboard,
    /// A button press on this approval request.
    Approval(Box<ApprovalMessage>),
}

/// One message on its way through the layer.
struct Inbound<'a> {
    agent: &'a Agent,
    message: &'a InboundMessage,
    sender: &'a dyn ChannelSender,
    links: &'a Links,
    parts: Parts,
    /// The sender's account, when known.
    user: Option<UserId>,
    /// The conversation record as read for the owner check (a known user only); the claim
    /// starts from it.
    conv: Option<Conversation>,
    /// The line put before the reply to a captioned attachment that was not read.
    notice: Option<&'static str>,
    /// The photo or PDF the turn fetches for the model, if any.
    attachment: Option<Attachment>,
}

impl Inbound<'_> {
    fn table(&self) -> &dyn Table {
        self.agent.table().as_ref()
    }

    /// Runs the turn for a known user. The channel shows the typing indicator for as long as
    /// it runs (at once, then refreshed); a button click is answered first.
    async fn run_turn(&self, user: UserId, text: String) -> Result<InboundOutcome, TurnError> {
        let input = TurnInput {
            conversation: self.parts.key.clone(),
            channel: self.parts.channel.clone(),
            user,
            message_id: self.message.provider_message_id.clone(),
            text,
        };
        let outbox = ChannelOutbox::for_message(self.sender, self.message);
        // `with_typing` shows the indicator at once, so of `start_turn` only the callback
        // answer is left to do here.
        if let Some(id) = &self.message.callback_query_id
            && let Err(e) = self.sender.answer_callback(id).await
        {
            tracing::debug!(error = %e, "button click not acknowledged");
        }
        let outcome = with_typing(
            self.sender,
            outbox.recipient(),
            self.message.message_ref.as_deref(),
            self.agent.handle_message_read(
                &input,
                self.notice,
                self.attachment.as_ref(),
                &outbox,
                self.conv.clone(),
            ),
        )
        .await?;
        Ok(match outcome {
            TurnOutcome::Duplicate => InboundOutcome::Duplicate,
            TurnOutcome::Replied { turn, reply } => InboundOutcome::Turn { turn, reply },
        })
    }

    /// Claims the message like a turn, then answers it along `route` (a known user whose
    /// code does not work is handed to the model instead, under the same claim).
    async fn answer_without_model(
        &self,
        route: Route,
        text: String,
    ) -> Result<InboundOutcome, TurnError> {
        let table = self.table();
        let key = &self.parts.key;
        let message_id = &self.message.provider_message_id;
        let now_ms = self.agent.clock().now_millis();
        // The person's words go with the claim that opens their turn, as a model turn's do.
        let words = |turn: u64| transcript::words_op(key, turn, &text, now_ms);
        let claim = conversation::claim(
            table,
            key,
            &self.parts.channel,
            self.user.as_ref(),
            message_id,
            now_ms,
            self.agent.limits().messages_per_hour,
            self.conv.clone(),
            Some(&words),
        )
        .await?;
        let Claim::Turn {
            turn,
            resumed,
            capped,
            ..
        } = claim
        else {
            tracing::info!(conversation = %key, message = %message_id, "duplicate message dropped");
            return Ok(InboundOutcome::Duplicate);
        };
        let outbox = ChannelOutbox::for_message(self.sender, self.message);
        if let Some(seen) = transcript::get_seen(table, key, turn, transcript::SEEN_REPLY).await? {
            let reply = ShapedReply {
                text: seen.text,
                buttons: seen.buttons,
            };
            outbox.send(&reply).await.map_err(TurnError::Send)?;
            conversation::finish(table, key, message_id).await?;
            return Ok(InboundOutcome::Answered {
                answer: Answer::Repeated,
                reply,
            });
        }
        // An approval press is answered even over the hourly cap: it costs no model call.
        if capped && !matches!(route, Route::Approval(_)) {
            if let Some(user) = self.user.clone() {
                // The turn answers a known user that they are over the cap.
                return self.run_turn(user, text).await;
            }
            self.record_user_row(turn, &text, resumed).await?;
            conversation::finish(table, key, message_id).await?;
            tracing::warn!(conversation = %key, "unknown sender over the hourly cap; not answered");
            return Ok(InboundOutcome::Capped);
        }
        let (answer, reply_text) = match &route {
            Route::Media(line) => (Answer::Media, (*line).to_owned()),
            Route::Onboard => (
                Answer::Onboarding,
                onboarding_text(self.links, self.message.channel),
            ),
            Route::Link => match self.consume_code(&text, resumed).await? {
                Linking::Welcome { already } => (
                    Answer::Linked,
                    welcome_text(self.links, self.message.channel, already),
                ),
                Linking::Refused(why) => (Answer::LinkRefused, why),
                Linking::NotACode(user) => return self.run_turn(user, text).await,
            },
            Route::Approval(on) => {
                let presser = self.user.clone().ok_or_else(|| {
                    StoreError::Backend("an approval press without a known sender".to_owned())
                })?;
                let button = self.message.button_id.as_deref().unwrap_or_default();
                let now_ms = self.agent.clock().now_millis();
                let answer =
                    approval_chat::settle_press(table, &presser, on, button, now_ms).await?;
                tracing::info!(conversation = %key, confirmation = %on.confirmation, "approval button pressed");
                (Answer::ApprovalButton, answer)
            }
        };
        if let Err(e) = self.sender.start_turn(self.message).await {
            tracing::debug!(error = %e, "start-of-turn signals not shown");
        }
        self.record_user_row(turn, &text, resumed).await?;
        let reply = ShapedReply::text(reply_text);
        let stored = transcript::put_seen(
            table,
            key,
            turn,
            transcript::SEEN_REPLY,
            SeenRow {
                role: Role::Assistant,
                text: reply.text.clone(),
                buttons: Vec::new(),
                reaction: None,
                at_ms: self.agent.clock().now_millis(),
            },
        )
        .await?;
        let reply = ShapedReply {
            text: stored.text,
            buttons: stored.buttons,
        };
        outbox.send(&reply).await.map_err(TurnError::Send)?;
        conversation::finish(table, key, message_id).await?;
        tracing::info!(conversation = %key, ?answer, "answered without the model");
        Ok(InboundOutcome::Answered { answer, reply })
    }

    /// The person's words in the visible transcript: a fresh claim stored them already; a
    /// resumed one may come from a claim that did not (a dead-lettered message's, or one made
    /// before the words went with it), so they are put unless present.
    async fn record_user_row(
        &self,
        turn: u64,
        text: &str,
        resumed: bool,
    ) -> Result<(), StoreError> {
        if !resumed {
            return Ok(());
        }
        let now_ms = self.agent.clock().now_millis();
        transcript::put_words(self.table(), &self.parts.key, turn, text, now_ms).await
    }

    /// Spends the code in `text` for the sender's identity. A stranger's wrong codes are
    /// counted, and past the limits no code is tried; a known user's code-shaped words are not
    /// (their identity is bound already, so no code could move it).
    async fn consume_code(&self, text: &str, resumed: bool) -> Result<Linking, TurnError> {
        let table = self.table();
        let clock = self.agent.clock().as_ref();
        let identity = &self.parts.identity;
        let outcome = if self.user.is_some() {
            linking::consume_from_text(table, clock, text, identity).await
        } else {
            match linking::consume_from_text_counted(table, clock, text, identity).await {
                Ok(CountedAttempt::Tried(outcome)) => outcome,
                Ok(CountedAttempt::Blocked(blocked)) => {
                    if resumed && self.bound_by_this_message().await? {
                        return Ok(Linking::Welcome { already: false });
                    }
                    tracing::warn!(%identity, ?blocked, "linking code not tried: too many wrong codes");
                    return Ok(Linking::Refused(
                        blocked.reason(identity_noun(self.message.channel)),
                    ));
                }
                Err(e) => Err(e),
            }
        };
        let failed = match outcome {
            Ok(Some(LinkOutcome::Linked { user })) => {
                tracing::info!(identity = %self.parts.identity, %user, "identity linked");
                return Ok(Linking::Welcome { already: false });
            }
            Ok(Some(LinkOutcome::AlreadyLinked { .. })) => {
                return Ok(Linking::Welcome { already: true });
            }
            Err(e) if !e.is_expected() => return Err(e.into()),
            Ok(None) => None,
            Err(e) => Some(e),
        };
        if resumed && self.bound_by_this_message().await? {
            // An earlier attempt spent the code and stopped before answering.
            return Ok(Linking::Welcome { already: false });
        }
        Ok(match (self.user.clone(), failed) {
            // Something code-shaped in a known user's message is just their words.
            (Some(user), _) => Linking::NotACode(user),
            (None, Some(e)) => Linking::Refused(e.for_page()),
            (None, None) => Linking::Refused(onboarding_text(self.links, self.message.channel)),
        })
    }

    /// Whether the sender's identity was bound after this message was claimed (by an earlier
    /// attempt at it).
    async fn bound_by_this_message(&self) -> Result<bool, TurnError> {
        let table = self.table();
        let Some(ident) = table
            .get(&keys::ident_pk(&self.parts.identity), keys::IDENT_SK)
            .await?
        else {
            return Ok(false);
        };
        let Some(inbox) = table
            .get(
                &keys::conversation_pk(&self.parts.key),
                &keys::inbox_sk(&self.message.provider_message_id),
            )
            .await?
        else {
            return Ok(false);
        };
        let ident: IdentityRecord = ident
            .parse()
            .map_err(|e| StoreError::Backend(format!("corrupt identity record: {e}")))?;
        let inbox: InboxRecord = inbox
            .parse()
            .map_err(|e| StoreError::Backend(format!("corrupt inbox record: {e}")))?;
        Ok(ident.bound_ms >= inbox.received_ms)
    }
}

/// What a message with a code in it gets.
enum Linking {
    Welcome {
        already: bool,
    },
    Refused(String),
    /// A known user's words that only looked like a code: a normal turn.
    NotACode(UserId),
}

/// The sender's account: for the web chat the authenticated user id itself; elsewhere the
/// account the channel identity is bound to, if any.
async fn known_user(
    table: &dyn Table,
    message: &InboundMessage,
    identity: &ChannelIdentity,
) -> Result<Option<UserId>, TurnError> {
    if message.channel == Channel::Web {
        return Ok(UserId::parse(&message.external_user_id).ok());
    }
    identity::lookup(table, identity)
        .await
        .map_err(TurnError::from)
}

/// What the user said: their text, or for a button click without one, the title of the button
/// (looked up on the reply it was on) or a plain mention of it.
async fn user_text(
    table: &dyn Table,
    key: &ConversationKey,
    message: &InboundMessage,
) -> Result<Option<String>, StoreError> {
    if let Some(text) = message.text.as_deref().map(str::trim)
        && !text.is_empty()
    {
        return Ok(Some(text.to_owned()));
    }
    let Some(id) = message.button_id.as_deref() else {
        return Ok(None);
    };
    let title = button_title(table, key, id).await?;
    Ok(Some(
        title.unwrap_or_else(|| format!("(pressed the button {id})")),
    ))
}

/// The title of button `id` on the newest reply that had buttons.
async fn button_title(
    table: &dyn Table,
    key: &ConversationKey,
    id: &str,
) -> Result<Option<String>, StoreError> {
    let Some(index) = button_index(id) else {
        return Ok(None);
    };
    let query = Query::prefix(keys::conversation_pk(key), keys::SEEN_SK_PREFIX)
        .descending()
        .limit(BUTTON_LOOKBACK_ROWS);
    let page = table.query(&query).await?;
    Ok(page
        .items
        .iter()
        .filter_map(|item| item.parse::<SeenRow>().ok())
        .find(|row| row.role == Role::Assistant && !row.buttons.is_empty())
        .and_then(|row| row.buttons.get(index).cloned()))
}

/// How an attachment appears in the visible transcript: its kind, and its caption.
fn transcript_text_for_media(message: &InboundMessage) -> String {
    let kind = message
        .media
        .as_ref()
        .map_or("attachment", |m| m.kind.noun());
    match message.text.as_deref().map(str::trim) {
        Some(caption) if !caption.is_empty() => format!("[{kind}] {caption}"),
        _ => format!("[{kind}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onboarding_has_three_numbered_steps_and_the_link() {
        let links = Links::new(Some("https://steward.example.org/"));
        let text = onboarding_text(&links, Channel::Whatsapp);
        assert!(text.contains("1. Sign up (or sign in) at https://steward.example.org/app"));
        assert!(text.contains("\n2. "));
        assert!(text.contains("\n3. Send me that code"));
        assert!(text.contains("WhatsApp number"));
        let bare = onboarding_text(&Links::new(None), Channel::Telegram);
        assert!(bare.contains("1. Ask whoever runs this Steward"));
        assert!(bare.contains("Telegram account"));
        assert_eq!(Links::new(Some("  ")).public_url, None);
    }

    #[test]
    fn welcome_suggests_a_first_request() {
        let links = Links::new(None).with_first_request("add a note called milk");
        let text = welcome_text(&links, Channel::Telegram, false);
        assert!(text.starts_with("Linked!"), "{text}");
        assert!(text.contains("try 'add a note called milk'"));
        assert!(welcome_text(&links, Channel::Whatsapp, true).contains("already linked"));
    }
}
