//! [`Fields`]: a posted form as name/value pairs (repeatable names allowed), kept whole so a
//! form with a problem comes back exactly as typed, and parsing helpers with readable errors.

use std::str::FromStr;

use jiff::civil::{Date, Time};
use serde::Deserialize;
use steward_events::when;
use steward_harness::ServiceError;

use crate::csrf::CSRF_FIELD;

/// The field a confirmation page adds to re-post a risky action.
pub const CONFIRM_FIELD: &str = "confirm";

/// A posted form.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct Fields(Vec<(String, String)>);

impl Fields {
    /// Fields from pairs (tests, and re-posting).
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        Self(pairs)
    }

    /// The first value of `name`, or "" when absent.
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// Every value of `name` (a multiple select), in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Whether the person confirmed the action on the confirmation page.
    pub fn confirmed(&self) -> bool {
        self.get(CONFIRM_FIELD) == "yes"
    }

    /// The fields to carry over to a confirmation page: all but the token and `confirm`.
    pub fn carried(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .filter(|(k, _)| k != CSRF_FIELD && k != CONFIRM_FIELD)
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The trimmed value of `name`, `None` when empty.
    pub fn opt(&self, name: &str) -> Option<&str> {
        Some(self.get(name).trim()).filter(|v| !v.is_empty())
    }
}

/// A whole number typed in a form field (`None` when left empty), with a message naming the
/// field in words and an example.
pub fn number<T: FromStr>(
    field: &str,
    what: &str,
    text: &str,
    example: &str,
) -> Result<Option<T>, ServiceError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<T>().map(Some).map_err(|_| {
        ServiceError::invalid(
            field,
            format!("\"{text}\" is not {what}; give a whole number like {example}"),
        )
    })
}

/// An optional time of day (`None` when empty).
pub fn time(field: &str, text: &str) -> Result<Option<Time>, ServiceError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    when::parse_time(field, text).map(Some)
}

/// A required date.
pub fn date(field: &str, text: &str) -> Result<Date, ServiceError> {
    if text.trim().is_empty() {
        return Err(ServiceError::invalid(field, "give a date"));
    }
    when::parse_date(field, text)
}

/// The consecutive days from `first` to `last` (inclusive). More days than an event may have
/// are returned only up to one past the limit, for the domain to refuse with its message.
pub fn day_range(first: Date, last: Option<Date>) -> Result<Vec<Date>, ServiceError> {
    let Some(last) = last else {
        return Ok(vec![first]);
    };
    if last < first {
        return Err(ServiceError::invalid(
            "last_date",
            "the last day is before the first; give a later last day or leave it empty",
        ));
    }
    let mut days = vec![first];
    let mut day = first;
    while day < last && days.len() <= steward_events::limits::EVENT_DAYS_MAX {
        day = day
            .tomorrow()
            .map_err(|_| ServiceError::invalid("last_date", "that date is out of range"))?;
        days.push(day);
    }
    Ok(days)
}

/// A comma-separated list, trimmed, empty entries dropped.
pub fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn numbers_say_what_is_wrong() {
        assert_eq!(
            number::<u32>("capacity", "a number of seats", " 40 ", "40").unwrap(),
            Some(40)
        );
        assert_eq!(
            number::<u32>("capacity", "a number of seats", "", "40").unwrap(),
            None
        );
        let e = number::<u32>("capacity", "a number of seats", "abc", "40").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid capacity: \"abc\" is not a number of seats; give a whole number like 40"
        );
    }

    #[test]
    fn day_ranges_are_consecutive_and_bounded() {
        let d = Date::constant(2026, 6, 15);
        assert_eq!(day_range(d, None).unwrap().len(), 1);
        assert_eq!(
            day_range(d, Some(Date::constant(2026, 6, 16)))
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            day_range(d, Some(Date::constant(2027, 6, 16)))
                .unwrap()
                .len(),
            4
        );
        assert!(day_range(d, Some(Date::constant(2026, 6, 1))).is_err());
    }

    #[test]
    fn confirmation_carries_everything_but_the_token() {
        let f = Fields::from_pairs(vec![
            ("csrf".into(), "t".into()),
            ("name".into(), "x".into()),
            ("confirm".into(), "yes".into()),
        ]);
        assert!(f.confirmed());
        assert_eq!(f.carried().collect::<Vec<_>>(), vec![("name", "x")]);
        assert_eq!(list(" a, ,b "), vec!["a", "b"]);
    }
}
