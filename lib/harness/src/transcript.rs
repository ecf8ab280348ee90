//! The two transcripts of a conversation.
//!
//! * The model transcript (`MODEL#<segment>#<turn>#<step>`): the exact messages sent to and
//!   received from the model, in order, by segment. Rows are written once (put-if-absent) and
//!   never rewritten; loading merges consecutive rows of the same role into one message, as the
//!   API wants alternating roles, without altering any content.
//! * The visible transcript (`SEEN#<turn>#<index>`): what the person saw — their messages,
//!   the replies with buttons, reactions. It drives the web chat and history views.
//!
//! Both are keyed by position, so a resumed turn that writes a row again changes nothing.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use steward_llm::{ContentBlock, Message, Role};
use steward_store::{
    Cursor, ITEM_BYTES_MAX, Item, Query, RawItem, SortKey, StoreError, Table, WriteOp,
};

use crate::conversation;
use crate::ids::{ChannelName, ConversationKey};
use crate::keys;
use crate::retention::retained_until;
use crate::shaping::{self, ShapedReply};

/// Most rows of one segment loaded for a request: compaction keeps segments far smaller; this
/// only bounds the work if it ever fails for a long time.
const SEGMENT_ROWS_MAX: usize = 20_000;
/// Most visible rows returned by one read.
pub const SEEN_PAGE_MAX: usize = 200;

/// Who produced a model-transcript row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowSource {
    /// The user's message with its context block.
    User,
    /// A model response, stored exactly as received.
    Model,
    /// The results of one round of tool calls.
    Tools,
    /// A reply the harness wrote (a failure message, the bail-out line), recorded so the model
    /// sees what the person saw.
    Harness,
    /// Notes the model wrote about an earlier segment (compaction).
    Notes,
    /// What the person was shown when reply shaping changed the model's reply (a fallback
    /// line, a cut, dropped buttons): the last row of its turn, so the model remembers what the
    /// person actually saw.
    Shown,
}

/// One stored model-transcript row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    /// The message, exactly as sent or received; shared with every request that sends it
    /// (see [`to_messages`]).
    pub message: Arc<Message>,
    /// Who produced it.
    pub source: RowSource,
    /// For model responses: the stop reason as the API gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// What the harness noted about the step beside the message, for the turn inspector
    /// ([`crate::inspection`]); never sent to the model. Rows written before it existed have
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<StepNote>,
}

/// The harness's note on one stored step: facts the message itself does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepNote {
    /// On a model response: the call that produced it.
    Call(CallNote),
    /// On a round of tool results: how each call went, in the round's order.
    Tools(Vec<ToolNote>),
}

/// One model call: which model answered, its tokens and how long it took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallNote {
    /// The model id that answered (as the provider reported it).
    pub model: String,
    /// Input tokens neither written to nor read from the cache.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Wall time of the call in milliseconds, its one retry (a rejected replay or optional
    /// feature, or a compaction for length) included.
    pub latency_ms: u64,
    /// Transcript rows the request carried (the history before this call).
    pub rows_sent: u32,
}

impl CallNote {
    /// The note of a call to `model` that took `latency_ms`, used `usage` and carried
    /// `rows_sent` rows.
    pub fn new(model: &str, usage: &steward_llm::Usage, latency_ms: u64, rows_sent: usize) -> Self {
        Self {
            model: model.chars().take(MODEL_ID_CHARS_MAX).collect(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_input_tokens,
            cache_write_tokens: usage.cache_creation_input_tokens,
            latency_ms,
            rows_sent: u32::try_from(rows_sent).unwrap_or(u32::MAX),
        }
    }
}

/// Longest model id kept in a [`CallNote`]: real ids are under 100 characters; a provider
/// answering with something longer must not grow the row.
const MODEL_ID_CHARS_MAX: usize = 200;

/// Most tool notes kept on one round's row: each is under 200 bytes, so this many stay far
/// inside the room [`crate::limits::TOOL_ROUND_BYTES_MAX`] leaves under the store's item
/// limit; calls past it (a model that asked for hundreds at once) show as "not recorded".
pub const TOOL_NOTES_PER_ROUND_MAX: usize = 200;

/// How one tool call of a round went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolNote {
    /// The model's `tool_use` id of the call.
    pub id: String,
    /// What happened to it.
    pub state: ToolState,
    /// The effect key's tool-use part when the call went through the registry (its result is
    /// remembered under `CONV#…/EFFECT#<id>` when it changed data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

/// What happened to one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolState {
    /// It ran (no confirmation needed); its result may still be an error.
    Ran,
    /// It ran on the person's confirmation.
    Confirmed,
    /// It had committed on an earlier attempt of the turn; the stored result was returned.
    Replayed,
    /// Held for the person's confirmation; nothing ran.
    Held,
    /// Refused before running (unknown tool, invalid arguments, the declaration refused it).
    Refused,
    /// The harness did not run it (the answer was cut off, or the loop breaker stopped it).
    NotRun,
}

impl From<crate::gate::Passage> for ToolState {
    fn from(p: crate::gate::Passage) -> Self {
        use crate::gate::Passage;
        match p {
            Passage::Ran => ToolState::Ran,
            Passage::Confirmed => ToolState::Confirmed,
            Passage::Replayed => ToolState::Replayed,
            Passage::Held => ToolState::Held,
            Passage::Refused => ToolState::Refused,
        }
    }
}

/// A model row with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedRow {
    /// Its sort key.
    pub sk: String,
    /// The turn it belongs to.
    pub turn: u64,
    /// Its step within the turn.
    pub step: u32,
    /// The row, shared: each turn takes its history out of the history cache, and a clone of
    /// the handle does not copy the row's strings (issue #16).
    pub row: Arc<ModelRow>,
}

/// Reads every row of `segment`, in order.
pub async fn load_segment(
    table: &dyn Table,
    conversation: &ConversationKey,
    segment: u32,
) -> Result<Vec<PlacedRow>, StoreError> {
    let rows = read_rows(table, conversation, segment, None)
        .await?
        .into_iter()
        .map(|r| r.placed)
        .collect();
    Ok(from_first_plain_user_row(rows))
}

/// A model-transcript row as read (or as [`append`] stored it), with what
/// [`crate::history_cache`] keeps beside it.
#[derive(Debug, Clone)]
pub struct ReadRow {
    /// The row with its position.
    pub placed: PlacedRow,
    /// The item's expiry (epoch seconds): past it, the store no longer answers with the row.
    pub ttl: Option<i64>,
}

/// The rows of `segment` in order, all of them or only those sorting after `after` (a sort
/// key of the segment); a row that does not parse is logged and left out.
pub(crate) async fn read_rows(
    table: &dyn Table,
    conversation: &ConversationKey,
    segment: u32,
    after: Option<&str>,
) -> Result<Vec<ReadRow>, StoreError> {
    // Continuing after `after` as after a page's cursor: the store starts strictly past it
    // (DynamoDB's `ExclusiveStartKey`), so the row already held is not handed over again.
    let query = Query::prefix(
        keys::conversation_pk(conversation),
        keys::model_segment_prefix(segment),
    )
    .after(after.map(Cursor::from_token));
    // Each row's text parsed straight into its message: no tree of values built and freed
    // per row, on every turn's read of the rows it has not seen.
    let items = table
        .query_all_raw(&query.limit(500), SEGMENT_ROWS_MAX)
        .await?;
    Ok(items
        .iter()
        .filter_map(|item| match placed(&item.sk, item.parse()) {
            Ok(placed) => Some(ReadRow {
                placed,
                ttl: item.ttl,
            }),
            Err(e) => {
                // A row that does not parse would fail every later turn; the model goes on
                // without it (the pairing repair in `to_messages` closes what it leaves open).
                tracing::error!(
                    conversation = %conversation,
                    key = %item.sk,
                    error = %e,
                    "a model-transcript row does not parse; skipped"
                );
                None
            }
        })
        .collect())
}

/// `rows` from the first row a conversation can start with: a user row that answers no tool
/// call. Rows before it lost their beginning to retention (the oldest rows of a long-lived
/// segment expired first), and a history starting with an assistant row or a tool result
/// would be refused by the provider; the model then starts from the oldest whole exchange.
pub(crate) fn from_first_plain_user_row(mut rows: Vec<PlacedRow>) -> Vec<PlacedRow> {
    let starts = |r: &PlacedRow| {
        r.row.message.role == Role::User
            && !r
                .row
                .message
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult(_)))
    };
    let first = rows.iter().position(starts).unwrap_or(rows.len());
    if first > 0 {
        tracing::info!(
            dropped = first,
            "the segment's oldest rows expired; starting from the first whole exchange"
        );
        rows.drain(..first);
    }
    rows
}

/// The row stored under `sk`, with `row` its data as parsed (straight from the store's text
/// where it was read with [`Table::query_raw`]).
fn placed(sk: &str, row: Result<ModelRow, serde_json::Error>) -> Result<PlacedRow, StoreError> {
    let corrupt = |why: &str| StoreError::Backend(format!("corrupt model row {sk}: {why}"));
    let mut parts = sk.rsplit('#');
    let step = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| corrupt("step"))?;
    let turn = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| corrupt("turn"))?;
    let row = row.map_err(|e| corrupt(&e.to_string()))?;
    Ok(PlacedRow {
        sk: sk.to_owned(),
        turn,
        step,
        row: Arc::new(row),
    })
}

/// The write that stores `row` at (segment, turn, step), once, written at `now_ms` (it is kept
/// [`crate::retention::current`]).
pub fn put_row_op(
    conversation: &ConversationKey,
    segment: u32,
    turn: u64,
    step: u32,
    row: &ModelRow,
    now_ms: i64,
) -> Result<WriteOp, StoreError> {
    let item = Item::from_value(
        keys::conversation_pk(conversation),
        keys::model_sk(segment, turn, step),
        row,
    )
    .map_err(|e| StoreError::Backend(e.to_string()))?
    .with_ttl(retained_until(now_ms));
    Ok(WriteOp::put_if_absent(item))
}

/// A row ready to be stored: its write, and the row as a read of it will answer (numbers in
/// the store's form, its key and its expiry), for the turn to go on with before the write.
#[derive(Debug)]
pub struct PendingRow {
    op: WriteOp,
    read: ReadRow,
    /// Its segment and the moment it was made (its expiry counts from it), to make the write
    /// again.
    segment: u32,
    now_ms: i64,
}

impl PendingRow {
    /// The row with its position, as it will be stored.
    pub fn placed(&self) -> &PlacedRow {
        &self.read.placed
    }

    /// Whether the store can take it: an item over [`steward_store::ITEM_BYTES_MAX`] is
    /// refused by every adapter, so a caller that would do paid work before writing it writes
    /// it first instead, and fails there.
    pub fn fits(&self) -> bool {
        match &self.op {
            WriteOp::Put { item, .. } => steward_store::item_size(item) <= ITEM_BYTES_MAX,
            _ => true,
        }
    }
}

/// The write of `row` at (segment, turn, step), once, written at `now_ms`, with the row as it
/// will read back.
pub fn prepare_row(
    conversation: &ConversationKey,
    segment: u32,
    turn: u64,
    step: u32,
    row: ModelRow,
    now_ms: i64,
) -> Result<PendingRow, StoreError> {
    let mut op = put_row_op(conversation, segment, turn, step, &row, now_ms)?;
    // A model may write a whole number as a decimal (`1.0`, in a tool call's arguments); the
    // store keeps it as the integer, and every later read returns that. The row this turn goes
    // on with must be the one later turns read, or their requests stop starting with this
    // turn's byte for byte and the prompt cache misses from that message on.
    let (row, ttl) = match &mut op {
        WriteOp::Put { item, .. } => {
            let row = if steward_store::canonicalize_numbers(&mut item.data) {
                item.parse().map_err(|e| {
                    StoreError::Backend(format!("the row {} does not read back: {e}", item.sk))
                })?
            } else {
                row
            };
            (row, item.ttl)
        }
        _ => (row, None),
    };
    let read = ReadRow {
        placed: PlacedRow {
            sk: keys::model_sk(segment, turn, step),
            turn,
            step,
            row: Arc::new(row),
        },
        ttl,
    };
    Ok(PendingRow {
        op,
        read,
        segment,
        now_ms,
    })
}

/// Stores `row` at (segment, turn, step), written at `now_ms`, unless a row is already there;
/// returns the row that is stored (an earlier attempt's wins, so a resumed turn continues from
/// what was written), as a read of it would answer: with its key and its expiry, so the turn can
/// hand the rows it wrote to [`crate::history_cache`] instead of the next turn reading them back.
pub async fn append(
    table: &dyn Table,
    conversation: &ConversationKey,
    segment: u32,
    turn: u64,
    step: u32,
    row: ModelRow,
    now_ms: i64,
) -> Result<ReadRow, StoreError> {
    let pending = prepare_row(conversation, segment, turn, step, row, now_ms)?;
    store_row(table, conversation, pending).await
}

/// Stores `pending` unless a row is already at its key; the row that is stored.
pub async fn store_row(
    table: &dyn Table,
    conversation: &ConversationKey,
    pending: PendingRow,
) -> Result<ReadRow, StoreError> {
    match table.write(vec![pending.op]).await {
        Ok(()) => Ok(pending.read),
        Err(StoreError::ConditionFailed { .. }) => {
            read_stored(table, conversation, &pending.read.placed.sk).await
        }
        Err(e) => Err(e),
    }
}

/// The row stored at `sk`, found there by a write that expected the key empty.
async fn read_stored(
    table: &dyn Table,
    conversation: &ConversationKey,
    sk: &str,
) -> Result<ReadRow, StoreError> {
    let pk = keys::conversation_pk(conversation);
    let item = table
        .get(&pk, sk)
        .await?
        .ok_or_else(|| StoreError::Backend(format!("row {sk} vanished")))?;
    read_row_of(&item)
}

/// A stored model-transcript item as a [`ReadRow`].
fn read_row_of(item: &Item) -> Result<ReadRow, StoreError> {
    Ok(ReadRow {
        placed: placed(&item.sk, item.parse())?,
        ttl: item.ttl,
    })
}

/// Stores `first` and then `second`, each once, in one commit where the store has one
/// ([`Table::write_in_order`]): a turn's person's row with the turn's first response, one
/// commit instead of two. Returns the rows that are stored. When `first`'s key already holds a
/// different row (another attempt of the turn wrote it, with another context block), `second`
/// — made in answer to this attempt's `first` — is not written: the other attempt's row at its
/// key comes back, or `None` when there is none yet, and the caller makes it again in answer
/// to the stored `first`.
pub async fn append_pair(
    table: &dyn Table,
    conversation: &ConversationKey,
    first: PendingRow,
    second: PendingRow,
) -> Result<(ReadRow, Option<ReadRow>), StoreError> {
    let PendingRow {
        op: second_op,
        read: second_read,
        segment,
        now_ms,
    } = second;
    match table.write_in_order(vec![first.op, second_op]).await? {
        2 => Ok((first.read, Some(second_read))),
        1 => {
            let second = read_stored(table, conversation, &second_read.placed.sk).await?;
            Ok((first.read, Some(second)))
        }
        _ => {
            let stored = read_stored(table, conversation, &first.read.placed.sk).await?;
            if stored.placed.row != first.read.placed.row {
                // Another attempt's row: its answer, if that attempt stored one, is the answer.
                let pk = keys::conversation_pk(conversation);
                let theirs = match table.get(&pk, &second_read.placed.sk).await? {
                    Some(item) => Some(read_row_of(&item)?),
                    None => None,
                };
                return Ok((stored, theirs));
            }
            // The same row (an attempt that wrote only the person's row, then stopped): the
            // second answers it as well as it answers this attempt's.
            let p = second_read.placed;
            let again = prepare_row(
                conversation,
                segment,
                p.turn,
                p.step,
                Arc::unwrap_or_clone(p.row),
                now_ms,
            )?;
            let second = store_row(table, conversation, again).await?;
            Ok((stored, Some(second)))
        }
    }
}

/// The messages to send for `rows`: consecutive rows of one role merged into one message
/// (content concatenated in order, nothing altered), and reasoning blocks left out of rows
/// sorting before `reasoning_floor`. A row's message is shared with the request, not copied,
/// unless the request changes it (merged with its neighbour, or reasoning left out).
pub fn to_messages(rows: &[PlacedRow], reasoning_floor: Option<&str>) -> Vec<Arc<Message>> {
    let mut out: Vec<Arc<Message>> = Vec::with_capacity(rows.len() + 1);
    for placed in rows {
        let message = &placed.row.message;
        let strip = reasoning_floor.is_some_and(|floor| placed.sk.as_str() < floor)
            && message.content.iter().any(ContentBlock::is_reasoning);
        let blocks = || {
            message
                .content
                .iter()
                .filter(|b| !(strip && b.is_reasoning()))
                .cloned()
        };
        match out.last_mut() {
            Some(last) if last.role == message.role => {
                Arc::make_mut(last).content.extend(blocks());
            }
            _ if strip => out.push(Arc::new(Message {
                role: message.role,
                content: blocks().collect(),
            })),
            _ => out.push(Arc::clone(message)),
        }
    }
    // Stripping can empty a message; drop it and merge what then touches.
    if reasoning_floor.is_some() {
        out = merge_neighbours(out);
    }
    pair_tool_calls(out)
}

/// `messages` without empty ones, consecutive messages of one role merged into one.
fn merge_neighbours(messages: Vec<Arc<Message>>) -> Vec<Arc<Message>> {
    let mut merged: Vec<Arc<Message>> = Vec::with_capacity(messages.len());
    for m in messages.into_iter().filter(|m| !m.content.is_empty()) {
        match merged.last_mut() {
            Some(last) if last.role == m.role => {
                let content = Arc::unwrap_or_clone(m).content;
                Arc::make_mut(last).content.extend(content);
            }
            _ => merged.push(m),
        }
    }
    merged
}

/// The result given to a stored tool call that never got one (the turn stopped between the
/// call and its result, or the result's row is unreadable).
pub const UNFINISHED_CALL: &str = "Not finished: this call stopped before its result was recorded. It may or may not have taken effect; check the current state before trying it again.";

/// The ids of the tool calls in `message`.
fn tool_use_ids(message: &Message) -> Vec<&str> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u.id.as_str()),
            _ => None,
        })
        .collect()
}

/// `messages` (alternating roles) repaired so the provider accepts them: every tool call is
/// answered in the next message (a missing result is added as an error saying the call did not
/// finish, [`UNFINISHED_CALL`]; a call in the last message gets a message of its own), and a
/// tool result answering no call of the message before is dropped. A history that needs no
/// repair is returned as it is, byte for byte, and the repair is a pure function of the stored
/// rows: a repaired history is the same prefix on every later request.
fn pair_tool_calls(mut messages: Vec<Arc<Message>>) -> Vec<Arc<Message>> {
    let mut repaired = false;
    let mut i = 0;
    while i < messages.len() {
        let expected: Vec<&str> = match i.checked_sub(1).map(|p| &messages[p]) {
            Some(prev) if prev.role == Role::Assistant => tool_use_ids(prev),
            _ => Vec::new(),
        };
        let message = &messages[i];
        if message.role == Role::Assistant {
            // Calls in the last message: answered by a message of their own.
            if i + 1 == messages.len() && !tool_use_ids(message).is_empty() {
                let results = tool_use_ids(message)
                    .into_iter()
                    .map(|id| ContentBlock::tool_result(id, UNFINISHED_CALL, true))
                    .collect();
                tracing::warn!("history ends in unanswered tool calls; closed as not finished");
                messages.push(Arc::new(Message::user(results)));
                repaired = true;
            }
            i += 1;
            continue;
        }
        let answered: Vec<&str> = message.content.iter().filter_map(answered_id).collect();
        let orphans = answered.iter().any(|id| !expected.contains(id));
        let missing: Vec<String> = expected
            .iter()
            .filter(|id| !answered.contains(id))
            .map(|id| (*id).to_owned())
            .collect();
        if !orphans && missing.is_empty() {
            i += 1;
            continue;
        }
        tracing::warn!(
            missing = missing.len(),
            orphans,
            "history with unpaired tool calls; repaired for the request"
        );
        repaired = true;
        let expected: Vec<String> = expected.into_iter().map(str::to_owned).collect();
        let (results, rest): (Vec<ContentBlock>, Vec<ContentBlock>) =
            Arc::make_mut(&mut messages[i])
                .content
                .drain(..)
                .partition(|b| matches!(b, ContentBlock::ToolResult(_)));
        let mut content: Vec<ContentBlock> = results
            .into_iter()
            .filter(|b| answered_id(b).is_some_and(|id| expected.iter().any(|e| e == id)))
            .collect();
        content.extend(
            missing
                .into_iter()
                .map(|id| ContentBlock::tool_result(id, UNFINISHED_CALL, true)),
        );
        content.extend(rest);
        Arc::make_mut(&mut messages[i]).content = content;
        i += 1;
    }
    if repaired {
        // A message left with nothing (only stray results) goes, and its neighbours merge;
        // merged neighbours are checked again.
        let before = messages.len();
        let merged = merge_neighbours(messages);
        return if merged.len() < before {
            pair_tool_calls(merged)
        } else {
            merged
        };
    }
    messages
}

/// The id of the call a tool result answers.
fn answered_id(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
        _ => None,
    }
}

/// Characters of non-reasoning content in `rows`: the compaction measure.
pub fn content_chars(rows: &[PlacedRow]) -> usize {
    rows.iter()
        .flat_map(|r| r.row.message.content.iter())
        .map(block_chars)
        .sum()
}

fn block_chars(block: &ContentBlock) -> usize {
    use steward_llm::ToolResultContent;
    match block {
        ContentBlock::Text(t) => t.text.chars().count(),
        ContentBlock::ToolUse(t) => t.name.len() + t.input.to_string().chars().count(),
        ContentBlock::ToolResult(t) => match &t.content {
            Some(ToolResultContent::Text(s)) => s.chars().count(),
            Some(ToolResultContent::Blocks(b)) => b.iter().map(block_chars).sum(),
            None => 0,
        },
        ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => 0,
        ContentBlock::Image(_) | ContentBlock::Document(_) => 0,
        ContentBlock::Unknown(v) => v.to_string().chars().count(),
    }
}

/// Records in the model transcript what the person was shown for turn `turn`, when shaping
/// changed the model's reply `raw` into `shown` ([`shaping::shown_note`]).
///
/// The note is appended as an assistant row after the turn's last row, so history stays
/// append-only: the model's own row is kept verbatim (its reasoning signatures too), the merged
/// assistant message keeps roles alternating, no tool call is left unpaired, and every earlier
/// request remains a byte-for-byte prefix of the next. A turn without model rows (a guarded
/// reply the model never saw) gets none, and a turn whose note is already stored (a resumed
/// turn) is left as it is, so it is written at most once. `now_ms` dates the note's row.
pub async fn record_shown(
    table: &dyn Table,
    conversation: &ConversationKey,
    channel: &ChannelName,
    turn: u64,
    raw: &str,
    shown: &ShapedReply,
    now_ms: i64,
) -> Result<(), StoreError> {
    let Some(note) = shaping::shown_note(raw, shown) else {
        return Ok(());
    };
    // The turn's rows are in the segment current now: compaction only runs before a turn's
    // user row is written.
    let segment = conversation::load(table, conversation, channel)
        .await?
        .meta
        .segment;
    let items = table
        .query_all_raw(
            &Query::prefix(
                keys::conversation_pk(conversation),
                keys::model_turn_prefix(segment, turn),
            ),
            SEGMENT_ROWS_MAX,
        )
        .await?;
    let Some(last) = items.last() else {
        return Ok(());
    };
    let last = placed(&last.sk, last.parse())?;
    if last.row.source == RowSource::Shown {
        return Ok(());
    }
    let row = ModelRow {
        message: Message::assistant(vec![ContentBlock::text(note)]).into(),
        source: RowSource::Shown,
        stop_reason: None,
        note: None,
    };
    append(
        table,
        conversation,
        segment,
        turn,
        last.step + 1,
        row,
        now_ms,
    )
    .await?;
    Ok(())
}

/// A user message block: the fresh context, then the person's own words, each tagged.
pub fn user_turn_text(context: &str, user_text: &str) -> String {
    format!(
        "<context>\n{}\n</context>\n\n<user_message>\n{}\n</user_message>",
        context.trim(),
        user_text
    )
}

/// One row of the visible transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenRow {
    /// `user` or `assistant`.
    pub role: Role,
    /// The text shown (None for a pure reaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Quick-reply buttons shown with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buttons: Vec<String>,
    /// An emoji reaction put on the user's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaction: Option<String>,
    /// When it happened (epoch ms).
    pub at_ms: i64,
}

impl SeenRow {
    /// The person's words, as they wrote them at `at_ms`.
    pub fn words(text: &str, at_ms: i64) -> Self {
        Self {
            role: Role::User,
            text: Some(text.to_owned()),
            buttons: Vec::new(),
            reaction: None,
            at_ms,
        }
    }
}

/// Index of the user's message within a turn's visible rows.
pub const SEEN_USER: u32 = 0;
/// Index of the assistant's reaction within a turn's visible rows.
pub const SEEN_REACTION: u32 = 1;
/// Index of the assistant's reply within a turn's visible rows.
pub const SEEN_REPLY: u32 = 2;

/// Index of the dead-letter apology within a turn's visible rows ([`crate::dead_letter`]):
/// after the reply's, so a turn an operator re-drives and finishes later keeps both rows.
pub const SEEN_APOLOGY: u32 = 3;

/// Stores a visible row at (turn, index) unless one is there; returns the stored row.
pub async fn put_seen(
    table: &dyn Table,
    conversation: &ConversationKey,
    turn: u64,
    index: u32,
    row: SeenRow,
) -> Result<SeenRow, StoreError> {
    let item = seen_item(conversation, turn, index, &row)?;
    let sk = item.sk.clone();
    match table.write(vec![WriteOp::put_if_absent(item)]).await {
        Ok(()) => Ok(row),
        Err(StoreError::ConditionFailed { .. }) => get_seen(table, conversation, turn, index)
            .await?
            .ok_or_else(|| StoreError::Backend(format!("seen row {sk} vanished"))),
        Err(e) => Err(e),
    }
}

/// The write that stores the person's words as turn `turn`'s visible row, whatever is there:
/// the claim that opens the turn puts it in its own transaction ([`crate::conversation::claim`]'s
/// write along), where nothing can be there yet but a row left from an earlier life of the
/// conversation record.
pub fn words_op(
    conversation: &ConversationKey,
    turn: u64,
    text: &str,
    at_ms: i64,
) -> Result<WriteOp, StoreError> {
    let row = SeenRow::words(text, at_ms);
    seen_item(conversation, turn, SEEN_USER, &row).map(WriteOp::put)
}

/// Stores the person's words as turn `turn`'s visible row unless one is there: for a turn whose
/// claim did not carry them ([`words_op`]), a resumed or a dead-lettered one.
pub async fn put_words(
    table: &dyn Table,
    conversation: &ConversationKey,
    turn: u64,
    text: &str,
    at_ms: i64,
) -> Result<(), StoreError> {
    put_seen(
        table,
        conversation,
        turn,
        SEEN_USER,
        SeenRow::words(text, at_ms),
    )
    .await
    .map(drop)
}

fn seen_item(
    conversation: &ConversationKey,
    turn: u64,
    index: u32,
    row: &SeenRow,
) -> Result<Item, StoreError> {
    Ok(Item::from_value(
        keys::conversation_pk(conversation),
        keys::seen_sk(turn, index),
        row,
    )
    .map_err(|e| StoreError::Backend(e.to_string()))?
    .with_ttl(retained_until(row.at_ms)))
}

/// The visible row at (turn, index), if any.
pub async fn get_seen(
    table: &dyn Table,
    conversation: &ConversationKey,
    turn: u64,
    index: u32,
) -> Result<Option<SeenRow>, StoreError> {
    let item = table
        .get(
            &keys::conversation_pk(conversation),
            &keys::seen_sk(turn, index),
        )
        .await?;
    item.map(|i| {
        i.parse()
            .map_err(|e| StoreError::Backend(format!("corrupt seen row {}: {e}", i.sk)))
    })
    .transpose()
}

/// A visible row with its position, for readers that page through the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedSeen {
    /// Its sort key; pass it back as `after` to read what came later.
    pub cursor: String,
    /// The turn.
    pub turn: u64,
    /// The row.
    pub row: SeenRow,
}

/// Visible rows after `after` (a cursor from an earlier read), oldest first, at most
/// [`SEEN_PAGE_MAX`].
pub async fn read_seen(
    table: &dyn Table,
    conversation: &ConversationKey,
    after: Option<&str>,
) -> Result<Vec<PlacedSeen>, StoreError> {
    let pk = keys::conversation_pk(conversation);
    let query = match after {
        Some(cursor) => Query::partition(pk).sort(SortKey::Between(
            format!("{cursor}\u{0}"),
            format!("{}\u{10FFFF}", keys::SEEN_SK_PREFIX),
        )),
        None => Query::prefix(pk, keys::SEEN_SK_PREFIX),
    }
    .limit(SEEN_PAGE_MAX);
    let page = table.query_raw(&query).await?;
    page.items
        .iter()
        .filter(|i| i.sk.starts_with(keys::SEEN_SK_PREFIX))
        .map(placed_seen)
        .collect()
}

/// The newest visible rows before `before` (a cursor from an earlier read; None: the end of
/// the conversation), at most `limit` (at least 1), oldest first, and whether earlier rows
/// exist. One query read backwards from `before`, so opening a long conversation reads its
/// last page, never the whole history.
pub async fn read_seen_before(
    table: &dyn Table,
    conversation: &ConversationKey,
    before: Option<&str>,
    limit: usize,
) -> Result<(Vec<PlacedSeen>, bool), StoreError> {
    let limit = limit.max(1);
    let pk = keys::conversation_pk(conversation);
    // The range is inclusive, so the row at `before` may come back too: one more to drop, and
    // one more to tell whether earlier rows exist.
    let query = match before {
        Some(cursor) => Query::partition(pk).sort(SortKey::Between(
            keys::SEEN_SK_PREFIX.to_owned(),
            cursor.to_owned(),
        )),
        None => Query::prefix(pk, keys::SEEN_SK_PREFIX),
    }
    .descending()
    .limit(limit + 2);
    let page = table.query_raw(&query).await?;
    let mut rows = page
        .items
        .iter()
        .filter(|i| i.sk.starts_with(keys::SEEN_SK_PREFIX) && Some(i.sk.as_str()) != before)
        .map(placed_seen)
        .collect::<Result<Vec<_>, _>>()?;
    let earlier = rows.len() > limit || (rows.len() == limit && page.next.is_some());
    rows.truncate(limit);
    rows.reverse();
    Ok((rows, earlier))
}

/// A visible row read from the table, with its position.
fn placed_seen(i: &RawItem) -> Result<PlacedSeen, StoreError> {
    let turn =
        i.sk.split('#')
            .nth(1)
            .and_then(|t| t.parse().ok())
            .unwrap_or_default();
    Ok(PlacedSeen {
        cursor: i.sk.clone(),
        turn,
        row: i
            .parse()
            .map_err(|e| StoreError::Backend(format!("corrupt seen row {}: {e}", i.sk)))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(turn: u64, step: u32, message: Message, source: RowSource) -> PlacedRow {
        PlacedRow {
            sk: keys::model_sk(0, turn, step),
            turn,
            step,
            row: Arc::new(ModelRow {
                message: message.into(),
                source,
                stop_reason: None,
                note: None,
            }),
        }
    }

    #[test]
    fn a_segment_whose_oldest_rows_expired_starts_at_its_first_whole_exchange() {
        let results = row(
            3,
            2,
            Message::user(vec![ContentBlock::tool_result("tu_1", "ok", false)]),
            RowSource::Tools,
        );
        let answer = row(
            3,
            3,
            Message::assistant(vec![ContentBlock::text("Done.")]),
            RowSource::Model,
        );
        let next = row(4, 0, Message::user_text("next"), RowSource::User);
        let reply = row(
            4,
            1,
            Message::assistant(vec![ContentBlock::text("Hi.")]),
            RowSource::Model,
        );
        let kept = from_first_plain_user_row(vec![results, answer, next.clone(), reply.clone()]);
        assert_eq!(kept, [next.clone(), reply.clone()]);
        // A whole segment is left as it is.
        assert_eq!(
            from_first_plain_user_row(vec![next.clone(), reply.clone()]),
            [next, reply]
        );
        assert!(from_first_plain_user_row(Vec::new()).is_empty());
    }

    #[test]
    fn messages_are_shared_with_the_rows_and_copied_only_where_a_request_changes_them() {
        let ask = row(1, 0, Message::user_text("hi"), RowSource::User);
        let reasoned = row(
            1,
            1,
            Message::assistant(vec![
                ContentBlock::thinking("hmm", "sig"),
                ContentBlock::text("Hello."),
            ]),
            RowSource::Model,
        );
        let again = row(2, 0, Message::user_text("and?"), RowSource::User);
        let more = row(2, 1, Message::user_text("also this"), RowSource::Harness);
        let rows = [ask.clone(), reasoned.clone(), again.clone(), more.clone()];

        let sent = to_messages(&rows, None);
        assert_eq!(sent.len(), 3, "the two user rows in a row are one message");
        assert!(Arc::ptr_eq(&sent[0], &ask.row.message));
        assert!(Arc::ptr_eq(&sent[1], &reasoned.row.message));
        assert!(!Arc::ptr_eq(&sent[2], &again.row.message), "merged: a copy");
        assert_eq!(sent[2].content.len(), 2);
        assert_eq!(
            again.row.message.content.len(),
            1,
            "the row is left as it was"
        );

        // Reasoning left out of rows before the floor: that row's message is a copy without
        // it; the stored row keeps its reasoning.
        let floor = keys::model_sk(0, 2, 0);
        let sent = to_messages(&rows, Some(&floor));
        assert!(Arc::ptr_eq(&sent[0], &ask.row.message));
        assert!(!Arc::ptr_eq(&sent[1], &reasoned.row.message));
        assert_eq!(sent[1].content, [ContentBlock::text("Hello.")]);
        assert_eq!(reasoned.row.message.content.len(), 2);
    }

    #[tokio::test]
    #[allow(clippy::unwrap_used)]
    async fn a_pair_stores_both_or_answers_with_what_another_attempt_stored() {
        let table = steward_store::SqliteTable::in_memory().unwrap();
        let c = ConversationKey::telegram(7);
        let model_row = |text: &str, source| ModelRow {
            message: Message::user(vec![ContentBlock::text(text)]).into(),
            source,
            stop_reason: None,
            note: None,
        };
        let pending = |turn, step, text: &str| {
            let source = if step == 0 {
                RowSource::User
            } else {
                RowSource::Model
            };
            // Written now: the store's clock is the system's, and an expired row is absent.
            let now = steward_store::Clock::now_millis(&steward_store::SystemClock);
            prepare_row(&c, 0, turn, step, model_row(text, source), now).unwrap()
        };
        let text = |r: &ReadRow| steward_llm::text_of(&r.placed.row.message.content);

        // Neither stored: both written, in one call.
        let (a, b) = append_pair(&table, &c, pending(1, 0, "mine"), pending(1, 1, "answer"))
            .await
            .unwrap();
        assert_eq!(
            (text(&a), text(&b.unwrap())),
            ("mine".into(), "answer".into())
        );

        // Both stored already: what is stored comes back.
        let (a, b) = append_pair(&table, &c, pending(1, 0, "other"), pending(1, 1, "other"))
            .await
            .unwrap();
        assert_eq!(
            (text(&a), text(&b.unwrap())),
            ("mine".into(), "answer".into())
        );

        // The same person's row stored alone: the answer is written after it.
        store_row(&table, &c, pending(2, 0, "same")).await.unwrap();
        let (a, b) = append_pair(&table, &c, pending(2, 0, "same"), pending(2, 1, "reply"))
            .await
            .unwrap();
        assert_eq!(
            (text(&a), text(&b.unwrap())),
            ("same".into(), "reply".into())
        );

        // A different person's row stored alone: it comes back, and the answer is not stored.
        store_row(&table, &c, pending(3, 0, "theirs"))
            .await
            .unwrap();
        let (a, b) = append_pair(&table, &c, pending(3, 0, "mine"), pending(3, 1, "to mine"))
            .await
            .unwrap();
        assert_eq!(text(&a), "theirs");
        assert!(b.is_none());
        // The answer's key taken, the person's row free: the person's row is written, and
        // the stored answer comes back.
        store_row(&table, &c, pending(4, 1, "stored"))
            .await
            .unwrap();
        let (a, b) = append_pair(&table, &c, pending(4, 0, "mine"), pending(4, 1, "new"))
            .await
            .unwrap();
        assert_eq!(
            (text(&a), text(&b.unwrap())),
            ("mine".into(), "stored".into())
        );

        let rows = load_segment(&table, &c, 0).await.unwrap();
        let texts: Vec<String> = rows
            .iter()
            .map(|r| steward_llm::text_of(&r.row.message.content))
            .collect();
        assert_eq!(
            texts,
            [
                "mine", "answer", "same", "reply", "theirs", "mine", "stored"
            ]
        );
    }
}
