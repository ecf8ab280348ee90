//! Tenant isolation that cannot go stale: every tool in the registry is called as user B with
//! user A's ids, with ids that exist nowhere, and with text that is not an id at all. Each
//! call that names an id must answer "not found"; the few that name none must be harmless;
//! and A's partition and public slug rows must be byte-for-byte what they were.
//!
//! Arguments are built from each tool's own schema, so a new tool is covered the day it is
//! added; a property this file has no sample for fails the test and asks for one.

use serde_json::{Map, Value, json};
use steward_harness::{ToolErrorKind, ToolOutcome, UserId};

use crate::support::{DAY2, Seeded, World, seed, world};

/// Which ids to use.
struct Ids {
    event: String,
    room: String,
    session: String,
    attendee: String,
    person: String,
}

impl Ids {
    fn of(s: &Seeded) -> Self {
        Self {
            event: s.event.clone(),
            room: s.rooms[0].clone(),
            session: s.sessions[0].clone(),
            attendee: s.attendee.clone(),
            person: s.person.clone(),
        }
    }

    /// Well-formed ids that name nothing.
    fn missing() -> Self {
        Self {
            event: "e_01zzzzzzzzzzzzzzzzzzzzzzzz".into(),
            room: "r_01zzzzzzzzzzzzzzzzzzzzzzzz".into(),
            session: "s_01zzzzzzzzzzzzzzzzzzzzzzzz".into(),
            attendee: "a_01zzzzzzzzzzzzzzzzzzzzzzzz".into(),
            person: "p_01zzzzzzzzzzzzzzzzzzzzzzzz".into(),
        }
    }

    /// Text that is not an id at all.
    fn garbage() -> Self {
        Self {
            event: "EVENT#x".into(),
            room: "../room".into(),
            session: "s_".into(),
            attendee: "a_#1".into(),
            person: "p_ x".into(),
        }
    }
}

/// A sample value for a property of a tool's input, by name. `None`: no sample known.
fn sample(property: &str, ids: &Ids) -> Option<Value> {
    Some(match property {
        "event_id" => json!(ids.event),
        "room_id" => json!(ids.room),
        "session_id" => json!(ids.session),
        "attendee_id" => json!(ids.attendee),
        "name" => json!("Mallory"),
        "title" => json!("Hijacked"),
        "dates" => json!([DAY2]),
        "start_time" | "day_start" | "available_from" => json!("08:00"),
        "end_time" | "day_end" | "available_until" => json!("19:00"),
        "time_zone" => json!("Europe/London"),
        "venue" => json!("Elsewhere"),
        "description" => json!("Taken over"),
        "capacity" | "min_capacity" => json!(10),
        "tracks" => json!(["Main", "Side"]),
        "track" => json!("Main"),
        "slug" => json!("hijacked-page"),
        "open" => json!(false),
        "closes_at" => json!("2026-12-01T18:00"),
        "duration_minutes" => json!(30),
        "speakers" => json!(["Mallory", ids.person]),
        "after" => json!([ids.session]),
        "email" => json!("mallory@evil.example"),
        "answers" => json!({"Note": "hi"}),
        "status" => json!("all"),
        "include_answers" => json!(true),
        "lunch_minutes" => json!(30),
        "lunch_earliest_start" => json!("12:00"),
        "lunch_latest_end" => json!("14:00"),
        "changeover_minutes" | "speaker_rest_minutes" => json!(5),
        _ => return None,
    })
}

/// Properties that name a record: a tool with one must answer "not found" for foreign ids.
const ID_PROPERTIES: [&str; 4] = ["event_id", "room_id", "session_id", "attendee_id"];

/// Arguments for `tool` filling every property it declares. Panics naming a property without
/// a sample, so a new tool or field cannot slip past this test.
fn args_for(schema: &Value, tool: &str, ids: &Ids) -> (Value, bool) {
    let mut args = Map::new();
    let mut names_a_record = false;
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for name in props.keys() {
            let value = sample(name, ids).unwrap_or_else(|| {
                panic!("tool {tool} has the property {name:?}: add a sample for it in isolation.rs")
            });
            names_a_record |= ID_PROPERTIES.contains(&name.as_str());
            args.insert(name.clone(), value);
        }
    }
    (Value::Object(args), names_a_record)
}

/// Whether a result shows any of A's data. Ids B passed in may be echoed back ("Event e_… was
/// not found"); A's names, addresses and contents must never appear.
fn leaks(outcome: &ToolOutcome) -> bool {
    let text = serde_json::to_string(&outcome.to_json()).unwrap();
    [
        "Spring Open",
        "Town Hall",
        "Sam Roe",
        "sam@example.org",
        "Dana Lee",
        "Aula",
        "Keynote",
        "Workshop",
    ]
    .iter()
    .any(|s| text.contains(s))
}

async fn snapshot(w: &World, a: &UserId) -> Vec<(String, Vec<(String, u64, Option<i64>, Value)>)> {
    let mut out = vec![(format!("USER#{a}"), w.dump_user(a).await)];
    out.push((
        "SLUG#spring-open".to_owned(),
        w.dump("SLUG#spring-open").await,
    ));
    out
}

async fn check_every_tool(w: &World, a: &UserId, b: &UserId, ids: &Ids, label: &str) {
    let before = snapshot(w, a).await;
    for tool in w.registry.tools() {
        let (args, names_a_record) = args_for(tool.input_schema(), tool.name(), ids);
        let outcome = w.call(b, tool.name(), args.clone()).await;
        if names_a_record {
            let err = outcome.error_ref().unwrap_or_else(|| {
                panic!(
                    "{label}: {} as B with {args} succeeded: {outcome:?}",
                    tool.name()
                )
            });
            assert_eq!(
                err.kind,
                ToolErrorKind::NotFound,
                "{label}: {} as B with {args}: {}",
                tool.name(),
                err.message
            );
        } else if let Some(err) = outcome.error_ref() {
            assert_ne!(
                err.kind,
                ToolErrorKind::Internal,
                "{label}: {}",
                tool.name()
            );
        }
        assert!(
            !leaks(&outcome),
            "{label}: {} leaked A's data: {outcome:?}",
            tool.name()
        );
        assert_eq!(
            snapshot(w, a).await,
            before,
            "{label}: {} as B changed A's data",
            tool.name()
        );
    }
}

async fn no_tool_reaches_another_users_records(w: World) {
    let a = w.account("alice").await;
    let b = w.account("bob").await;
    let s = seed(&w, &a, true).await;
    let a_ids = Ids::of(&s);
    check_every_tool(&w, &a, &b, &a_ids, "A's ids").await;
    check_every_tool(&w, &a, &b, &Ids::missing(), "missing ids").await;
    check_every_tool(&w, &a, &b, &Ids::garbage(), "garbage ids").await;

    // B's list is B's own: nothing of A's.
    let r = w.ok(&b, "list_events", json!({})).await;
    for e in r.data.unwrap().as_array().unwrap() {
        assert_ne!(e["id"], a_ids.event.as_str());
    }
}

async fn missing_ids_are_not_found_for_the_owner_too(w: World) {
    let a = w.account("alice").await;
    let s = seed(&w, &a, true).await;
    let mut ids = Ids::missing();
    ids.event = s.event.clone();
    // With A's own event and missing child ids, every child-naming tool says not found.
    let before = snapshot(&w, &a).await;
    for tool in w.registry.tools() {
        let (args, _) = args_for(tool.input_schema(), tool.name(), &ids);
        let props = tool.input_schema()["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let names_child = ["room_id", "session_id", "attendee_id"]
            .iter()
            .any(|p| props.contains_key(*p));
        if !names_child {
            continue;
        }
        let outcome = w.call(&a, tool.name(), args.clone()).await;
        let err = outcome
            .error_ref()
            .unwrap_or_else(|| panic!("{} with {args} succeeded", tool.name()));
        assert_eq!(
            err.kind,
            ToolErrorKind::NotFound,
            "{}: {}",
            tool.name(),
            err.message
        );
    }
    assert_eq!(snapshot(&w, &a).await, before);
}

steward_store::backend_tests!(setup = world;
    no_tool_reaches_another_users_records,
    missing_ids_are_not_found_for_the_owner_too,
);
