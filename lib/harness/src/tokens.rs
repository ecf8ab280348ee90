//! MCP access tokens.
//!
//! A token is `stw_` + 32 random bytes in base64url, shown once at creation. Only its SHA-256
//! is stored: the token row `TOKEN#<sha256 hex>` / `TOKEN` (owner, label, created, revoked,
//! last used) and an index row under the owner `USER#u` / `TOKEN#<sha256 hex>`. The hex digest
//! doubles as the token's public id ([`TokenId`]): it identifies the token for listing and
//! revoking but cannot be used to authenticate.

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use steward_channels::Secret;
use steward_store::{Clock, Item, Query, StoreError, Table, WriteOp};

use crate::accounts::clean_name;
use crate::ctx::Ctx;
use crate::error::ServiceError;
use crate::ids::{TokenId, UserId};
use crate::keys;
use crate::limits::{
    PROFILE_RACE_RETRIES_MAX, TOKEN_LAST_USED_RESOLUTION_SECS, TOKEN_RANDOM_BYTES,
};

/// Prefix of every token, so a leaked one is recognisable (and secret scanners can match it).
pub const TOKEN_PREFIX: &str = "stw_";

/// Label of a token created without one.
pub const DEFAULT_TOKEN_LABEL: &str = "MCP token";

/// Longest presented token that is hashed at all, in bytes; anything longer is not ours.
const PRESENTED_TOKEN_BYTES_MAX: usize = 256;

/// What is stored about a token (never the token itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The token's public id (its SHA-256, hex).
    pub id: TokenId,
    /// The account it acts for.
    pub user: UserId,
    /// What the holder called it ("Claude desktop").
    pub label: String,
    /// When it was created, in epoch milliseconds.
    pub created_ms: i64,
    /// Whether it was revoked; a revoked token never authenticates again.
    pub revoked: bool,
    /// When it was revoked, in epoch milliseconds.
    pub revoked_ms: Option<i64>,
    /// When it last authenticated a request (to a resolution of a minute), epoch milliseconds.
    pub last_used_ms: Option<i64>,
}

/// A newly created token. `token` is shown to its holder once and then forgotten; its `Debug`
/// prints `***`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewToken {
    /// The secret to hand to the MCP client.
    pub token: Secret,
    /// What is stored about it.
    pub record: TokenRecord,
}

/// The public id of a presented token.
pub fn token_id_of(token: &str) -> TokenId {
    TokenId::from_digest(&Sha256::digest(token.as_bytes()))
}

fn not_found(id: &TokenId) -> ServiceError {
    ServiceError::not_found(format!("The token {id}"))
}

/// Creates a token for `user` (whose account must exist) with an optional label.
pub async fn create_token(
    table: &dyn Table,
    clock: &dyn Clock,
    user: &UserId,
    label: Option<&str>,
) -> Result<NewToken, ServiceError> {
    let label = clean_name("label", label.unwrap_or(DEFAULT_TOKEN_LABEL))?;
    crate::accounts::get_profile(table, user).await?;
    let mut secret = [0u8; TOKEN_RANDOM_BYTES];
    rand::fill(&mut secret);
    let token = format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret)
    );
    let record = TokenRecord {
        id: token_id_of(&token),
        user: user.clone(),
        label,
        created_ms: clock.now_millis(),
        revoked: false,
        revoked_ms: None,
        last_used_ms: None,
    };
    table
        .write(vec![
            WriteOp::put_if_absent(Item::from_value(
                keys::token_pk(&record.id),
                keys::TOKEN_SK,
                &record,
            )?),
            WriteOp::put_if_absent(Item::from_value(
                keys::user_pk(user),
                keys::user_token_sk(&record.id),
                &record,
            )?),
        ])
        .await?;
    Ok(NewToken {
        token: Secret::new(token),
        record,
    })
}

async fn load(
    table: &dyn Table,
    id: &TokenId,
) -> Result<Option<(TokenRecord, Item)>, ServiceError> {
    match table.get(&keys::token_pk(id), keys::TOKEN_SK).await? {
        Some(item) => Ok(Some((item.parse()?, item))),
        None => Ok(None),
    }
}

/// The token with this id.
pub async fn get_token(table: &dyn Table, id: &TokenId) -> Result<TokenRecord, ServiceError> {
    load(table, id)
        .await?
        .map(|(r, _)| r)
        .ok_or_else(|| not_found(id))
}

/// Every token of `user`, oldest first, revoked ones included.
pub async fn list_tokens(
    table: &dyn Table,
    user: &UserId,
) -> Result<Vec<TokenRecord>, ServiceError> {
    let query = Query::prefix(keys::user_pk(user), keys::USER_TOKEN_SK_PREFIX);
    let mut tokens = Vec::new();
    for index in table.query_all(&query, 1_000).await? {
        let indexed: TokenRecord = index.parse()?;
        // The token row holds the live state (revoked, last used); the index only points to it.
        if let Some((record, _)) = load(table, &indexed.id).await? {
            tokens.push(record);
        }
    }
    tokens.sort_by_key(|t| t.created_ms);
    Ok(tokens)
}

/// Revokes a token by id (operator path). Revoking a revoked token is a no-op.
pub async fn revoke_token(
    table: &dyn Table,
    clock: &dyn Clock,
    id: &TokenId,
) -> Result<TokenRecord, ServiceError> {
    revoke(table, clock, id, None).await
}

/// Revokes one of the caller's own tokens; another account's token is [`ServiceError::NotFound`].
pub async fn revoke_own_token(ctx: &Ctx, id: &TokenId) -> Result<TokenRecord, ServiceError> {
    revoke(
        ctx.table().as_ref(),
        ctx.clock().as_ref(),
        id,
        Some(ctx.user()),
    )
    .await
}

async fn revoke(
    table: &dyn Table,
    clock: &dyn Clock,
    id: &TokenId,
    owner: Option<&UserId>,
) -> Result<TokenRecord, ServiceError> {
    // Retries cover a concurrent last-use update of the same token.
    for _ in 0..PROFILE_RACE_RETRIES_MAX {
        let (mut record, item) = load(table, id).await?.ok_or_else(|| not_found(id))?;
        if owner.is_some_and(|o| *o != record.user) {
            return Err(not_found(id));
        }
        if record.revoked {
            return Ok(record);
        }
        record.revoked = true;
        record.revoked_ms = Some(clock.now_millis());
        let main = Item::from_value(&item.pk, &item.sk, &record)?.with_version(item.version + 1);
        let index = Item::from_value(
            keys::user_pk(&record.user),
            keys::user_token_sk(id),
            &record,
        )?;
        match table
            .write(vec![
                WriteOp::put_if_version(main, item.version),
                WriteOp::put(index),
            ])
            .await
        {
            Ok(()) => return Ok(record),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ServiceError::conflict(format!("The token {id}")))
}

/// The token's record when `token` is a live (known, unrevoked) token, else `None`. Records
/// the time of use, at most once per [`TOKEN_LAST_USED_RESOLUTION_SECS`].
pub async fn authenticate(
    table: &dyn Table,
    clock: &dyn Clock,
    token: &str,
) -> Result<Option<TokenRecord>, ServiceError> {
    if !token.starts_with(TOKEN_PREFIX) || token.len() > PRESENTED_TOKEN_BYTES_MAX {
        return Ok(None);
    }
    let Some((mut record, item)) = load(table, &token_id_of(token)).await? else {
        return Ok(None);
    };
    if record.revoked {
        return Ok(None);
    }
    let now = clock.now_millis();
    let stale = record
        .last_used_ms
        .is_none_or(|t| now - t >= TOKEN_LAST_USED_RESOLUTION_SECS * 1000);
    if stale {
        record.last_used_ms = Some(now);
        let updated = Item::from_value(&item.pk, &item.sk, &record)?.with_version(item.version + 1);
        match table
            .write(vec![WriteOp::put_if_version(updated, item.version)])
            .await
        {
            // A concurrent request recorded the use, or a revoke won: re-read to honour a revoke.
            Err(StoreError::ConditionFailed { .. }) => {
                return match load(table, &record.id).await? {
                    Some((fresh, _)) if !fresh.revoked => Ok(Some(fresh)),
                    _ => Ok(None),
                };
            }
            Err(e) => return Err(e.into()),
            Ok(()) => {}
        }
    }
    Ok(Some(record))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn token_ids_are_sha256_hex() {
        let id = token_id_of("stw_abc");
        assert_eq!(id.as_str().len(), 64);
        assert_eq!(id, token_id_of("stw_abc"));
        assert_ne!(id, token_id_of("stw_abd"));
    }
}
