//! Compaction: when the current segment's non-reasoning content passes the threshold, the
//! model writes notes for itself (facts, decisions, preferences, open questions, promises),
//! the conversation moves to a new segment whose first row is those notes, and from then on
//! only the new segment is replayed. Old rows stay for audit; nothing is ever edited. If
//! summarising fails for any reason, the turn carries on with the full history.
//!
//! The model call comes through [`NotesModel`], a one-method seam the turn implements, so this
//! module depends on no part of the turn.

use async_trait::async_trait;
use steward_llm::{ContentBlock, CreateResponse, Message, text_of};
use steward_store::{Table, WriteOp};

use crate::conversation::{self, Conversation};
use crate::keys;
use crate::transcript::{self, ModelRow, PlacedRow, RowSource};

/// How the notes row starts, so the model (and the prompt) can recognise it.
pub const NOTES_HEADER: &str = "[Notes from the earlier part of this conversation]";

/// What the model is asked for. Sent as the last user message of the compaction request; it
/// never enters the stored transcript.
pub const COMPACTION_REQUEST: &str = "[Compaction request from the server — not from the user] This conversation is getting long. Write notes for yourself so you can continue without the earlier messages: facts discussed (with ids), decisions made, preferences the user expressed, open questions, and promises you made. Nothing else: no greeting, no tool calls. Plain text, short lines.";

/// The one model call compaction makes.
#[async_trait]
pub trait NotesModel: Send + Sync {
    /// Sends the segment's `rows` followed by `request` (the compaction request), at low
    /// effort, and returns the response; `Err` says why it failed. `floor_at` is the key up to
    /// which replayed reasoning may be stripped if the provider rejects it; `conv` is updated
    /// when that happens.
    async fn write_notes(
        &self,
        conv: &mut Conversation,
        rows: &[PlacedRow],
        request: Message,
        floor_at: &str,
    ) -> Result<CreateResponse, String>;
}

/// Summarises `rows` (the current segment) with `model` and moves `conv` to a new segment
/// whose first row is the notes, stamped `now_ms` (its retention counts from then). `Err` says why it did not happen; the caller carries on
/// either way.
pub async fn compact(
    model: &dyn NotesModel,
    table: &dyn Table,
    conv: &mut Conversation,
    rows: &[PlacedRow],
    turn: u64,
    now_ms: i64,
) -> Result<(), String> {
    let floor_at = keys::model_sk(conv.meta.segment, turn, 0);
    let request = Message::user(vec![ContentBlock::text(COMPACTION_REQUEST)]);
    let resp = model.write_notes(conv, rows, request, &floor_at).await?;
    let notes = text_of(&resp.content);
    if notes.trim().is_empty() {
        return Err("the model wrote no notes".into());
    }
    let next = conv.meta.segment + 1;
    let row = ModelRow {
        message: Message::user_text(format!("{NOTES_HEADER}\n{}", notes.trim())),
        source: RowSource::Notes,
        stop_reason: None,
    };
    let mut meta = conv.meta.clone();
    meta.segment = next;
    // The notes sort first in the new segment (turn 0), before this turn's user row.
    let ops: Vec<WriteOp> = vec![
        transcript::put_row_op(&conv.key, next, 0, 0, &row, now_ms).map_err(|e| e.to_string())?,
        conversation::save_op(conv, &meta).map_err(|e| e.to_string())?,
    ];
    table
        .write(ops)
        .await
        .map_err(|e| format!("could not start the new segment: {e}"))?;
    tracing::info!(
        segment = next,
        notes_chars = notes.len(),
        "conversation compacted"
    );
    *conv = Conversation {
        key: conv.key.clone(),
        meta,
        version: conv.version + 1,
    };
    Ok(())
}
