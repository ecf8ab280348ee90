//! Events: the record, its lifecycle (draft → published → cancelled, and reopen), its public
//! slug, its registration settings, and listing.
//!
//! Rules:
//! * A new event is a draft with a public slug reserved at once (generated from the name;
//!   a taken slug gets a numbered suffix), so its link can be shared before publishing.
//! * A cancelled event is read-only until reopened: every change to it or its records is
//!   refused with a message saying so.
//! * Only a draft without attendees can be deleted (with everything in it); a published event
//!   is cancelled instead, so the people registered for it are not silently dropped.
//! * An address an event gives up (a slug change, or deleting the event) stays reserved to its
//!   organiser for [`SLUG_RESERVED_SECS`]: the `SLUG#` row becomes a tombstone with a TTL that
//!   says where the event went, `/e/<old>` redirects there, and another account cannot take
//!   the address (a link already shared cannot be hijacked). The owner may reuse it.

use jiff::civil::{Date, DateTime, Time};
use serde::{Deserialize, Serialize};
use steward_harness::{Audited, Ctx, ServiceError, TimeZoneName, UserId, accounts};
use steward_store::{Item, Query, RawItem, SortKey, Table};

use crate::ids::EventId;
use crate::keys;
use crate::limits::{
    CAPACITY_MAX, EVENTS_LISTED_MAX, SLUG_RESERVED_SECS, SLUG_SUFFIX_TRIES_MAX, TRACKS_MAX,
};
use crate::planned::{Changed, Field, Planned, Record, Updated};
use crate::rules;
use crate::slug::Slug;
use crate::store;
use crate::text::{Description, EventName, TrackName, Venue};
use crate::when::{self, EventDates};

/// Where an event is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventStatus {
    /// Being prepared; its page is not public.
    Draft,
    /// Its page is public and (if open) takes registrations.
    Published,
    /// Called off; read-only until reopened.
    Cancelled,
}

impl EventStatus {
    /// The status in words.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Published => "published",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Whether and until when the public can register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistrationSettings {
    /// The organiser's switch: registration is open (once the event is published).
    pub open: bool,
    /// Registration closes at this local time (in the event's time zone), if set.
    pub closes_at: Option<DateTime>,
}

/// An event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Its id.
    pub id: EventId,
    /// Its name.
    pub name: EventName,
    /// Draft, published or cancelled.
    pub status: EventStatus,
    /// Its days (1 to 3).
    pub dates: EventDates,
    /// When it starts each day (local time).
    pub start_time: Time,
    /// When it ends each day (local time).
    pub end_time: Time,
    /// The zone its local times are in.
    pub time_zone: TimeZoneName,
    /// Where it takes place.
    pub venue: Option<Venue>,
    /// What it is, for the public page.
    pub description: Option<Description>,
    /// Most people who can register; `None` for no limit.
    pub capacity: Option<u32>,
    /// Its tracks (audiences following a series of sessions), if any.
    pub tracks: Vec<TrackName>,
    /// Registration settings.
    pub registration: RegistrationSettings,
    /// Its public address part.
    pub slug: Slug,
    /// When it was created, in epoch milliseconds.
    pub created_ms: i64,
}

impl Event {
    /// `"Spring Open"`, quoted for summaries.
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.name)
    }

    /// Refuses changes to a cancelled event.
    pub fn ensure_not_cancelled(&self) -> Result<(), ServiceError> {
        if self.status == EventStatus::Cancelled {
            return Err(ServiceError::forbidden(format!(
                "event {} is cancelled, so it cannot be changed; reopen it first (reopen_event) or undo the cancellation",
                self.quoted()
            )));
        }
        Ok(())
    }

    /// The event's time zone, for date arithmetic.
    pub fn tz(&self) -> Result<jiff::tz::TimeZone, ServiceError> {
        self.time_zone.time_zone()
    }

    /// The track named `name` (case ignored), if the event has it.
    pub fn track(&self, name: &str) -> Option<&TrackName> {
        self.tracks.iter().find(|t| t.same_as(name))
    }

    /// `"Sat 14 Nov 2026, 09:00–17:00"`.
    pub fn when_phrase(&self) -> String {
        format!(
            "{}, {}–{}",
            self.dates,
            when::fmt_time(self.start_time),
            when::fmt_time(self.end_time)
        )
    }
}

/// The registration counter of an event (`EVENT#e#REGISTRATIONS`). Every registration and
/// withdrawal rewrites it with a version check, so registrations for one event serialize and
/// the capacity check cannot be raced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RegistrationCounter {
    /// How many attendees are registered (withdrawn ones not counted).
    pub registered: u32,
}

/// The global slug row (`SLUG#<slug>`): whose event a public address belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlugOwner {
    /// The owner.
    pub user: UserId,
    /// The event.
    pub event: EventId,
    /// Set when the event no longer uses this address: the row is then a reservation for the
    /// owner that expires (TTL) [`SLUG_RESERVED_SECS`] after it was released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released: Option<SlugReleased>,
}

/// Where an event went when it gave up an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlugReleased {
    /// The event's new address; None when the event was deleted.
    pub moved_to: Option<Slug>,
}

impl SlugOwner {
    fn live(user: &UserId, event: &EventId) -> Self {
        Self {
            user: user.clone(),
            event: event.clone(),
            released: None,
        }
    }

    fn released(&self, moved_to: Option<Slug>) -> Self {
        Self {
            released: Some(SlugReleased { moved_to }),
            ..self.clone()
        }
    }
}

/// The new address of the event that used to be at `slug`, while that address is still
/// reserved; None when `slug` is not such an address.
pub async fn moved_to(table: &dyn Table, slug: &str) -> Result<Option<Slug>, ServiceError> {
    let Ok(slug) = Slug::parse(slug) else {
        return Ok(None);
    };
    let key = keys::slug(&slug)?;
    let Some(row) = table.get(key.pk(), key.sk()).await? else {
        return Ok(None);
    };
    let owner: SlugOwner = row.parse()?;
    Ok(owner.released.and_then(|r| r.moved_to))
}

/// A new event, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Its name.
    pub name: EventName,
    /// Its days.
    pub dates: EventDates,
    /// Start each day; default [`DEFAULT_START`].
    pub start_time: Option<Time>,
    /// End each day; default [`DEFAULT_END`].
    pub end_time: Option<Time>,
    /// Its time zone; default the account's.
    pub time_zone: Option<TimeZoneName>,
    /// Where.
    pub venue: Option<Venue>,
    /// What.
    pub description: Option<Description>,
    /// Most registrations; `None` for no limit.
    pub capacity: Option<u32>,
    /// Tracks.
    pub tracks: Vec<TrackName>,
    /// A chosen public address; default generated from the name.
    pub slug: Option<Slug>,
}

impl NewEvent {
    /// An event with just a name and dates; everything else default.
    pub fn new(name: EventName, dates: EventDates) -> Self {
        Self {
            name,
            dates,
            start_time: None,
            end_time: None,
            time_zone: None,
            venue: None,
            description: None,
            capacity: None,
            tracks: Vec::new(),
            slug: None,
        }
    }
}

/// Start of an event's day when none is given.
pub const DEFAULT_START: Time = Time::constant(9, 0, 0, 0);

/// End of an event's day when none is given.
pub const DEFAULT_END: Time = Time::constant(17, 0, 0, 0);

/// Changes to an event; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventChanges {
    /// A new name.
    pub name: Option<EventName>,
    /// New days.
    pub dates: Option<EventDates>,
    /// A new daily start.
    pub start_time: Option<Time>,
    /// A new daily end.
    pub end_time: Option<Time>,
    /// A new time zone.
    pub time_zone: Option<TimeZoneName>,
    /// A new venue (`Some(None)` removes it).
    pub venue: Option<Option<Venue>>,
    /// A new description (`Some(None)` removes it).
    pub description: Option<Option<Description>>,
    /// A new capacity (`Some(None)` removes the limit).
    pub capacity: Option<Option<u32>>,
    /// The new full list of tracks.
    pub tracks: Option<Vec<TrackName>>,
    /// A new public address (the old one stops working).
    pub slug: Option<Slug>,
}

impl EventChanges {
    /// Whether no change is asked for at all.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// An event in a list, with how many are registered.
#[derive(Debug, Clone, PartialEq)]
pub struct EventListing {
    /// The event.
    pub event: Event,
    /// Registered attendees.
    pub registered: u32,
}

/// The missing-event error.
pub fn event_not_found(id: &EventId) -> ServiceError {
    ServiceError::not_found(format!("Event {id}"))
}

/// The event and its stored item.
pub(crate) async fn load_event(ctx: &Ctx, id: &EventId) -> Result<(Event, Item), ServiceError> {
    store::load(ctx, &keys::event(ctx, id), || event_not_found(id)).await
}

/// The event and its item, refusing a cancelled event (for changes to it or its records).
pub(crate) async fn load_changeable(
    ctx: &Ctx,
    id: &EventId,
) -> Result<(Event, Item), ServiceError> {
    let (event, item) = load_event(ctx, id).await?;
    event.ensure_not_cancelled()?;
    Ok((event, item))
}

/// The registration counter and its item (absent only for events made by hand in tests).
pub(crate) async fn load_counter(
    ctx: &Ctx,
    id: &EventId,
) -> Result<Option<(RegistrationCounter, Item)>, ServiceError> {
    store::load_opt(ctx, &keys::registrations(ctx, id)).await
}

/// One event of the caller.
pub async fn get_event(ctx: &Ctx, id: &EventId) -> Result<Event, ServiceError> {
    Ok(load_event(ctx, id).await?.0)
}

/// How many attendees of the event are registered.
pub async fn registered_count(ctx: &Ctx, id: &EventId) -> Result<u32, ServiceError> {
    Ok(load_counter(ctx, id)
        .await?
        .map_or(0, |(c, _)| c.registered))
}

/// How many attendees are registered at each of `events`, in the same order: the counters
/// read together (`Ctx::get_many`), not one read per event.
pub async fn registered_counts(ctx: &Ctx, events: &[Event]) -> Result<Vec<u32>, ServiceError> {
    let keys: Vec<_> = events
        .iter()
        .map(|e| keys::registrations(ctx, &e.id))
        .collect();
    ctx.get_many(&keys)
        .await?
        .into_iter()
        .map(|item| registered_in(item.as_ref()))
        .collect()
}

/// How many are registered by the counter item `counter` (none: 0, an event made by hand in
/// tests).
pub(crate) fn registered_in(counter: Option<&Item>) -> Result<u32, ServiceError> {
    Ok(match counter {
        Some(item) => item.parse::<RegistrationCounter>()?.registered,
        None => 0,
    })
}

/// The caller's events, newest first (at most [`EVENTS_LISTED_MAX`]), with registration
/// counts.
pub async fn list_events(ctx: &Ctx) -> Result<Vec<EventListing>, ServiceError> {
    let events = scan_events(ctx).await?;
    let counts = registered_counts(ctx, &events).await?;
    Ok(events
        .into_iter()
        .zip(counts)
        .map(|(event, registered)| EventListing { event, registered })
        .collect())
}

/// The caller's events, newest first. Events share the `EVENT#` prefix with everything in
/// them, so this reads one event at a time and then skips past its records: the cost follows
/// the number of events, not the number of attendees.
pub(crate) async fn scan_events(ctx: &Ctx) -> Result<Vec<Event>, ServiceError> {
    let end = keys::EVENTS_END_SK.to_owned();
    let mut from = keys::EVENT_SK_PREFIX.to_owned();
    let mut events = Vec::new();
    while events.len() < EVENTS_LISTED_MAX {
        let query = Query::partition(ctx.user_pk())
            .sort(SortKey::Between(from, end.clone()))
            .limit(1);
        let page = ctx.table().query_raw(&query).await?;
        let Some(item) = page.items.into_iter().next() else {
            break;
        };
        let event: Event = item.parse()?;
        from = keys::after_event_records(&item.sk);
        events.push(event);
    }
    events.reverse();
    Ok(events)
}

/// The caller's `n` newest events, newest first, and whether older ones exist. Reads from the
/// newest down and stops there, so the cost follows `n`, not how many events the caller has
/// (the context block of every turn reads this; a full [`scan_events`] there made each turn
/// slower than the last). Each page holds up to [`newest_events_page`] items going down: an
/// event's records come just before its own row, so events with few records arrive whole in
/// one page; when a page ends inside an event's records, that event's row is read by key and
/// the next page starts below it, so an event with thousands of records costs one extra read,
/// not pages of its records.
pub(crate) async fn newest_events(ctx: &Ctx, n: usize) -> Result<(Vec<Event>, bool), ServiceError> {
    let mut before = keys::EVENTS_END_SK.to_owned();
    let mut events = Vec::new();
    let page_items = newest_events_page(n);
    loop {
        let query = Query::partition(ctx.user_pk())
            .sort(SortKey::Between(
                keys::EVENT_SK_PREFIX.to_owned(),
                before.clone(),
            ))
            .descending()
            .limit(page_items);
        // Read as text: only the event rows among the page's items are parsed, each straight
        // into an `Event`; the records between them are skipped unparsed.
        let page = ctx.table().query_raw(&query).await?;
        let full = page.items.len() >= page_items;
        // `Between` includes its upper end: skip the bound itself.
        let items: Vec<RawItem> = page.items.into_iter().filter(|i| i.sk != before).collect();
        let Some(last) = items.last() else {
            return Ok((events, false));
        };
        let last_event_sk = event_sk_of(&last.sk);
        // The page ended inside an event's records (its row is further down): read the row by
        // key and go on below it, instead of paging through the records.
        let cut_short = full && last.sk != last_event_sk;
        for item in items.iter().filter(|i| event_sk_of(&i.sk) == i.sk) {
            if events.len() == n {
                return Ok((events, true));
            }
            events.push(item.parse()?);
        }
        if cut_short {
            if let Some(row) = ctx.get(&ctx.key(last_event_sk.clone())).await? {
                if events.len() == n {
                    return Ok((events, true));
                }
                events.push(row.parse()?);
            }
            before = last_event_sk;
        } else {
            before = last.sk.clone();
        }
    }
}

/// Items asked for per page by [`newest_events`]: room for `n` events and as many records
/// among them, so a person's newest events usually come in one or two reads; at most
/// [`NEWEST_EVENTS_PAGE_MAX`] (a page is one query's worth of items, read and parsed whole).
fn newest_events_page(n: usize) -> usize {
    (2 * n + 2).clamp(4, NEWEST_EVENTS_PAGE_MAX)
}

/// The largest page [`newest_events`] asks for: events with many records would otherwise
/// make one page read many records only to skip them.
const NEWEST_EVENTS_PAGE_MAX: usize = 64;

/// The sort key of the event an item under `EVENT#` belongs to (the item's own key for an
/// event row).
fn event_sk_of(sk: &str) -> String {
    let rest = sk.strip_prefix(keys::EVENT_SK_PREFIX).unwrap_or_default();
    match rest.split_once('#') {
        Some((id, _record)) => format!("{}{id}", keys::EVENT_SK_PREFIX),
        None => sk.to_owned(),
    }
}

/// Checks the parts of an event that depend on each other.
fn check_event(event: &Event) -> Result<(), ServiceError> {
    if event.end_time <= event.start_time {
        return Err(ServiceError::invalid(
            "end_time",
            format!(
                "the event ends at {} but starts at {}; the end must be later",
                when::fmt_time(event.end_time),
                when::fmt_time(event.start_time)
            ),
        ));
    }
    if let Some(c) = event.capacity {
        check_capacity("capacity", c)?;
    }
    check_tracks(&event.tracks)?;
    Ok(())
}

/// A field of an [`Event`] that an update changes, in the order summaries name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventField {
    /// The name.
    Name,
    /// The days.
    Dates,
    /// The start or end time.
    Times,
    /// The time zone.
    TimeZone,
    /// The venue.
    Venue,
    /// The description.
    Description,
    /// The capacity.
    Capacity,
    /// The tracks.
    Tracks,
    /// The public address (slug).
    PublicAddress,
    /// Draft, published or cancelled.
    Status,
    /// Registration was switched on.
    RegistrationOpened,
    /// Registration was switched off.
    RegistrationClosed,
    /// When registration closes.
    RegistrationClosingTime,
}

impl Field for EventField {
    fn label(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Dates => "dates",
            Self::Times => "times",
            Self::TimeZone => "time zone",
            Self::Venue => "venue",
            Self::Description => "description",
            Self::Capacity => "capacity",
            Self::Tracks => "tracks",
            Self::PublicAddress => "public address",
            Self::Status => "status",
            Self::RegistrationOpened => "opened",
            Self::RegistrationClosed => "closed",
            Self::RegistrationClosingTime => "closing time",
        }
    }
}

impl Record for Event {
    type Field = EventField;
}

/// Checks a capacity: 1 to [`CAPACITY_MAX`].
pub fn check_capacity(field: &str, capacity: u32) -> Result<(), ServiceError> {
    if capacity == 0 || capacity > CAPACITY_MAX {
        return Err(ServiceError::invalid(
            field,
            format!(
                "{capacity} is not a capacity; give a number of people from 1 to {CAPACITY_MAX}"
            ),
        ));
    }
    Ok(())
}

fn check_tracks(tracks: &[TrackName]) -> Result<(), ServiceError> {
    if tracks.len() > TRACKS_MAX {
        return Err(ServiceError::invalid(
            "tracks",
            format!("an event has at most {TRACKS_MAX} tracks"),
        ));
    }
    for (i, t) in tracks.iter().enumerate() {
        if tracks[..i].iter().any(|o| o.same_as(t.as_str())) {
            return Err(ServiceError::invalid(
                "tracks",
                format!("\"{t}\" is given twice"),
            ));
        }
    }
    Ok(())
}

/// Today in `tz`, by the context's clock.
pub(crate) fn today(ctx: &Ctx, tz: &TimeZoneName) -> Result<Date, ServiceError> {
    Ok(when::local_now(ctx.now_millis(), &tz.time_zone()?).date())
}

/// Whether `slug` is free for the caller: no row, or a reservation of the caller's own.
enum SlugState {
    /// Nobody has it.
    Free,
    /// The caller's own reservation (this row), which taking the address replaces.
    OwnReservation(Item),
    /// An event uses it.
    Taken,
    /// Another account's reservation.
    ReservedForAnother,
}

async fn slug_state(ctx: &Ctx, slug: &Slug) -> Result<SlugState, ServiceError> {
    let Some(row) = ctx.get(&keys::slug(slug)?).await? else {
        return Ok(SlugState::Free);
    };
    let owner: SlugOwner = row.parse()?;
    Ok(match owner.released {
        None => SlugState::Taken,
        Some(_) if &owner.user == ctx.user() => SlugState::OwnReservation(row),
        Some(_) => SlugState::ReservedForAnother,
    })
}

/// The first free slug among `base`, `base-2`, … `base-N`; past those, `base-<tail of the
/// event id>`, which no other event has. With it, the caller's own reservation of it, if any.
async fn free_slug(
    ctx: &Ctx,
    base: &Slug,
    event: &EventId,
) -> Result<(Slug, Option<Item>), ServiceError> {
    for n in 1..=SLUG_SUFFIX_TRIES_MAX {
        let candidate = if n == 1 {
            base.clone()
        } else {
            base.numbered(n)
        };
        match slug_state(ctx, &candidate).await? {
            SlugState::Free => return Ok((candidate, None)),
            SlugState::OwnReservation(row) => return Ok((candidate, Some(row))),
            SlugState::Taken | SlugState::ReservedForAnother => {}
        }
    }
    Ok((base.with_suffix(event.as_str()), None))
}

/// Refuses a chosen slug that another event has or that is reserved for another account;
/// returns the caller's own reservation of it, if any.
async fn ensure_slug_free(ctx: &Ctx, slug: &Slug) -> Result<Option<Item>, ServiceError> {
    match slug_state(ctx, slug).await? {
        SlugState::Free => Ok(None),
        SlugState::OwnReservation(row) => Ok(Some(row)),
        SlugState::Taken => Err(ServiceError::already_exists(format!(
            "The address {} (choose another slug)",
            slug.path()
        ))),
        SlugState::ReservedForAnother => Err(ServiceError::invalid(
            "slug",
            format!(
                "the address {} belonged to another organiser's event until recently and stays reserved for them for up to {} days, so links already shared keep pointing at their event; choose another slug",
                slug.path(),
                SLUG_RESERVED_SECS / 86_400
            ),
        )),
    }
}

/// Takes the address for `owner` in `tx`: a new row, or replacing the caller's reservation
/// (which then no longer expires).
fn take_slug(
    tx: Audited,
    slug: &Slug,
    reservation: Option<&Item>,
    owner: &SlugOwner,
) -> Result<Audited, ServiceError> {
    Ok(match reservation {
        Some(row) => tx.replace_with_ttl(row, owner, None),
        None => tx.put_new(keys::slug(slug)?, owner),
    })
}

/// Turns a live slug row into a reservation for its owner that expires after
/// [`SLUG_RESERVED_SECS`], pointing at `moved_to`.
fn release_slug(
    ctx: &Ctx,
    tx: Audited,
    row: &Item,
    moved_to: Option<Slug>,
) -> Result<Audited, ServiceError> {
    let owner: SlugOwner = row.parse()?;
    let until_s = ctx.now_millis().div_euclid(1000) + SLUG_RESERVED_SECS;
    Ok(tx.replace_with_ttl(row, owner.released(moved_to), Some(until_s)))
}

/// Plans a new draft event with its slug row and registration counter. The time zone
/// defaults to the account's; the daily hours to 09:00–17:00; registration to open.
pub async fn create_event(ctx: &Ctx, new: NewEvent) -> Result<Planned<Event>, ServiceError> {
    let time_zone = match new.time_zone {
        Some(tz) => tz,
        None => accounts::profile(ctx).await?.time_zone,
    };
    new.dates
        .require_not_before(today(ctx, &time_zone)?, time_zone.as_str())?;
    let id = EventId::generate(ctx);
    let (slug, reservation) = match new.slug {
        Some(slug) => {
            let reservation = ensure_slug_free(ctx, &slug).await?;
            (slug, reservation)
        }
        None => free_slug(ctx, &Slug::from_name(new.name.as_str()), &id).await?,
    };
    let event = Event {
        id,
        name: new.name,
        status: EventStatus::Draft,
        dates: new.dates,
        start_time: new.start_time.unwrap_or(DEFAULT_START),
        end_time: new.end_time.unwrap_or(DEFAULT_END),
        time_zone,
        venue: new.venue,
        description: new.description,
        capacity: new.capacity,
        tracks: new.tracks,
        registration: RegistrationSettings {
            open: true,
            closes_at: None,
        },
        slug,
        created_ms: ctx.now_millis(),
    };
    check_event(&event)?;
    let owner = SlugOwner::live(ctx.user(), &event.id);
    let tx = Audited::new(ctx)
        .label(format!("Create event {}", event.quoted()))
        .put_new(keys::event(ctx, &event.id), &event);
    let tx = take_slug(tx, &event.slug, reservation.as_ref(), &owner)?.put_new(
        keys::registrations(ctx, &event.id),
        RegistrationCounter::default(),
    );
    Ok(Planned::new(tx, event))
}

/// Plans changes to an event. Refuses a cancelled event, a capacity below the number
/// already registered, removing a track that sessions use, dates in the past and a taken slug.
pub async fn update_event(
    ctx: &Ctx,
    id: &EventId,
    changes: EventChanges,
) -> Result<Planned<Updated<Event>>, ServiceError> {
    if changes.is_empty() {
        return Err(ServiceError::invalid(
            "(arguments)",
            "nothing to change; give at least one field",
        ));
    }
    let (old, item) = load_changeable(ctx, id).await?;
    let mut new = old.clone();
    let mut changed = Changed::new();
    let mut tx = Audited::new(ctx);
    changed.set(EventField::Name, &mut new.name, changes.name);
    changed.set(EventField::Dates, &mut new.dates, changes.dates);
    changed.set(EventField::Times, &mut new.start_time, changes.start_time);
    changed.set(EventField::Times, &mut new.end_time, changes.end_time);
    changed.set(EventField::TimeZone, &mut new.time_zone, changes.time_zone);
    changed.set(EventField::Venue, &mut new.venue, changes.venue);
    changed.set(
        EventField::Description,
        &mut new.description,
        changes.description,
    );
    changed.set(EventField::Capacity, &mut new.capacity, changes.capacity);
    changed.set(EventField::Tracks, &mut new.tracks, changes.tracks);
    changed.set(EventField::PublicAddress, &mut new.slug, changes.slug);
    if changed.is_empty() {
        return Ok(Planned::unchanged(ctx, Updated::unchanged(old)));
    }
    check_event(&new)?;
    if changed.contains(EventField::Dates) || changed.contains(EventField::TimeZone) {
        new.dates
            .require_not_before(today(ctx, &new.time_zone)?, new.time_zone.as_str())?;
    }
    if changed.contains(EventField::Capacity)
        && let Some(cap) = new.capacity
    {
        let counter = load_counter(ctx, id).await?;
        let registered = counter.as_ref().map_or(0, |(c, _)| c.registered);
        if registered > cap {
            return Err(ServiceError::invalid(
                "capacity",
                format!(
                    "{registered} people are already registered for {}, more than {cap}; withdraw some first or keep a higher capacity",
                    old.quoted()
                ),
            ));
        }
        // A registration committing meanwhile would make the check stale: fail instead.
        if let Some((_, counter_item)) = &counter {
            tx = tx.require_unchanged(counter_item);
        }
    }
    if changed.contains(EventField::Tracks) {
        rules::tracks_in_use_kept(ctx, id, |track| new.track(track).is_some()).await?;
    }
    if changed.contains(EventField::PublicAddress) {
        let reservation = ensure_slug_free(ctx, &new.slug).await?;
        let old_key = keys::slug(&old.slug)?;
        let Some(old_row) = ctx.get(&old_key).await? else {
            return Err(ServiceError::internal(format!(
                "event {id} has no slug row for {}",
                old.slug
            )));
        };
        let owner = SlugOwner::live(ctx.user(), id);
        tx = release_slug(ctx, tx, &old_row, Some(new.slug.clone()))?;
        tx = take_slug(tx, &new.slug, reservation.as_ref(), &owner)?;
    }
    let tx = tx
        .label(format!(
            "Change the {} of {}",
            changed.phrase(),
            old.quoted()
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

/// Moves an event to `status`, or leaves it when it already is there.
fn change_status(
    ctx: &Ctx,
    old: Event,
    item: &Item,
    status: EventStatus,
    label: String,
) -> Planned<Updated<Event>> {
    if old.status == status {
        return Planned::unchanged(ctx, Updated::unchanged(old));
    }
    let mut new = old;
    new.status = status;
    let tx = Audited::new(ctx).label(label).replace(item, &new);
    Planned::new(
        tx,
        Updated {
            record: new,
            changed: Changed::from_iter([EventField::Status]),
        },
    )
}

/// Plans publishing an event: its public page goes live (and takes registrations if open).
/// Publishing a published event changes nothing; a cancelled one must be reopened first.
pub async fn publish_event(
    ctx: &Ctx,
    id: &EventId,
) -> Result<Planned<Updated<Event>>, ServiceError> {
    let (old, item) = load_changeable(ctx, id).await?;
    let label = format!("Publish {}", old.quoted());
    Ok(change_status(
        ctx,
        old,
        &item,
        EventStatus::Published,
        label,
    ))
}

/// Plans cancelling an event. Registrations are kept (and shown as such); the public page
/// says the event is cancelled. Cancelling a cancelled event changes nothing.
pub async fn cancel_event(
    ctx: &Ctx,
    id: &EventId,
) -> Result<Planned<Updated<Event>>, ServiceError> {
    let (old, item) = load_event(ctx, id).await?;
    let label = format!("Cancel {}", old.quoted());
    Ok(change_status(
        ctx,
        old,
        &item,
        EventStatus::Cancelled,
        label,
    ))
}

/// Plans reopening a cancelled event as a draft (publish it again to make it public).
/// Reopening an event that is not cancelled changes nothing.
pub async fn reopen_event(
    ctx: &Ctx,
    id: &EventId,
) -> Result<Planned<Updated<Event>>, ServiceError> {
    let (old, item) = load_event(ctx, id).await?;
    if old.status != EventStatus::Cancelled {
        return Ok(Planned::unchanged(ctx, Updated::unchanged(old)));
    }
    let label = format!("Reopen {}", old.quoted());
    Ok(change_status(ctx, old, &item, EventStatus::Draft, label))
}

/// Plans changing an event's registration settings: `open` switches registration on or off;
/// `closes_at` sets (`Some(Some(_))`) or removes (`Some(None)`) the closing time.
pub async fn set_registration(
    ctx: &Ctx,
    id: &EventId,
    open: Option<bool>,
    closes_at: Option<Option<DateTime>>,
) -> Result<Planned<Updated<Event>>, ServiceError> {
    if open.is_none() && closes_at.is_none() {
        return Err(ServiceError::invalid(
            "(arguments)",
            "nothing to change; give open, closes_at or both",
        ));
    }
    let (old, item) = load_changeable(ctx, id).await?;
    let mut new = old.clone();
    let mut changed = Changed::new();
    if let Some(open) = open
        && open != old.registration.open
    {
        new.registration.open = open;
        changed.insert(if open {
            EventField::RegistrationOpened
        } else {
            EventField::RegistrationClosed
        });
    }
    changed.set(
        EventField::RegistrationClosingTime,
        &mut new.registration.closes_at,
        closes_at,
    );
    if changed.is_empty() {
        return Ok(Planned::unchanged(ctx, Updated::unchanged(old)));
    }
    let tx = Audited::new(ctx)
        .label(format!("Change registration of {}", old.quoted()))
        .replace(&item, &new);
    Ok(Planned::new(
        tx,
        Updated {
            record: new,
            changed,
        },
    ))
}

/// What deleting a draft removed, besides the event.
#[derive(Debug, Clone, PartialEq)]
pub struct Deleted {
    /// The event as it was.
    pub event: Event,
    /// How many records were removed with it (rooms, sessions, people, settings).
    pub records: usize,
}

/// Plans deleting a draft event and everything in it, in one step. Refuses a published or
/// cancelled event (cancel instead) and an event with attendee records.
pub async fn delete_event(ctx: &Ctx, id: &EventId) -> Result<Planned<Deleted>, ServiceError> {
    let (event, item) = load_event(ctx, id).await?;
    if event.status != EventStatus::Draft {
        return Err(ServiceError::forbidden(format!(
            "event {} is {}, and only a draft can be deleted; cancel it instead (cancel_event)",
            event.quoted(),
            event.status.as_str()
        )));
    }
    let children = ctx
        .query_records(
            &keys::children_prefix(id),
            crate::limits::ATTENDEES_LISTED_MAX,
        )
        .await?;
    let attendees = children
        .iter()
        .filter(|i| i.sk.starts_with(&keys::attendees_prefix(id)))
        .count();
    if attendees > 0 {
        return Err(ServiceError::forbidden(format!(
            "event {} has {attendees} attendee record(s), so it cannot be deleted; cancel it instead (cancel_event)",
            event.quoted()
        )));
    }
    let slug_row = ctx.get(&keys::slug(&event.slug)?).await?;
    let mut tx = Audited::new(ctx)
        .label(format!("Delete event {}", event.quoted()))
        .delete(&item);
    // The address stays reserved to the organiser for a while (links may be out there).
    if let Some(row) = &slug_row {
        tx = release_slug(ctx, tx, row, None)?;
    }
    for child in &children {
        tx = tx.delete(child);
    }
    // The timetable document is kept outside the event's records; its stamp is one of them.
    let tx = crate::timetable_record::delete_doc(ctx, tx, id).await?;
    let records = children.len();
    Ok(Planned::new(tx, Deleted { event, records }))
}
