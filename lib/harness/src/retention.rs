//! How long transcripts (model and visible rows), audit rows with their action headers and
//! monthly usage records are kept: each gets a `ttl` this many days after it is written
//! ([`retained_until`]). A deploy setting, `STEWARD_RETENTION_DAYS` (default
//! [`RETENTION_DAYS`]), read once at start by each binary that writes such rows and
//! [`install`]ed for the whole process; undo reaches back as far.
//!
//! Process-wide on purpose: every write path of a process (chat turns, web forms, MCP calls,
//! public registrations) shares the one deployment's retention, and a value threaded through
//! every request context could differ between them by mistake.

use std::sync::OnceLock;

use crate::limits::{RETENTION_DAYS, RETENTION_DAYS_MAX, RETENTION_DAYS_MIN};

/// The setting: days transcripts, audit rows and usage records are kept.
pub const ENV_RETENTION_DAYS: &str = "STEWARD_RETENTION_DAYS";

/// Seconds in a day.
const DAY_SECS: i64 = 24 * 60 * 60;

/// A retention that can be used: between [`RETENTION_DAYS_MIN`] and [`RETENTION_DAYS_MAX`]
/// days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionDays(i64);

/// A retention setting that cannot be used; each message names the setting and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetentionError {
    /// Not a whole number.
    #[error(
        "{ENV_RETENTION_DAYS}: \"{0}\" is not a whole number of days; give one such as {RETENTION_DAYS} (or unset it for that default)"
    )]
    NotANumber(String),
    /// Shorter than the rows it covers must live.
    #[error(
        "{ENV_RETENTION_DAYS}: {0} days is too short; give at least {RETENTION_DAYS_MIN}, so a month's usage record outlives its month and a conversation's rows outlive its 8-day dedupe and undo records"
    )]
    TooShort(i64),
    /// Longer than a ttl should reach.
    #[error(
        "{ENV_RETENTION_DAYS}: {0} days is longer than {RETENTION_DAYS_MAX}; give a shorter retention"
    )]
    TooLong(i64),
    /// The process already runs with another retention.
    #[error(
        "{ENV_RETENTION_DAYS}: this process already keeps rows {installed} days and cannot switch to {asked}"
    )]
    AlreadyInstalled {
        /// The retention in force.
        installed: i64,
        /// The one asked for.
        asked: i64,
    },
}

impl RetentionDays {
    /// The default retention, [`RETENTION_DAYS`].
    pub const DEFAULT: Self = Self(RETENTION_DAYS);

    /// `days`, if it is within the bounds.
    pub fn new(days: i64) -> Result<Self, RetentionError> {
        if days < RETENTION_DAYS_MIN {
            Err(RetentionError::TooShort(days))
        } else if days > RETENTION_DAYS_MAX {
            Err(RetentionError::TooLong(days))
        } else {
            Ok(Self(days))
        }
    }

    /// The setting's value (`None`: unset, the default).
    pub fn parse(value: Option<&str>) -> Result<Self, RetentionError> {
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(Self::DEFAULT),
            Some(v) => {
                let days = v
                    .parse::<i64>()
                    .map_err(|_| RetentionError::NotANumber(v.to_owned()))?;
                Self::new(days)
            }
        }
    }

    /// The number of days.
    pub fn days(self) -> i64 {
        self.0
    }

    /// The `ttl` (epoch seconds) of a row written at `now_ms` and kept this long.
    pub fn until(self, now_ms: i64) -> i64 {
        now_ms.div_euclid(1000) + self.0 * DAY_SECS
    }
}

impl Default for RetentionDays {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The retention of this process, once installed.
static INSTALLED: OnceLock<RetentionDays> = OnceLock::new();

/// Makes `retention` this process's retention. Installing the same value again is fine;
/// another one is refused (the first stays in force).
pub fn install(retention: RetentionDays) -> Result<(), RetentionError> {
    let installed = *INSTALLED.get_or_init(|| retention);
    if installed == retention {
        Ok(())
    } else {
        Err(RetentionError::AlreadyInstalled {
            installed: installed.days(),
            asked: retention.days(),
        })
    }
}

/// Reads the setting's `value` and [`install`]s it: what a binary calls at start.
pub fn install_setting(value: Option<&str>) -> Result<RetentionDays, RetentionError> {
    let retention = RetentionDays::parse(value)?;
    install(retention)?;
    Ok(retention)
}

/// Whether the setting's `value` can be used (the start-up check: the error is the sentence).
pub fn check_setting(value: &str) -> Result<(), String> {
    RetentionDays::parse(Some(value))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// This process's retention: the installed one, else the default.
pub fn current() -> RetentionDays {
    INSTALLED.get().copied().unwrap_or_default()
}

/// The `ttl` (epoch seconds) of a retained row written at `now_ms` ([`current`]).
pub fn retained_until(now_ms: i64) -> i64 {
    current().until(now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_parses_with_a_default_and_bounds() {
        assert_eq!(RetentionDays::parse(None), Ok(RetentionDays::DEFAULT));
        assert_eq!(RetentionDays::parse(Some("  ")), Ok(RetentionDays::DEFAULT));
        assert_eq!(
            RetentionDays::parse(Some(" 90 ")).map(RetentionDays::days),
            Ok(90)
        );
        assert_eq!(
            RetentionDays::parse(Some(&RETENTION_DAYS_MIN.to_string())).map(RetentionDays::days),
            Ok(RETENTION_DAYS_MIN)
        );
        for (bad, starts) in [
            (
                "a year",
                "STEWARD_RETENTION_DAYS: \"a year\" is not a whole number of days",
            ),
            (
                "90.5",
                "STEWARD_RETENTION_DAYS: \"90.5\" is not a whole number",
            ),
            (
                "7",
                "STEWARD_RETENTION_DAYS: 7 days is too short; give at least 31",
            ),
            ("-400", "STEWARD_RETENTION_DAYS: -400 days is too short"),
            (
                "99999999",
                "STEWARD_RETENTION_DAYS: 99999999 days is longer than",
            ),
        ] {
            let message = RetentionDays::parse(Some(bad))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.starts_with(starts), "{bad}: {message}");
            assert_eq!(check_setting(bad), Err(message));
        }
    }

    #[test]
    fn a_row_is_kept_the_retention_from_when_it_was_written() {
        let now_ms = 1_780_000_000_123;
        let thirty = RetentionDays::new(30 + 1).unwrap_or_default();
        assert_eq!(thirty.until(now_ms), 1_780_000_000 + 31 * 86_400);
        assert_eq!(
            RetentionDays::DEFAULT.until(now_ms),
            1_780_000_000 + RETENTION_DAYS * 86_400
        );
    }
}
