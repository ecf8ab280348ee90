//! The one audited-transaction helper every mutation goes through.
//!
//! A service function reads the records it wants to change, decides, and then describes the
//! change on an [`Audited`] builder:
//!
//! ```ignore
//! let old = ctx.get(&ctx.key(format!("NOTE#{id}"))).await?.ok_or(...)?;
//! let result = Audited::new(&ctx)
//!     .label("Rename note")
//!     .replace(&old, &new_note)                 // version-checked against `old`
//!     .put_new(ctx.key("NOTE#2"), &other)       // must not exist yet
//!     .delete(&stale)                           // version-checked against `stale`
//!     .commit_with_result(tool_result)          // or `.commit()`
//!     .await?;
//! ```
//!
//! `commit_with_result` writes, in ONE [`Table::write`](steward_store::Table::write):
//! * the effect item `CONV#c` / `EFFECT#<tool use id>` holding `result`, when the [`Ctx`]
//!   carries an effect key (first, put-if-absent);
//! * a check that the account profile is unchanged since it was found active (a paused account
//!   cannot write: [`ServiceError::Forbidden`]; no account: [`ServiceError::NotFound`]);
//! * each record change with its optimistic version condition;
//! * the commit's header `USER#u` / `ACTION#<action>#<commit>` (actor, kind, label, undone-by);
//! * one audit row per change `USER#u` / `AUDIT#<action>#<commit>#<nn>` with the before and
//!   after image.
//!
//! When the effect item already exists nothing is written and the stored result is returned,
//! so the same tool call never acts twice; under concurrency exactly one call wins the
//! put-if-absent and the others return the winner's stored result. A record whose version moved
//! since it was read fails the whole transaction with [`ServiceError::Conflict`].
//!
//! In a tool handler, commit with the [`crate::ToolResult`] the handler will return: the
//! registry returns that stored result when the model retries the call (a call that committed
//! with another value, or with `commit()`, gets a plain "already carried out" answer instead).
//!
//! **One request, one action, many commits.** The [`Ctx`]'s action id names the request: one
//! chat message (every tool call of its turn), one web form post, one MCP call. Each audited
//! commit of the request gets its own commit id under that action id, so a turn that creates an
//! event and adds three rooms is one action of four commits, and undo reverts it as one unit
//! ([`crate::undo`]). [`Ctx::next_action`] starts a new request.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use steward_store::{Item, Query, StoreError, TRANSACTION_OPS_MAX, Table, WriteOp};

use crate::ctx::{Actor, Ctx};
use crate::effect::{self, StoredEffect};
use crate::error::ServiceError;
use crate::ids::{ActionId, CommitId, EffectKey, UserId};
use crate::keys::{self, RecordKey};
use crate::limits::{AUDITED_CHANGES_MAX, PROFILE_RACE_RETRIES_MAX};
use crate::profile;

/// A record as it was at one moment, as kept in an audit row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordImage {
    /// The item's version then.
    pub version: u64,
    /// The item's expiry then, if any.
    pub ttl: Option<i64>,
    /// The item's data then.
    pub data: Value,
}

impl RecordImage {
    fn of(item: &Item) -> Self {
        Self {
            version: item.version,
            ttl: item.ttl,
            data: item.data.clone(),
        }
    }
}

/// What an action was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// An ordinary change.
    Change,
    /// An undo of an earlier action; never itself undone.
    Undo,
}

/// The header row of one audited commit (`USER#u` / `ACTION#<action>#<commit>`). A request
/// (action) has one header per commit it made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionHeader {
    /// The request's id, shared by every commit the request made.
    pub action: ActionId,
    /// This commit's id within the request; `None` only for headers written before requests
    /// could hold several commits (`ACTION#<action>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<CommitId>,
    /// Who did it.
    pub actor: Actor,
    /// A change or an undo.
    pub kind: ActionKind,
    /// What the action was, in a few words, when the service gave a label.
    pub label: Option<String>,
    /// How many audit rows the action has.
    pub changes: usize,
    /// When it was committed, in epoch milliseconds.
    pub at_ms: i64,
    /// For an undo: the request it reverted.
    pub undoes: Option<ActionId>,
    /// For a reverted commit: the request whose undo reverted it.
    pub undone_by: Option<ActionId>,
    /// The tool call that made it, when it came from the model.
    pub effect: Option<EffectKey>,
}

impl ActionHeader {
    /// This header's sort key under the user's partition.
    pub fn sk(&self) -> String {
        match &self.commit {
            Some(c) => keys::commit_sk(&self.action, c),
            None => keys::legacy_action_sk(&self.action),
        }
    }

    /// The sort-key prefix of this commit's audit rows.
    pub fn audit_prefix(&self) -> String {
        keys::commit_audit_prefix(&self.action, self.commit.as_ref())
    }

    /// Whether undo may revert this commit: a change, not yet undone, by the account's own
    /// actors.
    pub fn is_undoable(&self) -> bool {
        self.kind == ActionKind::Change && self.undone_by.is_none() && self.actor.is_undoable()
    }
}

/// One changed record of a commit (`USER#u` / `AUDIT#<action>#<commit>#<nn>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    /// The request the change belongs to.
    pub action: ActionId,
    /// Who made it.
    pub actor: Actor,
    /// The record's partition key.
    pub pk: String,
    /// The record's sort key.
    pub sk: String,
    /// The record before the change; `None` when the change created it.
    pub before: Option<RecordImage>,
    /// The record after the change; `None` when the change deleted it.
    pub after: Option<RecordImage>,
    /// When it was committed, in epoch milliseconds.
    pub at_ms: i64,
}

/// Most action headers read to list recent requests: each request is read whole, and a turn
/// rarely makes more than a few dozen commits, so this only bounds a pathological history.
const ACTIVITY_HEADERS_SCAN_MAX: usize = 2_000;

/// The headers of every commit of request `action` of `user`, oldest first, with the stored
/// items (their versions are needed to mark them undone). At most `max` are read.
pub async fn request_header_items(
    table: &dyn Table,
    user: &UserId,
    action: &ActionId,
    max: usize,
) -> Result<Vec<(ActionHeader, Item)>, ServiceError> {
    let query = Query::prefix(keys::user_pk(user), keys::action_prefix(action)).limit(max);
    let items = table.query_all(&query, max).await?;
    items
        .into_iter()
        .map(|item| Ok((item.parse::<ActionHeader>()?, item)))
        .collect()
}

/// The headers of every commit of request `action` of `user`, oldest first.
pub async fn request_headers(
    table: &dyn Table,
    user: &UserId,
    action: &ActionId,
) -> Result<Vec<ActionHeader>, ServiceError> {
    Ok(
        request_header_items(table, user, action, ACTIVITY_HEADERS_SCAN_MAX)
            .await?
            .into_iter()
            .map(|(h, _)| h)
            .collect(),
    )
}

/// The audit rows of one commit, in the order the commit wrote them.
pub async fn audit_rows(
    table: &dyn Table,
    user: &UserId,
    header: &ActionHeader,
) -> Result<Vec<AuditRow>, ServiceError> {
    let query = Query::prefix(keys::user_pk(user), header.audit_prefix());
    let items = table.query_all(&query, header.changes + 1).await?;
    if items.len() != header.changes {
        return Err(ServiceError::internal(format!(
            "commit {} of action {} has {} audit rows, its header says {}",
            header.sk(),
            header.action,
            items.len(),
            header.changes
        )));
    }
    items
        .iter()
        .map(|i| i.parse::<AuditRow>().map_err(ServiceError::from))
        .collect()
}

/// One request as the account holder sees it in their activity: who, when, and each commit it
/// made (oldest first).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// The request's id.
    pub action: ActionId,
    /// Who made it.
    pub actor: Actor,
    /// Its commits, oldest first (at least one).
    pub commits: Vec<ActionHeader>,
}

impl RequestRecord {
    /// When its first commit was made, in epoch milliseconds.
    pub fn at_ms(&self) -> i64 {
        self.commits.first().map_or(0, |c| c.at_ms)
    }

    /// How many records it changed, over all its commits.
    pub fn changes(&self) -> usize {
        self.commits.iter().map(|c| c.changes).sum()
    }

    /// Whether it still has a change undo could revert.
    pub fn has_undoable(&self) -> bool {
        self.commits.iter().any(ActionHeader::is_undoable)
    }

    /// Whether every change it made has been undone (and it made at least one).
    pub fn is_undone(&self) -> bool {
        let mut changes = self
            .commits
            .iter()
            .filter(|c| c.kind == ActionKind::Change)
            .peekable();
        changes.peek().is_some() && changes.all(|c| c.undone_by.is_some())
    }
}

/// The newest `limit` requests of `user` (changes and undos, by every actor), newest first,
/// each with all its commits: the account's activity trail, one entry per request.
pub async fn recent_requests(
    table: &dyn Table,
    user: &UserId,
    limit: usize,
) -> Result<Vec<RequestRecord>, ServiceError> {
    let mut query = Query::prefix(keys::user_pk(user), keys::ACTION_SK_PREFIX)
        .descending()
        .limit(100);
    let mut out: Vec<RequestRecord> = Vec::new();
    let mut scanned = 0;
    'pages: loop {
        let page = table.query(&query).await?;
        for item in &page.items {
            scanned += 1;
            let header = item.parse::<ActionHeader>()?;
            match out.last_mut() {
                Some(last) if last.action == header.action => last.commits.insert(0, header),
                _ => {
                    if out.len() == limit {
                        break 'pages;
                    }
                    out.push(RequestRecord {
                        action: header.action,
                        actor: header.actor,
                        commits: vec![header],
                    });
                }
            }
            if scanned >= ACTIVITY_HEADERS_SCAN_MAX {
                break 'pages;
            }
        }
        match page.next {
            Some(cursor) => query = query.after(Some(cursor)),
            None => break,
        }
    }
    Ok(out)
}

/// The newest `limit` commit headers of `user` (changes and undos, by every actor), newest
/// first: the raw audit trail ([`recent_requests`] groups it by request).
pub async fn recent_actions(
    table: &dyn Table,
    user: &UserId,
    limit: usize,
) -> Result<Vec<ActionHeader>, ServiceError> {
    let mut query = Query::prefix(keys::user_pk(user), keys::ACTION_SK_PREFIX)
        .descending()
        .limit(limit);
    let mut headers = Vec::new();
    while headers.len() < limit {
        let page = table.query(&query).await?;
        for item in &page.items {
            if headers.len() == limit {
                break;
            }
            headers.push(item.parse::<ActionHeader>()?);
        }
        match page.next {
            Some(cursor) => query = query.after(Some(cursor)),
            None => break,
        }
    }
    Ok(headers)
}

#[derive(Debug)]
enum Change {
    /// Create (`before` is `None`: the key must be absent) or replace (`before` is the item
    /// read: its version must still be current).
    Put {
        key: RecordKey,
        before: Option<Item>,
        data: Value,
        ttl: Option<i64>,
        version: u64,
    },
    /// Delete the item read, if its version is still current.
    Delete { before: Item },
    /// Write nothing, but require the item read to be unchanged.
    Check { item: Item },
}

impl Change {
    fn key(&self) -> (&str, &str) {
        match self {
            Change::Put { key, .. } => (key.pk(), key.sk()),
            Change::Delete { before: item } | Change::Check { item } => (&item.pk, &item.sk),
        }
    }

    fn is_audited(&self) -> bool {
        !matches!(self, Change::Check { .. })
    }
}

/// An extra raw operation a harness part adds to the transaction, with what to call it in a
/// [`ServiceError::Conflict`] when its condition fails.
#[derive(Debug)]
struct Extra {
    op: WriteOp,
    what: String,
    /// The confirmation gate's consume: its failure means the confirmation was already spent.
    confirmation: bool,
}

/// Which part of the audited transaction an operation is, to explain a failed condition.
#[derive(Debug, Clone, Copy)]
enum Role {
    Effect,
    Profile,
    Change(usize),
    Extra(usize),
    Bookkeeping,
}

/// Builder of one audited transaction. See the [module docs](self) for what a commit writes.
#[must_use = "an audited transaction does nothing until it is committed"]
#[derive(Debug)]
pub struct Audited {
    ctx: Ctx,
    label: Option<String>,
    changes: Vec<Change>,
    extras: Vec<Extra>,
    kind: ActionKind,
    undoes: Option<ActionId>,
    harness_keys: bool,
    error: Option<ServiceError>,
}

/// Starts an audited transaction for `ctx` (same as [`Audited::new`]).
pub fn audited(ctx: &Ctx) -> Audited {
    Audited::new(ctx)
}

impl Audited {
    /// Starts an audited transaction acting as `ctx`.
    pub fn new(ctx: &Ctx) -> Self {
        // A call the confirmation gate let through spends its confirmation in this very
        // transaction: a crash can neither lose the confirmation nor act without spending it.
        let extras = ctx
            .confirmation()
            .map(|op| Extra {
                op: op.clone(),
                what: "The confirmation".into(),
                confirmation: true,
            })
            .into_iter()
            .collect();
        Self {
            ctx: ctx.clone(),
            label: None,
            changes: Vec::new(),
            extras,
            kind: ActionKind::Change,
            undoes: None,
            harness_keys: false,
            error: None,
        }
    }

    /// Describes the action in a few words ("Add room Aula"); undo reports it back.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Creates a record at `key`; the commit fails with [`ServiceError::Conflict`] if one exists.
    pub fn put_new(mut self, key: RecordKey, value: impl Serialize) -> Self {
        if let Some(data) = self.serialize_value(value) {
            self.changes.push(Change::Put {
                key,
                before: None,
                data,
                ttl: None,
                version: 1,
            });
        }
        self
    }

    /// Replaces `old` (as read) with `new_value`; the commit fails with
    /// [`ServiceError::Conflict`] if the stored version is no longer `old.version`. The new
    /// version is `old.version + 1`; the expiry is kept.
    pub fn replace(mut self, old: &Item, new_value: impl Serialize) -> Self {
        if let Some(data) = self.serialize_value(new_value) {
            self.changes.push(Change::Put {
                key: RecordKey::raw(&old.pk, &old.sk),
                before: Some(old.clone()),
                data,
                ttl: old.ttl,
                version: old.version + 1,
            });
        }
        self
    }

    /// Replaces `old` (as read) with `new_value` and sets its expiry to `ttl` (None: it never
    /// expires); otherwise like [`Audited::replace`]. For records that become reservations
    /// with an end, or stop being one (a released public address).
    pub fn replace_with_ttl(
        mut self,
        old: &Item,
        new_value: impl Serialize,
        ttl: Option<i64>,
    ) -> Self {
        if let Some(data) = self.serialize_value(new_value) {
            self.changes.push(Change::Put {
                key: RecordKey::raw(&old.pk, &old.sk),
                before: Some(old.clone()),
                data,
                ttl,
                version: old.version + 1,
            });
        }
        self
    }

    /// Deletes `old` (as read); the commit fails with [`ServiceError::Conflict`] if it changed.
    pub fn delete(mut self, old: &Item) -> Self {
        self.changes.push(Change::Delete {
            before: old.clone(),
        });
        self
    }

    /// Writes nothing to `item` but fails the commit with [`ServiceError::Conflict`] if it
    /// changed since it was read (e.g. the parent record a new child depends on).
    pub fn require_unchanged(mut self, item: &Item) -> Self {
        self.changes.push(Change::Check { item: item.clone() });
        self
    }

    /// How many records this transaction changes or checks so far.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Whether nothing has been added yet.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Crate-internal: let the transaction write harness-owned keys (the profile, by
    /// rename; any key, by undo replaying its own audit rows).
    pub(crate) fn allow_harness_keys(mut self) -> Self {
        self.harness_keys = true;
        self
    }

    /// Crate-internal: mark this action as the undo of `undone`.
    pub(crate) fn marks_undo_of(mut self, undone: ActionId) -> Self {
        self.kind = ActionKind::Undo;
        self.undoes = Some(undone);
        self
    }

    /// Crate-internal: a put that recreates a deleted record at a chosen version.
    pub(crate) fn recreate(
        mut self,
        key: RecordKey,
        data: Value,
        ttl: Option<i64>,
        version: u64,
    ) -> Self {
        self.changes.push(Change::Put {
            key,
            before: None,
            data,
            ttl,
            version,
        });
        self
    }

    /// Crate-internal: replace `old` with `data`, setting the expiry to `ttl` (undo restoring
    /// an earlier image exactly).
    pub(crate) fn restore(mut self, old: &Item, data: Value, ttl: Option<i64>) -> Self {
        self.changes.push(Change::Put {
            key: RecordKey::raw(&old.pk, &old.sk),
            before: Some(old.clone()),
            data,
            ttl,
            version: old.version + 1,
        });
        self
    }

    /// Crate-internal: one more raw operation in the same transaction; `what` names it in the
    /// conflict message if its condition fails.
    pub(crate) fn with_extra_op(mut self, op: WriteOp, what: impl Into<String>) -> Self {
        self.extras.push(Extra {
            op,
            what: what.into(),
            confirmation: false,
        });
        self
    }

    fn serialize_value(&mut self, value: impl Serialize) -> Option<Value> {
        match serde_json::to_value(value) {
            Ok(v) => Some(v),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e.into());
                }
                None
            }
        }
    }

    /// Commits without a result to remember: same as `commit_with_result(())`.
    pub async fn commit(self) -> Result<(), ServiceError> {
        self.commit_with_result(()).await
    }

    /// Commits the transaction (see the [module docs](self)) and returns `result`, or, when
    /// this tool call already committed, the result stored then (nothing is written again).
    pub async fn commit_with_result<T>(self, result: T) -> Result<T, ServiceError>
    where
        T: Serialize + DeserializeOwned,
    {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.changes.is_empty() && self.extras.is_empty() {
            return Ok(result);
        }
        self.check_keys()?;
        let ctx = &self.ctx;
        let table = ctx.table().as_ref();

        if let Some(key) = ctx.effect()
            && !ctx.effect_known_absent()
            && let Some(stored) = effect::stored_effect(table, key).await?
        {
            return replayed(stored);
        }

        let audited_rows = self.changes.iter().filter(|c| c.is_audited()).count();
        let user_pk = ctx.user_pk();
        let touches_profile = self
            .changes
            .iter()
            .any(|c| c.key() == (user_pk.as_str(), keys::PROFILE_SK));
        let ops_needed = self.changes.len()
            + audited_rows
            + 1 // action header
            + usize::from(!touches_profile)
            + usize::from(ctx.effect().is_some())
            + self.extras.len();
        if ops_needed > TRANSACTION_OPS_MAX {
            return Err(ServiceError::TooManyChanges {
                changes: self.changes.len(),
                max: AUDITED_CHANGES_MAX,
            });
        }

        let result_value = serde_json::to_value(&result)?;
        let commit = CommitId::generate(ctx.clock().as_ref());
        // The account's version the registry saw writable moments ago serves the first
        // attempt; if it changed since, the condition on it fails and the next attempt reads.
        let mut checked = ctx.writable_account_version();
        for _ in 0..PROFILE_RACE_RETRIES_MAX {
            let version = match checked.take() {
                Some(version) => version,
                None => profile::ensure_can_write(table, ctx.user()).await?.version,
            };
            let (ops, roles) = self.build_ops(commit, &result_value, touches_profile, version)?;
            match table.write(ops).await {
                Ok(()) => return Ok(result),
                Err(StoreError::ConditionFailed { op_index }) => {
                    // Whatever failed, a stored effect means this call already happened.
                    if let Some(key) = ctx.effect()
                        && let Some(stored) = effect::stored_effect(table, key).await?
                    {
                        return replayed(stored);
                    }
                    match roles.get(op_index).copied() {
                        // The account changed under us (renamed, paused): check it again.
                        Some(Role::Profile) => continue,
                        Some(Role::Change(i)) => {
                            let (_, sk) = self.changes[i].key();
                            return Err(ServiceError::conflict(format!("The record {sk}")));
                        }
                        Some(Role::Extra(i)) if self.extras[i].confirmation => {
                            return Err(ServiceError::NotConfirmed {
                                reason: "that confirmation was already used by another call".into(),
                            });
                        }
                        Some(Role::Extra(i)) => {
                            return Err(ServiceError::conflict(self.extras[i].what.clone()));
                        }
                        Some(Role::Bookkeeping) => {
                            return Err(ServiceError::internal(format!(
                                "commit {commit} of action {} was already written",
                                ctx.action()
                            )));
                        }
                        Some(Role::Effect) | None => {
                            return Err(ServiceError::internal(format!(
                                "audited transaction of action {} failed on operation {op_index}, which it cannot explain",
                                ctx.action()
                            )));
                        }
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ServiceError::conflict("Your account"))
    }

    fn check_keys(&self) -> Result<(), ServiceError> {
        let mut seen = HashSet::new();
        for change in &self.changes {
            let (pk, sk) = change.key();
            if !seen.insert((pk, sk)) {
                return Err(ServiceError::internal(format!(
                    "record {pk} / {sk} appears twice in one audited transaction"
                )));
            }
            if !self.harness_keys
                && let Err(why) = keys::domain_may_write(self.ctx.user(), pk, sk)
            {
                return Err(ServiceError::internal(format!(
                    "the domain may not write {pk} / {sk}: {why}"
                )));
            }
        }
        Ok(())
    }

    fn build_ops(
        &self,
        commit: CommitId,
        result: &Value,
        touches_profile: bool,
        profile_version: u64,
    ) -> Result<(Vec<WriteOp>, Vec<Role>), ServiceError> {
        let ctx = &self.ctx;
        let now_ms = ctx.now_millis();
        let action = ctx.action();
        let user_pk = ctx.user_pk();
        let mut ops = Vec::new();
        let mut roles = Vec::new();

        if let Some(key) = ctx.effect() {
            let stored = StoredEffect {
                action,
                result: result.clone(),
                at_ms: now_ms,
            };
            ops.push(WriteOp::put_if_absent(effect::effect_item(
                key,
                &stored,
                ctx.clock().now_secs(),
            )?));
            roles.push(Role::Effect);
        }
        if !touches_profile {
            ops.push(WriteOp::check(
                &user_pk,
                keys::PROFILE_SK,
                steward_store::Condition::VersionEquals(profile_version),
            ));
            roles.push(Role::Profile);
        }

        let mut rows = Vec::new();
        for (i, change) in self.changes.iter().enumerate() {
            let (op, row) = match change {
                Change::Put {
                    key,
                    before,
                    data,
                    ttl,
                    version,
                } => {
                    let mut item =
                        Item::new(key.pk(), key.sk(), data.clone()).with_version(*version);
                    item.ttl = *ttl;
                    let after = Some(RecordImage::of(&item));
                    let op = match before {
                        Some(b) => WriteOp::put_if_version(item, b.version),
                        None => WriteOp::put_if_absent(item),
                    };
                    (
                        op,
                        Some((
                            key.pk(),
                            key.sk(),
                            before.as_ref().map(RecordImage::of),
                            after,
                        )),
                    )
                }
                Change::Delete { before } => (
                    WriteOp::delete_if(
                        &before.pk,
                        &before.sk,
                        steward_store::Condition::VersionEquals(before.version),
                    ),
                    Some((
                        before.pk.as_str(),
                        before.sk.as_str(),
                        Some(RecordImage::of(before)),
                        None,
                    )),
                ),
                Change::Check { item } => (
                    WriteOp::check(
                        &item.pk,
                        &item.sk,
                        steward_store::Condition::VersionEquals(item.version),
                    ),
                    None,
                ),
            };
            ops.push(op);
            roles.push(Role::Change(i));
            if let Some((pk, sk, before, after)) = row {
                rows.push(AuditRow {
                    action,
                    actor: ctx.actor(),
                    pk: pk.to_owned(),
                    sk: sk.to_owned(),
                    before,
                    after,
                    at_ms: now_ms,
                });
            }
        }
        for (i, extra) in self.extras.iter().enumerate() {
            ops.push(extra.op.clone());
            roles.push(Role::Extra(i));
        }

        let header = ActionHeader {
            action,
            commit: Some(commit),
            actor: ctx.actor(),
            kind: self.kind,
            label: self.label.clone(),
            changes: rows.len(),
            at_ms: now_ms,
            undoes: self.undoes,
            undone_by: None,
            effect: ctx.effect().cloned(),
        };
        // The header and its audit rows expire together, after the retention.
        let until = crate::retention::retained_until(now_ms);
        ops.push(WriteOp::put_if_absent(
            Item::from_value(&user_pk, header.sk(), &header)?.with_ttl(until),
        ));
        roles.push(Role::Bookkeeping);
        for (n, row) in rows.iter().enumerate() {
            ops.push(WriteOp::put_if_absent(
                Item::from_value(
                    &user_pk,
                    keys::commit_audit_sk(&action, Some(&commit), n),
                    row,
                )?
                .with_ttl(until),
            ));
            roles.push(Role::Bookkeeping);
        }
        Ok((ops, roles))
    }
}

fn replayed<T: DeserializeOwned>(stored: StoredEffect) -> Result<T, ServiceError> {
    serde_json::from_value(stored.result).map_err(|e| {
        ServiceError::internal(format!(
            "the stored result of action {} does not fit the caller's result type: {e}",
            stored.action
        ))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use steward_store::{ManualClock, SqliteTable};

    use super::*;

    #[tokio::test]
    async fn recent_actions_are_newest_first_and_capped() {
        let clock = Arc::new(ManualClock::at_millis(1_700_000_000_000));
        let table: Arc<dyn Table> =
            Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
        let user = UserId::parse("u1").unwrap();
        crate::accounts::create_account_with_id(
            table.as_ref(),
            clock.as_ref(),
            user.clone(),
            "U",
            None,
        )
        .await
        .unwrap();
        let ctx = Ctx::new(table.clone(), clock.clone(), user.clone(), Actor::User);
        let mut ctx = ctx.next_action();
        for n in 0..3 {
            Audited::new(&ctx)
                .label(format!("Add note {n}"))
                .put_new(ctx.key(format!("NOTE#{n}")), serde_json::json!({ "n": n }))
                .commit()
                .await
                .unwrap();
            clock.advance_millis(1_000);
            ctx = ctx.next_action();
        }
        let all = recent_actions(table.as_ref(), &user, 10).await.unwrap();
        let labels: Vec<_> = all.iter().map(|h| h.label.clone().unwrap()).collect();
        assert_eq!(labels, ["Add note 2", "Add note 1", "Add note 0"]);
        assert!(all.iter().all(|h| h.actor == Actor::User && h.changes == 1));
        let two = recent_actions(table.as_ref(), &user, 2).await.unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[0].label.as_deref(), Some("Add note 2"));
        let other = UserId::parse("u2").unwrap();
        assert!(
            recent_actions(table.as_ref(), &other, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
