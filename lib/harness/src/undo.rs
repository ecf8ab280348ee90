//! Undo: revert the newest request of this user that still has undoable changes, as a whole,
//! last in first out.
//!
//! Rules:
//! * The unit is the request ([`crate::Ctx`]'s action id): one chat message with every tool
//!   call of its turn, one web form post, one MCP call. "Undo" after "create the event and add
//!   three rooms" removes the rooms and the event together.
//! * Only commits of kind change by the account's own actors (user, agent, MCP) are on the
//!   stack. Public requests (a visitor registering) are skipped, never reverted, even when they
//!   happened between two commits of the request being undone.
//! * An undo is itself an audited commit (kind undo) and is never undone: the next undo reverts
//!   the request before the one just undone, so undo, undo walks back through history. Redo is
//!   not offered.
//! * Everything the request did reverts in ONE transaction, with the undo's own audit rows and
//!   every reverted commit marked undone. A record the request touched several times is put
//!   back as it was before the request's first change to it.
//! * If any record is no longer exactly as the request left it (edited later, by anyone), or
//!   someone else changed it between two of the request's own changes, undo refuses with
//!   [`ServiceError::CannotUndo`] and changes nothing, rather than overwrite.
//! * A request too large to revert in one transaction (DynamoDB's 100 operations) is refused
//!   with a sentence saying so: undo never reverts part of a request.
//! * Restored records get a new, higher version (versions never go back), so a stale reader
//!   of either state still fails its version check.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use steward_store::{Item, Query, TRANSACTION_OPS_MAX, WriteOp};

use crate::audit::{self, ActionHeader, AuditRow, Audited};
use crate::ctx::{Actor, Ctx};
use crate::effect;
use crate::error::ServiceError;
use crate::ids::ActionId;
use crate::keys::{self, RecordKey};
use crate::limits::UNDO_SCAN_ACTIONS_MAX;

/// What the undone request had done to one record, and so what undo did about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UndoneKind {
    /// The request created the record; undo removed it.
    Created,
    /// The request changed the record; undo put the earlier version back.
    Updated,
    /// The request deleted the record; undo recreated it.
    Deleted,
}

/// One record undo reverted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UndoneChange {
    /// The record's partition key.
    pub pk: String,
    /// The record's sort key (the domain maps it to a name).
    pub sk: String,
    /// What the undone request had done.
    pub kind: UndoneKind,
    /// The record's data now, after the undo (`None` when undo removed it).
    pub restored: Option<Value>,
    /// The data the undone request had left (`None` when it had deleted the record).
    pub discarded: Option<Value>,
}

/// What an undo reverted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UndoSummary {
    /// The request that was reverted.
    pub undone: ActionId,
    /// The undo's own request id.
    pub undo_action: ActionId,
    /// Who had made the reverted request.
    pub actor: Actor,
    /// What the request did, in a few words: its one label, or its commits' labels joined
    /// with "; " (`None` when no commit had a label).
    pub label: Option<String>,
    /// The labels of the reverted commits, oldest first.
    #[serde(default)]
    pub labels: Vec<String>,
    /// How many commits (steps) of the request were reverted.
    #[serde(default)]
    pub steps: usize,
    /// When its first reverted commit had been made, in epoch milliseconds.
    pub at_ms: i64,
    /// Every record it touched, in the order it first touched them.
    pub changes: Vec<UndoneChange>,
}

impl UndoSummary {
    /// One sentence for a person or model: "Undid \"Add room Aula\" (2 records)." or, for a
    /// request of several steps, "Undid \"Create event\", \"Add room A\" and \"Add room B\"
    /// (3 records)."
    pub fn sentence(&self) -> String {
        let quoted: Vec<String> = self.labels.iter().map(|l| format!("\"{l}\"")).collect();
        let what = match quoted.as_slice() {
            [] => "the last change".to_owned(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
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

/// Reverts the caller's newest undoable request and returns what was reverted. When `ctx`
/// carries an effect key that already committed, returns the stored summary instead.
pub async fn undo_last(ctx: &Ctx) -> Result<UndoSummary, ServiceError> {
    if let Some(key) = ctx.effect()
        && let Some(stored) = effect::stored_effect(ctx.table().as_ref(), key).await?
    {
        return Ok(serde_json::from_value(stored.result)?);
    }
    prepare_undo(ctx).await?.commit().await
}

/// One record's changes within the request being undone, in the order they were made.
struct RecordTrail {
    pk: String,
    sk: String,
    rows: Vec<AuditRow>,
}

/// Finds the caller's newest undoable request and checks that every record it touched is still
/// exactly as it left it. Nothing is written until [`PreparedUndo::commit`].
pub async fn prepare_undo(ctx: &Ctx) -> Result<PreparedUndo, ServiceError> {
    let target = newest_undoable(ctx)
        .await?
        .ok_or_else(|| ServiceError::CannotUndo {
            reason: "there is nothing to undo".to_owned(),
        })?;
    let table = ctx.table().as_ref();
    // More commits than marks fit in one transaction can never be undone; read one more to
    // tell "exactly at the limit" from "over it".
    let commits: Vec<(ActionHeader, Item)> =
        audit::request_header_items(table, ctx.user(), &target, TRANSACTION_OPS_MAX + 1)
            .await?
            .into_iter()
            .filter(|(h, _)| h.is_undoable())
            .collect();
    let Some((first, _)) = commits.first() else {
        return Err(ServiceError::internal(format!(
            "request {target} was chosen for undo but has no undoable commit"
        )));
    };
    let actor = first.actor;
    let at_ms = first.at_ms;
    let labels: Vec<String> = commits
        .iter()
        .filter_map(|(h, _)| h.label.clone())
        .collect();
    let label = (!labels.is_empty()).then(|| labels.join("; "));
    let what = label
        .as_deref()
        .map_or_else(|| "the last change".to_owned(), |l| format!("\"{l}\""));

    // Every record the request touched, with its changes in order.
    let mut trails: Vec<RecordTrail> = Vec::new();
    let mut by_key: HashMap<(String, String), usize> = HashMap::new();
    let mut rows_total = 0;
    for (header, _) in &commits {
        for row in audit::audit_rows(table, ctx.user(), header).await? {
            rows_total += 1;
            if row.before.is_none() && row.after.is_none() {
                return Err(ServiceError::internal(format!(
                    "an audit row of {} ({}) has neither a before nor an after image",
                    header.sk(),
                    row.sk
                )));
            }
            let key = (row.pk.clone(), row.sk.clone());
            let i = *by_key.entry(key).or_insert_with(|| {
                trails.push(RecordTrail {
                    pk: row.pk.clone(),
                    sk: row.sk.clone(),
                    rows: Vec::new(),
                });
                trails.len() - 1
            });
            trails[i].rows.push(row);
        }
    }

    let mut tx = Audited::new(ctx)
        .allow_harness_keys()
        .marks_undo_of(target)
        .label(match &label {
            Some(l) => format!("Undo: {l}"),
            None => "Undo".to_owned(),
        });
    let mut changes = Vec::with_capacity(trails.len());
    for trail in &trails {
        let changed_since = |how: &str| ServiceError::CannotUndo {
            reason: format!(
                "{how} after {what} (record {}), and undo never overwrites a later change",
                trail.sk
            ),
        };
        // Someone else (a visitor, another request) changed the record between two of this
        // request's changes: putting back the first image would erase their change.
        for pair in trail.rows.windows(2) {
            let left = pair[0].after.as_ref().map(|i| &i.data);
            let right = pair[1].before.as_ref().map(|i| &i.data);
            if left != right {
                return Err(ServiceError::CannotUndo {
                    reason: format!(
                        "a record of {what} (record {}) was changed by someone else between two of its steps, and undo never overwrites a later change",
                        trail.sk
                    ),
                });
            }
        }
        let (Some(first_row), Some(last_row)) = (trail.rows.first(), trail.rows.last()) else {
            continue;
        };
        let before = first_row.before.as_ref();
        let after = last_row.after.as_ref();
        let highest_version = trail
            .rows
            .iter()
            .flat_map(|r| [r.before.as_ref(), r.after.as_ref()])
            .flatten()
            .map(|i| i.version)
            .max()
            .unwrap_or(0);
        let current = table.get(&trail.pk, &trail.sk).await?;
        let change = match (before, after, current) {
            (before, Some(after), Some(current)) if current.data == after.data => {
                match before {
                    Some(b) => tx = tx.restore(&current, b.data.clone(), b.ttl),
                    None => tx = tx.delete(&current),
                }
                UndoneChange {
                    pk: trail.pk.clone(),
                    sk: trail.sk.clone(),
                    kind: if before.is_some() {
                        UndoneKind::Updated
                    } else {
                        UndoneKind::Created
                    },
                    restored: before.map(|b| b.data.clone()),
                    discarded: Some(after.data.clone()),
                }
            }
            (Some(before), None, None) => {
                tx = tx.recreate(
                    RecordKey::raw(&trail.pk, &trail.sk),
                    before.data.clone(),
                    before.ttl,
                    highest_version + 1,
                );
                UndoneChange {
                    pk: trail.pk.clone(),
                    sk: trail.sk.clone(),
                    kind: UndoneKind::Deleted,
                    restored: Some(before.data.clone()),
                    discarded: None,
                }
            }
            // Created and removed again within the request: nothing to put back.
            (None, None, None) => continue,
            (_, Some(_), _) => return Err(changed_since("a record it wrote changed")),
            (_, None, _) => return Err(changed_since("a record it deleted changed")),
        };
        changes.push(change);
    }

    // The undo's transaction: each record put back with its audit row, each reverted commit
    // marked, the undo's header, the profile check (unless the profile is among the records),
    // the effect item and a spent confirmation when the call carries them.
    let touches_profile = changes
        .iter()
        .any(|c| c.pk == ctx.user_pk() && c.sk == keys::PROFILE_SK);
    let ops_needed = changes.len() * 2
        + commits.len()
        + 1
        + usize::from(!touches_profile)
        + usize::from(ctx.effect().is_some())
        + usize::from(ctx.confirmation().is_some());
    if ops_needed > TRANSACTION_OPS_MAX {
        return Err(ServiceError::CannotUndo {
            reason: format!(
                "the last request ({what}) changed {} records in {} steps, more than one undo can put back at once, and undo never reverts only part of a request; change those records back directly",
                changes.len(),
                commits.len()
            ),
        });
    }

    for (header, item) in &commits {
        let mut marked = header.clone();
        marked.undone_by = Some(ctx.action());
        let mut marked_item =
            Item::from_value(&item.pk, &item.sk, &marked)?.with_version(item.version + 1);
        // Keeps the header's expiry, so it leaves with its audit rows.
        marked_item.ttl = item.ttl;
        tx = tx.with_extra_op(
            WriteOp::put_if_version(marked_item, item.version),
            "The request being undone (another undo may have run at the same time)",
        );
    }

    tracing::debug!(request = %target, steps = commits.len(), rows = rows_total, "undo prepared");
    Ok(PreparedUndo {
        summary: UndoSummary {
            undone: target,
            undo_action: ctx.action(),
            actor,
            label,
            labels,
            steps: commits.len(),
            at_ms,
            changes,
        },
        tx,
    })
}

/// The request [`undo_last`] would revert now, if any, with all its commits (for showing an
/// undo button next to it).
pub async fn next_to_undo(ctx: &Ctx) -> Result<Option<ActionId>, ServiceError> {
    newest_undoable(ctx).await
}

/// The request of the newest commit header that is a change, not yet undone, by an undoable
/// actor.
async fn newest_undoable(ctx: &Ctx) -> Result<Option<ActionId>, ServiceError> {
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
            if header.is_undoable() {
                return Ok(Some(header.action));
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
        assert_eq!(next, own.action());
        undo_last(&own.next_action()).await.unwrap();
        assert!(next_to_undo(&own.next_action()).await.unwrap().is_none());
    }
}
