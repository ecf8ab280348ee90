//! The public side of an event, reached by its slug: the public page's content and the
//! registration form. These act as [`Actor::Public`] in the event owner's partition (found
//! through the `SLUG#` row), so a visitor's registration is audited but never on the owner's
//! undo stack, and the visitor's text is stored as data.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::civil::{Date, DateTime, Time};
use serde::Serialize;
use steward_harness::{Actor, Ctx, ServiceError, TimeZoneName};
use steward_store::{Clock, Table};

use crate::attendees::{self, Answers, AttendeeForm};
use crate::email::Email;
use crate::events::{self, Event, EventStatus, SlugOwner};
use crate::ids::AttendeeId;
use crate::keys;
use crate::limits::REGISTRATION_RETRIES_MAX;
use crate::schedule;
pub use crate::schedule::PublicSlot;
use crate::slug::Slug;
use crate::text::{Description, PersonName, Venue};
use crate::when;

/// Whether the public form takes registrations now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RegistrationState {
    /// Open; `places_left` when there is a capacity, `closes_at` when there is a deadline.
    Open {
        /// Places still free.
        places_left: Option<u32>,
        /// Local closing time.
        closes_at: Option<DateTime>,
    },
    /// The organiser closed registration.
    Closed,
    /// The closing time has passed.
    ClosedAt {
        /// Local closing time.
        closes_at: DateTime,
    },
    /// Every place is taken.
    Full,
    /// The event is cancelled.
    Cancelled,
}

/// What the public page of an event shows. Only published and cancelled events have one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublicEvent {
    /// The address part.
    pub slug: Slug,
    /// Name.
    pub name: String,
    /// Published or cancelled.
    pub status: EventStatus,
    /// Days.
    pub dates: Vec<Date>,
    /// Daily start.
    pub start_time: Time,
    /// Daily end.
    pub end_time: Time,
    /// Time zone of the times shown.
    pub time_zone: TimeZoneName,
    /// Venue.
    pub venue: Option<Venue>,
    /// Description.
    pub description: Option<Description>,
    /// Registration now.
    pub registration: RegistrationState,
    /// The timetable, when one is built (empty otherwise), in time order.
    pub timetable: Vec<PublicSlot>,
}

/// The public registration form as submitted (unchecked text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublicForm {
    /// Name.
    pub name: String,
    /// E-mail address.
    pub email: String,
    /// Free-text answers by question.
    pub answers: BTreeMap<String, String>,
}

/// A successful public registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublicRegistered {
    /// The attendee's id (the earlier one when the address was already registered).
    pub attendee: AttendeeId,
    /// Their name as typed now.
    pub name: String,
    /// The event's name.
    pub event_name: String,
    /// The address was already registered: nothing was written. Never shown to the visitor,
    /// who gets the same answer either way (the form must not reveal who is registered).
    pub already_registered: bool,
}

fn no_public_event(slug: &str) -> ServiceError {
    let shown: String = slug.chars().take(60).collect();
    ServiceError::not_found(format!("A public event at /e/{shown}"))
}

/// The owner's context for the event at `slug`, acting as the public, and the event.
async fn public_ctx(
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    slug: &str,
) -> Result<(Ctx, Event), ServiceError> {
    let parsed = Slug::parse(slug).map_err(|_| no_public_event(slug))?;
    let key = keys::slug(&parsed)?;
    let Some(row) = table.get(key.pk(), key.sk()).await? else {
        return Err(no_public_event(slug));
    };
    let owner: SlugOwner = row.parse()?;
    let ctx = Ctx::new(table, clock, owner.user.clone(), Actor::Public);
    let event = match events::get_event(&ctx, &owner.event).await {
        Ok(e) => e,
        Err(ServiceError::NotFound { .. }) => return Err(no_public_event(slug)),
        Err(e) => return Err(e),
    };
    // A reserved former address (the event moved or was deleted) is not the event's page.
    if event.status == EventStatus::Draft || owner.released.is_some() || event.slug != parsed {
        return Err(no_public_event(slug));
    }
    Ok((ctx, event))
}

fn registration_state(
    ctx: &Ctx,
    event: &Event,
    registered: u32,
) -> Result<RegistrationState, ServiceError> {
    Ok(if event.status == EventStatus::Cancelled {
        RegistrationState::Cancelled
    } else if !event.registration.open {
        RegistrationState::Closed
    } else if let Some(closes_at) = event.registration.closes_at
        && when::has_passed(closes_at, &event.tz()?, ctx.now_millis())
    {
        RegistrationState::ClosedAt { closes_at }
    } else if event.capacity.is_some_and(|c| registered >= c) {
        RegistrationState::Full
    } else {
        RegistrationState::Open {
            places_left: event.capacity.map(|c| c.saturating_sub(registered)),
            closes_at: event.registration.closes_at,
        }
    })
}

/// The public page of the event at `slug`. A draft or unknown slug is not found.
pub async fn public_event(
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    slug: &str,
) -> Result<PublicEvent, ServiceError> {
    let (ctx, event) = public_ctx(table, clock, slug).await?;
    let registered = events::registered_count(&ctx, &event.id).await?;
    let timetable = schedule::public_slots(&ctx, &event).await?;
    Ok(PublicEvent {
        registration: registration_state(&ctx, &event, registered)?,
        slug: event.slug,
        name: event.name.to_string(),
        status: event.status,
        dates: event.dates.dates().to_vec(),
        start_time: event.start_time,
        end_time: event.end_time,
        time_zone: event.time_zone,
        venue: event.venue,
        description: event.description,
        timetable,
    })
}

/// Registers a member of the public for the event at `slug`: the event must be published,
/// registration open and not past its closing time, a place free, the name and address valid.
/// An address already registered is answered like a new one (`already_registered` set,
/// nothing written), so the public form is no "is this address registered?" oracle. Retries
/// when another registration for the same event committed first.
pub async fn register_public(
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    slug: &str,
    form: PublicForm,
) -> Result<PublicRegistered, ServiceError> {
    let checked = AttendeeForm {
        name: PersonName::parse(&form.name)?,
        email: Email::parse(&form.email)?,
        answers: Answers::new(form.answers)?,
    };
    let mut last = None;
    for _ in 0..REGISTRATION_RETRIES_MAX {
        let (ctx, event) = public_ctx(Arc::clone(&table), Arc::clone(&clock), slug).await?;
        let planned = match attendees::register(&ctx, &event.id, checked.clone()).await {
            Ok(planned) => planned,
            Err(ServiceError::AlreadyExists { .. }) => {
                if let Some(attendee) =
                    attendees::registered_with(&ctx, &event.id, &checked.email).await?
                {
                    return Ok(PublicRegistered {
                        attendee,
                        name: checked.name.to_string(),
                        event_name: event.name.to_string(),
                        already_registered: true,
                    });
                }
                // Withdrawn meanwhile: try again.
                last = Some(ServiceError::conflict("The registration"));
                continue;
            }
            Err(e) => return Err(e),
        };
        let done = PublicRegistered {
            attendee: planned.value().attendee.id.clone(),
            name: planned.value().attendee.name.to_string(),
            event_name: planned.value().event_name.clone(),
            already_registered: false,
        };
        match planned.commit().await {
            Ok(_) => return Ok(done),
            Err(e @ ServiceError::Conflict { .. }) => last = Some(e),
            Err(ServiceError::Forbidden { .. }) => {
                // The owner's account is paused: the visitor cannot fix that.
                return Err(ServiceError::forbidden(format!(
                    "registration for {} is not available right now; try again later",
                    event.quoted()
                )));
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| ServiceError::conflict("The registration")))
}
