//! The turn inspector's read model: for one conversation, what each turn did — the context
//! block sent with its model calls, every model call (stop reason, tokens with the cache's
//! share, latency, model id), every tool call (arguments, a summary of its result, whether it
//! ran, was held, confirmed or refused, and the effect it committed) and the reply as the
//! channel got it — as a typed [`TurnInspection`] for the web UI's inspector and
//! `steward turns`.
//!
//! Everything here is read from what the turn already stores: the model transcript (with the
//! [`StepNote`]s the turn writes beside each step), the visible transcript, the sent-parts
//! ledger and the effect items. Rows written before the notes existed still read; their calls
//! show no tokens or latency and their tool calls no state.
//!
//! Who may read is decided here, once: a [`Reader::Person`] sees only a conversation whose
//! owner they are (a conversation without an owner, or another person's, is
//! [`InspectError::ConversationNotFound`], the same as one that does not exist); a
//! [`Reader::Operator`] (the `steward` command on the store) sees any.

use serde::Serialize;
use steward_llm::{ContentBlock, ToolResultContent};
use steward_store::{Item, Query, StoreError, Table};

use crate::conversation::ConversationMeta;
use crate::effect;
use crate::gate::canonical_json;
use crate::ids::{ConversationKey, EffectKey, ToolUseId, UserId};
use crate::keys;
use crate::transcript::{
    self, ModelRow, RowSource, SEEN_APOLOGY, SEEN_REACTION, SEEN_REPLY, SEEN_USER, SeenRow,
    StepNote, ToolNote, ToolState,
};

/// Characters of the context block shown: the domain's block is a few hundred characters to
/// a few thousand (an active event with its rooms); past this the inspector shows the start.
pub const CONTEXT_CHARS_SHOWN_MAX: usize = 8_000;
/// Characters of one tool call's arguments (canonical JSON) shown: enough for any form-sized
/// call; a model that sent a whole document as an argument is cut.
pub const ARGUMENTS_CHARS_SHOWN_MAX: usize = 2_000;
/// Characters of one tool result shown: a summary, the stored result can be far longer.
pub const RESULT_CHARS_SHOWN_MAX: usize = 1_000;
/// Characters of one text (the person's message, the model's text, the reply) shown.
pub const TEXT_CHARS_SHOWN_MAX: usize = 4_000;
/// Turns one read of "every turn" returns, newest first: a page, not the whole history.
pub const TURNS_LISTED_MAX: usize = 50;
/// Reply parts looked up per turn: channels split a reply into a handful of messages at most.
const PARTS_READ_MAX: usize = 32;
/// Model rows one turn can have: [`crate::limits::MODEL_CALLS_PER_TURN_MAX`] calls, a tools
/// row after each, and the harness's own rows, with room to spare.
const TURN_ROWS_MAX: usize = 200;

/// Who is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader<'a> {
    /// A signed-in person: only their own conversations.
    Person(&'a UserId),
    /// The operator (the `steward` command with the store): any conversation.
    Operator,
}

/// Why an inspection could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// No such conversation — or not one the person owns (never said apart).
    #[error("no conversation {0}")]
    ConversationNotFound(ConversationKey),
    /// The conversation has no such turn (never made, or its rows expired).
    #[error("conversation {conversation} has no turn {turn} (it has {turns})")]
    TurnNotFound {
        /// The conversation.
        conversation: ConversationKey,
        /// The turn asked for.
        turn: u64,
        /// Turns the conversation has had.
        turns: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A conversation's turns, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConversationInspection {
    /// The conversation.
    pub conversation: String,
    /// Its channel.
    pub channel: String,
    /// Turns started so far.
    pub turns: u64,
    /// The newest turns (at most [`TURNS_LISTED_MAX`]), newest first.
    pub listed: Vec<TurnInspection>,
    /// Whether older turns exist than those listed.
    pub older: bool,
}

/// One turn, as the inspector shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnInspection {
    /// The conversation.
    pub conversation: String,
    /// The turn's number (from 1).
    pub turn: u64,
    /// When the person's message arrived (epoch ms), when recorded.
    pub at_ms: Option<i64>,
    /// What the person wrote, as recorded in the visible transcript.
    pub message: Option<Shown>,
    /// The context block sent with every model call of the turn (the turn's user row), when
    /// the turn reached the model.
    pub context: Option<Shown>,
    /// The model calls, in order.
    pub model_calls: Vec<ModelCallView>,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCallView>,
    /// Lines the harness wrote in the model's place (a failure, the call cap, the budget).
    pub harness_lines: Vec<Shown>,
    /// The reply as the channel got it.
    pub reply: ReplyView,
}

/// A text as shown: its start, and whether it was cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// The text, at most the cap's characters.
    pub text: String,
    /// Whether the original was longer.
    pub cut: bool,
    /// The original's length in characters.
    pub chars: usize,
}

impl Shown {
    fn new(text: &str, max: usize) -> Self {
        let chars = text.chars().count();
        Self {
            text: text.chars().take(max).collect(),
            cut: chars > max,
            chars,
        }
    }
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCallView {
    /// Its step in the turn.
    pub step: u32,
    /// Why the model stopped, as the API said it.
    pub stop_reason: Option<String>,
    /// The model id that answered (None: recorded before the inspector existed).
    pub model: Option<String>,
    /// Its tokens (None: recorded before the inspector existed).
    pub tokens: Option<CallTokens>,
    /// Its wall time in milliseconds (None: recorded before the inspector existed).
    pub latency_ms: Option<u64>,
    /// Transcript rows the request carried.
    pub rows_sent: Option<u32>,
    /// The text the model wrote (reasoning left out).
    pub text: Shown,
    /// The tool calls it asked for.
    pub tool_calls: usize,
}

/// The tokens of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CallTokens {
    /// Input tokens neither written to nor read from the cache.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallView {
    /// The step of the model response that asked for it.
    pub step: u32,
    /// The model's `tool_use` id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments, as canonical JSON.
    pub arguments: Shown,
    /// A summary of its result (None: the turn stopped before the result was recorded).
    pub result: Option<Shown>,
    /// Whether the result was an error.
    pub is_error: bool,
    /// What happened to it (None: recorded before the inspector existed).
    pub state: Option<ToolState>,
    /// The effect id (the `tool_use` id its result is remembered under) when it went through
    /// the registry.
    pub effect: Option<String>,
    /// The action (undo unit) it committed, when it changed data and its effect is still kept.
    pub action: Option<String>,
}

/// The reply as the channel got it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplyView {
    /// The conversation's channel.
    pub channel: String,
    /// The reply's text after shaping for the channel (None: no reply recorded, or a
    /// reaction alone).
    pub text: Option<Shown>,
    /// The quick-reply buttons sent with it.
    pub buttons: Vec<String>,
    /// The reaction put on the person's message, if any.
    pub reaction: Option<String>,
    /// The provider's message id of each part delivered, in order (empty on channels that
    /// keep no ledger, such as the web chat, and for a reply not yet sent).
    pub parts: Vec<String>,
    /// The apology sent when the message could not be handled, if any.
    pub apology: Option<Shown>,
}

/// The conversation's record, when `reader` may see it.
async fn readable(
    table: &dyn Table,
    reader: Reader<'_>,
    conversation: &ConversationKey,
) -> Result<ConversationMeta, InspectError> {
    let not_found = || InspectError::ConversationNotFound(conversation.clone());
    let item = table
        .get(
            &keys::conversation_pk(conversation),
            keys::CONVERSATION_META_SK,
        )
        .await?
        .ok_or_else(not_found)?;
    let meta: ConversationMeta = item
        .parse()
        .map_err(|e| StoreError::Backend(format!("corrupt conversation {conversation}: {e}")))?;
    match reader {
        Reader::Operator => Ok(meta),
        // Fail closed: a conversation whose owner is unknown is nobody's to read.
        Reader::Person(user) if meta.user.as_ref() == Some(user) => Ok(meta),
        Reader::Person(_) => Err(not_found()),
    }
}

/// Turn `turn` of `conversation`, if `reader` may see the conversation and the turn exists.
pub async fn turn(
    table: &dyn Table,
    reader: Reader<'_>,
    conversation: &ConversationKey,
    turn: u64,
) -> Result<TurnInspection, InspectError> {
    let meta = readable(table, reader, conversation).await?;
    let missing = || InspectError::TurnNotFound {
        conversation: conversation.clone(),
        turn,
        turns: meta.turns,
    };
    if turn == 0 || turn > meta.turns {
        return Err(missing());
    }
    Ok(read_turn(table, conversation, &meta, turn, meta.segment)
        .await?
        .ok_or_else(missing)?
        .0)
}

/// The newest turns of `conversation` (at most [`TURNS_LISTED_MAX`]), newest first, if
/// `reader` may see it.
pub async fn conversation(
    table: &dyn Table,
    reader: Reader<'_>,
    conversation: &ConversationKey,
) -> Result<ConversationInspection, InspectError> {
    let meta = readable(table, reader, conversation).await?;
    let mut listed = Vec::new();
    let mut next = meta.turns;
    // Turns only move to later segments: an older turn is in this turn's segment or before.
    let mut segment = meta.segment;
    while next > 0 && listed.len() < TURNS_LISTED_MAX {
        if let Some((t, found)) = read_turn(table, conversation, &meta, next, segment).await? {
            listed.push(t);
            segment = found;
        }
        next -= 1;
    }
    Ok(ConversationInspection {
        conversation: conversation.to_string(),
        channel: meta.channel.to_string(),
        turns: meta.turns,
        listed,
        older: next > 0,
    })
}

/// The turn's model rows by step, from the newest segment holding it at or before `from` (a
/// turn compacted for length is carried whole into the new segment), with that segment.
async fn model_rows(
    table: &dyn Table,
    conversation: &ConversationKey,
    from: u32,
    turn: u64,
) -> Result<(Vec<(u32, ModelRow)>, u32), StoreError> {
    let pk = keys::conversation_pk(conversation);
    for segment in (0..=from).rev() {
        let items = table
            .query_all(
                &Query::prefix(pk.clone(), keys::model_turn_prefix(segment, turn)),
                TURN_ROWS_MAX,
            )
            .await?;
        if items.is_empty() {
            continue;
        }
        return Ok((items.iter().filter_map(step_row).collect(), segment));
    }
    Ok((Vec::new(), from))
}

/// A stored model row with its step; a row that does not parse is left out (the inspector
/// shows what it can, like the turn itself).
fn step_row(item: &Item) -> Option<(u32, ModelRow)> {
    let step = item.sk.rsplit('#').next()?.parse().ok()?;
    match item.parse::<ModelRow>() {
        Ok(row) => Some((step, row)),
        Err(e) => {
            tracing::warn!(key = %item.sk, error = %e, "a model row does not parse; not inspected");
            None
        }
    }
}

/// The turn's visible rows: the person's message, the reaction, the reply, the apology.
async fn seen(
    table: &dyn Table,
    conversation: &ConversationKey,
    turn: u64,
) -> Result<[Option<SeenRow>; 4], StoreError> {
    let mut out: [Option<SeenRow>; 4] = Default::default();
    for (slot, index) in [SEEN_USER, SEEN_REACTION, SEEN_REPLY, SEEN_APOLOGY]
        .into_iter()
        .enumerate()
    {
        out[slot] = transcript::get_seen(table, conversation, turn, index).await?;
    }
    Ok(out)
}

async fn parts(
    table: &dyn Table,
    conversation: &ConversationKey,
    turn: u64,
) -> Result<Vec<String>, StoreError> {
    let pk = keys::conversation_pk(conversation);
    let mut out = Vec::new();
    for part in 0..PARTS_READ_MAX {
        let Some(item) = table.get(&pk, &keys::sent_part_sk(turn, part)).await? else {
            break;
        };
        let id = item
            .data
            .get("message_id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        out.push(id.to_owned());
    }
    Ok(out)
}

/// Reads one turn, looking for its model rows from segment `from` back, with the segment they
/// were found in; None when nothing of it is stored.
async fn read_turn(
    table: &dyn Table,
    conversation: &ConversationKey,
    meta: &ConversationMeta,
    turn: u64,
    from: u32,
) -> Result<Option<(TurnInspection, u32)>, StoreError> {
    let (rows, segment) = model_rows(table, conversation, from, turn).await?;
    let [user, reaction, reply, apology] = seen(table, conversation, turn).await?;
    if rows.is_empty() && user.is_none() && reply.is_none() && apology.is_none() {
        return Ok(None);
    }
    let mut inspection = TurnInspection {
        conversation: conversation.to_string(),
        turn,
        at_ms: user.as_ref().map(|u| u.at_ms),
        message: user
            .as_ref()
            .and_then(|u| u.text.as_deref())
            .map(|t| Shown::new(t, TEXT_CHARS_SHOWN_MAX)),
        context: None,
        model_calls: Vec::new(),
        tool_calls: Vec::new(),
        harness_lines: Vec::new(),
        reply: ReplyView {
            channel: meta.channel.to_string(),
            text: reply
                .as_ref()
                .and_then(|r| r.text.as_deref())
                .map(|t| Shown::new(t, TEXT_CHARS_SHOWN_MAX)),
            buttons: reply.map(|r| r.buttons).unwrap_or_default(),
            reaction: reaction.and_then(|r| r.reaction),
            parts: parts(table, conversation, turn).await?,
            apology: apology
                .and_then(|a| a.text)
                .map(|t| Shown::new(&t, TEXT_CHARS_SHOWN_MAX)),
        },
    };
    for (step, row) in rows {
        match row.source {
            RowSource::User => {
                let text = steward_llm::text_of(&row.message.content);
                inspection.context =
                    context_block(&text).map(|c| Shown::new(c, CONTEXT_CHARS_SHOWN_MAX));
            }
            RowSource::Model => add_model_call(&mut inspection, step, &row),
            RowSource::Tools => add_results(table, conversation, &mut inspection, &row).await?,
            RowSource::Harness => inspection.harness_lines.push(Shown::new(
                &steward_llm::text_of(&row.message.content),
                TEXT_CHARS_SHOWN_MAX,
            )),
            RowSource::Notes | RowSource::Shown => {}
        }
    }
    Ok(Some((inspection, segment)))
}

/// The readable part of a tool result: a registry outcome's `summary` (or its `error`), else
/// the text as the model got it (a held call's sentence, a chat tool's answer).
fn result_summary(text: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(text).ok();
    parsed
        .as_ref()
        .and_then(|v| v.get("summary").or_else(|| v.get("error")))
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| text.to_owned(), str::to_owned)
}

/// The context block of a user row's text (see [`crate::transcript::user_turn_text`]).
fn context_block(text: &str) -> Option<&str> {
    let start = text.find("<context>")? + "<context>".len();
    let end = text[start..].find("</context>")? + start;
    Some(text[start..end].trim())
}

fn add_model_call(inspection: &mut TurnInspection, step: u32, row: &ModelRow) {
    let call = match &row.note {
        Some(StepNote::Call(c)) => Some(c),
        _ => None,
    };
    let mut uses = 0;
    for block in &row.message.content {
        if let ContentBlock::ToolUse(u) = block {
            uses += 1;
            inspection.tool_calls.push(ToolCallView {
                step,
                id: u.id.clone(),
                name: u.name.clone(),
                arguments: Shown::new(&canonical_json(&u.input), ARGUMENTS_CHARS_SHOWN_MAX),
                result: None,
                is_error: false,
                state: None,
                effect: None,
                action: None,
            });
        }
    }
    inspection.model_calls.push(ModelCallView {
        step,
        stop_reason: row.stop_reason.clone(),
        model: call.map(|c| c.model.clone()),
        tokens: call.map(|c| CallTokens {
            input: c.input_tokens,
            output: c.output_tokens,
            cache_read: c.cache_read_tokens,
            cache_write: c.cache_write_tokens,
        }),
        latency_ms: call.map(|c| c.latency_ms),
        rows_sent: call.map(|c| c.rows_sent),
        text: Shown::new(
            &steward_llm::text_of(&row.message.content),
            TEXT_CHARS_SHOWN_MAX,
        ),
        tool_calls: uses,
    });
}

async fn add_results(
    table: &dyn Table,
    conversation: &ConversationKey,
    inspection: &mut TurnInspection,
    row: &ModelRow,
) -> Result<(), StoreError> {
    let notes: &[ToolNote] = match &row.note {
        Some(StepNote::Tools(n)) => n,
        _ => &[],
    };
    for block in &row.message.content {
        let ContentBlock::ToolResult(r) = block else {
            continue;
        };
        let Some(view) = inspection
            .tool_calls
            .iter_mut()
            .rev()
            .find(|c| c.id == r.tool_use_id)
        else {
            continue;
        };
        let text = match &r.content {
            Some(ToolResultContent::Text(t)) => t.clone(),
            Some(ToolResultContent::Blocks(b)) => steward_llm::text_of(b),
            None => String::new(),
        };
        view.result = Some(Shown::new(&result_summary(&text), RESULT_CHARS_SHOWN_MAX));
        view.is_error = r.is_error == Some(true);
        if let Some(note) = notes.iter().find(|n| n.id == r.tool_use_id) {
            view.state = Some(note.state);
            view.effect = note.effect.clone();
        }
        if let Some(effect) = &view.effect
            && let Ok(tool_use) = ToolUseId::parse(effect)
        {
            let key = EffectKey::new(conversation.clone(), tool_use);
            match effect::stored_effect(table, &key).await {
                Ok(stored) => view.action = stored.map(|s| s.action.to_string()),
                Err(crate::ServiceError::Store(e)) => return Err(e),
                Err(e) => {
                    tracing::warn!(effect = %effect, error = %e, "an effect row does not parse")
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_block_is_read_from_the_user_rows_text() {
        let text = crate::transcript::user_turn_text("Time: now\nEvent: none", "hello");
        assert_eq!(context_block(&text), Some("Time: now\nEvent: none"));
        assert_eq!(context_block("no block here"), None);
        assert_eq!(context_block("<context> open only"), None);
    }

    #[test]
    fn a_result_is_summarised_by_its_summary_or_error() {
        assert_eq!(
            result_summary(r#"{"ok":true,"summary":"Added.","data":{"id":"n1"}}"#),
            "Added."
        );
        assert_eq!(
            result_summary(r#"{"ok":false,"error":"No such note."}"#),
            "No such note."
        );
        assert_eq!(
            result_summary("NOT EXECUTED: confirm first"),
            "NOT EXECUTED: confirm first"
        );
        assert_eq!(result_summary("[1,2]"), "[1,2]");
    }

    #[test]
    fn a_shown_text_is_cut_on_characters_and_says_so() {
        let s = Shown::new("héllo", 2);
        assert_eq!(s.text, "hé");
        assert!(s.cut);
        assert_eq!(s.chars, 5);
        let whole = Shown::new("hi", 2);
        assert!(!whole.cut);
    }
}
