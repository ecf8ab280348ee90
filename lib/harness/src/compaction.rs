//! Compaction: when the current segment's non-reasoning content passes the threshold, the
//! model writes notes for itself (facts, decisions, preferences, open questions, promises),
//! the conversation moves to a new segment whose first row is those notes, and from then on
//! only the new segment is replayed. Old rows stay for audit; nothing is ever edited. If
//! summarising fails for any reason, the turn carries on with the full history.
//!
//! The same runs when the model answers that the prompt is too long (the turn compacts and
//! retries once, `turn/model_call.rs`): the rows of the turn under way are then carried into
//! the new segment after the notes, unchanged. A segment too long even for the notes call is
//! summarised from its newer half, and failing that gets fixed notes saying the earlier part
//! was dropped ([`NOTES_DROPPED`]), so a history the model refuses never blocks the
//! conversation.
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

/// The notes when even the newer half of a segment was too long for the notes call.
pub const NOTES_DROPPED: &str = "The earlier part of this conversation was too long to summarise, so nothing of it was kept. Ask the person for anything you need from it.";

/// Why the notes call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotesError {
    /// The rows sent were too long for the model's context window.
    #[error("the history is too long for the notes call: {0}")]
    TooLong(String),
    /// Any other failure.
    #[error("the summary call failed: {0}")]
    Failed(String),
}

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
    ) -> Result<CreateResponse, NotesError>;
}

/// The notes for `rows`: from all of them; when they are too long, from the newer half (from
/// its first whole exchange); when that is too long too, [`NOTES_DROPPED`].
async fn notes_for(
    model: &dyn NotesModel,
    conv: &mut Conversation,
    rows: &[PlacedRow],
    floor_at: &str,
) -> Result<String, String> {
    let request = Message::user(vec![ContentBlock::text(COMPACTION_REQUEST)]);
    let mut from = rows;
    let newer_half = transcript::from_first_plain_user_row(rows[rows.len() / 2..].to_vec());
    for attempt in 0..2 {
        match model
            .write_notes(conv, from, request.clone(), floor_at)
            .await
        {
            Ok(resp) => return Ok(text_of(&resp.content)),
            Err(NotesError::TooLong(why)) => {
                tracing::warn!(attempt, rows = from.len(), %why, "too long for the notes call");
                if attempt == 0 && !newer_half.is_empty() && newer_half.len() < rows.len() {
                    from = &newer_half;
                } else {
                    break;
                }
            }
            Err(e @ NotesError::Failed(_)) => return Err(e.to_string()),
        }
    }
    tracing::warn!("the segment is too long to summarise; starting the next one with fixed notes");
    Ok(NOTES_DROPPED.to_owned())
}

/// Summarises `rows` (the current segment) with `model` and moves `conv` to a new segment
/// whose first row is the notes, stamped `now_ms` (its retention counts from then), followed by
/// `carry` (the rows of the turn under way, unchanged, at their own turn and step). `Err` says
/// why it did not happen; the caller carries on either way.
pub async fn compact(
    model: &dyn NotesModel,
    table: &dyn Table,
    conv: &mut Conversation,
    rows: &[PlacedRow],
    carry: &[PlacedRow],
    turn: u64,
    now_ms: i64,
) -> Result<(), String> {
    let floor_at = keys::model_sk(conv.meta.segment, turn, 0);
    let notes = notes_for(model, conv, rows, &floor_at).await?;
    if notes.trim().is_empty() {
        return Err("the model wrote no notes".into());
    }
    let next = conv.meta.segment + 1;
    let row = ModelRow {
        message: Message::user_text(format!("{NOTES_HEADER}\n{}", notes.trim())).into(),
        source: RowSource::Notes,
        stop_reason: None,
        note: None,
    };
    let mut meta = conv.meta.clone();
    meta.segment = next;
    // The notes sort first in the new segment (turn 0), before this turn's rows.
    let mut ops: Vec<WriteOp> = vec![
        transcript::put_row_op(&conv.key, next, 0, 0, &row, now_ms).map_err(|e| e.to_string())?,
        conversation::save_op(conv, &meta).map_err(|e| e.to_string())?,
    ];
    for placed in carry {
        ops.push(
            transcript::put_row_op(
                &conv.key,
                next,
                placed.turn,
                placed.step,
                &placed.row,
                now_ms,
            )
            .map_err(|e| e.to_string())?,
        );
    }
    table
        .write(ops)
        .await
        .map_err(|e| format!("could not start the new segment: {e}"))?;
    tracing::info!(
        segment = next,
        notes_chars = notes.len(),
        carried = carry.len(),
        "conversation compacted"
    );
    *conv = Conversation {
        key: conv.key.clone(),
        meta,
        version: conv.version + 1,
    };
    Ok(())
}
