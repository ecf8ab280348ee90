//! Every key of the domain, in one place. Per-user records are built with [`Ctx::key`], so a
//! service function can only ever name the caller's own records: tenant isolation is
//! structural. The one global row, the public slug, is built with the harness's `index_key`.
//!
//! | pk | sk | what |
//! |---|---|---|
//! | `USER#u` | `EVENT#e` | an event |
//! | `USER#u` | `EVENT#e#ROOM#r` | a room of the event |
//! | `USER#u` | `EVENT#e#SESSION#s` | a session |
//! | `USER#u` | `EVENT#e#PERSON#p` | a person (speaker) |
//! | `USER#u` | `EVENT#e#ATTENDEE#a` | an attendee (registered or withdrawn) |
//! | `USER#u` | `EVENT#e#EMAIL#<address>` | the registered attendee with that address (uniqueness) |
//! | `USER#u` | `EVENT#e#REGISTRATIONS` | how many are registered; every registration changes it, so registrations serialize and capacity holds |
//! | `USER#u` | `EVENT#e#PROGRAM` | program settings (day window, lunch, changeover, rest) |
//! | `USER#u` | `EVENT#e#TIMETABLE` | the built timetable, with the input it was built from |
//! | `SLUG#<slug>` | `SLUG` | public address → (user, event) |

use steward_harness::{Ctx, RecordKey, ServiceError, keys::index_key};

use crate::email::Email;
use crate::ids::{AttendeeId, EventId, PersonId, RoomId, SessionId};
use crate::slug::Slug;

/// Sort-key prefix of every event and everything in it.
pub const EVENT_SK_PREFIX: &str = "EVENT#";

/// Kind of the global slug rows (`SLUG#<slug>` / `SLUG`).
pub const SLUG_KIND: &str = "SLUG";

/// A sort key past every event and everything in them (`$` sorts right after `#`).
pub const EVENTS_END_SK: &str = "EVENT$";

/// The first sort key after event `sk` and all of its records (`EVENT#<id>$` is past every
/// `EVENT#<id>#…`), to skip from one event to the next when listing.
pub fn after_event_records(sk: &str) -> String {
    format!("{sk}$")
}

/// Sort key of an event.
pub fn event_sk(event: &EventId) -> String {
    format!("{EVENT_SK_PREFIX}{event}")
}

/// The event's key.
pub fn event(ctx: &Ctx, event: &EventId) -> RecordKey {
    ctx.key(event_sk(event))
}

/// Sort-key prefix of everything inside an event (not the event itself).
pub fn children_prefix(event: &EventId) -> String {
    format!("{}#", event_sk(event))
}

/// Sort-key prefix of an event's rooms.
pub fn rooms_prefix(event: &EventId) -> String {
    format!("{}ROOM#", children_prefix(event))
}

/// A room's key.
pub fn room(ctx: &Ctx, event: &EventId, room: &RoomId) -> RecordKey {
    ctx.key(format!("{}{room}", rooms_prefix(event)))
}

/// Sort-key prefix of an event's sessions.
pub fn sessions_prefix(event: &EventId) -> String {
    format!("{}SESSION#", children_prefix(event))
}

/// A session's key.
pub fn session(ctx: &Ctx, event: &EventId, session: &SessionId) -> RecordKey {
    ctx.key(format!("{}{session}", sessions_prefix(event)))
}

/// Sort-key prefix of an event's people.
pub fn people_prefix(event: &EventId) -> String {
    format!("{}PERSON#", children_prefix(event))
}

/// A person's key.
pub fn person(ctx: &Ctx, event: &EventId, person: &PersonId) -> RecordKey {
    ctx.key(format!("{}{person}", people_prefix(event)))
}

/// Sort-key prefix of an event's attendees.
pub fn attendees_prefix(event: &EventId) -> String {
    format!("{}ATTENDEE#", children_prefix(event))
}

/// An attendee's key.
pub fn attendee(ctx: &Ctx, event: &EventId, attendee: &AttendeeId) -> RecordKey {
    ctx.key(format!("{}{attendee}", attendees_prefix(event)))
}

/// The key of the row that reserves `email` among the event's registered attendees.
pub fn email(ctx: &Ctx, event: &EventId, email: &Email) -> RecordKey {
    ctx.key(format!("{}EMAIL#{}", children_prefix(event), email.key()))
}

/// The key of the event's registration counter.
pub fn registrations(ctx: &Ctx, event: &EventId) -> RecordKey {
    ctx.key(format!("{}REGISTRATIONS", children_prefix(event)))
}

/// The key of the event's program settings.
pub fn program(ctx: &Ctx, event: &EventId) -> RecordKey {
    ctx.key(format!("{}PROGRAM", children_prefix(event)))
}

/// The key of the stamp of the event's timetable: which input it was built from (see
/// [`crate::schedule`]). Inside the event, so it goes wherever the event goes.
pub fn timetable(ctx: &Ctx, event: &EventId) -> RecordKey {
    ctx.key(format!("{}TIMETABLE", children_prefix(event)))
}

/// Sort-key prefix of timetable documents: outside the `EVENT#` range on purpose, so nothing
/// that walks an event's records (every turn's list of newest events) reads tens of kilobytes
/// of timetable to skip them.
pub const TIMETABLE_DOC_SK_PREFIX: &str = "TIMETABLE#";

/// The key of the event's timetable document (the timetable itself).
pub fn timetable_doc(ctx: &Ctx, event: &EventId) -> RecordKey {
    ctx.key(format!("{TIMETABLE_DOC_SK_PREFIX}{event}"))
}

/// The global row of a public slug.
pub fn slug(slug: &Slug) -> Result<RecordKey, ServiceError> {
    index_key(SLUG_KIND, slug.as_str())
}

/// What kind of domain record a sort key names (for describing undo), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// `EVENT#e`.
    Event,
    /// `EVENT#e#ROOM#r`.
    Room,
    /// `EVENT#e#SESSION#s`.
    Session,
    /// `EVENT#e#PERSON#p`.
    Person,
    /// `EVENT#e#ATTENDEE#a`.
    Attendee,
    /// `EVENT#e#PROGRAM`.
    Program,
    /// `EVENT#e#TIMETABLE`.
    Timetable,
    /// Bookkeeping rows: the registration counter, e-mail reservations, slugs.
    Bookkeeping,
}

impl RecordKind {
    /// The kind of the record at `pk`/`sk`.
    pub fn of(pk: &str, sk: &str) -> Option<Self> {
        if pk.starts_with("SLUG#") || sk.starts_with(TIMETABLE_DOC_SK_PREFIX) {
            // A timetable document changes with its stamp, which names it.
            return Some(Self::Bookkeeping);
        }
        let rest = sk.strip_prefix(EVENT_SK_PREFIX)?;
        let Some((_event, child)) = rest.split_once('#') else {
            return Some(Self::Event);
        };
        let kind = match child.split('#').next().unwrap_or_default() {
            "ROOM" => Self::Room,
            "SESSION" => Self::Session,
            "PERSON" => Self::Person,
            "ATTENDEE" => Self::Attendee,
            "PROGRAM" => Self::Program,
            "TIMETABLE" => Self::Timetable,
            _ => Self::Bookkeeping,
        };
        Some(kind)
    }

    /// The kind in words ("room"), or `None` for bookkeeping rows nobody needs to hear about.
    pub fn noun(self) -> Option<&'static str> {
        Some(match self {
            Self::Event => "event",
            Self::Room => "room",
            Self::Session => "session",
            Self::Person => "person",
            Self::Attendee => "attendee",
            Self::Program => "program settings",
            Self::Timetable => "timetable",
            Self::Bookkeeping => return None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_read_back_from_keys() {
        assert_eq!(
            RecordKind::of("USER#u", "EVENT#e_1"),
            Some(RecordKind::Event)
        );
        assert_eq!(
            RecordKind::of("USER#u", "EVENT#e_1#ROOM#r_1"),
            Some(RecordKind::Room)
        );
        assert_eq!(
            RecordKind::of("USER#u", "EVENT#e_1#EMAIL#a@b.c"),
            Some(RecordKind::Bookkeeping)
        );
        assert_eq!(
            RecordKind::of("SLUG#x", "SLUG"),
            Some(RecordKind::Bookkeeping)
        );
        assert_eq!(RecordKind::of("USER#u", "PROFILE"), None);
        assert_eq!(
            RecordKind::of("USER#u", "EVENT#e_1#TIMETABLE"),
            Some(RecordKind::Timetable)
        );
        assert_eq!(
            RecordKind::of("USER#u", "TIMETABLE#e_1"),
            Some(RecordKind::Bookkeeping)
        );
        // The document sorts outside every event's records.
        let doc = format!("{TIMETABLE_DOC_SK_PREFIX}e_1");
        assert!(!(EVENT_SK_PREFIX..EVENTS_END_SK).contains(&doc.as_str()));
    }
}
