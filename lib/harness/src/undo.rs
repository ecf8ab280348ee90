//! Undo: revert the newest action of this user that is not yet undone, last in first out.
//!
//! Rules:
//! * Only actions of kind change by the account's own actors (user, agent, MCP) are on the
//!   stack. Public actions (a visitor registering) are skipped, never reverted.
//! * An undo is itself an audited action (kind undo) and is never undone: the next undo reverts
//!   the action before the one just undone, so undo, undo walks back through history. Redo is
//!   not offered.
//! * All rows of the action revert together in ONE transaction, with the undo's own audit rows
//!   and the original action marked undone.
//! * If any record is no longer exactly as the action left it (edited later, by anyone), undo
//!   refuses with [`ServiceError::CannotUndo`] and changes nothing, rather than overwrite.
//! * Restored records get a new, higher version (versions never go back), so a stale reader
//!   of either state still fails its version check.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use steward_store::{Item, Query, WriteOp};

use crate::audit::{ActionHeader, ActionKind, AuditRow, Audited};
use crate::ctx::{Actor, Ctx};
use crate::effect;
use crate::error::ServiceError;
use crate::ids::ActionId;
use crate::keys::{self, RecordKey};
use crate::limits::UNDO_SCAN_ACTIONS_MAX;

/// What the undone action had done to one record, and so what undo did about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UndoneKind {
    /// The action created the record; undo removed it.
    Created,
    /// The action changed the record; undo put the earlier version back.
    Updated,
    /// The action deleted the record; undo recreated it.
    Deleted,
}

/// One record undo reverted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UndoneChange {
    /// The record's partition key.
    pub pk: String,
    /// The record's sort key (the domain maps it to a name).
    pub sk: String,
    /// What the undone action had done.
    pub kind: UndoneKind,
    /// The record's data now, after the undo (`None` when undo removed it).
    pub restored: Option<Value>,
    /// The data the undone action had written (`None` when it had deleted the record).
    pub discarded: Option<Value>,
}

/// What an undo reverted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UndoSummary {
    /// The action that was reverted.
    pub undone: ActionId,
    /// The undo's own action id.
    pub undo_action: ActionId,
    /// Who had made the reverted action.
    pub actor: Actor,
    /// Its label, when the service gave one ("Add room Aula").
    pub label: Option<String>,
    /// When it had been committed, in epoch milliseconds.
    pub at_ms: i64,
    /// Every record it touched, in the order it touched them.
    pub changes: Vec<UndoneChange>,
}

impl UndoSummary {
    /// One sentence for a person or model: "Undid \"Add room Aula\" (2 records)."
    pub fn sentence(&self) -> String {
        let what = self
            .label
            .as_deref()
            .map_or_else(|| "the last change".to_owned(), |l| format!("\"{l}\""));
        let n = self.changes.len();
        let records = if n == 1 { "record" } else { "records" };
        format!("Undid {what} ({n} {records}).")
    }
}

/// An undo that has been checked and is ready to commit. Lets a tool handler build its
/// [`crate::ToolResult`] from the summary and commit with it, like any audited change.
#[must_use = "an undo does nothing until it is committed"]
#[derive(Debug)]
pub struct PreparedUndo {
    summary: UndoSummary,
    tx: Audited,
}

impl PreparedUndo {
    /// What the undo will revert.
    pub fn summary(&self) -> &UndoSummary {
        &self.summary
    }

    /// Commits the undo, storing `result` as the tool call's effect (see
    /// [`Audited::commit_with_result`]).
    pub async fn commit_with_result<T>(self, result: T) -> Result<T, ServiceError>
    where
        T: Serialize + serde::de::DeserializeOwned,
    {
        self.tx.commit_with_result(result).await
    }

    /// Commits the undo and returns its summary.
    pub async fn commit(self) -> Result<UndoSummary, ServiceError> {
        let summary = self.summary.clone();
        self.tx.commit_with_result(summary).await
    }
}

/// Reverts the caller's newest undoable action and returns what was reverted. When `ctx`
/// carries an effect key that already committed, returns the stored summary instead.
pub async fn undo_last(ctx: &Ctx) -> Result<UndoSummary, ServiceError> {
    if let Some(key) = ctx.effect()
        && let Some(stored) = effect::stored_effect(ctx.table().as_ref(), key).await?
    {
        return Ok(serde_json::from_value(stored.result)?);
    }
    prepare_undo(ctx).await?.commit().await
}

/// Finds the caller's newest undoable action and checks that every record it touched is still
/// exactly as it left it. Nothing is written until [`PreparedUndo::commit`].
pub async fn prepare_undo(ctx: &Ctx) -> Result<PreparedUndo, ServiceError> {
    let (header, header_item) =
        newest_undoable(ctx)
            .await?
            .ok_or_else(|| ServiceError::CannotUndo {
                reason: "there is nothing to undo".to_owned(),
            })?;
    let table = ctx.table().as_ref();
    let rows_query = Query::prefix(ctx.user_pk(), keys::audit_sk_prefix(&header.action));
    let row_items = table.query_all(&rows_query, header.changes + 1).await?;
    if row_items.len() != header.changes {
        return Err(ServiceError::internal(format!(
            "action {} has {} audit rows, its header says {}",
            header.action,
            row_items.len(),
            header.changes
        )));
    }

    let what = header
        .label
        .as_deref()
        .map_or_else(|| "the last change".to_owned(), |l| format!("\"{l}\""));
    let mut tx = Audited::new(ctx)
        .allow_harness_keys()
        .marks_undo_of(header.action)
        .label(match &header.label {
            Some(l) => format!("Undo: {l}"),
            None => "Undo".to_owned(),
        });
    let mut changes = Vec::with_capacity(row_items.len());
    for row_item in &row_items {
        let row: AuditRow = row_item.parse()?;
        let current = table.get(&row.pk, &row.sk).await?;
        let changed_since = || ServiceError::CannotUndo {
            reason: format!(
                "{} changed after {what} (record {}), and undo never overwrites a later change",
                if row.after.is_some() {
                    "a record it wrote"
                } else {
                    "a record it deleted"
                },
                row.sk
            ),
        };
        let change = match (&row.before, &row.after, current) {
            (before, Some(after), Some(current)) if current.data == after.data => {
                match before {
                    Some(b) => {
                        tx = tx.restore(&current, b.data.clone(), b.ttl);
                    }
                    None => {
                        tx = tx.delete(&current);
                    }
                }
                UndoneChange {
                    pk: row.pk.clone(),
                    sk: row.sk.clone(),
                    kind: if before.is_some() {
                        UndoneKind::Updated
                    } else {
                        UndoneKind::Created
                    },
                    restored: before.as_ref().map(|b| b.data.clone()),
                    discarded: Some(after.data.clone()),
                }
            }
            (Some(before), None, None) => {
                tx = tx.recreate(
                    RecordKey::raw(&row.pk, &row.sk),
                    before.data.clone(),
                    before.ttl,
                    before.version + 1,
                );
                UndoneChange {
                    pk: row.pk.clone(),
                    sk: row.sk.clone(),
                    kind: UndoneKind::Deleted,
                    restored: Some(before.data.clone()),
                    discarded: None,
                }
            }
            (None, None, _) => {
                return Err(ServiceError::internal(format!(
                    "audit row {} of action {} has neither a before nor an after image",
                    row_item.sk, header.action
                )));
            }
            _ => return Err(changed_since()),
        };
        changes.push(change);
    }

    let mut marked = header.clone();
    marked.undone_by = Some(ctx.action());
    let marked_item = Item::from_value(&header_item.pk, &header_item.sk, &marked)?
        .with_version(header_item.version + 1);
    tx = tx.with_extra_op(
        WriteOp::put_if_version(marked_item, header_item.version),
        "The action being undone (another undo may have run at the same time)",
    );

    Ok(PreparedUndo {
        summary: UndoSummary {
            undone: header.action,
            undo_action: ctx.action(),
            actor: header.actor,
            label: header.label,
            at_ms: header.at_ms,
            changes,
        },
        tx,
    })
}

/// The action [`undo_last`] would revert now, if any (for showing an undo button next to it).
pub async fn next_to_undo(ctx: &Ctx) -> Result<Option<ActionHeader>, ServiceError> {
    Ok(newest_undoable(ctx).await?.map(|(header, _)| header))
}

/// The newest action header that is a change, not yet undone, by an undoable actor.
async fn newest_undoable(ctx: &Ctx) -> Result<Option<(ActionHeader, Item)>, ServiceError> {
    let table = ctx.table().as_ref();
    let mut query = Query::prefix(ctx.user_pk(), keys::ACTION_SK_PREFIX)
        .descending()
        .limit(50);
    let mut scanned = 0;
    loop {
        let page = table.query(&query).await?;
        for item in page.items {
            scanned += 1;
            let header: ActionHeader = item.parse()?;
            if header.kind == ActionKind::Change
                && header.undone_by.is_none()
                && header.actor.is_undoable()
            {
                return Ok(Some((header, item)));
            }
            if scanned >= UNDO_SCAN_ACTIONS_MAX {
                return Ok(None);
            }
        }
        match page.next {
            Some(cursor) => query = query.after(Some(cursor)),
            None => return Ok(None),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use steward_store::{ManualClock, SqliteTable, Table};

    use super::*;
    use crate::accounts;
    use crate::ids::UserId;

    #[tokio::test]
    async fn next_to_undo_skips_public_actions_and_undone_ones() {
        let clock = Arc::new(ManualClock::at_millis(1_700_000_000_000));
        let table: Arc<dyn Table> =
            Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
        let user = UserId::parse("u1").unwrap();
        accounts::create_account_with_id(table.as_ref(), clock.as_ref(), user.clone(), "U", None)
            .await
            .unwrap();
        let own = Ctx::new(table.clone(), clock.clone(), user.clone(), Actor::User);
        assert!(next_to_undo(&own).await.unwrap().is_none());
        Audited::new(&own)
            .label("Add note")
            .put_new(own.key("NOTE#1"), serde_json::json!({ "n": 1 }))
            .commit()
            .await
            .unwrap();
        let public = Ctx::new(table.clone(), clock.clone(), user.clone(), Actor::Public);
        Audited::new(&public)
            .label("Register")
            .put_new(public.key("NOTE#2"), serde_json::json!({ "n": 2 }))
            .commit()
            .await
            .unwrap();
        let next = next_to_undo(&own.next_action()).await.unwrap().unwrap();
        assert_eq!(next.label.as_deref(), Some("Add note"));
        assert_eq!(next.action, own.action());
        undo_last(&own.next_action()).await.unwrap();
        assert!(next_to_undo(&own.next_action()).await.unwrap().is_none());
    }
}
