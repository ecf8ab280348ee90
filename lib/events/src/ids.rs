//! Record ids: a kind prefix and a lowercase ULID (`e_01jd…`, `r_01jd…`). Made only by
//! `generate` (from the clock, time-sortable) or `parse`, which refuses anything else, so an
//! id can never smuggle a `#` into a key.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use steward_harness::{ActionId, Ctx, ServiceError};

/// Length of the ULID part of an id.
const ULID_CHARS: usize = 26;

/// Longest id text quoted back in a not-found message.
const QUOTED_CHARS_MAX: usize = 60;

/// An id that does not parse names no record: say so the way a missing record is reported.
fn not_found(what: &str, text: &str) -> ServiceError {
    let shown: String = text.chars().take(QUOTED_CHARS_MAX).collect();
    ServiceError::not_found(format!("{what} with id {shown:?}"))
}

macro_rules! record_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// The prefix every id of this kind starts with.
            pub const PREFIX: &'static str = $prefix;

            /// What the id names, in words ("event", "room", …).
            pub const WHAT: &'static str = $what;

            /// A fresh id, later than every id made before it in this process.
            pub fn generate(ctx: &Ctx) -> Self {
                let ulid = ActionId::generate(ctx.clock().as_ref()).to_string();
                Self(format!("{}{}", Self::PREFIX, ulid.to_ascii_lowercase()))
            }

            /// Parses an id as a caller wrote it (surrounding spaces and case are forgiven).
            /// Text that is not an id of this kind cannot name a record, so it is reported
            /// as not found.
            pub fn parse(text: &str) -> Result<Self, ServiceError> {
                let id = text.trim().to_ascii_lowercase();
                let well_formed = id
                    .strip_prefix(Self::PREFIX)
                    .is_some_and(|rest| {
                        rest.len() == ULID_CHARS
                            && rest.chars().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
                    });
                if well_formed {
                    Ok(Self(id))
                } else {
                    let what = format!("{}{}", Self::WHAT[..1].to_ascii_uppercase(), &Self::WHAT[1..]);
                    Err(not_found(&what, text))
                }
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

record_id!(
    /// Identifies an event of the user.
    EventId, "e_", "event"
);
record_id!(
    /// Identifies a room of an event.
    RoomId, "r_", "room"
);
record_id!(
    /// Identifies a session of an event.
    SessionId, "s_", "session"
);
record_id!(
    /// Identifies a person (a speaker) of an event.
    PersonId, "p_", "person"
);
record_id!(
    /// Identifies an attendee of an event.
    AttendeeId, "a_", "attendee"
);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_only_their_own_shape() {
        let ok = "e_01jd0000000000000000000000";
        assert_eq!(EventId::parse(ok).unwrap().as_str(), ok);
        assert_eq!(
            EventId::parse(" E_01JD0000000000000000000000 ")
                .unwrap()
                .as_str(),
            ok
        );
        assert!(RoomId::parse(ok).is_err(), "wrong prefix");
        assert!(EventId::parse("e_01jd000000000000000000000#").is_err());
        assert!(EventId::parse("e_short").is_err());
        let err = EventId::parse("spring open").unwrap_err();
        assert!(
            err.for_model()
                .starts_with("Event with id \"spring open\" was not found."),
            "{err}"
        );
    }
}
