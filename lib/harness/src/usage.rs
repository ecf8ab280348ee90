//! Token usage: logged per model response with the conversation and turn, and accumulated
//! per user per month (`USER#u / USAGE#yyyy-mm`, months in UTC) with its estimated cost in
//! micro-dollars ([`steward_llm::pricing`]). Each month also has an index partition
//! (`USAGE#yyyy-mm / USER#u`) so an operator can list every user's usage of a month.
//!
//! The month record also carries the budget's reservation (see [`crate::budget`]): which model
//! call of which turn is in flight, so concurrent turns of one user take turns near the cap.

use serde::{Deserialize, Serialize};
use steward_llm::Usage;
use steward_llm::pricing::{self, TokenCounts};
use steward_store::{Item, Query, StoreError, Table, WriteOp};

use crate::ids::UserId;
use crate::keys;

/// Attempts at the version-checked increment before giving up (usage is bookkeeping: a lost
/// increment is logged, never a failed turn).
const USAGE_RETRIES_MAX: usize = 20;

/// Users listed by [`users_of_month`] at most (an operator's report, not a paging API).
pub const USERS_PER_MONTH_LISTED_MAX: usize = 10_000;

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
    /// Estimated cost of the priced calls, in micro-dollars (each call rounded up).
    #[serde(default)]
    pub cost_micros: u64,
    /// Calls on a model the price table does not know (not in [`Self::cost_micros`]).
    #[serde(default)]
    pub unpriced_calls: u64,
    /// The model call holding the budget's reservation (`conversation/turn`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_by: Option<String>,
    /// When that reservation lapses (epoch ms) if its call never reports back.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reserved_until_ms: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

impl MonthlyUsage {
    /// Every token counted against a token budget: input (uncached, cache writes and cache
    /// reads) and output.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// The share of input tokens read from the cache, in whole percent (None without input).
    pub fn cache_read_percent(&self) -> Option<u64> {
        let input = self
            .input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens);
        (input > 0).then(|| {
            let share = u128::from(self.cache_read_tokens) * 100 / u128::from(input);
            u64::try_from(share).unwrap_or(100)
        })
    }

    fn add(&mut self, model: &str, usage: &Usage) {
        self.calls += 1;
        self.input_tokens = self.input_tokens.saturating_add(usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(usage.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(usage.cache_read_input_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(usage.cache_creation_input_tokens);
        match pricing::cost_micros(model, &TokenCounts::from(usage)) {
            Some(micros) => self.cost_micros = self.cost_micros.saturating_add(micros),
            None => self.unpriced_calls += 1,
        }
    }
}

/// `yyyy-mm` (UTC) of an epoch-millisecond time.
pub fn month_of(epoch_ms: i64) -> String {
    jiff::Timestamp::from_millisecond(epoch_ms)
        .map(|t| t.strftime("%Y-%m").to_string())
        .unwrap_or_else(|_| "0000-00".into())
}

/// Whether `month` is a `yyyy-mm` month (as [`month_of`] writes them).
pub fn is_month(month: &str) -> bool {
    let b = month.as_bytes();
    b.len() == 7
        && b[4] == b'-'
        && b[..4].iter().chain(&b[5..]).all(u8::is_ascii_digit)
        && matches!(month[5..].parse::<u8>(), Ok(1..=12))
}

/// What [`modify`]'s change asks for.
pub(crate) enum Change<T> {
    /// Store the changed record, then return `T`.
    Write(T),
    /// Store nothing; return `T`.
    Keep(T),
}

/// Reads `user`'s record for the month of `now_ms`, lets `change` decide on it, and stores it
/// version-checked (retrying when another writer got there first).
pub(crate) async fn modify<T>(
    table: &dyn Table,
    user: &UserId,
    now_ms: i64,
    mut change: impl FnMut(&mut MonthlyUsage) -> Change<T>,
) -> Result<T, StoreError> {
    let month = month_of(now_ms);
    let pk = keys::user_pk(user);
    let sk = keys::usage_sk(&month);
    for _ in 0..USAGE_RETRIES_MAX {
        let current = table.get(&pk, &sk).await?;
        let mut totals = match &current {
            Some(item) => parsed(item)?,
            None => MonthlyUsage::default(),
        };
        let out = match change(&mut totals) {
            Change::Keep(out) => return Ok(out),
            Change::Write(out) => out,
        };
        let until = crate::retention::retained_until(now_ms);
        let item = Item::from_value(&pk, &sk, &totals)
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .with_ttl(until);
        let ops = match &current {
            Some(old) => vec![WriteOp::put_if_version(
                item.with_version(old.version + 1),
                old.version,
            )],
            None => {
                // The month's index row, so `steward usage` can list the month's users.
                let index = Item::from_value(
                    keys::usage_month_pk(&month),
                    keys::user_pk(user),
                    &serde_json::json!({ "user": user.as_str() }),
                )
                .map_err(|e| StoreError::Backend(e.to_string()))?
                .with_ttl(until);
                vec![WriteOp::put_if_absent(item), WriteOp::put(index)]
            }
        };
        match table.write(ops).await {
            Ok(()) => return Ok(out),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Throttled("usage record kept changing".into()))
}

/// Adds `usage` of one call on `model` to `user`'s record for the month of `now_ms`; when
/// `holder` holds the budget's reservation, it is released in the same write.
pub async fn record(
    table: &dyn Table,
    user: &UserId,
    now_ms: i64,
    model: &str,
    usage: &Usage,
    holder: Option<&str>,
) -> Result<(), StoreError> {
    modify(table, user, now_ms, |totals| {
        totals.add(model, usage);
        if holder.is_some() && totals.reserved_by.as_deref() == holder {
            totals.reserved_by = None;
            totals.reserved_until_ms = 0;
        }
        Change::Write(())
    })
    .await
}

/// The usage of `user` in month `yyyy-mm`: zero when none is stored, an error when the stored
/// record does not parse.
pub async fn get(
    table: &dyn Table,
    user: &UserId,
    month: &str,
) -> Result<MonthlyUsage, StoreError> {
    match table
        .get(&keys::user_pk(user), &keys::usage_sk(month))
        .await?
    {
        Some(item) => parsed(&item),
        None => Ok(MonthlyUsage::default()),
    }
}

/// A stored usage record, or an error naming it when it does not parse. Never zero in its
/// place: a budget would then let calls through as if nothing were spent, and the next write
/// would replace the month's totals with those of the calls since.
fn parsed(item: &Item) -> Result<MonthlyUsage, StoreError> {
    item.parse().map_err(|e| {
        StoreError::Backend(format!(
            "the usage record {} / {} does not parse: {e}",
            item.pk, item.sk
        ))
    })
}

/// The users with usage in month `yyyy-mm`, in id order.
pub async fn users_of_month(table: &dyn Table, month: &str) -> Result<Vec<UserId>, StoreError> {
    let query = Query::prefix(keys::usage_month_pk(month), "USER#");
    let items = table.query_all(&query, USERS_PER_MONTH_LISTED_MAX).await?;
    Ok(items
        .iter()
        .filter_map(|i| i.sk.strip_prefix("USER#"))
        .filter_map(|u| UserId::parse(u).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_checked_and_shares_are_whole_percent() {
        assert!(is_month("2026-12"));
        assert!(!is_month("2026-13"));
        assert!(!is_month("2026-1"));
        assert!(!is_month("26-12-01"));
        assert!(!is_month("２０２6-12"));
        let u = MonthlyUsage {
            input_tokens: 100,
            cache_read_tokens: 850,
            cache_write_tokens: 50,
            output_tokens: 10,
            ..MonthlyUsage::default()
        };
        assert_eq!(u.cache_read_percent(), Some(85));
        assert_eq!(u.total_tokens(), 1010);
        assert_eq!(MonthlyUsage::default().cache_read_percent(), None);
    }
}
