//! Compaction: when the current segment's non-reasoning content passes the threshold, the
//! model writes notes for itself (facts, decisions, preferences, open questions, promises),
//! the conversation moves to a new segment whose first row is those notes, and from then on
//! only the new segment is replayed. Old rows stay for audit; nothing is ever edited. If
//! summarising fails for any reason, the turn carries on with the full history.

use steward_llm::{ContentBlock, Effort, LlmClient, Message, text_of};
use steward_store::WriteOp;

use crate::conversation::{self, Conversation};
use crate::ids::UserId;
use crate::keys;
use crate::transcript::{self, ModelRow, PlacedRow, RowSource};
use crate::turn::Agent;

/// How the notes row starts, so the model (and the prompt) can recognise it.
pub const NOTES_HEADER: &str = "[Notes from the earlier part of this conversation]";

/// What the model is asked for. Sent as the last user message of the compaction request; it
/// never enters the stored transcript.
pub const COMPACTION_REQUEST: &str = "[Compaction request from the server — not from the user] This conversation is getting long. Write notes for yourself so you can continue without the earlier messages: facts discussed (with ids), decisions made, preferences the user expressed, open questions, and promises you made. Nothing else: no greeting, no tool calls. Plain text, short lines.";

/// Summarises `rows` (the current segment) and moves `conv` to a new segment whose first row
/// is the notes. `Err` says why it did not happen; the caller carries on either way.
pub async fn compact(
    agent: &Agent,
    model: &dyn LlmClient,
    conv: &mut Conversation,
    rows: &[PlacedRow],
    turn: u64,
    user: &UserId,
) -> Result<(), String> {
    let floor_at = keys::model_sk(conv.meta.segment, turn, 0);
    let request = Message::user(vec![ContentBlock::text(COMPACTION_REQUEST)]);
    let resp = agent
        .call(
            model,
            conv,
            rows,
            Some(request),
            Some(Effort::Low),
            &floor_at,
        )
        .await
        .map_err(|e| {
            crate::metrics::model_failure(crate::metrics::ModelFailureKind::of(&e));
            format!("the summary call failed: {e}")
        })?;
    agent.record_usage(user, &conv.key, turn, &resp).await;
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
        transcript::put_row_op(&conv.key, next, 0, 0, &row, agent.clock().now_millis())
            .map_err(|e| e.to_string())?,
        conversation::save_op(conv, &meta).map_err(|e| e.to_string())?,
    ];
    agent
        .table()
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
