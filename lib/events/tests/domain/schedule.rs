//! Building and reading the stored timetable.

use serde_json::json;
use steward_events::ids::EventId;
use steward_events::schedule;
use steward_harness::{ServiceError, ToolErrorKind};

use crate::support::{DAY1, World, id_of, seed, world};

async fn build_reports_finish_times_and_saves(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let event = EventId::parse(&s.event).unwrap();
    let view = schedule::get_timetable(&ctx, &event)
        .await
        .unwrap()
        .unwrap();
    assert!(view.up_to_date);
    assert_eq!(view.slots.len(), 3);
    // The workshop comes after the keynote; the keynote needs the big room.
    let keynote = view.slots.iter().find(|x| x.title == "Keynote").unwrap();
    let workshop = view.slots.iter().find(|x| x.title == "Workshop").unwrap();
    assert_eq!(keynote.room, "Aula");
    assert!(workshop.start >= keynote.end);

    let r = w
        .ok(&u, "get_timetable", json!({"event_id": s.event}))
        .await;
    assert!(
        r.summary.starts_with(
            "Timetable of \"Spring Open\" (up to date): 3 session(s); Sat 12 Dec 2026 ends "
        ),
        "{}",
        r.summary
    );

    // Rebuilding unchanged input changes nothing and writes nothing.
    let before = w.records(&u).await;
    let planned = schedule::build_timetable(&ctx, &event).await.unwrap();
    assert!(!planned.changes_anything());
    let built = planned.commit().await.unwrap();
    assert!(
        built
            .summary()
            .starts_with("Timetable built for \"Spring Open\": Sat 12 Dec 2026 finishes at "),
        "{}",
        built.summary()
    );
    assert_eq!(w.records(&u).await, before);

    // A change makes it out of date; a rebuild keeps what can stay.
    w.ok(&u, "add_session", json!({"event_id": s.event, "title": "Closing", "duration_minutes": 15, "after": [s.sessions[1]]})).await;
    let r = w
        .ok(&u, "get_timetable", json!({"event_id": s.event}))
        .await;
    assert!(
        r.summary
            .contains("(out of date: sessions, rooms or settings changed since; rebuild it)"),
        "{}",
        r.summary
    );
    let r = w
        .ok(&u, "build_timetable", json!({"event_id": s.event}))
        .await;
    let data = r.data.unwrap();
    assert_eq!(data["sessions"], 4);
    assert_eq!(
        data["moved"],
        json!([]),
        "every earlier placement is still valid"
    );
    assert!(data["days"][0]["finish"].is_string());
    let view = schedule::get_timetable(&ctx, &event)
        .await
        .unwrap()
        .unwrap();
    assert!(view.up_to_date);
}

async fn build_needs_rooms_and_sessions(w: World) {
    let u = w.account("alice").await;
    let e = id_of(
        &w.ok(&u, "create_event", json!({"name": "Bare", "dates": [DAY1]}))
            .await,
    );
    let err = w.err(&u, "build_timetable", json!({"event_id": e})).await;
    assert_eq!(
        err.message,
        "Invalid rooms: event \"Bare\" has no rooms yet; add them with add_room first"
    );
    w.ok(
        &u,
        "add_room",
        json!({"event_id": e, "name": "Aula", "capacity": 50}),
    )
    .await;
    let err = w.err(&u, "build_timetable", json!({"event_id": e})).await;
    assert_eq!(
        err.message,
        "Invalid sessions: event \"Bare\" has no sessions yet; add them with add_session first"
    );
    let r = w.ok(&u, "get_timetable", json!({"event_id": e})).await;
    assert_eq!(
        r.summary,
        "\"Bare\" has no timetable yet; build one with build_timetable."
    );
    let err = w
        .err(
            &u,
            "build_timetable",
            json!({"event_id": "e_01aaaaaaaaaaaaaaaaaaaaaaaa"}),
        )
        .await;
    assert_eq!(err.kind, ToolErrorKind::NotFound);
    let err = w
        .err(
            &u,
            "get_timetable",
            json!({"event_id": "e_01aaaaaaaaaaaaaaaaaaaaaaaa"}),
        )
        .await;
    assert_eq!(err.kind, ToolErrorKind::NotFound);
}

async fn an_impossible_program_is_explained_and_nothing_saved(w: World) {
    let u = w.account("alice").await;
    let e = id_of(
        &w.ok(
            &u,
            "create_event",
            json!({"name": "Crammed", "dates": [DAY1], "start_time": "09:00", "end_time": "11:00"}),
        )
        .await,
    );
    w.ok(
        &u,
        "add_room",
        json!({"event_id": e, "name": "Aula", "capacity": 50}),
    )
    .await;
    for title in ["One", "Two", "Three"] {
        w.ok(&u, "add_session", json!({"event_id": e, "title": title, "duration_minutes": 60, "speakers": ["Dana Lee"]})).await;
    }
    let before = w.records(&u).await;
    let err = w.err(&u, "build_timetable", json!({"event_id": e})).await;
    assert_eq!(err.kind, ToolErrorKind::Invalid);
    assert!(
        err.message
            .starts_with("Invalid timetable: no timetable fits these sessions and rooms: "),
        "{}",
        err.message
    );
    assert!(
        !err.message.contains("p_"),
        "ids are replaced by names: {}",
        err.message
    );
    assert_eq!(w.records(&u).await, before);

    w.ok(&u, "cancel_event", json!({"event_id": e})).await;
    let err = w.err(&u, "build_timetable", json!({"event_id": e})).await;
    assert_eq!(err.kind, ToolErrorKind::Forbidden);
    let _ = ServiceError::internal("unused");
}

steward_store::backend_tests!(setup = world;
    build_reports_finish_times_and_saves,
    build_needs_rooms_and_sessions,
    an_impossible_program_is_explained_and_nothing_saved,
);
