//! The domain's records as a case sees them: read straight from the store under the
//! organiser's partition (the keys of `steward_events::keys`), classified by kind, and named
//! by their `name` (a session by its `title`). Placeholders such as `{{event:Spring Open}}` or
//! `{{room:Spring Open/Aula}}` in scripted inputs and expectations are resolved here, when the
//! step runs, since ids are made fresh on every run.

use serde_json::{Map, Value};
use steward_harness::{UserId, keys::user_pk};
use steward_store::{Query, StoreError, Table};

/// Most items of one organiser read for a case: a case makes a handful of events; far more
/// means something ran away, and the check should stay cheap.
pub const CASE_ITEMS_MAX: usize = 50_000;

/// A kind of domain record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// An event (`EVENT#e`).
    Event,
    /// A room (`EVENT#e#ROOM#r`).
    Room,
    /// A session (`EVENT#e#SESSION#s`).
    Session,
    /// A person, i.e. a speaker (`EVENT#e#PERSON#p`).
    Person,
    /// An attendee (`EVENT#e#ATTENDEE#a`).
    Attendee,
    /// An event's programme settings (`EVENT#e#PROGRAM`).
    Program,
    /// An event's built timetable (`EVENT#e#TIMETABLE`).
    Timetable,
}

impl RecordKind {
    /// Every kind.
    pub const ALL: [RecordKind; 7] = [
        Self::Event,
        Self::Room,
        Self::Session,
        Self::Person,
        Self::Attendee,
        Self::Program,
        Self::Timetable,
    ];

    /// The kind's name in suite files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Event => "event",
            Self::Room => "room",
            Self::Session => "session",
            Self::Person => "person",
            Self::Attendee => "attendee",
            Self::Program => "program",
            Self::Timetable => "timetable",
        }
    }

    /// The kind a suite file names (singular or plural).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == text || text.strip_suffix('s') == Some(k.as_str()))
    }

    /// Whether records of this kind have a name (or a title).
    pub fn has_name(self) -> bool {
        !matches!(self, Self::Program | Self::Timetable)
    }

    /// The field that names a record of this kind.
    fn name_field(self) -> &'static str {
        match self {
            Self::Session => "title",
            _ => "name",
        }
    }
}

/// One domain record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its kind.
    pub kind: RecordKind,
    /// The event it belongs to (its own id for an event).
    pub event_id: String,
    /// Its data as stored.
    pub data: Value,
}

impl Record {
    /// Its name (a session's title), when it has one.
    pub fn name(&self) -> Option<&str> {
        self.data.get(self.kind.name_field())?.as_str()
    }

    /// Its id, when it has one.
    pub fn id(&self) -> Option<&str> {
        self.data.get("id")?.as_str()
    }
}

/// The kind and event of a sort key under a user's partition, if it is a domain record.
pub(crate) fn classify(sk: &str) -> Option<(RecordKind, String)> {
    let rest = sk.strip_prefix("EVENT#")?;
    let mut parts = rest.split('#');
    let event = parts.next()?.to_owned();
    let kind = match (parts.next(), parts.next(), parts.next()) {
        (None, ..) => RecordKind::Event,
        (Some("ROOM"), Some(_), None) => RecordKind::Room,
        (Some("SESSION"), Some(_), None) => RecordKind::Session,
        (Some("PERSON"), Some(_), None) => RecordKind::Person,
        (Some("ATTENDEE"), Some(_), None) => RecordKind::Attendee,
        (Some("PROGRAM"), None, None) => RecordKind::Program,
        (Some("TIMETABLE"), None, None) => RecordKind::Timetable,
        _ => return None,
    };
    Some((kind, event))
}

/// Every domain record of `user`.
pub async fn read_records(table: &dyn Table, user: &UserId) -> Result<Vec<Record>, StoreError> {
    let items = table
        .query_all(&Query::prefix(user_pk(user), "EVENT#"), CASE_ITEMS_MAX)
        .await?;
    Ok(items
        .into_iter()
        .filter_map(|item| {
            let (kind, event_id) = classify(&item.sk)?;
            Some(Record {
                kind,
                event_id,
                data: item.data,
            })
        })
        .collect())
}

/// Whether `actual` has everything `expected` has: objects by subset at every depth, every
/// other value equal (strings compared after trimming, and a number equal to its text).
pub fn subset_matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, v)| have.get(k).is_some_and(|h| subset_matches(v, h))),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| subset_matches(w, h))
        }
        (Value::String(want), Value::String(have)) => want.trim() == have.trim(),
        (Value::Number(want), Value::Number(have)) => want.as_f64() == have.as_f64(),
        (want, have) => want == have,
    }
}

/// Records of `kind` named `name` (any name when `None`) in the event named `event` (any
/// event when `None`) whose data has `fields`.
pub fn select<'a>(
    records: &'a [Record],
    kind: RecordKind,
    name: Option<&str>,
    event: Option<&str>,
    fields: &Map<String, Value>,
) -> Vec<&'a Record> {
    let event_ids: Option<Vec<&str>> = event.map(|event| {
        records
            .iter()
            .filter(|r| r.kind == RecordKind::Event && same_name(r.name(), event))
            .map(|r| r.event_id.as_str())
            .collect()
    });
    let fields = Value::Object(fields.clone());
    records
        .iter()
        .filter(|r| r.kind == kind)
        .filter(|r| name.is_none_or(|n| same_name(r.name(), n)))
        .filter(|r| {
            event_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&r.event_id.as_str()))
        })
        .filter(|r| subset_matches(&fields, &r.data))
        .collect()
}

fn same_name(actual: Option<&str>, wanted: &str) -> bool {
    actual.is_some_and(|a| a.trim().eq_ignore_ascii_case(wanted.trim()))
}

/// The placeholder that names `record` among `records` (`{{event:NAME}}`,
/// `{{room:EVENT/NAME}}`, …), when it has a name.
pub fn placeholder_for(record: &Record, records: &[Record]) -> Option<String> {
    let name = record.name()?;
    if record.kind == RecordKind::Event {
        return Some(format!("{{{{event:{name}}}}}"));
    }
    let event = records
        .iter()
        .find(|r| r.kind == RecordKind::Event && r.event_id == record.event_id)
        .and_then(Record::name)?;
    Some(format!("{{{{{}:{event}/{name}}}}}", record.kind.as_str()))
}

/// `value` with every string that is a record's id replaced by the record's placeholder:
/// arguments made on two stores compare equal when they name the same records.
pub fn ids_to_placeholders(value: &Value, records: &[Record]) -> Value {
    match value {
        Value::String(s) => records
            .iter()
            .find(|r| r.id() == Some(s.as_str()))
            .and_then(|r| placeholder_for(r, records))
            .map_or_else(|| value.clone(), Value::String),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| ids_to_placeholders(v, records))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), ids_to_placeholders(v, records)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A placeholder that names no record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{placeholder}: {problem}")]
pub struct Unresolved {
    /// The placeholder as written.
    pub placeholder: String,
    /// Why it names nothing.
    pub problem: String,
}

/// `value` with every string that is exactly a placeholder (`{{event:NAME}}`,
/// `{{room:EVENT/NAME}}`, `{{session:EVENT/TITLE}}`, `{{person:EVENT/NAME}}`,
/// `{{attendee:EVENT/NAME}}`) replaced by the id of the record it names.
pub fn resolve(value: &Value, records: &[Record]) -> Result<Value, Unresolved> {
    Ok(match value {
        Value::String(s) => match placeholder(s) {
            Some((kind, reference)) => Value::String(resolve_one(s, kind, reference, records)?),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| resolve(v, records))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), resolve(v, records)?)))
                .collect::<Result<_, Unresolved>>()?,
        ),
        other => other.clone(),
    })
}

/// Whether `value` holds any placeholder.
pub fn has_placeholder(value: &Value) -> bool {
    match value {
        Value::String(s) => placeholder(s).is_some(),
        Value::Array(items) => items.iter().any(has_placeholder),
        Value::Object(map) => map.values().any(has_placeholder),
        _ => false,
    }
}

fn placeholder(text: &str) -> Option<(&str, &str)> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    let (kind, reference) = inner.split_once(':')?;
    Some((kind.trim(), reference.trim()))
}

fn resolve_one(
    written: &str,
    kind: &str,
    reference: &str,
    records: &[Record],
) -> Result<String, Unresolved> {
    let fail = |problem: String| Unresolved {
        placeholder: written.trim().to_owned(),
        problem,
    };
    let kind = RecordKind::parse(kind)
        .filter(|k| k.has_name())
        .ok_or_else(|| {
            fail("not a record kind with a name (event, room, session, person, attendee)".into())
        })?;
    let (event, name) = if kind == RecordKind::Event {
        (None, reference)
    } else {
        let (event, name) = reference
            .split_once('/')
            .ok_or_else(|| fail(format!("write it as {}:EVENT/NAME", kind.as_str())))?;
        (Some(event.trim()), name.trim())
    };
    let found = select(records, kind, Some(name), event, &Map::new());
    match found.as_slice() {
        [one] => one
            .id()
            .map(str::to_owned)
            .ok_or_else(|| fail("the record has no id".into())),
        [] => Err(fail(format!("no {} by that name", kind.as_str()))),
        _ => Err(fail(format!(
            "{} records of kind {} have that name",
            found.len(),
            kind.as_str()
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn records() -> Vec<Record> {
        vec![
            Record {
                kind: RecordKind::Event,
                event_id: "e1".into(),
                data: json!({"id": "e1", "name": "Spring Open", "status": "draft"}),
            },
            Record {
                kind: RecordKind::Room,
                event_id: "e1".into(),
                data: json!({"id": "r1", "name": "Aula", "capacity": 120}),
            },
            Record {
                kind: RecordKind::Session,
                event_id: "e1".into(),
                data: json!({"id": "s1", "title": "Keynote"}),
            },
        ]
    }

    #[test]
    fn sort_keys_are_classified_by_kind_and_event() {
        assert_eq!(classify("EVENT#e1"), Some((RecordKind::Event, "e1".into())));
        assert_eq!(
            classify("EVENT#e1#ROOM#r1"),
            Some((RecordKind::Room, "e1".into()))
        );
        assert_eq!(
            classify("EVENT#e1#TIMETABLE"),
            Some((RecordKind::Timetable, "e1".into()))
        );
        assert_eq!(classify("EVENT#e1#EMAIL#a@b.c"), None);
        assert_eq!(classify("EVENT#e1#REGISTRATIONS"), None);
        assert_eq!(classify("ACTION#x"), None);
    }

    #[test]
    fn placeholders_resolve_to_ids_and_name_what_is_missing() {
        let r = records();
        let input = json!({"event_id": "{{event:spring open}}", "after": ["{{session:Spring Open/Keynote}}"], "n": 3});
        assert_eq!(
            resolve(&input, &r).unwrap(),
            json!({"event_id": "e1", "after": ["s1"], "n": 3})
        );
        let missing = resolve(&json!("{{room:Spring Open/Lab}}"), &r).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "{{room:Spring Open/Lab}}: no room by that name"
        );
        assert!(resolve(&json!("{{room:Aula}}"), &r).is_err());
        assert_eq!(
            resolve(&json!("{{ not one"), &r).unwrap(),
            json!("{{ not one")
        );
    }

    #[test]
    fn selection_matches_names_events_and_field_subsets() {
        let r = records();
        let fields = json!({"capacity": 120}).as_object().unwrap().clone();
        assert_eq!(
            select(&r, RecordKind::Room, None, Some("Spring Open"), &fields).len(),
            1
        );
        let fields = json!({"capacity": 12}).as_object().unwrap().clone();
        assert!(select(&r, RecordKind::Room, None, None, &fields).is_empty());
        assert!(select(&r, RecordKind::Room, None, Some("Autumn"), &Map::new()).is_empty());
        assert!(subset_matches(
            &json!({"a": {"b": 1}}),
            &json!({"a": {"b": 1.0, "c": 2}})
        ));
        assert!(!subset_matches(&json!([1]), &json!([1, 2])));
    }
}
