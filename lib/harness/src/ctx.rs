//! The request context: who is acting, as what, under which action id, with which store.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use steward_store::{Clock, Item, Query, RawItem, Table, WriteOp};

use crate::error::ServiceError;
use crate::ids::{ActionId, EffectKey, UserId};
use crate::keys::{self, RecordKey};

/// Who initiated a request. Undo only ever reverts actions of `User`, `Agent` and `Mcp`:
/// `Public` writes (a visitor's registration) are someone else's and never on the undo stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The account holder, through the web UI or an operator command.
    User,
    /// The chat agent, acting on the account holder's messages.
    Agent,
    /// An external AI client holding one of the account's MCP tokens.
    Mcp,
    /// Someone else, e.g. a visitor on a public page acting on the account's data.
    Public,
}

impl Actor {
    /// The lowercase name stored in audit rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::User => "user",
            Actor::Agent => "agent",
            Actor::Mcp => "mcp",
            Actor::Public => "public",
        }
    }

    /// Whether this actor's actions can be undone by the account holder.
    pub fn is_undoable(self) -> bool {
        !matches!(self, Actor::Public)
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything a service function needs to act for someone: the verified user (from
/// authentication only, never from model output or tool arguments), the actor, the action id
/// that groups this request's audit rows, the optional effect key of a model tool call, and the
/// clock and table. Cheap to clone.
///
/// One `Ctx` (one action id) is one request and one undo unit: a chat message with every tool
/// call of its turn, a web form post, an MCP call. Every audited commit made with it (or with a
/// clone carrying another effect key) belongs to that request, and undo reverts them together.
#[derive(Debug, Clone)]
pub struct Ctx {
    user: UserId,
    actor: Actor,
    action: ActionId,
    effect: Option<EffectKey>,
    confirmation: Option<WriteOp>,
    /// What this call has already read, so the steps after do not read it again (see
    /// [`Looked`]).
    looked: Looked,
    clock: Arc<dyn Clock>,
    table: Arc<dyn Table>,
}

/// Reads one write call has already made, so the checks after it need not repeat them on the
/// store (on DynamoDB each is a round trip). Each only spares a read *before* running: whatever
/// changes between that read and the commit is still caught by the commit's own conditions.
#[derive(Debug, Clone, Copy, Default)]
struct Looked {
    /// The gate found no stored effect under this call's effect key. A copy of the call that
    /// commits afterwards still meets the put-if-absent on the effect in this call's commit,
    /// which then replays the stored result.
    effect_absent: bool,
    /// The account's version when the registry found it may write. The commit's condition on
    /// the account's version fails if it changed since (paused, renamed), and the commit then
    /// reads the account again.
    writable_at: Option<u64>,
}

impl Ctx {
    /// A context for a new request of `user` acting as `actor`: a fresh action id and no
    /// effect key. `user` must come from authentication.
    pub fn new(table: Arc<dyn Table>, clock: Arc<dyn Clock>, user: UserId, actor: Actor) -> Self {
        let action = ActionId::generate(clock.as_ref());
        Self::for_request(table, clock, user, actor, action)
    }

    /// A context for request `action` of `user` acting as `actor`, with no effect key: used
    /// when the request's id was minted earlier and must survive a crash (a chat turn takes its
    /// action id from the claim of its message, so a resumed turn keeps it).
    pub fn for_request(
        table: Arc<dyn Table>,
        clock: Arc<dyn Clock>,
        user: UserId,
        actor: Actor,
        action: ActionId,
    ) -> Self {
        Self {
            user,
            actor,
            action,
            effect: None,
            confirmation: None,
            looked: Looked::default(),
            clock,
            table,
        }
    }

    /// The same context, for a model tool call whose result is stored under `effect`.
    pub fn with_effect(mut self, effect: EffectKey) -> Self {
        self.effect = Some(effect);
        self.looked = Looked::default();
        self
    }

    /// The same context, noting that this call's stored effect was looked up and there is none
    /// (the gate's look-up; the registry and the audited commit then skip theirs).
    pub(crate) fn with_effect_absent(mut self) -> Self {
        self.looked.effect_absent = self.effect.is_some();
        self
    }

    /// Whether this call's stored effect was looked up already and there was none.
    pub(crate) fn effect_known_absent(&self) -> bool {
        self.looked.effect_absent && self.effect.is_some()
    }

    /// The same context, noting that the account was found able to write at `version`.
    pub(crate) fn with_writable_account(mut self, version: u64) -> Self {
        self.looked.writable_at = Some(version);
        self
    }

    /// The account version at which this call found the account able to write, if it did.
    pub(crate) fn writable_account_version(&self) -> Option<u64> {
        self.looked.writable_at
    }

    /// The same context, carrying the confirmation gate's "spend this confirmation" write:
    /// the audited transaction of the call includes it, so the call runs only if it spends the
    /// confirmation, and spends it only if it runs.
    pub fn with_confirmation(mut self, consume: WriteOp) -> Self {
        self.confirmation = Some(consume);
        self
    }

    /// The confirmation write this call must include, if the gate let it through.
    pub fn confirmation(&self) -> Option<&WriteOp> {
        self.confirmation.as_ref()
    }

    /// A context for the next request of the same caller: same user, actor, clock and table,
    /// a fresh action id and no effect key — a separate undo unit.
    pub fn next_action(&self) -> Self {
        Self {
            user: self.user.clone(),
            actor: self.actor,
            action: ActionId::generate(self.clock.as_ref()),
            effect: None,
            confirmation: None,
            looked: Looked::default(),
            clock: Arc::clone(&self.clock),
            table: Arc::clone(&self.table),
        }
    }

    /// The verified user this request acts for.
    pub fn user(&self) -> &UserId {
        &self.user
    }

    /// Who initiated the request.
    pub fn actor(&self) -> Actor {
        self.actor
    }

    /// The id grouping every audit row of this request (all its commits).
    pub fn action(&self) -> ActionId {
        self.action
    }

    /// Where this tool call's result is stored, when the request is a model tool call.
    pub fn effect(&self) -> Option<&EffectKey> {
        self.effect.as_ref()
    }

    /// The clock (a manual one in tests).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The store.
    pub fn table(&self) -> &Arc<dyn Table> {
        &self.table
    }

    /// Milliseconds since the epoch, by this context's clock.
    pub fn now_millis(&self) -> i64 {
        self.clock.now_millis()
    }

    /// The partition of everything this user owns (`USER#u`).
    pub fn user_pk(&self) -> String {
        keys::user_pk(&self.user)
    }

    /// The key of a record in this user's partition, e.g. `ctx.key(format!("EVENT#{id}"))`.
    /// The only way the domain names its per-user records, so it cannot name another user's.
    pub fn key(&self, sk: impl Into<String>) -> RecordKey {
        RecordKey::raw(self.user_pk(), sk)
    }

    /// Reads one record.
    pub async fn get(&self, key: &RecordKey) -> Result<Option<Item>, ServiceError> {
        Ok(self.table.get(key.pk(), key.sk()).await?)
    }

    /// This user's records under `keys`, in the same order (`None` where there is none), in
    /// one read per [`steward_store::GET_MANY_KEYS_MAX`] keys (`Table::get_many`).
    pub async fn get_many(&self, keys: &[RecordKey]) -> Result<Vec<Option<Item>>, ServiceError> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(steward_store::GET_MANY_KEYS_MAX) {
            let pairs: Vec<(String, String)> = chunk
                .iter()
                .map(|k| (k.pk().to_owned(), k.sk().to_owned()))
                .collect();
            out.extend(self.table.get_many(&pairs).await?);
        }
        Ok(out)
    }

    /// Reads up to `max_items` of this user's records whose sort key starts with `sk_prefix`,
    /// in sort-key order.
    pub async fn query_records(
        &self,
        sk_prefix: &str,
        max_items: usize,
    ) -> Result<Vec<Item>, ServiceError> {
        let query = Query::prefix(self.user_pk(), sk_prefix);
        Ok(self.table.query_all(&query, max_items).await?)
    }

    /// [`Ctx::query_records`] with each item's data left as the stored JSON text, for a reader
    /// that parses it straight into its own type ([`RawItem`]).
    pub async fn query_records_raw(
        &self,
        sk_prefix: &str,
        max_items: usize,
    ) -> Result<Vec<RawItem>, ServiceError> {
        let query = Query::prefix(self.user_pk(), sk_prefix);
        Ok(self.table.query_all_raw(&query, max_items).await?)
    }

    /// How many of the caller's records start with `sk_prefix` (at most `max_items`), without
    /// reading them where the store can count in place.
    pub async fn count_records(
        &self,
        sk_prefix: &str,
        max_items: usize,
    ) -> Result<usize, ServiceError> {
        let query = Query::prefix(self.user_pk(), sk_prefix);
        Ok(self.table.count(&query, max_items).await?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use steward_store::{ManualClock, SqliteTable};

    fn ctx() -> Ctx {
        let clock = ManualClock::at_millis(1_700_000_000_000);
        let table = SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap();
        Ctx::new(
            Arc::new(table),
            Arc::new(clock),
            UserId::parse("u1").unwrap(),
            Actor::Agent,
        )
    }

    #[test]
    fn keys_are_built_from_the_context_user() {
        let c = ctx();
        assert_eq!(c.user_pk(), "USER#u1");
        let k = c.key("EVENT#e1");
        assert_eq!((k.pk(), k.sk()), ("USER#u1", "EVENT#e1"));
    }

    #[test]
    fn next_action_keeps_identity_and_renews_the_action() {
        let c = ctx().with_effect(EffectKey::new(
            crate::ids::ConversationKey::telegram(1),
            crate::ids::ToolUseId::parse("t1").unwrap(),
        ));
        let n = c.next_action();
        assert_eq!(n.user(), c.user());
        assert_eq!(n.actor(), Actor::Agent);
        assert!(n.action() > c.action());
        assert!(n.effect().is_none());
    }

    #[test]
    fn public_actions_are_not_undoable() {
        assert!(Actor::User.is_undoable());
        assert!(Actor::Agent.is_undoable());
        assert!(Actor::Mcp.is_undoable());
        assert!(!Actor::Public.is_undoable());
        assert_eq!(serde_json::to_value(Actor::Mcp).unwrap(), "mcp");
    }
}
