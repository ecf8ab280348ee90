//! Cross-record rules: what a change to one record must respect in the other records of its
//! event. A track that a session uses stays among the event's tracks; a room that a session
//! must be held in keeps the seats the session needs, and is not removed.
//!
//! Below the record modules: [`crate::events`] and [`crate::rooms`] check these rules without
//! depending on [`crate::sessions`] (which depends on them to check a session's event, rooms
//! and speakers). The sessions are read through [`crate::session_record`].

use steward_harness::{Ctx, ServiceError};

use crate::ids::{EventId, RoomId};
use crate::planned::join_words;
use crate::session_record::sessions_of;

/// Every track a session of `event` uses is still a track: `has_track` answers for the
/// event's new list of tracks.
pub(crate) async fn tracks_in_use_kept(
    ctx: &Ctx,
    event: &EventId,
    has_track: impl Fn(&str) -> bool,
) -> Result<(), ServiceError> {
    for s in sessions_of(ctx, event).await? {
        if let Some(track) = &s.track
            && !has_track(track.as_str())
        {
            return Err(ServiceError::invalid(
                "tracks",
                format!(
                    "the session \"{}\" is in the track \"{track}\"; move it to another track first",
                    s.title
                ),
            ));
        }
    }
    Ok(())
}

/// A room keeps the seats of every session that must be held in it.
pub(crate) async fn room_seats_suffice(
    ctx: &Ctx,
    event: &EventId,
    room: &RoomId,
    capacity: u32,
) -> Result<(), ServiceError> {
    for s in sessions_of(ctx, event).await? {
        if s.room.as_ref() == Some(room) && s.min_capacity.unwrap_or(0) > capacity {
            return Err(ServiceError::invalid(
                "capacity",
                format!(
                    "the session \"{}\" must be in this room and needs {} seats",
                    s.title,
                    s.min_capacity.unwrap_or(0)
                ),
            ));
        }
    }
    Ok(())
}

/// No session must be held in the room (`quoted` is its name for the message).
pub(crate) async fn room_not_required(
    ctx: &Ctx,
    event: &EventId,
    room: &RoomId,
    quoted: &str,
) -> Result<(), ServiceError> {
    let needing: Vec<String> = sessions_of(ctx, event)
        .await?
        .into_iter()
        .filter(|s| s.room.as_ref() == Some(room))
        .map(|s| format!("\"{}\"", s.title))
        .collect();
    if needing.is_empty() {
        return Ok(());
    }
    Err(ServiceError::forbidden(format!(
        "room {quoted} cannot be removed: the session(s) {} must be held in it; change or remove those sessions first",
        join_words(&needing)
    )))
}
