//! Undo over domain actions: last in first out, whole actions, refused over a later change,
//! and never a public registration.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use steward_events::attendees;
use steward_events::events::{self, EventStatus};
use steward_events::ids::EventId;
use steward_events::registration::{PublicForm, register_public};
use steward_harness::ToolErrorKind;

use crate::support::{DAY1, DAY2, World, id_of, seed, world};

async fn undo_walks_back_last_in_first_out(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let empty = w.records(&u).await;
    let e = id_of(
        &w.ok(
            &u,
            "create_event",
            json!({"name": "Spring Open", "dates": [DAY1]}),
        )
        .await,
    );
    let after_create = w.records(&u).await;
    w.ok(
        &u,
        "add_room",
        json!({"event_id": e, "name": "Aula", "capacity": 50}),
    )
    .await;
    let after_room = w.records(&u).await;
    w.ok(
        &u,
        "update_event",
        json!({"event_id": e, "dates": [DAY2], "venue": "Old Mill"}),
    )
    .await;

    let r = w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(
        r.summary,
        "Undid the last change: Change the dates and venue of \"Spring Open\"."
    );
    assert_eq!(
        r.data.unwrap()["changes"],
        json!(["restored event \"Spring Open\""])
    );
    let event = events::get_event(&ctx, &EventId::parse(&e).unwrap())
        .await
        .unwrap();
    assert_eq!(event.dates.to_strings(), [DAY1]);
    assert_eq!(event.venue, None);

    let r = w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(
        r.summary,
        "Undid the last change: Add room \"Aula\" to \"Spring Open\"."
    );
    assert_eq!(r.data.unwrap()["changes"], json!(["removed room \"Aula\""]));
    // Versions move forward on undo, so compare the data only.
    let data = |v: Vec<(String, u64, Option<i64>, serde_json::Value)>| -> Vec<(String, serde_json::Value)> {
        v.into_iter().map(|(sk, _, _, d)| (sk, d)).collect()
    };
    assert_eq!(data(w.records(&u).await), data(after_create.clone()));
    assert_ne!(data(w.records(&u).await), data(after_room));

    // Undoing the creation removes the event, its counter and its public address together.
    w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(w.records(&u).await, empty);
    assert!(w.dump("SLUG#spring-open").await.is_empty());

    let e = w.err(&u, "undo_last_action", json!({})).await;
    assert_eq!(e.kind, ToolErrorKind::CannotUndo);
    assert_eq!(
        e.message,
        "Could not undo: there is nothing to undo. Nothing was changed."
    );
}

async fn one_action_reverts_together(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, false).await;
    // A session with two new speakers is one action: three records.
    let before = w.records(&u).await;
    w.ok(&u, "add_session", json!({"event_id": s.event, "title": "Duo", "duration_minutes": 30, "speakers": ["Ann Bell", "Bo Chen"]})).await;
    assert_eq!(w.records(&u).await.len(), before.len() + 3);
    let r = w.ok(&u, "undo_last_action", json!({})).await;
    let changes = r.data.unwrap()["changes"].clone();
    assert_eq!(changes.as_array().unwrap().len(), 3, "{changes}");
    assert_eq!(w.records(&u).await, before);

    // Removing a session that another must follow changes both; undo restores both.
    let keep = w.records(&u).await;
    w.ok(
        &u,
        "remove_session",
        json!({"event_id": s.event, "session_id": s.sessions[0]}),
    )
    .await;
    w.ok(&u, "undo_last_action", json!({})).await;
    let strip = |v: Vec<(String, u64, Option<i64>, serde_json::Value)>| -> Vec<(String, serde_json::Value)> {
        v.into_iter().map(|(sk, _, _, d)| (sk, d)).collect()
    };
    assert_eq!(strip(w.records(&u).await), strip(keep));
}

async fn undo_refuses_over_a_later_change(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    // The organiser registers someone; then a visitor registers, which moves the counter.
    let kim = w
        .ok(
            &u,
            "register_attendee",
            json!({"event_id": s.event, "name": "Kim", "email": "kim@example.org"}),
        )
        .await;
    let kim_id = kim.data.unwrap()["id"].as_str().unwrap().to_owned();
    register_public(
        Arc::clone(&w.table),
        w.clock_arc(),
        &s.slug,
        PublicForm {
            name: "Visitor".into(),
            email: "v@example.org".into(),
            answers: BTreeMap::new(),
        },
    )
    .await
    .unwrap();
    let before = w.records(&u).await;
    let e = w.err(&u, "undo_last_action", json!({})).await;
    assert_eq!(e.kind, ToolErrorKind::CannotUndo);
    assert!(
        e.message.starts_with(&format!(
            "Could not undo: a record it wrote changed after \"Register attendee {kim_id} for \"Spring Open\"\""
        )),
        "{}",
        e.message
    );
    assert!(e.message.ends_with("Nothing was changed."), "{}", e.message);
    assert_eq!(w.records(&u).await, before);
    // The direct fix still works.
    let list = w
        .ok(&u, "list_attendees", json!({"event_id": s.event}))
        .await;
    let kim = list
        .data
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == json!({"untrusted_text": "Kim"}))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(kim, kim_id);
    w.ok(
        &u,
        "withdraw_attendee",
        json!({"event_id": s.event, "attendee_id": kim}),
    )
    .await;
}

async fn a_public_registration_is_never_undone(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    w.ok(&u, "publish_event", json!({"event_id": s.event}))
        .await;
    let done = register_public(
        Arc::clone(&w.table),
        w.clock_arc(),
        &s.slug,
        PublicForm {
            name: "Visitor".into(),
            email: "v@example.org".into(),
            answers: BTreeMap::new(),
        },
    )
    .await
    .unwrap();
    // The newest undoable action is the publish, not the visitor's registration.
    let r = w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(r.summary, "Undid the last change: Publish \"Spring Open\".");
    let event = EventId::parse(&s.event).unwrap();
    assert_eq!(
        events::get_event(&ctx, &event).await.unwrap().status,
        EventStatus::Draft
    );
    let a = attendees::get_attendee(&ctx, &event, &done.attendee)
        .await
        .unwrap();
    assert_eq!(a.status, attendees::AttendeeStatus::Registered);
    // Further back, the build of the timetable; the visitor's registration stays throughout.
    let r = w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(
        r.summary,
        "Undid the last change: Build the timetable of \"Spring Open\"."
    );
    assert!(
        attendees::get_attendee(&ctx, &event, &done.attendee)
            .await
            .is_ok()
    );
    assert_eq!(events::registered_count(&ctx, &event).await.unwrap(), 2);
}

steward_store::backend_tests!(setup = world;
    undo_walks_back_last_in_first_out,
    one_action_reverts_together,
    undo_refuses_over_a_later_change,
    a_public_registration_is_never_undone,
);
