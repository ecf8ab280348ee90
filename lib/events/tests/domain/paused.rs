//! A paused account: every write tool is refused with the readable reason, every read tool
//! still works.

use serde_json::{Map, Value, json};
use steward_harness::{ToolErrorKind, accounts};

use crate::support::{DAY2, World, seed, world};

/// Valid arguments for every property a tool declares, using the owner's own records.
fn args(schema: &Value, s: &crate::support::Seeded) -> Value {
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for name in props.keys() {
            let v = match name.as_str() {
                "event_id" => json!(s.event),
                "room_id" => json!(s.rooms[1]),
                "session_id" => json!(s.sessions[2]),
                "attendee_id" => json!(s.attendee),
                "name" => json!("Someone New"),
                "title" => json!("Another"),
                "dates" => json!([DAY2]),
                "email" => json!("new@example.org"),
                "duration_minutes" => json!(30),
                "capacity" => json!(40),
                "status" => json!("all"),
                _ => continue,
            };
            out.insert(name.clone(), v);
        }
    }
    Value::Object(out)
}

async fn paused_accounts_read_but_never_write(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    accounts::pause(w.table.as_ref(), &u).await.unwrap();
    let before = w.dump_user(&u).await;
    for tool in w.registry.tools() {
        let a = args(tool.input_schema(), &s);
        let outcome = w.call(&u, tool.name(), a.clone()).await;
        if tool.is_read_only() {
            assert!(outcome.is_ok(), "{} with {a}: {outcome:?}", tool.name());
        } else {
            let err = outcome
                .error_ref()
                .unwrap_or_else(|| panic!("{} wrote on a paused account", tool.name()));
            assert_eq!(err.kind, ToolErrorKind::Forbidden, "{}", tool.name());
            assert_eq!(
                err.message,
                format!("Not allowed: {}", accounts::PAUSED_REASON),
                "{}",
                tool.name()
            );
        }
    }
    assert_eq!(w.dump_user(&u).await, before);
    // Resumed, the same write works.
    accounts::resume(w.table.as_ref(), &u).await.unwrap();
    w.ok(
        &u,
        "add_person",
        json!({"event_id": s.event, "name": "Someone New"}),
    )
    .await;
}

steward_store::backend_tests!(setup = world; paused_accounts_read_but_never_write);
