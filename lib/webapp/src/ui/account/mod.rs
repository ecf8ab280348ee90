//! The account pages: [`settings`] (name and time zone), [`activity`] (the audit trail with
//! undo), [`linking`] (connect a phone with a one-time code), [`tokens`] (MCP access
//! tokens), [`usage`] (the month's model use against the budget), [`turns`] (the turn inspector of
//! the person's own conversations) and [`approvals`] (held requests of MCP clients, approved or declined here). Each calls the same harness service functions as the chat tools and operator
//! commands.

pub mod activity;
pub mod approvals;
pub mod linking;
pub mod settings;
pub mod tokens;
pub mod turns;
pub mod usage;

use axum::Router;
use steward_harness::TimeZoneName;

use crate::state::WebState;

/// The account routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .merge(settings::routes())
        .merge(activity::routes())
        .merge(linking::routes())
        .merge(tokens::routes())
        .merge(approvals::routes())
        .merge(usage::routes())
        .merge(turns::routes())
}

/// An instant (epoch milliseconds) as `2026-06-01 11:00` in `tz`; the raw UTC time when the
/// instant cannot be shown there.
pub(crate) fn local_time(ms: i64, tz: &TimeZoneName) -> String {
    const FORMAT: &str = "%Y-%m-%d %H:%M";
    let Ok(at) = jiff::Timestamp::from_millisecond(ms) else {
        return format!("{ms} ms");
    };
    match tz.time_zone() {
        Ok(zone) => at.to_zoned_datetime(zone).strftime(FORMAT).to_string(),
        Err(_) => format!("{} UTC", at.strftime(FORMAT)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_the_users_zone() {
        let berlin = TimeZoneName::parse("Europe/Berlin").unwrap();
        // 2026-06-01T09:00:00Z is 11:00 in Berlin (summer time).
        assert_eq!(local_time(1_780_304_400_000, &berlin), "2026-06-01 11:00");
        let utc = TimeZoneName::parse("UTC").unwrap();
        assert_eq!(local_time(1_780_304_400_000, &utc), "2026-06-01 09:00");
    }
}
