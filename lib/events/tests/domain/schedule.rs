//! Building and reading the stored timetable.

use serde_json::{Value, json};
use steward_events::ids::EventId;
use steward_events::{events, overview, program, rooms, schedule, sessions};
use steward_harness::{ServiceError, ToolErrorKind, UserId};
use steward_store::{Item, WriteOp};

use crate::support::{DAY1, World, id_of, seed, world};

/// The user's row at `sk`, if any, as (version, data).
async fn row(w: &World, u: &UserId, sk: &str) -> Option<(u64, Value)> {
    w.dump_user(u)
        .await
        .into_iter()
        .find(|(k, ..)| k == sk)
        .map(|(_, version, _, data)| (version, data))
}

async fn status(w: &World, u: &UserId, event: &EventId) -> &'static str {
    overview::event_overview(&w.web(u), event)
        .await
        .unwrap()
        .timetable
        .as_str()
}

/// A built timetable is a small stamp among the event's records and a document outside them;
/// "up to date" is read from the stamp, and undo puts both back as they were.
async fn the_timetable_is_a_stamp_in_the_event_and_a_document_beside_it(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, false).await;
    let event = EventId::parse(&s.event).unwrap();
    let stamp_sk = format!("EVENT#{}#TIMETABLE", s.event);
    let doc_sk = format!("TIMETABLE#{}", s.event);
    let (_, stamp) = row(&w, &u, &stamp_sk).await.unwrap();
    let fingerprint = stamp["input_sha256"].as_str().unwrap().to_owned();
    assert_eq!(fingerprint.len(), 64, "{stamp}");
    assert!(stamp["built_ms"].is_i64(), "{stamp}");
    assert_eq!(
        stamp.as_object().unwrap().len(),
        2,
        "the stamp is small: {stamp}"
    );
    let (_, doc) = row(&w, &u, &doc_sk).await.unwrap();
    assert_eq!(doc["timetable"]["assignments"].as_array().unwrap().len(), 3);
    assert!(doc.get("input").is_none(), "{doc}");
    assert_eq!(status(&w, &u, &event).await, "up to date");

    // A change shows in the stamp's comparison; a rebuild writes both again.
    w.ok(
        &u,
        "add_session",
        json!({"event_id": s.event, "title": "Closing", "duration_minutes": 15}),
    )
    .await;
    assert_eq!(status(&w, &u, &event).await, "out of date (rebuild it)");
    w.ok(&u, "build_timetable", json!({"event_id": s.event}))
        .await;
    assert_eq!(status(&w, &u, &event).await, "up to date");
    let (_, rebuilt) = row(&w, &u, &stamp_sk).await.unwrap();
    assert_ne!(rebuilt["input_sha256"], fingerprint.as_str());
    let (_, doc2) = row(&w, &u, &doc_sk).await.unwrap();
    assert_eq!(
        doc2["timetable"]["assignments"].as_array().unwrap().len(),
        4
    );

    // Undoing the rebuild restores the earlier stamp and document together.
    w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(row(&w, &u, &stamp_sk).await.unwrap().1, stamp);
    assert_eq!(row(&w, &u, &doc_sk).await.unwrap().1, doc);
    assert_eq!(status(&w, &u, &event).await, "out of date (rebuild it)");
}

/// A timetable stored whole (input and timetable in one record inside the event, as before the
/// stamp) is still read and compared input to input; the next build turns it into a stamp and
/// a document, and undoing that build puts the whole record back.
async fn a_timetable_stored_whole_is_still_read_and_rebuilt_into_a_stamp(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, false).await;
    let ctx = w.web(&u);
    let event = EventId::parse(&s.event).unwrap();
    let stamp_sk = format!("EVENT#{}#TIMETABLE", s.event);
    let doc_sk = format!("TIMETABLE#{}", s.event);
    let input = schedule::engine_input(
        &events::get_event(&ctx, &event).await.unwrap(),
        &program::get_program(&ctx, &event).await.unwrap(),
        &rooms::list_rooms(&ctx, &event).await.unwrap(),
        &sessions::list_sessions(&ctx, &event).await.unwrap(),
    );
    let (stamp_version, _) = row(&w, &u, &stamp_sk).await.unwrap();
    let (doc_version, doc) = row(&w, &u, &doc_sk).await.unwrap();
    let whole = json!({
        "input": input,
        "timetable": doc["timetable"],
        "built_ms": doc["built_ms"],
    });
    let pk = format!("USER#{u}");
    let mut item = Item::new(pk.clone(), stamp_sk.clone(), whole.clone());
    item.version = stamp_version + 1;
    w.table
        .write(vec![
            WriteOp::put(item),
            WriteOp::Delete {
                pk: pk.clone(),
                sk: doc_sk.clone(),
                condition: None,
            },
        ])
        .await
        .unwrap();
    let _ = doc_version;

    let view = schedule::get_timetable(&ctx, &event)
        .await
        .unwrap()
        .unwrap();
    assert!(view.up_to_date);
    assert_eq!(view.slots.len(), 3);
    assert_eq!(status(&w, &u, &event).await, "up to date");
    let before = w.records(&u).await;
    let planned = schedule::build_timetable(&ctx, &event).await.unwrap();
    assert!(!planned.changes_anything(), "same input, same timetable");
    assert_eq!(w.records(&u).await, before);

    w.ok(
        &u,
        "add_session",
        json!({"event_id": s.event, "title": "Closing", "duration_minutes": 15}),
    )
    .await;
    assert_eq!(status(&w, &u, &event).await, "out of date (rebuild it)");
    w.ok(&u, "build_timetable", json!({"event_id": s.event}))
        .await;
    let (_, stamp) = row(&w, &u, &stamp_sk).await.unwrap();
    assert!(stamp["input_sha256"].is_string(), "{stamp}");
    assert!(stamp.get("input").is_none(), "{stamp}");
    let (_, doc) = row(&w, &u, &doc_sk).await.unwrap();
    assert_eq!(doc["timetable"]["assignments"].as_array().unwrap().len(), 4);
    assert_eq!(status(&w, &u, &event).await, "up to date");

    w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(row(&w, &u, &stamp_sk).await.unwrap().1, whole);
    assert_eq!(row(&w, &u, &doc_sk).await, None);
    assert_eq!(status(&w, &u, &event).await, "out of date (rebuild it)");
}

/// Deleting a draft event takes its timetable document with it, and undo brings both back.
async fn deleting_an_event_deletes_its_timetable_document(w: World) {
    let u = w.account("alice").await;
    let e = id_of(
        &w.ok(
            &u,
            "create_event",
            json!({"name": "Draft", "dates": [DAY1]}),
        )
        .await,
    );
    w.ok(
        &u,
        "add_room",
        json!({"event_id": e, "name": "Aula", "capacity": 50}),
    )
    .await;
    w.ok(
        &u,
        "add_session",
        json!({"event_id": e, "title": "Talk", "duration_minutes": 30}),
    )
    .await;
    w.ok(&u, "build_timetable", json!({"event_id": e})).await;
    let doc_sk = format!("TIMETABLE#{e}");
    let doc = row(&w, &u, &doc_sk).await.unwrap().1;
    w.ok(&u, "delete_event", json!({"event_id": e})).await;
    assert_eq!(row(&w, &u, &doc_sk).await, None);
    assert!(w.records(&u).await.is_empty());
    w.ok(&u, "undo_last_action", json!({})).await;
    assert_eq!(row(&w, &u, &doc_sk).await.unwrap().1, doc);
    let event = EventId::parse(&e).unwrap();
    assert_eq!(status(&w, &u, &event).await, "up to date");
}

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
    the_timetable_is_a_stamp_in_the_event_and_a_document_beside_it,
    a_timetable_stored_whole_is_still_read_and_rebuilt_into_a_stamp,
    deleting_an_event_deletes_its_timetable_document,
);
