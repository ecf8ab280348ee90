//! Verified channel identities (`IDENT#<channel>#<external id>` / `IDENT`) → the account.
//!
//! The provider verifies who is talking (a signed webhook, a validated OIDC token); this module
//! remembers which account that identity belongs to. Each identity binds to at most one account,
//! enforced by a conditional put. An index row under the user (`USER#u` / `IDENT#…`) lists an
//! account's identities. Binding to another account or unbinding releases the identity's
//! private conversation in the same transaction ([`conversation::handover_op`]), so the next
//! owner never reads the previous one's history.

use serde::{Deserialize, Serialize};
use steward_store::{Clock, Item, Query, StoreError, Table, WriteOp};

use crate::conversation;
use crate::error::ServiceError;
use crate::ids::{ChannelIdentity, UserId};
use crate::keys;

/// Retries of a bind or unbind whose conversation record changed under it (a message arrived).
const HANDOVER_RETRIES_MAX: usize = 4;

/// The stored binding of one identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentityRecord {
    /// The identity.
    pub identity: ChannelIdentity,
    /// The account it belongs to.
    pub user: UserId,
    /// When it was bound, in epoch milliseconds.
    pub bound_ms: i64,
}

/// The result of binding an identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// Newly bound to the account.
    Bound,
    /// It already belonged to this same account; nothing changed.
    AlreadyYours,
}

/// The operations that bind `identity` to `user`: the identity row (only if absent) and the
/// user's index row. Shared with linking, which adds the code's consumption to the same
/// transaction.
pub(crate) fn bind_ops(
    identity: &ChannelIdentity,
    user: &UserId,
    now_ms: i64,
) -> Result<Vec<WriteOp>, ServiceError> {
    let record = IdentityRecord {
        identity: identity.clone(),
        user: user.clone(),
        bound_ms: now_ms,
    };
    Ok(vec![
        WriteOp::put_if_absent(Item::from_value(
            keys::ident_pk(identity),
            keys::IDENT_SK,
            &record,
        )?),
        WriteOp::put(Item::from_value(
            keys::user_pk(user),
            keys::user_ident_sk(identity),
            &record,
        )?),
    ])
}

/// The refusal when an identity belongs to another account.
pub(crate) fn taken(identity: &ChannelIdentity) -> ServiceError {
    ServiceError::forbidden(format!(
        "this {} account is already linked to a different Steward account. Sign in to that account and unlink it on its Connect a phone page first (or ask the operator to run `steward user unlink`).",
        identity.channel
    ))
}

/// Binds `identity` to `user` (whose account must exist). Binding an identity the same
/// account already holds is a no-op; one held by another account is refused.
pub async fn bind(
    table: &dyn Table,
    clock: &dyn Clock,
    identity: &ChannelIdentity,
    user: &UserId,
) -> Result<Bound, ServiceError> {
    crate::profile::get_profile(table, user).await?;
    match write_binding(table, clock, identity, user, &[]).await? {
        Ok(()) => Ok(Bound::Bound),
        Err(StoreError::ConditionFailed { .. }) => match lookup(table, identity).await? {
            Some(owner) if &owner == user => Ok(Bound::AlreadyYours),
            Some(_) => Err(taken(identity)),
            // Unbound between our write and our read: the caller may simply try again.
            None => Err(ServiceError::conflict(format!(
                "The {} link",
                identity.channel
            ))),
        },
        Err(e) => Err(e.into()),
    }
}

/// Writes `first` (ops that must hold too, such as spending a linking code), the binding of
/// `identity` to `user` and the release of its private conversation in one transaction.
/// When only the release's condition fails (a message arrived in that conversation meanwhile),
/// it reads the conversation again and retries, up to [`HANDOVER_RETRIES_MAX`] times. The
/// outer error is a failure to build the ops; the inner result is the write's, with operation
/// indexes counted from `first`'s.
pub(crate) async fn write_binding(
    table: &dyn Table,
    clock: &dyn Clock,
    identity: &ChannelIdentity,
    user: &UserId,
    first: &[WriteOp],
) -> Result<Result<(), StoreError>, ServiceError> {
    let mut result = Err(StoreError::ConditionFailed { op_index: 0 });
    for _ in 0..HANDOVER_RETRIES_MAX {
        let mut ops = first.to_vec();
        ops.extend(bind_ops(identity, user, clock.now_millis())?);
        let handover = conversation::handover_op(table, identity, Some(user)).await?;
        let handover_index = handover.is_some().then_some(ops.len());
        ops.extend(handover);
        result = table.write(ops).await;
        match &result {
            Err(StoreError::ConditionFailed { op_index }) if Some(*op_index) == handover_index => {
                continue;
            }
            _ => break,
        }
    }
    Ok(result)
}

/// The account `identity` belongs to, if any.
pub async fn lookup(
    table: &dyn Table,
    identity: &ChannelIdentity,
) -> Result<Option<UserId>, ServiceError> {
    match table.get(&keys::ident_pk(identity), keys::IDENT_SK).await? {
        Some(item) => Ok(Some(item.parse::<IdentityRecord>()?.user)),
        None => Ok(None),
    }
}

/// Every identity bound to `user`, ordered by channel then external id.
pub async fn list_identities(
    table: &dyn Table,
    user: &UserId,
) -> Result<Vec<IdentityRecord>, ServiceError> {
    let query = Query::prefix(keys::user_pk(user), keys::USER_IDENT_SK_PREFIX);
    let items = table.query_all(&query, 1_000).await?;
    items
        .iter()
        .map(|i| i.parse::<IdentityRecord>().map_err(ServiceError::from))
        .collect()
}

/// Removes the binding of `identity` from `user`, and releases its private conversation in the
/// same transaction. [`ServiceError::NotFound`] when the identity is not bound to this account.
pub async fn unbind(
    table: &dyn Table,
    identity: &ChannelIdentity,
    user: &UserId,
) -> Result<(), ServiceError> {
    let pk = keys::ident_pk(identity);
    for _ in 0..HANDOVER_RETRIES_MAX {
        let item = table.get(&pk, keys::IDENT_SK).await?;
        let Some(item) =
            item.filter(|i| i.parse::<IdentityRecord>().is_ok_and(|r| &r.user == user))
        else {
            return Err(ServiceError::not_found(format!(
                "A {} link for this account",
                identity.channel
            )));
        };
        let mut ops = vec![
            WriteOp::delete_if(
                &pk,
                keys::IDENT_SK,
                steward_store::Condition::VersionEquals(item.version),
            ),
            WriteOp::delete(keys::user_pk(user), keys::user_ident_sk(identity)),
        ];
        ops.extend(conversation::handover_op(table, identity, None).await?);
        match table.write(ops).await {
            Ok(()) => {
                tracing::info!(%identity, %user, "identity unlinked");
                return Ok(());
            }
            // The identity or its conversation changed in between: read both again.
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ServiceError::conflict(format!(
        "The {} link",
        identity.channel
    )))
}
