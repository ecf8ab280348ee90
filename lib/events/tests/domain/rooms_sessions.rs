//! Rooms, people, sessions and program settings.

use serde_json::json;
use steward_events::ids::{EventId, RoomId, SessionId};
use steward_events::people;
use steward_events::program::{self, ProgramChanges};
use steward_events::rooms::{self, NewRoom, RoomChanges};
use steward_events::sessions::{self, NewSession, SessionChanges};
use steward_events::text::{PersonName, RoomName, SessionTitle};
use steward_events::when::parse_time;
use steward_harness::{ServiceError, ToolErrorKind};

use crate::support::{World, id_of, seed, world};

const NO_EVENT: &str = "e_01aaaaaaaaaaaaaaaaaaaaaaaa";
const NO_ROOM: &str = "r_01aaaaaaaaaaaaaaaaaaaaaaaa";
const NO_SESSION: &str = "s_01aaaaaaaaaaaaaaaaaaaaaaaa";

fn new_room(name: &str, capacity: u32) -> NewRoom {
    NewRoom {
        name: RoomName::parse(name).unwrap(),
        capacity,
        available_from: None,
        available_until: None,
    }
}

fn new_session(title: &str, minutes: u16) -> NewSession {
    NewSession {
        title: SessionTitle::parse(title).unwrap(),
        duration_minutes: minutes,
        speakers: Vec::new(),
        track: None,
        after: Vec::new(),
        min_capacity: None,
        room: None,
    }
}

async fn rooms_add_update_remove(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let event = EventId::parse(&s.event).unwrap();

    let mut annex = new_room("Annex", 20);
    annex.available_from = Some(parse_time("t", "13:00").unwrap());
    let room = rooms::add_room(&ctx, &event, annex)
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
    assert_eq!(rooms::get_room(&ctx, &event, &room.id).await.unwrap(), room);
    assert_eq!(rooms::list_rooms(&ctx, &event).await.unwrap().len(), 3);

    let err = rooms::add_room(&ctx.next_action(), &event, new_room("aula", 5))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "A room named \"aula\" in event \"Spring Open\" already exists."
    );
    let mut backwards = new_room("Backwards", 5);
    backwards.available_from = Some(parse_time("t", "15:00").unwrap());
    backwards.available_until = Some(parse_time("t", "10:00").unwrap());
    let err = rooms::add_room(&ctx.next_action(), &event, backwards)
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "Invalid available_until: the room is available until 10:00 but only from 15:00"
        ),
        "{err}"
    );
    let err = rooms::add_room(&ctx.next_action(), &event, new_room("Zero", 0))
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { ref field, .. } if field == "capacity"));
    let e = w
        .err(
            &u,
            "add_room",
            json!({"event_id": NO_EVENT, "name": "X", "capacity": 5}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
    let e = w
        .err(&u, "add_room", json!({"event_id": s.event, "name": "X"}))
        .await;
    assert_eq!(
        e.message,
        "Invalid arguments: capacity: required but missing"
    );

    let r = w
        .ok(
            &u,
            "update_room",
            json!({"event_id": s.event, "room_id": room.id, "capacity": 25, "available_from": ""}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Changed the capacity and hours of room \"Annex\"."
    );
    let r = w
        .ok(
            &u,
            "update_room",
            json!({"event_id": s.event, "room_id": room.id, "capacity": 25}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Nothing changed: room \"Annex\" already is like that."
    );
    let err = rooms::update_room(&ctx.next_action(), &event, &room.id, RoomChanges::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }));
    let e = w
        .err(
            &u,
            "update_room",
            json!({"event_id": s.event, "room_id": room.id, "name": "Lab"}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::AlreadyExists);
    let e = w
        .err(
            &u,
            "update_room",
            json!({"event_id": s.event, "room_id": NO_ROOM, "capacity": 3}),
        )
        .await;
    assert_eq!(
        e.message,
        format!(
            "Room {NO_ROOM} in event \"Spring Open\" was not found. Check the id, for example with a list tool, and try again."
        )
    );

    // A room a session must use: fewer seats than it needs, or removing it, is refused.
    let lab = RoomId::parse(&s.rooms[1]).unwrap();
    w.ok(&u, "update_session", json!({"event_id": s.event, "session_id": s.sessions[2], "room_id": lab.as_str(), "min_capacity": 25})).await;
    let e = w
        .err(
            &u,
            "update_room",
            json!({"event_id": s.event, "room_id": lab.as_str(), "capacity": 20}),
        )
        .await;
    assert_eq!(
        e.message,
        "Invalid capacity: the session \"Panel\" must be in this room and needs 25 seats"
    );
    let e = w
        .err(
            &u,
            "remove_room",
            json!({"event_id": s.event, "room_id": lab.as_str()}),
        )
        .await;
    assert_eq!(
        e.message,
        "Not allowed: room \"Lab\" cannot be removed: the session(s) \"Panel\" must be held in it; change or remove those sessions first"
    );

    let r = w
        .ok(
            &u,
            "remove_room",
            json!({"event_id": s.event, "room_id": room.id}),
        )
        .await;
    assert_eq!(r.summary, "Removed room \"Annex\".");
    let e = w
        .err(
            &u,
            "remove_room",
            json!({"event_id": s.event, "room_id": room.id}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
}

async fn people_are_unique_per_event(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let event = EventId::parse(&s.event).unwrap();
    let r = w
        .ok(
            &u,
            "add_person",
            json!({"event_id": s.event, "name": "Ann Bell"}),
        )
        .await;
    assert_eq!(r.summary, "Added Ann Bell.");
    assert!(id_of(&r).starts_with("p_"));
    assert_eq!(people::list_people(&ctx, &event).await.unwrap().len(), 2);
    let err = people::add_person(&ctx, &event, PersonName::parse("dana lee").unwrap())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("A person named \"Dana Lee\" (id p_"),
        "{err}"
    );
    let e = w
        .err(&u, "add_person", json!({"event_id": NO_EVENT, "name": "X"}))
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
}

async fn sessions_add_with_speakers_and_checks(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let event = EventId::parse(&s.event).unwrap();

    let r = w
        .ok(&u, "add_session", json!({"event_id": s.event, "title": "Lightning talks", "duration_minutes": 30, "speakers": ["dana lee", "Ann Bell", "Ann Bell", s.person]}))
        .await;
    assert_eq!(
        r.summary,
        "Added \"Lightning talks\" (30 min, Dana Lee and Ann Bell). New speaker(s): Ann Bell."
    );
    let data = r.data.unwrap();
    assert_eq!(data["speaker_ids"].as_array().unwrap().len(), 2);
    assert_eq!(data["speaker_ids"][0], s.person.as_str());
    assert_eq!(people::list_people(&ctx, &event).await.unwrap().len(), 2);

    let unknown_person = "p_01aaaaaaaaaaaaaaaaaaaaaaaa";
    let e = w.err(&u, "add_session", json!({"event_id": s.event, "title": "X", "duration_minutes": 10, "speakers": [unknown_person]})).await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
    let e = w
        .err(
            &u,
            "add_session",
            json!({"event_id": s.event, "title": "X", "duration_minutes": 10, "track": "Advanced"}),
        )
        .await;
    assert_eq!(
        e.message,
        "Invalid track: event \"Spring Open\" has no track \"Advanced\"; its tracks are \"Main\""
    );
    let e = w.err(&u, "add_session", json!({"event_id": s.event, "title": "X", "duration_minutes": 10, "after": [NO_SESSION]})).await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
    let e = w
        .err(
            &u,
            "add_session",
            json!({"event_id": s.event, "title": "X", "duration_minutes": 10, "room_id": NO_ROOM}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
    let e = w
        .err(
            &u,
            "add_session",
            json!({"event_id": s.event, "title": "X", "duration_minutes": 10, "min_capacity": 500}),
        )
        .await;
    assert_eq!(
        e.message,
        "Invalid min_capacity: no room of event \"Spring Open\" has 500 seats (the biggest has 120)"
    );
    let e = w.err(&u, "add_session", json!({"event_id": s.event, "title": "X", "duration_minutes": 10, "min_capacity": 50, "room_id": s.rooms[1]})).await;
    assert_eq!(
        e.message,
        "Invalid min_capacity: the session needs 50 seats but room \"Lab\" has 30"
    );
    let e = w
        .err(
            &u,
            "add_session",
            json!({"event_id": s.event, "title": "X", "duration_minutes": 0}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::InvalidArguments);
    let err = sessions::add_session(&ctx, &event, new_session("Zero", 0))
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { ref field, .. } if field == "duration_minutes"));

    // An event without tracks says how to add one.
    let plain = id_of(
        &w.ok(
            &u,
            "create_event",
            json!({"name": "Plain", "dates": [crate::support::DAY1]}),
        )
        .await,
    );
    let e = w
        .err(
            &u,
            "add_session",
            json!({"event_id": plain, "title": "X", "duration_minutes": 10, "track": "Main"}),
        )
        .await;
    assert!(
        e.message
            .contains("has no tracks; add \"Main\" to its tracks with update_event first"),
        "{}",
        e.message
    );

    let list = sessions::list_sessions(&ctx, &event).await.unwrap();
    assert_eq!(list.len(), 4);
    let r = w
        .ok(&u, "list_sessions", json!({"event_id": s.event}))
        .await;
    assert_eq!(r.summary, "4 session(s), 225 min in all; 2 speaker(s).");
    assert_eq!(
        r.data.unwrap()["sessions"][0]["speakers"],
        json!(["Dana Lee"])
    );
    let e = w
        .err(&u, "list_sessions", json!({"event_id": NO_EVENT}))
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
}

async fn sessions_update_and_remove(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let event = EventId::parse(&s.event).unwrap();
    let keynote = SessionId::parse(&s.sessions[0]).unwrap();
    let workshop = SessionId::parse(&s.sessions[1]).unwrap();

    let r = w
        .ok(&u, "update_session", json!({"event_id": s.event, "session_id": keynote.as_str(), "duration_minutes": 45, "track": ""}))
        .await;
    assert_eq!(r.summary, "Changed the length and track of \"Keynote\".");
    let r = w
        .ok(
            &u,
            "update_session",
            json!({"event_id": s.event, "session_id": keynote.as_str(), "duration_minutes": 45}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Nothing changed: \"Keynote\" already is like that."
    );

    // The workshop comes after the keynote: the reverse would be a circle.
    let e = w.err(&u, "update_session", json!({"event_id": s.event, "session_id": keynote.as_str(), "after": [workshop.as_str()]})).await;
    assert_eq!(
        e.message,
        "Invalid after: that would make \"Keynote\" come after itself (through the sessions it must follow)"
    );
    let e = w.err(&u, "update_session", json!({"event_id": s.event, "session_id": keynote.as_str(), "after": [keynote.as_str()]})).await;
    assert_eq!(
        e.message,
        "Invalid after: \"Keynote\" cannot come after itself"
    );
    let err = sessions::update_session(&ctx, &event, &keynote, SessionChanges::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }));
    let e = w
        .err(
            &u,
            "update_session",
            json!({"event_id": s.event, "session_id": NO_SESSION, "title": "X"}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);

    // Removing the keynote frees the workshop from waiting for it, in the same step.
    let r = w
        .ok(
            &u,
            "remove_session",
            json!({"event_id": s.event, "session_id": keynote.as_str()}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Removed \"Keynote\". \"Workshop\" no longer wait(s) for it."
    );
    let w2 = sessions::get_session(&ctx, &event, &workshop)
        .await
        .unwrap();
    assert!(w2.after.is_empty());
    let e = w
        .err(
            &u,
            "remove_session",
            json!({"event_id": s.event, "session_id": keynote.as_str()}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
}

async fn program_settings(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let event = EventId::parse(&s.event).unwrap();
    let p = program::get_program(&ctx, &event).await.unwrap();
    assert_eq!(p.changeover_minutes, 10);
    assert_eq!(p.lunch.unwrap().length_minutes, 45);

    let r = w
        .ok(&u, "set_program", json!({"event_id": s.event, "day_start": "10:00", "lunch_latest_end": "13:30", "speaker_rest_minutes": 15}))
        .await;
    assert_eq!(
        r.summary,
        "Program of \"Spring Open\": sessions 10:00–17:00, lunch 45 min between 12:00 and 13:30, 10 min changeover, 15 min speaker rest."
    );
    let e = w
        .err(
            &u,
            "set_program",
            json!({"event_id": s.event, "lunch_minutes": 120}),
        )
        .await;
    assert_eq!(
        e.message,
        "Invalid lunch_latest_end: a 120-minute lunch does not fit between 12:00 and 13:30"
    );
    let e = w
        .err(
            &u,
            "set_program",
            json!({"event_id": s.event, "day_end": "09:00"}),
        )
        .await;
    assert_eq!(
        e.message,
        "Invalid day_end: sessions would end by 09:00 but start from 10:00; the end must be later"
    );
    let r = w
        .ok(
            &u,
            "set_program",
            json!({"event_id": s.event, "lunch_minutes": 0}),
        )
        .await;
    assert!(r.summary.contains("no lunch"), "{}", r.summary);
    let e = w
        .err(
            &u,
            "set_program",
            json!({"event_id": s.event, "lunch_earliest_start": "11:30"}),
        )
        .await;
    assert_eq!(
        e.message,
        "Invalid lunch_minutes: the event has no lunch yet; give its length in minutes too"
    );
    let err = program::set_program(&ctx, &event, ProgramChanges::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }));
    let e = w
        .err(
            &u,
            "set_program",
            json!({"event_id": NO_EVENT, "changeover_minutes": 5}),
        )
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
}

steward_store::backend_tests!(setup = world;
    rooms_add_update_remove,
    people_are_unique_per_event,
    sessions_add_with_speakers_and_checks,
    sessions_update_and_remove,
    program_settings,
);
