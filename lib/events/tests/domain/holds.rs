//! The confirmation declarations of the events capabilities: the held table walked against the
//! registry, and each decision described from the database (never from the arguments); calls
//! that change nothing visible, or name nothing, are not held; arguments that do not parse
//! are refused, never "not risky".

use serde_json::{Value, json};
use steward_harness::{Actor, ConfirmKind, Decision, UserId};

use crate::support::{DAY2, World, seed, world};

/// The held table of ARCHITECTURE.md ("What the gate holds"), by capability.
const TABLE: [(&str, ConfirmKind); 25] = [
    ("list_events", ConfirmKind::ReadOnly),
    ("get_event", ConfirmKind::ReadOnly),
    ("create_event", ConfirmKind::NeverHeld),
    ("update_event", ConfirmKind::HeldWhen),
    ("publish_event", ConfirmKind::HeldWhen),
    ("cancel_event", ConfirmKind::HeldWhen),
    ("reopen_event", ConfirmKind::HeldWhen),
    ("delete_event", ConfirmKind::HeldWhen),
    ("add_room", ConfirmKind::HeldWhen),
    ("update_room", ConfirmKind::HeldWhen),
    ("remove_room", ConfirmKind::HeldWhen),
    ("add_person", ConfirmKind::NeverHeld),
    ("add_session", ConfirmKind::HeldWhen),
    ("update_session", ConfirmKind::HeldWhen),
    ("remove_session", ConfirmKind::HeldWhen),
    ("list_sessions", ConfirmKind::ReadOnly),
    ("set_program", ConfirmKind::NeverHeld),
    ("build_timetable", ConfirmKind::HeldWhen),
    ("get_timetable", ConfirmKind::ReadOnly),
    ("set_registration", ConfirmKind::HeldWhen),
    ("list_attendees", ConfirmKind::ReadOnly),
    ("register_attendee", ConfirmKind::NeverHeld),
    ("withdraw_attendee", ConfirmKind::HeldWhen),
    ("get_public_link", ConfirmKind::ReadOnly),
    ("undo_last_action", ConfirmKind::HeldWhen),
];

/// What the capability's own declaration says about `args`: `Ok(Some)` held with this
/// description, `Ok(None)` runs, `Err` refused.
async fn decide(w: &World, u: &UserId, tool: &str, args: Value) -> Result<Option<String>, String> {
    let def = w.registry.get(tool).expect("a registered capability");
    let args = def.validate(args)?;
    match def.decide(&w.ctx(u, Actor::Agent), &args).await {
        Decision::Run => Ok(None),
        Decision::Hold { description } => Ok(Some(description)),
        Decision::Refuse { message } => Err(message),
    }
}

async fn describe(w: &World, u: &UserId, tool: &str, args: Value) -> Option<String> {
    decide(w, u, tool, args).await.unwrap()
}

async fn the_held_table_matches_the_registry(w: World) {
    let registered: Vec<(&str, ConfirmKind)> = w
        .registry
        .tools()
        .iter()
        .map(|t| (t.name(), t.confirmation()))
        .collect();
    assert_eq!(
        registered,
        TABLE.to_vec(),
        "ARCHITECTURE.md's table and the registry differ"
    );
    // MCP's hints come from the same declaration.
    for t in w.registry.mcp_tools() {
        let kind = TABLE.iter().find(|(n, _)| *n == t.name).unwrap().1;
        assert_eq!(
            t.annotations.destructive_hint,
            kind == ConfirmKind::HeldWhen,
            "{}",
            t.name
        );
        assert_eq!(
            t.annotations.read_only_hint,
            kind == ConfirmKind::ReadOnly,
            "{}",
            t.name
        );
    }
}

/// One call of every holdable capability that changes something of `s`'s event.
fn changing_calls(ev: &str, s: &crate::support::Seeded) -> Vec<(&'static str, Value)> {
    vec![
        ("update_event", json!({"event_id": ev, "name": "Renamed"})),
        (
            "update_event",
            json!({"event_id": ev, "description": "New words"}),
        ),
        ("update_event", json!({"event_id": ev, "dates": [DAY2]})),
        ("update_event", json!({"event_id": ev, "capacity": 7})),
        ("update_event", json!({"event_id": ev, "slug": "spring"})),
        (
            "add_room",
            json!({"event_id": ev, "name": "Annex", "capacity": 3}),
        ),
        (
            "update_room",
            json!({"event_id": ev, "room_id": s.rooms[0], "capacity": 99}),
        ),
        (
            "remove_room",
            json!({"event_id": ev, "room_id": s.rooms[1]}),
        ),
        (
            "add_session",
            json!({"event_id": ev, "title": "Extra", "duration_minutes": 30}),
        ),
        (
            "update_session",
            json!({"event_id": ev, "session_id": s.sessions[0], "title": "Opening"}),
        ),
        (
            "remove_session",
            json!({"event_id": ev, "session_id": s.sessions[0]}),
        ),
        ("build_timetable", json!({"event_id": ev})),
        ("set_registration", json!({"event_id": ev, "open": false})),
    ]
}

async fn a_draft_is_held_only_to_publish_or_delete(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, false).await;
    let ev = s.event.as_str();
    for (tool, args) in changing_calls(ev, &s) {
        assert_eq!(
            describe(&w, &u, tool, args.clone()).await,
            None,
            "{tool} {args}"
        );
    }
    assert_eq!(
        describe(&w, &u, "publish_event", json!({"event_id": ev}))
            .await
            .as_deref(),
        Some(
            "Publish \"Spring Open\" (Sat 12 Dec 2026, 09:00–17:00) — its page becomes public at /e/spring-open"
        )
    );
    assert_eq!(
        describe(&w, &u, "delete_event", json!({"event_id": ev}))
            .await
            .as_deref(),
        Some("Delete the draft event \"Spring Open\" with its 2 room(s) and 3 session(s)")
    );
    assert_eq!(
        describe(&w, &u, "cancel_event", json!({"event_id": ev})).await,
        None
    );
    assert_eq!(
        describe(&w, &u, "reopen_event", json!({"event_id": ev})).await,
        None
    );
}

async fn a_published_event_holds_every_visible_change(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    let ev = s.event.as_str();
    for (tool, args) in changing_calls(ev, &s) {
        let d = describe(&w, &u, tool, args.clone()).await;
        let d = d.unwrap_or_else(|| panic!("{tool} {args} must be held on a published event"));
        assert!(
            d.contains("\"Spring Open\""),
            "named from the database: {d}"
        );
    }
    assert_eq!(
        describe(
            &w,
            &u,
            "cancel_event",
            json!({"event_id": ev, "name": "Some Other Event"})
        )
        .await
        .as_deref(),
        Some(
            "Cancel \"Spring Open\", Sat 12 Dec 2026, 09:00–17:00 — its public page will say it is cancelled; 1 registered person will see it"
        )
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "update_event",
            json!({"event_id": ev, "start_time": "10:00", "venue": "Old Mill"})
        )
        .await
        .as_deref(),
        Some(
            "Change the times from 09:00–17:00 to 10:00–17:00 and the venue from \"Town Hall\" to \"Old Mill\" of the published event \"Spring Open\" (Sat 12 Dec 2026, 09:00–17:00) — visible on its public page /e/spring-open"
        )
    );
    let withdraw = describe(
        &w,
        &u,
        "withdraw_attendee",
        json!({"event_id": ev, "attendee_id": s.attendee, "name": "Nobody"}),
    )
    .await
    .unwrap();
    assert!(
        withdraw.contains(&s.attendee) && !withdraw.contains("Nobody"),
        "{withdraw}"
    );
    assert!(
        describe(&w, &u, "delete_event", json!({"event_id": ev}))
            .await
            .is_some(),
        "delete is always held"
    );
    // Same values change nothing anyone sees: not held.
    assert_eq!(
        describe(&w, &u, "update_event", json!({"event_id": ev, "venue": "Town Hall", "start_time": "09:00", "name": "Spring Open"})).await,
        None
    );
    assert_eq!(
        describe(&w, &u, "publish_event", json!({"event_id": ev})).await,
        None,
        "already published"
    );

    // Cancelled: reopening changes the public page.
    w.ok(&u, "cancel_event", json!({"event_id": ev})).await;
    assert!(
        describe(&w, &u, "reopen_event", json!({"event_id": ev}))
            .await
            .unwrap()
            .starts_with("Reopen the cancelled event \"Spring Open\"")
    );
    assert_eq!(
        describe(&w, &u, "cancel_event", json!({"event_id": ev})).await,
        None,
        "already cancelled"
    );
}

async fn nothing_named_is_not_held_and_bad_input_is_refused(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    let ev = s.event.as_str();
    // Ids that name nothing: the tool itself reports "not found" and changes nothing.
    for (tool, args) in [
        (
            "cancel_event",
            json!({"event_id": "e_01zzzzzzzzzzzzzzzzzzzzzzzz"}),
        ),
        ("cancel_event", json!({"event_id": "Spring Open"})),
        (
            "withdraw_attendee",
            json!({"event_id": ev, "attendee_id": "a_01zzzzzzzzzzzzzzzzzzzzzzzz"}),
        ),
        (
            "remove_room",
            json!({"event_id": ev, "room_id": "r_01zzzzzzzzzzzzzzzzzzzzzzzz"}),
        ),
    ] {
        assert_eq!(
            describe(&w, &u, tool, args.clone()).await,
            None,
            "{tool} {args}"
        );
    }
    // Another user's ids describe nothing (and their tools find nothing).
    let b = w.account("bob").await;
    assert_eq!(
        describe(&w, &b, "cancel_event", json!({"event_id": ev})).await,
        None
    );
    // Input that does not fit the schema is refused before any decision.
    for (tool, args) in [
        ("cancel_event", json!({"event": ev})),
        ("cancel_event", json!("garbage")),
        ("remove_session", json!({"event_id": ev, "session_id": 42})),
    ] {
        assert!(
            decide(&w, &u, tool, args.clone()).await.is_err(),
            "{tool} {args}"
        );
    }
}

async fn an_undo_is_held_when_it_changes_a_public_page(w: World) {
    let u = w.account("alice").await;
    // Nothing to undo: not held (the tool itself says so).
    assert_eq!(describe(&w, &u, "undo_last_action", json!({})).await, None);
    let draft = seed(&w, &u, false).await;
    // The newest request changed only a draft: nobody else sees it.
    assert_eq!(describe(&w, &u, "undo_last_action", json!({})).await, None);
    w.ok(&u, "publish_event", json!({"event_id": draft.event}))
        .await;
    w.ok(
        &u,
        "update_event",
        json!({"event_id": draft.event, "description": "With lunch."}),
    )
    .await;
    let held = describe(&w, &u, "undo_last_action", json!({}))
        .await
        .expect("an undo on a published event is held");
    assert!(held.starts_with("Undo your last request"), "{held}");
    assert!(held.contains("\"Spring Open\" (published)"), "{held}");
    assert!(held.contains("/e/spring-open"), "{held}");
    // The description names the request, so it changes when the newest request does.
    w.ok(
        &u,
        "add_room",
        json!({"event_id": draft.event, "name": "Annex", "capacity": 5}),
    )
    .await;
    let next = describe(&w, &u, "undo_last_action", json!({}))
        .await
        .unwrap();
    assert_ne!(next, held);
    // Undoing a cancel brings the public page back: held too.
    let v = w.account("victor").await;
    let s = seed(&w, &v, true).await;
    w.ok(&v, "cancel_event", json!({"event_id": s.event})).await;
    let reopen = describe(&w, &v, "undo_last_action", json!({}))
        .await
        .unwrap();
    assert!(reopen.contains("(cancelled)"), "{reopen}");
}

async fn registration_is_held_only_when_it_changes(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    let ev = s.event.as_str();
    // Already open, no deadline: the web form re-sending both changes nothing.
    assert_eq!(
        describe(
            &w,
            &u,
            "set_registration",
            json!({"event_id": ev, "open": true, "closes_at": ""})
        )
        .await,
        None
    );
    let deadline = json!({"event_id": ev, "closes_at": "2026-12-10T12:00"});
    let held = describe(&w, &u, "set_registration", deadline.clone())
        .await
        .expect("a new deadline of a published event is held");
    assert!(held.contains("registration deadline"), "{held}");
    w.ok(&u, "set_registration", deadline.clone()).await;
    assert_eq!(
        describe(&w, &u, "set_registration", deadline).await,
        None,
        "the same deadline again changes nothing"
    );
    // A deadline that does not parse is the tool's to refuse, not a reason to hold.
    assert_eq!(
        describe(
            &w,
            &u,
            "set_registration",
            json!({"event_id": ev, "closes_at": "soon"})
        )
        .await,
        None
    );
}

steward_store::backend_tests!(setup = world;
    registration_is_held_only_when_it_changes,
    an_undo_is_held_when_it_changes_a_public_page,
    the_held_table_matches_the_registry,
    a_draft_is_held_only_to_publish_or_delete,
    a_published_event_holds_every_visible_change,
    nothing_named_is_not_held_and_bad_input_is_refused,
);
