//! Token usage: logged per model response with the conversation and turn, and accumulated
//! per user per month (`USER#u / USAGE#yyyy-mm`) so expensive conversations and users can be
//! found, and budgets added later.

use serde::{Deserialize, Serialize};
use steward_llm::Usage;
use steward_store::{Item, StoreError, Table, WriteOp};

use crate::ids::UserId;
use crate::keys;

/// Attempts at the version-checked increment before giving up (usage is bookkeeping: a lost
/// increment is logged, never a failed turn).
const USAGE_RETRIES_MAX: usize = 5;

/// One user's usage in one month.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthlyUsage {
    /// Model calls made.
    pub calls: u64,
    /// Input tokens (not cached).
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
}

/// `yyyy-mm` (UTC) of an epoch-millisecond time.
pub fn month_of(epoch_ms: i64) -> String {
    jiff::Timestamp::from_millisecond(epoch_ms)
        .map(|t| t.strftime("%Y-%m").to_string())
        .unwrap_or_else(|_| "0000-00".into())
}

/// Adds `usage` to `user`'s record for the month of `now_ms`.
pub async fn record(
    table: &dyn Table,
    user: &UserId,
    now_ms: i64,
    usage: &Usage,
) -> Result<(), StoreError> {
    let pk = keys::user_pk(user);
    let sk = keys::usage_sk(&month_of(now_ms));
    for _ in 0..USAGE_RETRIES_MAX {
        let current = table.get(&pk, &sk).await?;
        let mut totals: MonthlyUsage = match &current {
            Some(item) => item.parse().unwrap_or_default(),
            None => MonthlyUsage::default(),
        };
        totals.calls += 1;
        totals.input_tokens += usage.input_tokens;
        totals.output_tokens += usage.output_tokens;
        totals.cache_read_tokens += usage.cache_read_input_tokens;
        totals.cache_write_tokens += usage.cache_creation_input_tokens;
        let item = Item::from_value(&pk, &sk, &totals)
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .with_ttl(crate::retention::retained_until(now_ms));
        let op = match &current {
            Some(old) => WriteOp::put_if_version(item.with_version(old.version + 1), old.version),
            None => WriteOp::put_if_absent(item),
        };
        match table.write(vec![op]).await {
            Ok(()) => return Ok(()),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Throttled("usage record kept changing".into()))
}

/// The usage of `user` in month `yyyy-mm`.
pub async fn get(
    table: &dyn Table,
    user: &UserId,
    month: &str,
) -> Result<MonthlyUsage, StoreError> {
    Ok(table
        .get(&keys::user_pk(user), &keys::usage_sk(month))
        .await?
        .and_then(|i| i.parse().ok())
        .unwrap_or_default())
}
