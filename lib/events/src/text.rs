//! Checked pieces of text: names, titles, venues, descriptions. Each constructor trims,
//! bounds the length and refuses control characters (a description may hold line breaks) and
//! invisible formatting characters such as direction overrides
//! ([`steward_harness::display_text`]): all of it is shown to other people.
//! Stored records deserialize without re-checking: they were checked when written.

use std::fmt;

use serde::{Deserialize, Serialize};
use steward_harness::ServiceError;

/// Checks one piece of text for `field`: trimmed, 1 to `max_chars` characters, no control
/// characters except line breaks and tabs when `multiline`, no invisible formatting characters.
pub fn clean(
    field: &str,
    text: &str,
    max_chars: usize,
    multiline: bool,
) -> Result<String, ServiceError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ServiceError::invalid(field, "it is empty"));
    }
    let chars = text.chars().count();
    if chars > max_chars {
        return Err(ServiceError::invalid(
            field,
            format!("it is {chars} characters long; keep it to {max_chars}"),
        ));
    }
    let bad = |c: char| c.is_control() && !(multiline && matches!(c, '\n' | '\r' | '\t'));
    if text.chars().any(bad) {
        return Err(ServiceError::invalid(
            field,
            if multiline {
                "it contains control characters"
            } else {
                "it contains control characters (line breaks, tabs); keep it on one line"
            },
        ));
    }
    steward_harness::display_text::check_visible(field, text)?;
    Ok(text.to_owned())
}

macro_rules! bounded_text {
    ($(#[$doc:meta])* $name:ident, $field:literal, $max:expr, $multiline:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Longest accepted text, in characters.
            pub const CHARS_MAX: usize = $max;

            /// Checks `text` (see [`clean`]); errors name the field
            #[doc = concat!("`", $field, "`.")]
            pub fn parse(text: &str) -> Result<Self, ServiceError> {
                clean($field, text, Self::CHARS_MAX, $multiline).map(Self)
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

bounded_text!(
    /// An event's name ("Spring Open").
    EventName, "name", 120, false
);
bounded_text!(
    /// A room's name ("Aula").
    RoomName, "name", 80, false
);
bounded_text!(
    /// A session's title.
    SessionTitle, "title", 200, false
);
bounded_text!(
    /// A person's name, as they want it shown (a speaker or an attendee).
    PersonName, "name", 100, false
);
bounded_text!(
    /// Where an event takes place, in words ("Town Hall, Main St 1").
    Venue, "venue", 200, false
);
bounded_text!(
    /// An event's description for its public page.
    Description, "description", 4_000, true
);
bounded_text!(
    /// A track's name ("Beginners").
    TrackName, "track", 40, false
);

impl TrackName {
    /// Whether two track names mean the same track (case is ignored).
    pub fn same_as(&self, other: &str) -> bool {
        self.0.to_lowercase() == other.trim().to_lowercase()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn text_is_trimmed_bounded_and_single_line() {
        assert_eq!(
            EventName::parse("  Spring Open ").unwrap().as_str(),
            "Spring Open"
        );
        let err = EventName::parse("   ").unwrap_err();
        assert_eq!(err.to_string(), "Invalid name: it is empty");
        assert!(EventName::parse(&"x".repeat(121)).is_err());
        assert!(EventName::parse("a\nb").is_err());
        assert!(Description::parse("line one\nline two").is_ok());
        assert!(Description::parse("bell\u{7}").is_err());
        // Hostile text is data: allowed as long as it is bounded.
        assert!(PersonName::parse("<script>alert(1)</script>").is_ok());
    }

    /// Security review, info 18: what others see cannot be disguised with a direction
    /// override or invisible characters; the error names the field.
    #[test]
    fn bidi_and_invisible_characters_are_refused_in_shown_text() {
        let err = PersonName::parse("Mallory\u{202E}nimda").unwrap_err();
        assert!(err.to_string().starts_with("Invalid name:"), "{err}");
        assert!(err.to_string().contains("U+202E"), "{err}");
        assert!(SessionTitle::parse("Keynote\u{200B}").is_err());
        assert!(Venue::parse("\u{2067}Hall").is_err());
        let err = Description::parse("line\n\u{2066}two").unwrap_err();
        assert!(err.to_string().starts_with("Invalid description:"), "{err}");
        assert!(EventName::parse("Team 👩\u{200D}💻 day").is_ok());
    }

    #[test]
    fn tracks_compare_without_case() {
        let t = TrackName::parse("Beginners").unwrap();
        assert!(t.same_as(" beginners"));
        assert!(!t.same_as("Advanced"));
    }
}
