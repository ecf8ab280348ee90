//! Sessions of an event: title, length, speakers, track, the sessions each must come after,
//! and what room it needs (a minimum of seats, or one specific room).
//!
//! Rules checked here, so the timetable engine only ever sees consistent input: a track must
//! be one of the event's tracks; "after" names other sessions of the same event and never
//! makes a circle; a required room exists and has the seats asked for. Removing a session also
//! drops it from other sessions' "after" lists, in the same step.

use std::collections::{BTreeMap, BTreeSet};

use steward_harness::{Audited, Ctx, ServiceError};
use steward_store::Item;

use crate::events::{self, Event, check_capacity};
use crate::ids::{EventId, RoomId, SessionId};
use crate::keys;
use crate::limits::{SESSION_AFTER_MAX, SESSION_MINUTES_MAX, SESSION_SPEAKERS_MAX, SESSIONS_MAX};
use crate::people::{self, Person};
use crate::planned::{Changed, Field, Planned, Record, Updated, join_words};
use crate::rooms::{self, Room};
pub use crate::session_record::Session;
pub(crate) use crate::session_record::{sessions_of, sessions_with_items};
use crate::store;
use crate::text::{SessionTitle, TrackName};

/// A new session, as asked. Speakers are person ids or names (see
/// [`people::resolve_speakers`]); the track is matched against the event's tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// Title.
    pub title: SessionTitle,
    /// Length in minutes.
    pub duration_minutes: u16,
    /// Speakers: person ids or names.
    pub speakers: Vec<String>,
    /// Track name.
    pub track: Option<String>,
    /// Sessions it must come after.
    pub after: Vec<SessionId>,
    /// Seats needed.
    pub min_capacity: Option<u32>,
    /// Required room.
    pub room: Option<RoomId>,
}

/// Changes to a session; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionChanges {
    /// New title.
    pub title: Option<SessionTitle>,
    /// New length.
    pub duration_minutes: Option<u16>,
    /// The new full list of speakers (ids or names).
    pub speakers: Option<Vec<String>>,
    /// New track (`Some(None)` removes it).
    pub track: Option<Option<String>>,
    /// The new full list of sessions it must come after.
    pub after: Option<Vec<SessionId>>,
    /// New seats needed (`Some(None)` removes it).
    pub min_capacity: Option<Option<u32>>,
    /// New required room (`Some(None)` removes it).
    pub room: Option<Option<RoomId>>,
}

/// A session together with the people created for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionWithSpeakers {
    /// The session.
    pub session: Session,
    /// Its speakers' names, in order.
    pub speaker_names: Vec<String>,
    /// Names of people created because a speaker name was new.
    pub new_people: Vec<String>,
}

/// A field of a session that an update changes, in the order summaries name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SessionField {
    /// The title.
    Title,
    /// The length.
    Length,
    /// The speakers.
    Speakers,
    /// The track.
    Track,
    /// The sessions it must come after.
    Order,
    /// The seats its room must have.
    SeatsNeeded,
    /// The room it must be held in.
    Room,
}

impl Field for SessionField {
    fn label(self) -> &'static str {
        match self {
            Self::Title => "title",
            Self::Length => "length",
            Self::Speakers => "speakers",
            Self::Track => "track",
            Self::Order => "order",
            Self::SeatsNeeded => "seats needed",
            Self::Room => "room",
        }
    }
}

impl Record for SessionWithSpeakers {
    type Field = SessionField;
}

/// A removed session, and the sessions that no longer have to come after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedSession {
    /// The session as it was.
    pub session: Session,
    /// Titles of sessions whose "after" list it was dropped from.
    pub detached: Vec<String>,
}

/// The missing-session error.
pub fn session_not_found(event: &Event, id: &str) -> ServiceError {
    ServiceError::not_found(format!("Session {id} in event {}", event.quoted()))
}

/// The event's sessions, in creation order.
pub async fn list_sessions(ctx: &Ctx, event: &EventId) -> Result<Vec<Session>, ServiceError> {
    events::load_event(ctx, event).await?;
    sessions_of(ctx, event).await
}

/// One session of an event.
pub async fn get_session(
    ctx: &Ctx,
    event: &EventId,
    id: &SessionId,
) -> Result<Session, ServiceError> {
    let (event, _) = events::load_event(ctx, event).await?;
    Ok(load_session(ctx, &event, id).await?.0)
}

async fn load_session(
    ctx: &Ctx,
    event: &Event,
    id: &SessionId,
) -> Result<(Session, Item), ServiceError> {
    store::load(ctx, &keys::session(ctx, &event.id, id), || {
        session_not_found(event, id.as_str())
    })
    .await
}

fn check_duration(minutes: u16) -> Result<(), ServiceError> {
    if minutes == 0 || minutes > SESSION_MINUTES_MAX {
        return Err(ServiceError::invalid(
            "duration_minutes",
            format!("{minutes} is not a session length; give 1 to {SESSION_MINUTES_MAX} minutes"),
        ));
    }
    Ok(())
}

fn resolve_track(event: &Event, track: Option<&str>) -> Result<Option<TrackName>, ServiceError> {
    let Some(name) = track else {
        return Ok(None);
    };
    match event.track(name) {
        Some(t) => Ok(Some(t.clone())),
        None if event.tracks.is_empty() => Err(ServiceError::invalid(
            "track",
            format!(
                "event {} has no tracks; add \"{}\" to its tracks with update_event first, or leave the track out",
                event.quoted(),
                name.trim()
            ),
        )),
        None => {
            let names: Vec<String> = event.tracks.iter().map(|t| format!("\"{t}\"")).collect();
            Err(ServiceError::invalid(
                "track",
                format!(
                    "event {} has no track \"{}\"; its tracks are {}",
                    event.quoted(),
                    name.trim(),
                    join_words(&names)
                ),
            ))
        }
    }
}

fn check_room_needs(
    event: &Event,
    rooms: &[Room],
    room: Option<&RoomId>,
    min_capacity: Option<u32>,
) -> Result<(), ServiceError> {
    if let Some(c) = min_capacity {
        check_capacity("min_capacity", c)?;
        if !rooms.is_empty() && rooms.iter().all(|r| r.capacity < c) {
            let biggest = rooms.iter().map(|r| r.capacity).max().unwrap_or(0);
            return Err(ServiceError::invalid(
                "min_capacity",
                format!(
                    "no room of event {} has {c} seats (the biggest has {biggest})",
                    event.quoted()
                ),
            ));
        }
    }
    if let Some(id) = room {
        let Some(r) = rooms.iter().find(|r| &r.id == id) else {
            return Err(rooms::room_not_found(event, id));
        };
        if let Some(c) = min_capacity
            && r.capacity < c
        {
            return Err(ServiceError::invalid(
                "min_capacity",
                format!(
                    "the session needs {c} seats but room {} has {}",
                    r.quoted(),
                    r.capacity
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `after` of `session` against the other sessions: known, not itself, bounded, and
/// no circle through the whole graph.
fn check_after(event: &Event, session: &Session, others: &[Session]) -> Result<(), ServiceError> {
    if session.after.len() > SESSION_AFTER_MAX {
        return Err(ServiceError::invalid(
            "after",
            format!("a session can come after at most {SESSION_AFTER_MAX} others"),
        ));
    }
    let mut graph: BTreeMap<&SessionId, &[SessionId]> =
        others.iter().map(|s| (&s.id, s.after.as_slice())).collect();
    graph.insert(&session.id, &session.after);
    for a in &session.after {
        if a == &session.id {
            return Err(ServiceError::invalid(
                "after",
                format!("{} cannot come after itself", session.quoted()),
            ));
        }
        if !graph.contains_key(a) {
            return Err(session_not_found(event, a.as_str()));
        }
    }
    // Depth-first from the session along "after": reaching it again is a circle.
    let mut stack: Vec<&SessionId> = session.after.iter().collect();
    let mut seen = BTreeSet::new();
    while let Some(id) = stack.pop() {
        if id == &session.id {
            return Err(ServiceError::invalid(
                "after",
                format!(
                    "that would make {} come after itself (through the sessions it must follow)",
                    session.quoted()
                ),
            ));
        }
        if seen.insert(id) {
            stack.extend(graph.get(id).copied().unwrap_or_default());
        }
    }
    Ok(())
}

/// Everything a session check needs to read about its event.
struct Surroundings {
    event: Event,
    event_item: Item,
    sessions: Vec<(Session, Item)>,
    rooms: Vec<Room>,
    people: Vec<Person>,
}

async fn surroundings(ctx: &Ctx, event: &EventId) -> Result<Surroundings, ServiceError> {
    let (event, event_item) = events::load_changeable(ctx, event).await?;
    Ok(Surroundings {
        sessions: sessions_with_items(ctx, &event.id).await?,
        rooms: rooms::rooms_of(ctx, &event.id).await?,
        people: people::people_of(ctx, &event.id).await?,
        event,
        event_item,
    })
}

fn resolve_speakers(
    ctx: &Ctx,
    s: &Surroundings,
    entries: &[String],
) -> Result<people::Speakers, ServiceError> {
    if entries.len() > SESSION_SPEAKERS_MAX {
        return Err(ServiceError::invalid(
            "speakers",
            format!("a session has at most {SESSION_SPEAKERS_MAX} speakers"),
        ));
    }
    people::resolve_speakers(ctx, &s.event, &s.people, entries)
}

fn with_speakers(
    session: Session,
    people: &[Person],
    speakers: &people::Speakers,
) -> SessionWithSpeakers {
    let all: Vec<Person> = people
        .iter()
        .chain(speakers.new_people.iter())
        .cloned()
        .collect();
    SessionWithSpeakers {
        speaker_names: people::names_of(&all, &session.speakers),
        new_people: speakers
            .new_people
            .iter()
            .map(|p| p.name.to_string())
            .collect(),
        session,
    }
}

/// Plans adding a session (and any new speakers named in it).
pub async fn add_session(
    ctx: &Ctx,
    event: &EventId,
    new: NewSession,
) -> Result<Planned<SessionWithSpeakers>, ServiceError> {
    let s = surroundings(ctx, event).await?;
    if s.sessions.len() >= SESSIONS_MAX {
        return Err(ServiceError::invalid(
            "title",
            format!(
                "event {} already has {SESSIONS_MAX} sessions",
                s.event.quoted()
            ),
        ));
    }
    check_duration(new.duration_minutes)?;
    let speakers = resolve_speakers(ctx, &s, &new.speakers)?;
    let session = Session {
        id: SessionId::generate(ctx),
        event: s.event.id.clone(),
        title: new.title,
        duration_minutes: new.duration_minutes,
        speakers: speakers.ids.clone(),
        track: resolve_track(&s.event, new.track.as_deref())?,
        after: dedup(new.after),
        min_capacity: new.min_capacity,
        room: new.room,
    };
    check_room_needs(
        &s.event,
        &s.rooms,
        session.room.as_ref(),
        session.min_capacity,
    )?;
    let others: Vec<Session> = s.sessions.iter().map(|(x, _)| x.clone()).collect();
    check_after(&s.event, &session, &others)?;
    let mut tx = Audited::new(ctx)
        .label(format!(
            "Add session {} to {}",
            session.quoted(),
            s.event.quoted()
        ))
        .require_unchanged(&s.event_item)
        .put_new(keys::session(ctx, &s.event.id, &session.id), &session);
    for p in &speakers.new_people {
        tx = tx.put_new(keys::person(ctx, &s.event.id, &p.id), p);
    }
    Ok(Planned::new(
        tx,
        with_speakers(session, &s.people, &speakers),
    ))
}

fn dedup(ids: Vec<SessionId>) -> Vec<SessionId> {
    let mut out: Vec<SessionId> = Vec::with_capacity(ids.len());
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// Plans changing a session (and creating any new speakers named in it).
pub async fn update_session(
    ctx: &Ctx,
    event: &EventId,
    id: &SessionId,
    changes: SessionChanges,
) -> Result<Planned<Updated<SessionWithSpeakers>>, ServiceError> {
    if changes == SessionChanges::default() {
        return Err(ServiceError::invalid(
            "(arguments)",
            "nothing to change; give at least one field",
        ));
    }
    let s = surroundings(ctx, event).await?;
    let Some((old, item)) = s.sessions.iter().find(|(x, _)| &x.id == id).cloned() else {
        return Err(session_not_found(&s.event, id.as_str()));
    };
    let mut new = old.clone();
    let mut changed = Changed::new();
    let mut speakers = people::Speakers::default();
    changed.set(SessionField::Title, &mut new.title, changes.title);
    if let Some(d) = changes.duration_minutes
        && d != old.duration_minutes
    {
        check_duration(d)?;
        new.duration_minutes = d;
        changed.insert(SessionField::Length);
    }
    if let Some(entries) = &changes.speakers {
        speakers = resolve_speakers(ctx, &s, entries)?;
        changed.set(
            SessionField::Speakers,
            &mut new.speakers,
            Some(speakers.ids.clone()),
        );
    }
    if let Some(t) = &changes.track {
        let track = resolve_track(&s.event, t.as_deref())?;
        changed.set(SessionField::Track, &mut new.track, Some(track));
    }
    changed.set(
        SessionField::Order,
        &mut new.after,
        changes.after.map(dedup),
    );
    changed.set(
        SessionField::SeatsNeeded,
        &mut new.min_capacity,
        changes.min_capacity,
    );
    changed.set(SessionField::Room, &mut new.room, changes.room);
    if changed.is_empty() {
        return Ok(Planned::unchanged(
            ctx,
            Updated::unchanged(with_speakers(old, &s.people, &people::Speakers::default())),
        ));
    }
    check_room_needs(&s.event, &s.rooms, new.room.as_ref(), new.min_capacity)?;
    let others: Vec<Session> = s
        .sessions
        .iter()
        .filter(|(x, _)| &x.id != id)
        .map(|(x, _)| x.clone())
        .collect();
    check_after(&s.event, &new, &others)?;
    let mut tx = Audited::new(ctx)
        .label(format!(
            "Change session {} of {}",
            old.quoted(),
            s.event.quoted()
        ))
        .require_unchanged(&s.event_item)
        .replace(&item, &new);
    // Only people the new speaker list really uses are created.
    speakers.new_people.retain(|p| new.speakers.contains(&p.id));
    for p in &speakers.new_people {
        tx = tx.put_new(keys::person(ctx, &s.event.id, &p.id), p);
    }
    Ok(Planned::new(
        tx,
        Updated {
            record: with_speakers(new, &s.people, &speakers),
            changed,
        },
    ))
}

/// Plans removing a session; sessions that had to come after it no longer do.
pub async fn remove_session(
    ctx: &Ctx,
    event: &EventId,
    id: &SessionId,
) -> Result<Planned<RemovedSession>, ServiceError> {
    let (event, _) = events::load_changeable(ctx, event).await?;
    let sessions = sessions_with_items(ctx, &event.id).await?;
    let Some((session, item)) = sessions.iter().find(|(x, _)| &x.id == id).cloned() else {
        return Err(session_not_found(&event, id.as_str()));
    };
    let mut tx = Audited::new(ctx)
        .label(format!(
            "Remove session {} from {}",
            session.quoted(),
            event.quoted()
        ))
        .delete(&item);
    let mut detached = Vec::new();
    for (other, other_item) in &sessions {
        if other.after.contains(id) {
            let mut changed = other.clone();
            changed.after.retain(|a| a != id);
            tx = tx.replace(other_item, &changed);
            detached.push(other.title.to_string());
        }
    }
    Ok(Planned::new(tx, RemovedSession { session, detached }))
}
