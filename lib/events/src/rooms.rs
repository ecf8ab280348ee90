//! Rooms of an event: name (unique in the event), seats, and the hours they can be used.
//!
//! A room that a session requires cannot be removed (change the session first); a room the
//! built timetable uses can, and the timetable then reports itself out of date.

use jiff::civil::Time;
use serde::{Deserialize, Serialize};
use steward_harness::{Audited, Ctx, ServiceError};

use crate::events::{self, Event, check_capacity};
use crate::ids::{EventId, RoomId};
use crate::keys;
use crate::limits::ROOMS_MAX;
use crate::planned::{Changed, Field, Planned, Record, Updated};
use crate::rules;
use crate::store;
use crate::text::RoomName;
use crate::when;

/// A room sessions can be held in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Room {
    /// Its id.
    pub id: RoomId,
    /// The event it belongs to.
    pub event: EventId,
    /// Its name, unique in the event.
    pub name: RoomName,
    /// Seats.
    pub capacity: u32,
    /// Usable from this time each day (default: the start of the day).
    pub available_from: Option<Time>,
    /// Usable until this time each day (default: the end of the day).
    pub available_until: Option<Time>,
}

impl Room {
    /// `"Aula"`, quoted for summaries.
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.name)
    }
}

/// A field of a [`Room`] that an update changes, in the order summaries name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RoomField {
    /// The name.
    Name,
    /// The seats.
    Capacity,
    /// The hours it can be used ("from" or "until").
    Hours,
}

impl Field for RoomField {
    fn label(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Capacity => "capacity",
            Self::Hours => "hours",
        }
    }
}

impl Record for Room {
    type Field = RoomField;
}

/// A new room, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRoom {
    /// Its name.
    pub name: RoomName,
    /// Seats.
    pub capacity: u32,
    /// Usable from.
    pub available_from: Option<Time>,
    /// Usable until.
    pub available_until: Option<Time>,
}

/// Changes to a room; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoomChanges {
    /// A new name.
    pub name: Option<RoomName>,
    /// New seats.
    pub capacity: Option<u32>,
    /// New "from" (`Some(None)` removes it).
    pub available_from: Option<Option<Time>>,
    /// New "until" (`Some(None)` removes it).
    pub available_until: Option<Option<Time>>,
}

/// The missing-room error.
pub fn room_not_found(event: &Event, id: &RoomId) -> ServiceError {
    ServiceError::not_found(format!("Room {id} in event {}", event.quoted()))
}

/// The event's rooms, in creation order, without checking the event exists.
pub(crate) async fn rooms_of(ctx: &Ctx, event: &EventId) -> Result<Vec<Room>, ServiceError> {
    store::list_values(ctx, &keys::rooms_prefix(event), ROOMS_MAX).await
}

/// The event's rooms, in creation order.
pub async fn list_rooms(ctx: &Ctx, event: &EventId) -> Result<Vec<Room>, ServiceError> {
    events::load_event(ctx, event).await?;
    rooms_of(ctx, event).await
}

pub(crate) async fn load_room(
    ctx: &Ctx,
    event: &Event,
    id: &RoomId,
) -> Result<(Room, steward_store::Item), ServiceError> {
    store::load(ctx, &keys::room(ctx, &event.id, id), || {
        room_not_found(event, id)
    })
    .await
}

/// One room of an event.
pub async fn get_room(ctx: &Ctx, event: &EventId, id: &RoomId) -> Result<Room, ServiceError> {
    let (event, _) = events::load_event(ctx, event).await?;
    Ok(load_room(ctx, &event, id).await?.0)
}

fn check_room(room: &Room) -> Result<(), ServiceError> {
    check_capacity("capacity", room.capacity)?;
    if let (Some(from), Some(until)) = (room.available_from, room.available_until)
        && until <= from
    {
        return Err(ServiceError::invalid(
            "available_until",
            format!(
                "the room is available until {} but only from {}; the end must be later",
                when::fmt_time(until),
                when::fmt_time(from)
            ),
        ));
    }
    Ok(())
}

fn ensure_unique_name(
    event: &Event,
    rooms: &[Room],
    name: &RoomName,
    except: Option<&RoomId>,
) -> Result<(), ServiceError> {
    let taken = rooms.iter().any(|r| {
        Some(&r.id) != except && r.name.as_str().to_lowercase() == name.as_str().to_lowercase()
    });
    if taken {
        return Err(ServiceError::already_exists(format!(
            "A room named \"{name}\" in event {}",
            event.quoted()
        )));
    }
    Ok(())
}

/// Plans adding a room. Refuses a cancelled event, a duplicate name and more than
/// [`ROOMS_MAX`] rooms.
pub async fn add_room(
    ctx: &Ctx,
    event: &EventId,
    new: NewRoom,
) -> Result<Planned<Room>, ServiceError> {
    let (event, event_item) = events::load_changeable(ctx, event).await?;
    let rooms = rooms_of(ctx, &event.id).await?;
    if rooms.len() >= ROOMS_MAX {
        return Err(ServiceError::invalid(
            "name",
            format!(
                "event {} already has {ROOMS_MAX} rooms, the most one event can have",
                event.quoted()
            ),
        ));
    }
    ensure_unique_name(&event, &rooms, &new.name, None)?;
    let room = Room {
        id: RoomId::generate(ctx),
        event: event.id.clone(),
        name: new.name,
        capacity: new.capacity,
        available_from: new.available_from,
        available_until: new.available_until,
    };
    check_room(&room)?;
    let tx = Audited::new(ctx)
        .label(format!("Add room {} to {}", room.quoted(), event.quoted()))
        .require_unchanged(&event_item)
        .put_new(keys::room(ctx, &event.id, &room.id), &room);
    Ok(Planned::new(tx, room))
}

/// Plans changing a room. Refuses a duplicate name, and fewer seats than a session that must
/// be in this room needs.
pub async fn update_room(
    ctx: &Ctx,
    event: &EventId,
    id: &RoomId,
    changes: RoomChanges,
) -> Result<Planned<Updated<Room>>, ServiceError> {
    if changes == RoomChanges::default() {
        return Err(ServiceError::invalid(
            "(arguments)",
            "nothing to change; give at least one field",
        ));
    }
    let (event, _) = events::load_changeable(ctx, event).await?;
    let (old, item) = load_room(ctx, &event, id).await?;
    let mut new = old.clone();
    let mut changed = Changed::new();
    if let Some(name) = changes.name
        && name != old.name
    {
        ensure_unique_name(&event, &rooms_of(ctx, &event.id).await?, &name, Some(id))?;
        new.name = name;
        changed.insert(RoomField::Name);
    }
    changed.set(RoomField::Capacity, &mut new.capacity, changes.capacity);
    changed.set(
        RoomField::Hours,
        &mut new.available_from,
        changes.available_from,
    );
    changed.set(
        RoomField::Hours,
        &mut new.available_until,
        changes.available_until,
    );
    if changed.is_empty() {
        return Ok(Planned::unchanged(ctx, Updated::unchanged(old)));
    }
    check_room(&new)?;
    if changed.contains(RoomField::Capacity) {
        rules::room_seats_suffice(ctx, &event.id, id, new.capacity).await?;
    }
    let tx = Audited::new(ctx)
        .label(format!(
            "Change room {} of {}",
            old.quoted(),
            event.quoted()
        ))
        .replace(&item, &new);
    Ok(Planned::new(
        tx,
        Updated {
            record: new,
            changed,
        },
    ))
}

/// Plans removing a room. Refuses when a session must be held in it.
pub async fn remove_room(
    ctx: &Ctx,
    event: &EventId,
    id: &RoomId,
) -> Result<Planned<Room>, ServiceError> {
    let (event, _) = events::load_changeable(ctx, event).await?;
    let (room, item) = load_room(ctx, &event, id).await?;
    rules::room_not_required(ctx, &event.id, id, &room.quoted()).await?;
    let tx = Audited::new(ctx)
        .label(format!(
            "Remove room {} from {}",
            room.quoted(),
            event.quoted()
        ))
        .delete(&item);
    Ok(Planned::new(tx, room))
}
