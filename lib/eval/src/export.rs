//! `steward export-case`: a stored conversation becomes a suite case, so a bad day in
//! production becomes a regression case.
//!
//! * The person's messages become turns (a message that was the title of a button on the
//!   reply before becomes a `press`); the model's responses become scripted steps.
//! * Record ids become placeholders (`{{event:Spring Open}}`, `{{room:Spring Open/Aula}}`), so
//!   the case runs on a fresh store; records the conversation used but did not create become
//!   setup steps (from their current state).
//! * What happened becomes the expectations: how often each tool ran, what was held, what was
//!   confirmed, how many replies.
//! * Personal data is replaced with placeholders: the names of speakers and attendees (and the
//!   organiser's), e-mail addresses, and phone numbers (a `+` and at least 7 digits, or 9 or
//!   more digits in a row).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};
use steward_harness::profile::get_profile;
use steward_store::Table;

use crate::records::{Record, RecordKind, classify, read_records};
use crate::stored::{CallState, StoredConversation, StoredError, StoredStep, read_conversation};

/// Digits that make a run of digits (after a `+`) a phone number.
const PHONE_DIGITS_MIN_PLUS: usize = 7;
/// Digits in a row that make a phone number without a `+`.
const PHONE_DIGITS_MIN_BARE: usize = 9;

/// The placeholders personal data is replaced with, kept consistent across the case.
#[derive(Debug, Default)]
struct Scrubber {
    /// Whether to replace anything at all (a replay keeps the words as they were).
    enabled: bool,
    /// Known names and their stand-ins, longest first when applied.
    names: Vec<(String, String)>,
    emails: BTreeMap<String, String>,
    phones: BTreeMap<String, String>,
}

impl Scrubber {
    fn from_records(records: &[Record], organiser: Option<&str>) -> Self {
        let mut s = Self {
            enabled: true,
            ..Self::default()
        };
        if let Some(name) = organiser.filter(|n| !n.trim().is_empty()) {
            s.names
                .push((name.trim().to_owned(), "Organiser".to_owned()));
        }
        let (mut people, mut attendees) = (0, 0);
        for r in records {
            let Some(name) = r.name() else { continue };
            let stand_in = match r.kind {
                RecordKind::Person => {
                    people += 1;
                    format!("Speaker {people}")
                }
                RecordKind::Attendee => {
                    attendees += 1;
                    if let Some(email) = r.data.get("email").and_then(Value::as_str) {
                        s.emails.insert(
                            email.to_lowercase(),
                            format!("attendee{attendees}@example.org"),
                        );
                    }
                    format!("Attendee {attendees}")
                }
                _ => continue,
            };
            if !s.names.iter().any(|(n, _)| n == name) {
                s.names.push((name.to_owned(), stand_in));
            }
        }
        s.names.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        s
    }

    fn name(&self, name: &str) -> String {
        if !self.enabled {
            return name.to_owned();
        }
        self.names
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| name.to_owned())
    }

    fn text(&mut self, text: &str) -> String {
        if !self.enabled {
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for (name, stand_in) in &self.names {
            out = replace_words(&out, name, stand_in);
        }
        let out = self.replace_emails(&out);
        self.replace_phones(&out)
    }

    fn replace_emails(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut token = String::new();
        let flush = |token: &mut String, out: &mut String, this: &mut Self| {
            if looks_like_email(token) {
                let n = this.emails.len() + 1;
                let stand_in = this
                    .emails
                    .entry(token.to_lowercase())
                    .or_insert_with(|| format!("person{n}@example.org"))
                    .clone();
                out.push_str(&stand_in);
            } else {
                out.push_str(token);
            }
            token.clear();
        };
        for c in text.chars() {
            if c.is_alphanumeric() || "@._%+-".contains(c) {
                token.push(c);
            } else {
                flush(&mut token, &mut out, self);
                out.push(c);
            }
        }
        flush(&mut token, &mut out, self);
        out
    }

    fn replace_phones(&mut self, text: &str) -> String {
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < chars.len() {
            let boundary = i == 0 || !chars[i - 1].is_alphanumeric();
            if boundary && (chars[i] == '+' || chars[i].is_ascii_digit()) {
                let plus = chars[i] == '+';
                let mut j = i + usize::from(plus);
                let mut digits = 0;
                while j < chars.len()
                    && (chars[j].is_ascii_digit() || (plus && " -()".contains(chars[j])))
                {
                    digits += usize::from(chars[j].is_ascii_digit());
                    j += 1;
                }
                // Give back trailing separators.
                while j > i && !chars[j - 1].is_ascii_digit() {
                    j -= 1;
                }
                let ends_clean = j == chars.len() || !chars[j].is_alphanumeric();
                let enough = if plus {
                    digits >= PHONE_DIGITS_MIN_PLUS
                } else {
                    digits >= PHONE_DIGITS_MIN_BARE
                };
                if enough && ends_clean {
                    let found: String = chars[i..j].iter().collect();
                    let n = self.phones.len() + 1;
                    let stand_in = self
                        .phones
                        .entry(found)
                        .or_insert_with(|| format!("+1555000{n:04}"))
                        .clone();
                    out.push_str(&stand_in);
                    i = j;
                    continue;
                }
            }
            out.push(chars[i]);
            i += 1;
        }
        out
    }
}

fn looks_like_email(token: &str) -> bool {
    let Some((local, domain)) = token.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
}

/// `text` with every whole-word, case-insensitive occurrence of `word` replaced.
fn replace_words(text: &str, word: &str, with: &str) -> String {
    if word.is_empty() {
        return text.to_owned();
    }
    let lower = text.to_lowercase();
    let needle = word.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII; fall back to exact matching then.
    if lower.len() != text.len() || needle.len() != word.len() {
        return text.replace(word, with);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, _) in lower.match_indices(&needle) {
        if at < last {
            continue;
        }
        let end = at + needle.len();
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        let after_ok = text[end..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric());
        if before_ok && after_ok {
            out.push_str(&text[last..at]);
            out.push_str(with);
            last = end;
        }
    }
    out.push_str(&text[last..]);
    out
}

/// The conversion of one conversation.
struct Exporter<'a> {
    by_id: BTreeMap<String, &'a Record>,
    scrub: Scrubber,
    /// Ids of records referenced but not created by the conversation, in first-use order.
    needed: Vec<String>,
    created_ids: BTreeSet<String>,
    missing: BTreeSet<String>,
}

impl Exporter<'_> {
    fn event_name(&self, event_id: &str) -> String {
        self.by_id
            .get(event_id)
            .and_then(|r| r.name())
            .unwrap_or(event_id)
            .to_owned()
    }

    fn placeholder(&self, record: &Record) -> Option<String> {
        let name = self.scrub.name(record.name()?);
        Some(match record.kind {
            RecordKind::Event => format!("{{{{event:{name}}}}}"),
            kind => format!(
                "{{{{{}:{}/{name}}}}}",
                kind.as_str(),
                self.event_name(&record.event_id)
            ),
        })
    }

    /// The input with ids as placeholders and personal data replaced.
    fn value(&mut self, value: &Value) -> Value {
        match value {
            Value::String(s) => {
                if let Some(record) = self.by_id.get(s.as_str()).copied()
                    && let Some(placeholder) = self.placeholder(record)
                {
                    self.note_use(record);
                    return Value::String(placeholder);
                }
                if looks_like_id(s) && !self.by_id.contains_key(s.as_str()) {
                    self.missing.insert(s.clone());
                }
                Value::String(self.scrub.text(s))
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn note_use(&mut self, record: &Record) {
        let Some(id) = record.id() else { return };
        if self.created_ids.contains(id) {
            return;
        }
        if record.kind != RecordKind::Event && !self.created_ids.contains(&record.event_id) {
            let event = record.event_id.clone();
            if !self.needed.contains(&event) {
                self.needed.push(event);
            }
        }
        if !self.needed.iter().any(|n| n == id) {
            self.needed.push(id.to_owned());
        }
    }

    /// Setup steps that make the records the conversation used but did not create.
    fn setup(&mut self) -> Vec<(String, Value)> {
        let mut steps = Vec::new();
        let needed: Vec<&Record> = self
            .needed
            .iter()
            .filter_map(|id| self.by_id.get(id.as_str()).copied())
            .collect();
        let order = [
            RecordKind::Event,
            RecordKind::Room,
            RecordKind::Person,
            RecordKind::Session,
            RecordKind::Attendee,
        ];
        let mut after_events = Vec::new();
        for kind in order {
            for r in needed.iter().filter(|r| r.kind == kind) {
                let event = format!("{{{{event:{}}}}}", self.event_name(&r.event_id));
                let d = &r.data;
                let pick = |keys: &[&str]| -> Map<String, Value> {
                    keys.iter()
                        .filter_map(|k| {
                            d.get(*k)
                                .filter(|v| !v.is_null())
                                .map(|v| ((*k).to_owned(), v.clone()))
                        })
                        .collect()
                };
                let (tool, mut input) = match kind {
                    RecordKind::Event => {
                        let mut input = pick(&[
                            "name",
                            "dates",
                            "start_time",
                            "end_time",
                            "time_zone",
                            "venue",
                            "description",
                            "capacity",
                            "tracks",
                        ]);
                        for key in ["start_time", "end_time"] {
                            if let Some(Value::String(t)) = input.get_mut(key) {
                                t.truncate(5);
                            }
                        }
                        match d.get("status").and_then(Value::as_str) {
                            Some("published") => {
                                after_events.push(("publish_event", event.clone()))
                            }
                            Some("cancelled") => {
                                after_events.push(("publish_event", event.clone()));
                                after_events.push(("cancel_event", event.clone()));
                            }
                            _ => {}
                        }
                        ("create_event", input)
                    }
                    RecordKind::Room => ("add_room", pick(&["name", "capacity"])),
                    RecordKind::Person => ("add_person", pick(&["name"])),
                    RecordKind::Session => ("add_session", pick(&["title", "duration_minutes"])),
                    RecordKind::Attendee => {
                        let mut input = pick(&["name", "email"]);
                        if let Some(Value::String(name)) = input.get_mut("name") {
                            *name = self.scrub.name(name);
                        }
                        if let Some(Value::String(email)) = input.get_mut("email") {
                            *email = self.scrub.text(email);
                        }
                        ("register_attendee", input)
                    }
                    _ => continue,
                };
                if kind != RecordKind::Event {
                    input.insert("event_id".into(), Value::String(event.clone()));
                }
                if let Some(Value::String(name)) = input.get_mut("name")
                    && kind == RecordKind::Person
                {
                    *name = self.scrub.name(name);
                }
                steps.push((tool.to_owned(), Value::Object(input)));
            }
            if kind == RecordKind::Event {
                // Publish (and cancel) only after the event's contents exist? Rooms and
                // sessions of a published event are still added by the organiser directly, so
                // the order does not matter for setup; do it at once.
                for (tool, event) in after_events.drain(..) {
                    let mut input = Map::new();
                    input.insert("event_id".into(), Value::String(event));
                    steps.push((tool.to_owned(), Value::Object(input)));
                }
            }
        }
        steps
    }
}

/// Whether a string looks like a Steward record id (a prefix, `_`, then 20 or more letters
/// and digits).
fn looks_like_id(s: &str) -> bool {
    s.split_once('_').is_some_and(|(prefix, rest)| {
        (1..=4).contains(&prefix.len())
            && prefix.chars().all(|c| c.is_ascii_lowercase())
            && rest.len() >= 20
            && rest.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// An exported case: the suite text, and ids the conversation used that no record has any
/// more (left as they were; the case will likely fail on them).
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// A suite file with one case.
    pub suite: String,
    /// Ids that name no current record.
    pub unresolved_ids: Vec<String>,
}

/// Exports conversation `key` of `table` as a one-case suite named `name`.
pub async fn export_case(
    table: &dyn Table,
    key: &str,
    name: &str,
) -> Result<Exported, StoredError> {
    let conversation = read_conversation(table, key).await?;
    let records = read_records(table, &conversation.user)
        .await
        .map_err(|e| StoredError::Read {
            key: key.to_owned(),
            problem: e.to_string(),
        })?;
    let organiser = get_profile(table, &conversation.user)
        .await
        .ok()
        .map(|p| p.name.to_string());
    Ok(render(
        &conversation,
        &records,
        organiser.as_deref(),
        name,
        Privacy::Scrub,
    ))
}

/// The owner's records as they were before the conversation changed them: the current ones,
/// with the conversation's earliest before-images in place of what it changed, and what it
/// deleted put back.
fn records_before(conversation: &StoredConversation, now: &[Record]) -> Vec<Record> {
    let mut out: Vec<Record> = now
        .iter()
        .map(|r| {
            let prior = r.id().and_then(|id| {
                conversation
                    .before
                    .iter()
                    .find(|(sk, _)| sk.rsplit('#').next() == Some(id))
                    .map(|(_, data)| data.clone())
            });
            match prior {
                Some(data) => Record {
                    kind: r.kind,
                    event_id: r.event_id.clone(),
                    data,
                },
                None => r.clone(),
            }
        })
        .collect();
    for (sk, data) in &conversation.before {
        let Some((kind, event_id)) = classify(sk) else {
            continue;
        };
        let id = data.get("id").and_then(Value::as_str);
        if id.is_some() && !now.iter().any(|r| r.id() == id) {
            out.push(Record {
                kind,
                event_id,
                data: data.clone(),
            });
        }
    }
    out
}

/// Whether an export replaces personal data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privacy {
    /// Names, e-mail addresses and phone numbers become placeholders (a case to keep).
    Scrub,
    /// Everything stays as it was (a replay on a throwaway store).
    Keep,
}

/// The suite text for `conversation` over `records` (the owner's records now).
pub fn render(
    conversation: &StoredConversation,
    records: &[Record],
    organiser: Option<&str>,
    name: &str,
    privacy: Privacy,
) -> Exported {
    let records = &records_before(conversation, records);
    let created_ids: BTreeSet<String> = records
        .iter()
        .filter(|r| {
            conversation
                .created
                .iter()
                .any(|sk| sk.ends_with(r.id().unwrap_or("\u{0}")))
        })
        .filter_map(|r| r.id().map(str::to_owned))
        .collect();
    let mut ex = Exporter {
        by_id: records
            .iter()
            .filter_map(|r| Some((r.id()?.to_owned(), r)))
            .collect(),
        scrub: match privacy {
            Privacy::Scrub => Scrubber::from_records(records, organiser),
            Privacy::Keep => Scrubber::default(),
        },
        needed: Vec::new(),
        created_ids,
        missing: BTreeSet::new(),
    };
    let mut turns = String::new();
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    let mut held: BTreeSet<String> = BTreeSet::new();
    let mut replies = 0;
    for turn in &conversation.turns {
        let said = ex.scrub.text(&turn.text);
        let _ = writeln!(turns, "\n[[case.turn]]");
        let _ = writeln!(
            turns,
            "{} = {}",
            if turn.pressed { "press" } else { "say" },
            toml_string(&said)
        );
        let _ = writeln!(turns, "model = [");
        for step in &turn.steps {
            match step {
                StoredStep::Text(text) => {
                    let text = ex.scrub.text(text);
                    let _ = writeln!(turns, "  {{ text = {} }},", toml_string(&text));
                }
                StoredStep::Calls(calls) => {
                    let _ = writeln!(turns, "  {{ tools = [");
                    for call in calls {
                        let input = ex.value(&call.input);
                        let _ = writeln!(
                            turns,
                            "    {{ tool = {}, input = {} }},",
                            toml_string(&call.name),
                            toml_inline(&input)
                        );
                        match call.state {
                            CallState::Ran => *ran.entry(call.name.clone()).or_default() += 1,
                            CallState::Held => {
                                held.insert(call.name.clone());
                            }
                            _ => {}
                        }
                    }
                    let _ = writeln!(turns, "  ] }},");
                }
            }
        }
        let _ = writeln!(turns, "]");
        if turn.reply.is_some() {
            replies += 1;
        }
    }
    let setup = ex.setup();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Exported from conversation {} by `steward export-case`. Names, e-mail addresses and\n# phone numbers are placeholders; record ids are {{{{kind:…}}}} references.\n",
        conversation.key.channel()
    );
    let _ = writeln!(out, "[[case]]\nname = {}", toml_string(name));
    if !setup.is_empty() {
        let _ = writeln!(out, "setup = [");
        for (tool, input) in &setup {
            let _ = writeln!(
                out,
                "  {{ tool = {}, input = {} }},",
                toml_string(tool),
                toml_inline(input)
            );
        }
        let _ = writeln!(out, "]");
    }
    out.push_str(&turns);
    let mut expect = String::new();
    for (tool, times) in &ran {
        if held.contains(tool) && *times == 1 {
            let _ = writeln!(
                expect,
                "\n[[case.expect]]\nconfirmed = {}",
                toml_string(tool)
            );
        } else {
            let _ = writeln!(
                expect,
                "\n[[case.expect]]\nran = {}\ntimes = {times}",
                toml_string(tool)
            );
        }
    }
    for tool in held.iter().filter(|t| !ran.contains_key(*t)) {
        let _ = writeln!(expect, "\n[[case.expect]]\nheld = {}", toml_string(tool));
    }
    let _ = writeln!(expect, "\n[[case.expect]]\nreplies = {replies}");
    out.push_str(&expect);
    Exported {
        suite: out,
        unresolved_ids: ex.missing.into_iter().collect(),
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A JSON value as a TOML inline value (`null` members are left out: TOML has no null).
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => toml_string(s),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .filter(|v| !v.is_null())
                .map(toml_inline)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_inline(v)))
                .collect();
            if members.is_empty() {
                "{}".to_owned()
            } else {
                format!("{{ {} }}", members.join(", "))
            }
        }
    }
}

fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_owned()
    } else {
        toml_string(key)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn personal_data_is_replaced_consistently() {
        let mut s = Scrubber {
            enabled: true,
            ..Scrubber::default()
        };
        s.names.push(("Dana Lee".into(), "Speaker 1".into()));
        let text = "Ask Dana Lee (dana@example.com, +49 170 1234567) or call 0151234567890; \
                    not Danalee. Dates 2026-12-12 and 10:00 stay; dana@example.com again.";
        assert_eq!(
            s.text(text),
            "Ask Speaker 1 (person1@example.org, +15550000001) or call +15550000002; \
             not Danalee. Dates 2026-12-12 and 10:00 stay; person1@example.org again."
        );
    }

    #[test]
    fn ids_look_like_ids() {
        assert!(looks_like_id("ev_01JD0000000000000000000000"));
        assert!(!looks_like_id("Spring Open"));
        assert!(!looks_like_id("snake_case"));
    }

    #[test]
    fn json_becomes_inline_toml_that_reads_back_the_same() {
        let v = serde_json::json!({"name": "A \"quoted\" name\nand 'more'", "dates": ["2026-12-12"], "n": 3, "x": null, "odd key": true, "nested": {"a": [1, 2]}});
        let text = format!("v = {}", toml_inline(&v));
        let table: toml::Table = toml::from_str(&text).unwrap();
        let back = crate::suite::toml_to_json(&table["v"]);
        let mut expected = v.clone();
        expected.as_object_mut().unwrap().remove("x");
        assert_eq!(back, expected, "{text}");
    }
}
