//! The session record (`EVENT#e#SESSION#s`) and the reads of it. A leaf below the record
//! modules: the cross-record rules ([`crate::rules`]) read sessions through it without
//! depending on the session operations in [`crate::sessions`], which check events, rooms and
//! people.

use serde::{Deserialize, Serialize};
use steward_harness::{Ctx, ServiceError};
use steward_store::Item;

use crate::ids::{EventId, PersonId, RoomId, SessionId};
use crate::keys;
use crate::limits::SESSIONS_MAX;
use crate::store;
use crate::text::{SessionTitle, TrackName};

/// A session to be scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// Its id.
    pub id: SessionId,
    /// The event it belongs to.
    pub event: EventId,
    /// Its title.
    pub title: SessionTitle,
    /// Its length in minutes.
    pub duration_minutes: u16,
    /// Its speakers (people of the event).
    pub speakers: Vec<PersonId>,
    /// Its track, one of the event's.
    pub track: Option<TrackName>,
    /// Sessions that must have finished before it starts.
    pub after: Vec<SessionId>,
    /// Seats its room must have.
    pub min_capacity: Option<u32>,
    /// The room it must be held in.
    pub room: Option<RoomId>,
}

impl Session {
    /// `"Keynote"`, quoted for summaries.
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.title)
    }
}

/// The event's sessions with their stored items, in creation order, without checking the
/// event exists.
pub(crate) async fn sessions_with_items(
    ctx: &Ctx,
    event: &EventId,
) -> Result<Vec<(Session, Item)>, ServiceError> {
    store::list(ctx, &keys::sessions_prefix(event), SESSIONS_MAX).await
}

/// The event's sessions, without checking the event exists.
pub(crate) async fn sessions_of(ctx: &Ctx, event: &EventId) -> Result<Vec<Session>, ServiceError> {
    store::list_values(ctx, &keys::sessions_prefix(event), SESSIONS_MAX).await
}
