//! Dates and times as people and models write them, parsed into `jiff` civil values with
//! readable errors, and formatted back for summaries ("Sat 14 Nov 2026", "09:30").

use std::fmt;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use steward_harness::ServiceError;

use crate::limits::EVENT_DAYS_MAX;

/// Parses a calendar date written `YYYY-MM-DD`.
pub fn parse_date(field: &str, text: &str) -> Result<Date, ServiceError> {
    let text = text.trim();
    if text.len() != "2026-11-14".len() {
        return Err(ServiceError::invalid(
            field,
            format!("{text:?} is not a date; write it as YYYY-MM-DD, like 2026-11-14"),
        ));
    }
    text.parse::<Date>().map_err(|_| {
        ServiceError::invalid(
            field,
            format!("{text:?} is not a date; write it as YYYY-MM-DD, like 2026-11-14"),
        )
    })
}

/// Parses a time of day written in 24-hour form, `HH:MM` (`9:30` and `09:30:00` are accepted
/// too). Seconds are dropped.
pub fn parse_time(field: &str, text: &str) -> Result<Time, ServiceError> {
    let text = text.trim();
    let bad = || {
        ServiceError::invalid(
            field,
            format!(
                "{text:?} is not a time of day; write it in 24-hour form as HH:MM, like 09:30 or 17:00"
            ),
        )
    };
    let mut parts = text.split(':');
    let (Some(h), Some(m)) = (parts.next(), parts.next()) else {
        return Err(bad());
    };
    if let Some(s) = parts.next()
        && (s.len() != 2 || !s.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(bad());
    }
    if parts.next().is_some() || h.is_empty() || h.len() > 2 || m.len() != 2 {
        return Err(bad());
    }
    let h: i8 = h.parse().map_err(|_| bad())?;
    let m: i8 = m.parse().map_err(|_| bad())?;
    Time::new(h, m, 0, 0).map_err(|_| bad())
}

/// Parses a local date and time `YYYY-MM-DDTHH:MM` (a space instead of `T` is fine). A bare
/// date means the end of that day (23:59).
pub fn parse_datetime(field: &str, text: &str) -> Result<DateTime, ServiceError> {
    let text = text.trim();
    let bad = || {
        ServiceError::invalid(
            field,
            format!(
                "{text:?} is not a date and time; write it as YYYY-MM-DDTHH:MM, like 2026-11-12T18:00"
            ),
        )
    };
    // jiff reads a date out of a full date-time too, so only bare dates take this path.
    if !text.contains(['T', 't', ' '])
        && let Ok(date) = text.parse::<Date>()
    {
        return Ok(date.at(23, 59, 0, 0));
    }
    let (date, time) = text.split_once(['T', ' ']).ok_or_else(bad)?;
    let date = date.parse::<Date>().map_err(|_| bad())?;
    let time = parse_time(field, time).map_err(|_| bad())?;
    Ok(date.to_datetime(time))
}

/// Minutes since midnight of a time of day.
pub fn minutes_of(time: Time) -> u16 {
    // hour() is 0..=23 and minute() 0..=59, so the sum fits easily.
    u16::try_from(i32::from(time.hour()) * 60 + i32::from(time.minute())).unwrap_or(0)
}

/// A time of day as `HH:MM`.
pub fn fmt_time(time: Time) -> String {
    format!("{:02}:{:02}", time.hour(), time.minute())
}

/// A date as a short day for summaries: `Sat 14 Nov 2026`.
pub fn fmt_day(date: Date) -> String {
    date.strftime("%a %-d %b %Y").to_string()
}

/// A local date and time for summaries: `Thu 12 Nov 2026, 18:00`.
pub fn fmt_datetime(dt: DateTime) -> String {
    format!("{}, {}", fmt_day(dt.date()), fmt_time(dt.time()))
}

/// The moment `millis` (epoch milliseconds) in `tz`, as a civil date and time.
pub fn local_now(millis: i64, tz: &TimeZone) -> DateTime {
    let ts = Timestamp::from_millisecond(millis).unwrap_or(Timestamp::UNIX_EPOCH);
    tz.to_datetime(ts)
}

/// Whether the local `deadline` in `tz` has passed at `millis` (epoch milliseconds). A
/// deadline that falls in a clock gap or overlap is read the way clocks read it
/// ("compatible").
pub fn has_passed(deadline: DateTime, tz: &TimeZone, millis: i64) -> bool {
    match deadline.to_zoned_datetime(tz.clone()) {
        Ok(z) => z.timestamp().as_millisecond() <= millis,
        // Out of range: a deadline nobody can reach has not passed.
        Err(_) => false,
    }
}

/// The days of an event: 1 to [`EVENT_DAYS_MAX`] distinct dates, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventDates(Vec<Date>);

impl EventDates {
    /// Checks a set of dates (any order; duplicates refused); errors name the field `dates`.
    pub fn new(mut dates: Vec<Date>) -> Result<Self, ServiceError> {
        if dates.is_empty() {
            return Err(ServiceError::invalid(
                "dates",
                "give at least one date (YYYY-MM-DD)",
            ));
        }
        if dates.len() > EVENT_DAYS_MAX {
            return Err(ServiceError::invalid(
                "dates",
                format!(
                    "an event has 1 to {EVENT_DAYS_MAX} days, not {}; make a separate event for the rest",
                    dates.len()
                ),
            ));
        }
        dates.sort();
        if let Some(w) = dates.windows(2).find(|w| w[0] == w[1]) {
            return Err(ServiceError::invalid(
                "dates",
                format!("{} is given twice", w[0]),
            ));
        }
        Ok(Self(dates))
    }

    /// Parses dates written `YYYY-MM-DD`.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Self, ServiceError> {
        let dates = texts
            .iter()
            .map(|t| parse_date("dates", t.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(dates)
    }

    /// Refuses dates before `today` (a past date is nearly always a wrong year).
    pub fn require_not_before(&self, today: Date, tz: &str) -> Result<(), ServiceError> {
        match self.0.iter().find(|d| **d < today) {
            Some(d) => Err(ServiceError::invalid(
                "dates",
                format!("{d} is in the past (today is {today} in {tz}); check the year"),
            )),
            None => Ok(()),
        }
    }

    /// The dates, in order.
    pub fn dates(&self) -> &[Date] {
        &self.0
    }

    /// The first day.
    pub fn first(&self) -> Date {
        // Never empty: the constructor refuses an empty list.
        self.0.first().copied().unwrap_or_default()
    }

    /// The last day.
    pub fn last(&self) -> Date {
        self.0.last().copied().unwrap_or_default()
    }

    /// The dates as `YYYY-MM-DD` texts.
    pub fn to_strings(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }
}

impl fmt::Display for EventDates {
    /// `Sat 14 Nov 2026` or `Sat 14 Nov 2026, Sun 15 Nov 2026`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days: Vec<String> = self.0.iter().map(|d| fmt_day(*d)).collect();
        f.write_str(&days.join(", "))
    }
}

/// `Some(text)` → parsed; an empty text means "remove" (`Some(None)`); absent → `None`.
pub(crate) fn clearable<T>(
    value: Option<&str>,
    parse: impl FnOnce(&str) -> Result<T, ServiceError>,
) -> Result<Option<Option<T>>, ServiceError> {
    match value {
        None => Ok(None),
        Some(t) if t.trim().is_empty() => Ok(Some(None)),
        Some(t) => parse(t).map(|v| Some(Some(v))),
    }
}

/// A clearable time argument (empty text removes it).
pub(crate) fn clearable_time(
    field: &str,
    value: Option<&str>,
) -> Result<Option<Option<Time>>, ServiceError> {
    clearable(value, |t| parse_time(field, t))
}

/// A clearable local date-time argument (empty text removes it).
pub(crate) fn clearable_datetime(
    field: &str,
    value: Option<&str>,
) -> Result<Option<Option<DateTime>>, ServiceError> {
    clearable(value, |t| parse_datetime(field, t))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_in_24_hour_form() {
        assert_eq!(fmt_time(parse_time("t", "9:30").unwrap()), "09:30");
        assert_eq!(fmt_time(parse_time("t", "17:05:00").unwrap()), "17:05");
        assert_eq!(minutes_of(parse_time("t", "01:01").unwrap()), 61);
        for bad in ["25:00", "9", "9am", "09:5", "12:60", "", "1:00:0"] {
            let err = parse_time("start_time", bad).unwrap_err();
            assert!(
                err.to_string().starts_with("Invalid start_time: "),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn dates_and_datetimes_parse() {
        let d = parse_date("date", "2026-11-14").unwrap();
        assert_eq!(fmt_day(d), "Sat 14 Nov 2026");
        assert!(parse_date("date", "14/11/2026").is_err());
        assert!(parse_date("date", "2026-02-30").is_err());
        let dt = parse_datetime("closes_at", "2026-11-12 18:00").unwrap();
        assert_eq!(fmt_datetime(dt), "Thu 12 Nov 2026, 18:00");
        assert_eq!(
            parse_datetime("c", "2026-11-12").unwrap().time(),
            Time::new(23, 59, 0, 0).unwrap()
        );
        assert!(parse_datetime("c", "tomorrow").is_err());
    }

    #[test]
    fn event_dates_are_sorted_distinct_and_bounded() {
        let d = EventDates::parse(&["2026-11-15", "2026-11-14"]).unwrap();
        assert_eq!(d.to_strings(), ["2026-11-14", "2026-11-15"]);
        assert_eq!(d.to_string(), "Sat 14 Nov 2026, Sun 15 Nov 2026");
        assert!(EventDates::parse::<&str>(&[]).is_err());
        assert!(EventDates::parse(&["2026-11-14", "2026-11-14"]).is_err());
        assert!(
            EventDates::parse(&["2026-11-14", "2026-11-15", "2026-11-16", "2026-11-17"]).is_err()
        );
        let today = parse_date("d", "2026-11-15").unwrap();
        assert!(d.require_not_before(today, "UTC").is_err());
    }

    #[test]
    fn deadlines_are_read_in_the_events_zone() {
        let tz = TimeZone::get("Europe/Berlin").unwrap();
        let deadline = parse_datetime("c", "2026-11-12T18:00").unwrap();
        // 17:00 UTC is 18:00 in Berlin in November.
        let at = |s: &str| s.parse::<Timestamp>().unwrap().as_millisecond();
        assert!(!has_passed(deadline, &tz, at("2026-11-12T16:59:59Z")));
        assert!(has_passed(deadline, &tz, at("2026-11-12T17:00:00Z")));
        assert_eq!(
            local_now(at("2026-11-12T17:00:00Z"), &tz).time(),
            Time::new(18, 0, 0, 0).unwrap()
        );
    }
}
