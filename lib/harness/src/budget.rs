//! Monthly budgets per user, in tokens and in money — the one place the rule lives, below
//! chat, MCP and the web (every model call of a turn goes through [`before_call`]).
//!
//! A budget comes from the process's default ([`ENV_BUDGET_USD`], [`ENV_BUDGET_TOKENS`]; unset
//! means no limit) unless the user has their own (`USER#u / BUDGET#LIMIT`, set with
//! `steward user budget`). Months are UTC calendar months.
//!
//! Enforcement across concurrent Lambdas: before each model call the turn takes the user's
//! *reservation* on the month's usage record with a version-checked write, and only while
//! usage is under every limit and no other call of that user holds it; the call's usage is
//! added and the reservation released in one write afterwards ([`crate::usage::record`]). So
//! at most one call per user is in flight while a budget applies, a call starts only below the
//! cap, and the month can end over the cap by at most one call. A reservation whose call never
//! reports back (a crashed Lambda) lapses after [`RESERVATION_MS`]. Users without a budget
//! take no reservation.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use steward_llm::pricing::{MICROS_PER_USD, format_usd};
use steward_store::{Item, StoreError, Table, WriteOp};

use crate::ids::UserId;
use crate::keys;
use crate::usage::{self, Change, MonthlyUsage};

/// The default monthly money budget per user, in US dollars (e.g. `20` or `7.50`).
pub const ENV_BUDGET_USD: &str = "STEWARD_BUDGET_USD";
/// The default monthly token budget per user (a whole number).
pub const ENV_BUDGET_TOKENS: &str = "STEWARD_BUDGET_TOKENS";

/// The largest money budget accepted, in dollars: far above any real monthly spend, and
/// small enough that micro-dollars never overflow.
const USD_MAX: u64 = 1_000_000_000;

/// The share of a limit, in percent, at which the person is told once that month.
pub const NOTICE_PERCENT: u64 = 80;

/// How long a model call's reservation holds when its call never reports back: the longest
/// a model call may take ([`steward_llm::model_call_timeout`] of the full output budget) and
/// a margin for the retry and the write.
pub const RESERVATION_MS: i64 = 600_000;

/// How often a turn looks again while another call of the same user holds the reservation.
const RESERVATION_POLL: Duration = Duration::from_millis(100);

/// Looks at a held reservation at most this often before taking it over (bounds the wait
/// even when the clock does not move, as in tests): [`RESERVATION_MS`] of polls.
const RESERVATION_POLLS_MAX: u32 = 6_000;

/// One limit of a user's own budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// No limit of this kind for the user, whatever the default.
    Unlimited,
    /// At most this much a month (tokens, or micro-dollars).
    Cap(u64),
}

/// A monthly budget: each limit present applies; none means no budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Tokens a month ([`MonthlyUsage::total_tokens`]).
    pub tokens: Option<u64>,
    /// Estimated cost a month, in micro-dollars.
    pub usd_micros: Option<u64>,
}

/// A user's own budget: each limit set here replaces the default's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetOverride {
    /// The token limit, when the user has their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Limit>,
    /// The money limit (micro-dollars), when the user has their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_micros: Option<Limit>,
}

/// A budget value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// Not a dollar amount.
    #[error("{0:?} is not an amount of US dollars; give one like 20 or 7.50")]
    NotDollars(String),
    /// More than [`USD_MAX`].
    #[error("{0:?} is more than the largest budget accepted (1000000000 dollars)")]
    TooManyDollars(String),
    /// Not a whole number of tokens.
    #[error("{0:?} is not a whole number of tokens; give one like 2000000")]
    NotTokens(String),
}

impl Budget {
    /// No budget.
    pub const NONE: Self = Self {
        tokens: None,
        usd_micros: None,
    };

    /// Whether no limit applies.
    pub fn is_none(&self) -> bool {
        self.tokens.is_none() && self.usd_micros.is_none()
    }

    /// The default budget from the two settings (unset or empty: no such limit).
    pub fn from_settings(usd: Option<&str>, tokens: Option<&str>) -> Result<Self, String> {
        fn present(v: Option<&str>) -> Option<&str> {
            v.map(str::trim).filter(|v| !v.is_empty())
        }
        Ok(Self {
            usd_micros: present(usd)
                .map(parse_usd)
                .transpose()
                .map_err(|e| format!("{ENV_BUDGET_USD}: {e}"))?,
            tokens: present(tokens)
                .map(parse_tokens)
                .transpose()
                .map_err(|e| format!("{ENV_BUDGET_TOKENS}: {e}"))?,
        })
    }

    /// This budget with `user`'s own limits in place of its own.
    pub fn with_override(self, own: Option<BudgetOverride>) -> Self {
        let Some(own) = own else { return self };
        let pick = |own: Option<Limit>, default: Option<u64>| match own {
            None => default,
            Some(Limit::Unlimited) => None,
            Some(Limit::Cap(n)) => Some(n),
        };
        Self {
            tokens: pick(own.tokens, self.tokens),
            usd_micros: pick(own.usd_micros, self.usd_micros),
        }
    }

    /// Whether `used` has reached `percent` of any limit.
    pub fn reached(&self, used: &MonthlyUsage, percent: u64) -> bool {
        let at = |used: u64, limit: Option<u64>| {
            limit.is_some_and(|l| u128::from(used) * 100 >= u128::from(l) * u128::from(percent))
        };
        at(used.total_tokens(), self.tokens) || at(used.cost_micros, self.usd_micros)
    }

    /// What is left of each limit, for a report ("1200 tokens, $3.10 left").
    pub fn left(&self, used: &MonthlyUsage) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.tokens {
            parts.push(format!("{} tokens", t.saturating_sub(used.total_tokens())));
        }
        if let Some(m) = self.usd_micros {
            parts.push(format_usd(m.saturating_sub(used.cost_micros)));
        }
        if parts.is_empty() {
            "no budget".into()
        } else {
            format!("{} left", parts.join(", "))
        }
    }
}

/// Parses a dollar amount (`20`, `7.5`, `0.25`; at most six decimals) into micro-dollars.
pub fn parse_usd(text: &str) -> Result<u64, BudgetError> {
    let bad = || BudgetError::NotDollars(text.to_owned());
    let t = text.trim().strip_prefix('$').unwrap_or(text.trim());
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 6 {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole
            .parse()
            .map_err(|_| BudgetError::TooManyDollars(text.to_owned()))?
    };
    if whole > USD_MAX {
        return Err(BudgetError::TooManyDollars(text.to_owned()));
    }
    let frac_micros: u64 = format!("{frac:0<6}").parse().map_err(|_| bad())?;
    Ok(whole * MICROS_PER_USD + frac_micros)
}

/// Parses a whole number of tokens.
pub fn parse_tokens(text: &str) -> Result<u64, BudgetError> {
    let t = text.trim().replace('_', "");
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BudgetError::NotTokens(text.to_owned()));
    }
    t.parse()
        .map_err(|_| BudgetError::NotTokens(text.to_owned()))
}

/// Start-up check of [`ENV_BUDGET_USD`] (the error names the setting).
pub fn check_usd_setting(value: &str) -> Result<(), String> {
    Budget::from_settings(Some(value), None).map(|_| ())
}

/// Start-up check of [`ENV_BUDGET_TOKENS`] (the error names the setting).
pub fn check_tokens_setting(value: &str) -> Result<(), String> {
    Budget::from_settings(None, Some(value)).map(|_| ())
}

/// `user`'s own budget, if they have one.
pub async fn get_override(
    table: &dyn Table,
    user: &UserId,
) -> Result<Option<BudgetOverride>, StoreError> {
    table
        .get(&keys::user_pk(user), keys::BUDGET_SK)
        .await?
        .map(|i| {
            // Never "no budget of their own" in its place: their limits would silently become
            // the default's, and the next change would write over what they had set.
            i.parse().map_err(|e| {
                StoreError::Backend(format!(
                    "the budget record {} / {} does not parse ({e}); `steward user budget USER_ID --clear` removes it",
                    i.pk, i.sk
                ))
            })
        })
        .transpose()
}

/// Stores `own` as `user`'s budget (each limit it leaves out keeps what was set before).
pub async fn set_override(
    table: &dyn Table,
    user: &UserId,
    own: BudgetOverride,
) -> Result<BudgetOverride, StoreError> {
    let merged = match get_override(table, user).await? {
        Some(old) => BudgetOverride {
            tokens: own.tokens.or(old.tokens),
            usd_micros: own.usd_micros.or(old.usd_micros),
        },
        None => own,
    };
    let item = Item::from_value(keys::user_pk(user), keys::BUDGET_SK, &merged)
        .map_err(|e| StoreError::Backend(e.to_string()))?;
    table.write(vec![WriteOp::put(item)]).await?;
    Ok(merged)
}

/// Removes `user`'s own budget: the default applies again.
pub async fn clear_override(table: &dyn Table, user: &UserId) -> Result<(), StoreError> {
    table
        .write(vec![WriteOp::delete(keys::user_pk(user), keys::BUDGET_SK)])
        .await
}

/// The budget that applies to `user`: `default` with their own limits in place.
pub async fn effective(
    table: &dyn Table,
    user: &UserId,
    default: Budget,
) -> Result<Budget, StoreError> {
    Ok(default.with_override(get_override(table, user).await?))
}

/// "1 January": the first day of the month after the one of `now_ms` (UTC).
pub fn resets_on(now_ms: i64) -> String {
    jiff::Timestamp::from_millisecond(now_ms)
        .ok()
        .map(|t| {
            jiff::tz::TimeZone::UTC
                .to_datetime(t)
                .date()
                .first_of_month()
        })
        .and_then(|d| d.checked_add(jiff::ToSpan::months(1)).ok())
        .map(|d| d.strftime("1 %B").to_string())
        .unwrap_or_else(|| "the 1st of next month".into())
}

/// The final answer of a turn stopped at the cap.
pub fn cap_text(now_ms: i64) -> String {
    format!(
        "You've reached this month's limit; it resets on {}.",
        resets_on(now_ms)
    )
}

/// The once-a-month notice at [`NOTICE_PERCENT`].
pub fn notice_text(now_ms: i64) -> String {
    format!(
        "Heads-up: you've used {NOTICE_PERCENT}% of this month's limit; it resets on {}.",
        resets_on(now_ms)
    )
}

/// Whether a model call may go ahead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Go ahead (the reservation is held when a budget applies).
    Go,
    /// The month's budget is used up: end the turn with [`cap_text`].
    Capped,
}

enum Look {
    Go,
    Capped,
    Wait,
}

/// Before a model call by `holder` (`conversation/turn`) for `user` under `budget`: takes
/// the reservation when usage is under every limit and no other call holds it (waiting while
/// one does), or says the cap is reached. `now` is read afresh at each look.
pub async fn before_call(
    table: &dyn Table,
    now: &(dyn Fn() -> i64 + Send + Sync),
    user: &UserId,
    budget: Budget,
    holder: &str,
) -> Result<Gate, StoreError> {
    if budget.is_none() {
        return Ok(Gate::Go);
    }
    for poll in 0..=RESERVATION_POLLS_MAX {
        let now_ms = now();
        let look = usage::modify(table, user, now_ms, |u: &mut MonthlyUsage| {
            if budget.reached(u, 100) {
                return Change::Keep(Look::Capped);
            }
            let held_by_other = u.reserved_by.as_deref().is_some_and(|h| h != holder)
                && u.reserved_until_ms > now_ms;
            if held_by_other && poll < RESERVATION_POLLS_MAX {
                return Change::Keep(Look::Wait);
            }
            u.reserved_by = Some(holder.to_owned());
            u.reserved_until_ms = now_ms.saturating_add(RESERVATION_MS);
            Change::Write(Look::Go)
        })
        .await?;
        match look {
            Look::Go => return Ok(Gate::Go),
            Look::Capped => return Ok(Gate::Capped),
            Look::Wait => tokio::time::sleep(RESERVATION_POLL).await,
        }
    }
    Ok(Gate::Go)
}

/// Releases `holder`'s reservation without usage (its call failed).
pub async fn release(
    table: &dyn Table,
    user: &UserId,
    now_ms: i64,
    holder: &str,
) -> Result<(), StoreError> {
    usage::modify(table, user, now_ms, |u| {
        if u.reserved_by.as_deref() == Some(holder) {
            u.reserved_by = None;
            u.reserved_until_ms = 0;
            Change::Write(())
        } else {
            Change::Keep(())
        }
    })
    .await
}

/// Whether `user` is due the month's 80 % notice under `budget`: true once per month (a
/// put-if-absent marker), when usage has reached [`NOTICE_PERCENT`] of a limit.
pub async fn take_notice(
    table: &dyn Table,
    user: &UserId,
    budget: Budget,
    now_ms: i64,
) -> Result<bool, StoreError> {
    if budget.is_none() {
        return Ok(false);
    }
    let month = usage::month_of(now_ms);
    let used = usage::get(table, user, &month).await?;
    if !budget.reached(&used, NOTICE_PERCENT) {
        return Ok(false);
    }
    let marker = Item::from_value(
        keys::user_pk(user),
        keys::budget_notice_sk(&month),
        &serde_json::json!({ "at_ms": now_ms }),
    )
    .map_err(|e| StoreError::Backend(e.to_string()))?
    .with_ttl(crate::retention::retained_until(now_ms));
    match table.write(vec![WriteOp::put_if_absent(marker)]).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dollar_amounts_parse_exactly_and_bad_ones_are_named() {
        assert_eq!(parse_usd("20"), Ok(20_000_000));
        assert_eq!(parse_usd("7.5"), Ok(7_500_000));
        assert_eq!(parse_usd("$0.25"), Ok(250_000));
        assert_eq!(parse_usd(".5"), Ok(500_000));
        assert_eq!(parse_usd("0"), Ok(0));
        for bad in ["", ".", "-1", "1e3", "twenty", "1.2345678", "1,50", "NaN"] {
            assert!(
                matches!(parse_usd(bad), Err(BudgetError::NotDollars(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_usd("99999999999999999999999"),
            Err(BudgetError::TooManyDollars(_))
        ));
        assert_eq!(parse_tokens("2_000_000"), Ok(2_000_000));
        assert!(parse_tokens("-5").is_err());
        assert!(parse_tokens("1.5").is_err());
        assert!(parse_tokens("99999999999999999999999").is_err());
    }

    #[test]
    fn settings_refuse_naming_the_setting_and_unset_means_no_budget() {
        assert_eq!(Budget::from_settings(None, Some(" ")), Ok(Budget::NONE));
        let e = Budget::from_settings(Some("lots"), None).unwrap_err();
        assert!(
            e.starts_with("STEWARD_BUDGET_USD: \"lots\" is not an amount"),
            "{e}"
        );
        let e = check_tokens_setting("1.5").unwrap_err();
        assert!(e.starts_with("STEWARD_BUDGET_TOKENS: "), "{e}");
        assert_eq!(
            Budget::from_settings(Some("20"), Some("1000")),
            Ok(Budget {
                tokens: Some(1000),
                usd_micros: Some(20_000_000)
            })
        );
    }

    #[test]
    fn a_users_own_limits_replace_the_defaults_one_by_one() {
        let default = Budget {
            tokens: Some(1000),
            usd_micros: Some(5),
        };
        let own = BudgetOverride {
            tokens: Some(Limit::Unlimited),
            usd_micros: None,
        };
        assert_eq!(
            default.with_override(Some(own)),
            Budget {
                tokens: None,
                usd_micros: Some(5)
            }
        );
        let own = BudgetOverride {
            tokens: None,
            usd_micros: Some(Limit::Cap(9)),
        };
        assert_eq!(default.with_override(Some(own)).usd_micros, Some(9));
        assert_eq!(default.with_override(None), default);
    }

    #[test]
    fn the_reset_day_is_the_first_of_next_month_in_utc() {
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap().as_millisecond();
        assert_eq!(resets_on(at("2026-12-31T23:59:59Z")), "1 January");
        assert_eq!(resets_on(at("2027-01-01T00:00:00Z")), "1 February");
        assert_eq!(
            cap_text(at("2026-02-10T12:00:00Z")),
            "You've reached this month's limit; it resets on 1 March."
        );
    }

    #[test]
    fn limits_are_reached_by_tokens_or_by_money() {
        let b = Budget {
            tokens: Some(100),
            usd_micros: Some(1_000),
        };
        let used = |tokens: u64, micros: u64| MonthlyUsage {
            output_tokens: tokens,
            cost_micros: micros,
            ..MonthlyUsage::default()
        };
        assert!(!b.reached(&used(79, 799), 80));
        assert!(b.reached(&used(80, 0), 80));
        assert!(b.reached(&used(0, 800), 80));
        assert!(!b.reached(&used(99, 999), 100));
        assert!(b.reached(&used(100, 0), 100));
        assert!(!Budget::NONE.reached(&used(u64::MAX, u64::MAX), 100));
        assert_eq!(b.left(&used(30, 250)), "70 tokens, $0.01 left");
    }
}
