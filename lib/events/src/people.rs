//! People of an event: the speakers sessions need. A person is named once per event; sessions
//! refer to people by id, so one person's sessions never overlap in the timetable.
//!
//! Sessions may name speakers by name: [`resolve_speakers`] matches each entry to a person by
//! id or by name (case ignored) and plans a new person for a name not seen before.

use serde::{Deserialize, Serialize};
use steward_harness::{Audited, Ctx, ServiceError};

use crate::events::{self, Event};
use crate::ids::{EventId, PersonId};
use crate::keys;
use crate::limits::PEOPLE_MAX;
use crate::planned::Planned;
use crate::store;
use crate::text::PersonName;

/// A person (speaker) of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    /// Their id.
    pub id: PersonId,
    /// The event they belong to.
    pub event: EventId,
    /// Their name, unique in the event (case ignored).
    pub name: PersonName,
}

/// The missing-person error.
pub fn person_not_found(event: &Event, id: &str) -> ServiceError {
    ServiceError::not_found(format!("Person {id} in event {}", event.quoted()))
}

/// The event's people, without checking the event exists.
pub(crate) async fn people_of(ctx: &Ctx, event: &EventId) -> Result<Vec<Person>, ServiceError> {
    store::list_values(ctx, &keys::people_prefix(event), PEOPLE_MAX).await
}

/// How many people the event has, without reading them where the store can count (the
/// overview, and so every turn's context block, needs only the number).
pub(crate) async fn people_count(ctx: &Ctx, event: &EventId) -> Result<usize, ServiceError> {
    ctx.count_records(&keys::people_prefix(event), PEOPLE_MAX)
        .await
}

/// The event's people, in creation order.
pub async fn list_people(ctx: &Ctx, event: &EventId) -> Result<Vec<Person>, ServiceError> {
    events::load_event(ctx, event).await?;
    people_of(ctx, event).await
}

fn same_name(a: &PersonName, b: &str) -> bool {
    a.as_str().to_lowercase() == b.trim().to_lowercase()
}

/// Plans adding a person. Refuses a cancelled event and a name the event already has.
pub async fn add_person(
    ctx: &Ctx,
    event: &EventId,
    name: PersonName,
) -> Result<Planned<Person>, ServiceError> {
    let (event, event_item) = events::load_changeable(ctx, event).await?;
    let people = people_of(ctx, &event.id).await?;
    if let Some(p) = people.iter().find(|p| same_name(&p.name, name.as_str())) {
        return Err(ServiceError::already_exists(format!(
            "A person named \"{}\" (id {}) in event {}",
            p.name,
            p.id,
            event.quoted()
        )));
    }
    if people.len() >= PEOPLE_MAX {
        return Err(ServiceError::invalid(
            "name",
            format!("event {} already has {PEOPLE_MAX} people", event.quoted()),
        ));
    }
    let person = Person {
        id: PersonId::generate(ctx),
        event: event.id.clone(),
        name,
    };
    let tx = Audited::new(ctx)
        .label(format!("Add {} to {}", person.name, event.quoted()))
        .require_unchanged(&event_item)
        .put_new(keys::person(ctx, &event.id, &person.id), &person);
    Ok(Planned::new(tx, person))
}

/// The speakers of a session, resolved: their ids in the order given, and the people to
/// create for names the event does not have yet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Speakers {
    /// Every speaker's id, in the order given, without repeats.
    pub ids: Vec<PersonId>,
    /// New people to create with the session.
    pub new_people: Vec<Person>,
}

/// Resolves speaker entries, each a person id (`p_…`) or a name. An id must be one of the
/// event's people; a name matches a person by name (case ignored) or becomes a new person.
pub fn resolve_speakers(
    ctx: &Ctx,
    event: &Event,
    people: &[Person],
    entries: &[String],
) -> Result<Speakers, ServiceError> {
    let mut out = Speakers::default();
    for entry in entries {
        let entry = entry.trim();
        let looks_like_id = entry.to_ascii_lowercase().starts_with(PersonId::PREFIX)
            && !entry.contains(char::is_whitespace);
        let id = if looks_like_id {
            match PersonId::parse(entry) {
                Ok(id) if people.iter().any(|p| p.id == id) => id,
                _ => return Err(person_not_found(event, entry)),
            }
        } else if let Some(p) = people
            .iter()
            .chain(out.new_people.iter())
            .find(|p| same_name(&p.name, entry))
        {
            p.id.clone()
        } else {
            let person = Person {
                id: PersonId::generate(ctx),
                event: event.id.clone(),
                name: PersonName::parse(entry).map_err(|_| {
                    ServiceError::invalid(
                        "speakers",
                        format!("{entry:?} is neither a person id nor a usable name"),
                    )
                })?,
            };
            let id = person.id.clone();
            out.new_people.push(person);
            id
        };
        if !out.ids.contains(&id) {
            out.ids.push(id);
        }
    }
    if people.len() + out.new_people.len() > PEOPLE_MAX {
        return Err(ServiceError::invalid(
            "speakers",
            format!(
                "event {} would have more than {PEOPLE_MAX} people",
                event.quoted()
            ),
        ));
    }
    Ok(out)
}

/// Names of `ids` among `people`, for summaries ("Dana Lee and Sam Roe").
pub fn names_of(people: &[Person], ids: &[PersonId]) -> Vec<String> {
    ids.iter()
        .map(|id| {
            people
                .iter()
                .find(|p| &p.id == id)
                .map_or_else(|| id.to_string(), |p| p.name.to_string())
        })
        .collect()
}
