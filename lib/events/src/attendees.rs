//! Attendees: people registered for an event, by the organiser or on the public form.
//!
//! Every registration and withdrawal rewrites the event's registration counter with a version
//! check, in the same transaction as the attendee, so registrations for one event serialize:
//! the capacity cannot be overshot by two people registering at once, and one address cannot
//! register twice (an `EMAIL#` row reserves it while the attendee is registered).
//!
//! The organiser may register people on a draft or while registration is closed; the capacity
//! still holds. The public form (see [`crate::registration`]) also needs the event published,
//! registration open and not past its closing time. Free-text answers are stored verbatim:
//! they are data, whatever they say.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use steward_harness::{Actor, Audited, Ctx, ServiceError};
use steward_store::Item;

use crate::email::Email;
use crate::events::{self, Event, EventStatus, RegistrationCounter};
use crate::ids::{AttendeeId, EventId};
use crate::keys;
use crate::limits::{
    ANSWER_CHARS_MAX, ANSWER_QUESTION_CHARS_MAX, ANSWERS_MAX, ATTENDEES_LISTED_MAX,
};
use crate::planned::{Changed, Field, Planned, Record, Updated};
use crate::store;
use crate::text::{PersonName, clean};
use crate::when;

/// Whether an attendee is coming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttendeeStatus {
    /// Registered and counted against the capacity.
    Registered,
    /// Withdrawn; kept for the record, not counted.
    Withdrawn,
}

/// Who registered an attendee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttendeeSource {
    /// The organiser (web UI, chat or MCP).
    Organiser,
    /// The person themselves, on the public registration form.
    PublicForm,
}

/// Free-text answers on a registration: question → answer, bounded, stored verbatim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Answers(BTreeMap<String, String>);

impl Answers {
    /// Checks answers: at most [`ANSWERS_MAX`], each question a single line of at most
    /// [`ANSWER_QUESTION_CHARS_MAX`] characters, each answer at most [`ANSWER_CHARS_MAX`]
    /// characters. Answers are kept exactly as written; empty ones are dropped.
    pub fn new(answers: BTreeMap<String, String>) -> Result<Self, ServiceError> {
        if answers.len() > ANSWERS_MAX {
            return Err(ServiceError::invalid(
                "answers",
                format!("at most {ANSWERS_MAX} answers"),
            ));
        }
        let mut out = BTreeMap::new();
        for (q, a) in answers {
            let q = clean("answers", &q, ANSWER_QUESTION_CHARS_MAX, false)?;
            let chars = a.chars().count();
            if chars > ANSWER_CHARS_MAX {
                return Err(ServiceError::invalid(
                    "answers",
                    format!(
                        "the answer to \"{q}\" is {chars} characters long; keep it to {ANSWER_CHARS_MAX}"
                    ),
                ));
            }
            steward_harness::display_text::check_visible("answers", &a)?;
            if !a.trim().is_empty() {
                out.insert(q, a);
            }
        }
        Ok(Self(out))
    }

    /// The answers by question.
    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A field of an [`Attendee`] that an update changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AttendeeField {
    /// Registered or withdrawn.
    Status,
}

impl Field for AttendeeField {
    fn label(self) -> &'static str {
        match self {
            Self::Status => "status",
        }
    }
}

impl Record for Attendee {
    type Field = AttendeeField;
}

/// A person registered (or once registered) for an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attendee {
    /// Their id.
    pub id: AttendeeId,
    /// The event.
    pub event: EventId,
    /// Their name, as they gave it.
    pub name: PersonName,
    /// Their e-mail address.
    pub email: Email,
    /// Their free-text answers, verbatim.
    pub answers: Answers,
    /// Registered or withdrawn.
    pub status: AttendeeStatus,
    /// Who registered them.
    pub source: AttendeeSource,
    /// When they registered, in epoch milliseconds.
    pub registered_ms: i64,
    /// When they were withdrawn, in epoch milliseconds.
    pub withdrawn_ms: Option<i64>,
}

/// What a registration form holds, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttendeeForm {
    /// Name.
    pub name: PersonName,
    /// E-mail address.
    pub email: Email,
    /// Free-text answers.
    pub answers: Answers,
}

/// The row reserving an address among an event's registered attendees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct EmailReservation {
    attendee: AttendeeId,
}

/// The attendee registered for `event` with `email`, if any.
pub(crate) async fn registered_with(
    ctx: &Ctx,
    event: &EventId,
    email: &Email,
) -> Result<Option<AttendeeId>, ServiceError> {
    match ctx.get(&keys::email(ctx, event, email)).await? {
        Some(row) => Ok(Some(row.parse::<EmailReservation>()?.attendee)),
        None => Ok(None),
    }
}

/// A new registration, and how many are registered with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The new attendee.
    pub attendee: Attendee,
    /// The event's name.
    pub event_name: String,
    /// Registered attendees including this one.
    pub registered: u32,
    /// The event's capacity.
    pub capacity: Option<u32>,
}

/// The missing-attendee error.
pub fn attendee_not_found(event: &Event, id: &str) -> ServiceError {
    ServiceError::not_found(format!("Attendee {id} in event {}", event.quoted()))
}

/// The event's attendees (registered and withdrawn), in registration order.
pub async fn list_attendees(ctx: &Ctx, event: &EventId) -> Result<Vec<Attendee>, ServiceError> {
    events::load_event(ctx, event).await?;
    store::list_values(ctx, &keys::attendees_prefix(event), ATTENDEES_LISTED_MAX).await
}

async fn load_attendee(
    ctx: &Ctx,
    event: &Event,
    id: &AttendeeId,
) -> Result<(Attendee, Item), ServiceError> {
    store::load(ctx, &keys::attendee(ctx, &event.id, id), || {
        attendee_not_found(event, id.as_str())
    })
    .await
}

/// One attendee of an event.
pub async fn get_attendee(
    ctx: &Ctx,
    event: &EventId,
    id: &AttendeeId,
) -> Result<Attendee, ServiceError> {
    let (event, _) = events::load_event(ctx, event).await?;
    Ok(load_attendee(ctx, &event, id).await?.0)
}

/// Checks the public form's extra conditions: published, open, not past the closing time.
fn ensure_public_can_register(ctx: &Ctx, event: &Event) -> Result<(), ServiceError> {
    match event.status {
        EventStatus::Draft => {
            return Err(ServiceError::not_found(format!(
                "A public event at {}",
                event.slug.path()
            )));
        }
        EventStatus::Cancelled => {
            return Err(ServiceError::forbidden(format!(
                "registration is closed: {} is cancelled",
                event.quoted()
            )));
        }
        EventStatus::Published => {}
    }
    if !event.registration.open {
        return Err(ServiceError::forbidden(format!(
            "registration for {} is closed",
            event.quoted()
        )));
    }
    if let Some(closes) = event.registration.closes_at
        && when::has_passed(closes, &event.tz()?, ctx.now_millis())
    {
        return Err(ServiceError::forbidden(format!(
            "registration for {} closed on {}",
            event.quoted(),
            when::fmt_datetime(closes)
        )));
    }
    Ok(())
}

/// Plans registering someone for an event. The actor decides which checks apply: `Public`
/// needs the event published, open and before its closing time; everyone needs it not
/// cancelled, a free place and an address not already registered.
pub async fn register(
    ctx: &Ctx,
    event: &EventId,
    form: AttendeeForm,
) -> Result<Planned<Registration>, ServiceError> {
    let (event, event_item) = events::load_event(ctx, event).await?;
    let source = if ctx.actor() == Actor::Public {
        ensure_public_can_register(ctx, &event)?;
        AttendeeSource::PublicForm
    } else {
        event.ensure_not_cancelled()?;
        AttendeeSource::Organiser
    };
    let counter = events::load_counter(ctx, &event.id).await?;
    let registered = counter.as_ref().map_or(0, |(c, _)| c.registered);
    if let Some(cap) = event.capacity
        && registered >= cap
    {
        return Err(ServiceError::forbidden(format!(
            "{} is full: all {cap} places are taken",
            event.quoted()
        )));
    }
    let email_key = keys::email(ctx, &event.id, &form.email);
    if ctx.get(&email_key).await?.is_some() {
        return Err(ServiceError::already_exists(format!(
            "A registration with {} for {}",
            form.email,
            event.quoted()
        )));
    }
    let attendee = Attendee {
        id: AttendeeId::generate(ctx),
        event: event.id.clone(),
        name: form.name,
        email: form.email,
        answers: form.answers,
        status: AttendeeStatus::Registered,
        source,
        registered_ms: ctx.now_millis(),
        withdrawn_ms: None,
    };
    let new_count = RegistrationCounter {
        registered: registered + 1,
    };
    let tx = Audited::new(ctx)
        // Never the registrant's name: a stranger typed it, and labels reach the Activity page
        // and undo's answers as if they were the organiser's own words.
        .label(format!(
            "Register attendee {} for {}",
            attendee.id,
            event.quoted()
        ))
        .require_unchanged(&event_item)
        .put_new(keys::attendee(ctx, &event.id, &attendee.id), &attendee)
        .put_new(
            email_key,
            EmailReservation {
                attendee: attendee.id.clone(),
            },
        );
    let tx = match &counter {
        Some((_, item)) => tx.replace(item, new_count),
        None => tx.put_new(keys::registrations(ctx, &event.id), new_count),
    };
    Ok(Planned::new(
        tx,
        Registration {
            attendee,
            event_name: event.name.to_string(),
            registered: new_count.registered,
            capacity: event.capacity,
        },
    ))
}

/// Plans withdrawing an attendee: kept on record as withdrawn, no longer counted, and their
/// address free to register again. Withdrawing someone already withdrawn changes nothing.
pub async fn withdraw(
    ctx: &Ctx,
    event: &EventId,
    id: &AttendeeId,
) -> Result<Planned<Updated<Attendee>>, ServiceError> {
    let (event, _) = events::load_changeable(ctx, event).await?;
    let (old, item) = load_attendee(ctx, &event, id).await?;
    if old.status == AttendeeStatus::Withdrawn {
        return Ok(Planned::unchanged(ctx, Updated::unchanged(old)));
    }
    let mut new = old.clone();
    new.status = AttendeeStatus::Withdrawn;
    new.withdrawn_ms = Some(ctx.now_millis());
    let mut tx = Audited::new(ctx)
        .label(format!(
            "Withdraw attendee {} from {}",
            old.id,
            event.quoted()
        ))
        .replace(&item, &new);
    if let Some(reservation) = ctx.get(&keys::email(ctx, &event.id, &old.email)).await?
        && reservation
            .parse::<EmailReservation>()
            .is_ok_and(|r| r.attendee == old.id)
    {
        tx = tx.delete(&reservation);
    }
    if let Some((counter, counter_item)) = events::load_counter(ctx, &event.id).await? {
        tx = tx.replace(
            &counter_item,
            RegistrationCounter {
                registered: counter.registered.saturating_sub(1),
            },
        );
    }
    Ok(Planned::new(
        tx,
        Updated {
            record: new,
            changed: Changed::from_iter([AttendeeField::Status]),
        },
    ))
}
