//! Events: create, get, list, update, publish, cancel, reopen, delete, registration settings.

use serde_json::json;
use steward_events::events::{
    self, EventChanges, EventStatus, NewEvent, RegistrationCounter, SlugOwner,
};
use steward_events::ids::EventId;
use steward_events::slug::Slug;
use steward_events::text::{EventName, TrackName, Venue};
use steward_events::when::{self, EventDates};
use steward_harness::{ServiceError, TimeZoneName, ToolErrorKind};
use steward_store::testing::Backend;

use crate::support::{DAY1, DAY2, World, id_of, seed, world};

fn new_event(name: &str, dates: &[&str]) -> NewEvent {
    NewEvent::new(
        EventName::parse(name).unwrap(),
        EventDates::parse(dates).unwrap(),
    )
}

async fn create(w: &World, user: &steward_harness::UserId, name: &str) -> events::Event {
    events::create_event(&w.web(user), new_event(name, &[DAY1]))
        .await
        .unwrap()
        .commit()
        .await
        .unwrap()
}

async fn create_uses_defaults_and_reserves_a_slug(w: World) {
    let u = w.account("alice").await;
    let e = create(&w, &u, "Spring Open").await;
    assert_eq!(e.status, EventStatus::Draft);
    assert_eq!(when::fmt_time(e.start_time), "09:00");
    assert_eq!(when::fmt_time(e.end_time), "17:00");
    assert_eq!(e.time_zone.as_str(), "Europe/Berlin", "the account's zone");
    assert!(e.registration.open);
    assert_eq!(e.slug.as_str(), "spring-open");
    let row = w.dump("SLUG#spring-open").await;
    let owner: SlugOwner = serde_json::from_value(row[0].3.clone()).unwrap();
    assert_eq!((owner.user, owner.event), (u.clone(), e.id.clone()));
    let records = w.records(&u).await;
    let counter = records
        .iter()
        .find(|r| r.0.ends_with("#REGISTRATIONS"))
        .unwrap();
    assert_eq!(
        serde_json::from_value::<RegistrationCounter>(counter.3.clone()).unwrap(),
        RegistrationCounter::default()
    );
    assert_eq!(events::get_event(&w.web(&u), &e.id).await.unwrap(), e);

    // The same name again, by anyone, gets a numbered slug.
    let b = w.account("bob").await;
    assert_eq!(
        create(&w, &u, "Spring Open").await.slug.as_str(),
        "spring-open-2"
    );
    assert_eq!(
        create(&w, &b, "Spring Open!").await.slug.as_str(),
        "spring-open-3"
    );
}

async fn create_refuses_bad_input(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let mut taken = new_event("Other", &[DAY1]);
    create(&w, &u, "Spring Open").await;
    taken.slug = Some(Slug::parse("spring-open").unwrap());
    let err = events::create_event(&ctx, taken).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "The address /e/spring-open (choose another slug) already exists."
    );

    let err = events::create_event(&ctx, new_event("Past", &["2026-11-01"]))
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "Invalid dates: 2026-11-01 is in the past (today is 2026-11-30 in Europe/Berlin)"
        ),
        "{err}"
    );

    let mut backwards = new_event("Backwards", &[DAY1]);
    backwards.start_time = Some(when::parse_time("t", "18:00").unwrap());
    let err = events::create_event(&ctx, backwards).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Invalid end_time: the event ends at 17:00 but starts at 18:00"),
        "{err}"
    );

    let mut twice = new_event("Tracks", &[DAY1]);
    twice.tracks = vec![
        TrackName::parse("Main").unwrap(),
        TrackName::parse("main").unwrap(),
    ];
    assert!(matches!(
        events::create_event(&ctx, twice).await.unwrap_err(),
        ServiceError::Invalid { ref field, .. } if field == "tracks"
    ));

    let mut zero = new_event("Zero", &[DAY1]);
    zero.capacity = Some(0);
    assert!(matches!(
        events::create_event(&ctx, zero).await.unwrap_err(),
        ServiceError::Invalid { ref field, .. } if field == "capacity"
    ));

    // Through the tool: the schema and the parsers name the field.
    let e = w.err(&u, "create_event", json!({"dates": [DAY1]})).await;
    assert_eq!(e.message, "Invalid arguments: name: required but missing");
    let e = w
        .err(
            &u,
            "create_event",
            json!({"name": "X", "dates": ["12/12/2026"]}),
        )
        .await;
    assert!(
        e.message
            .starts_with("Invalid dates: \"12/12/2026\" is not a date"),
        "{}",
        e.message
    );
    let e = w
        .err(
            &u,
            "create_event",
            json!({"name": "X", "dates": [DAY1], "time_zone": "Mars/Olympus"}),
        )
        .await;
    assert!(
        e.message.starts_with("Invalid time zone: \"Mars/Olympus\""),
        "{}",
        e.message
    );
    let e = w
        .err(
            &u,
            "create_event",
            json!({"name": "X", "dates": [DAY1], "start_time": "9am"}),
        )
        .await;
    assert!(
        e.message
            .starts_with("Invalid start_time: \"9am\" is not a time of day"),
        "{}",
        e.message
    );
    // Nothing was created by the failures.
    assert_eq!(events::list_events(&ctx).await.unwrap().len(), 1);
}

async fn create_tool_reports_the_new_id_and_defaults(w: World) {
    let u = w.account("alice").await;
    let r = w
        .ok(
            &u,
            "create_event",
            json!({"name": "Spring Open", "dates": [DAY1]}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Created the draft \"Spring Open\" for Sat 12 Dec 2026, 09:00–17:00 (Europe/Berlin). The times are the default; say if they differ. Once published, its page will be https://steward.test/e/spring-open."
    );
    let id = id_of(&r);
    assert!(id.starts_with("e_"));
    assert_eq!(r.data.unwrap()["status"], "draft");
}

async fn get_and_list(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    assert!(events::list_events(&ctx).await.unwrap().is_empty());
    let r = w.ok(&u, "list_events", json!({})).await;
    assert_eq!(r.summary, "No events yet. Create one with create_event.");
    let s = seed(&w, &u, false).await;
    let newer = create(&w, &u, "Autumn Meetup").await;
    let list = events::list_events(&ctx).await.unwrap();
    let names: Vec<&str> = list.iter().map(|l| l.event.name.as_str()).collect();
    assert_eq!(
        names,
        ["Autumn Meetup", "Spring Open"],
        "newest first, no child records"
    );
    assert_eq!(list[1].registered, 1);
    assert_eq!(list[0].event, newer);

    let r = w.ok(&u, "get_event", json!({"event_id": s.event})).await;
    assert!(r.summary.starts_with("\"Spring Open\" (draft): Sat 12 Dec 2026, 09:00–17:00 (Europe/Berlin) at Town Hall. 2 room(s), 3 session(s); registration open once the event is published; 1 of 100 places taken; timetable up to date."), "{}", r.summary);
    let data = r.data.unwrap();
    assert_eq!(data["rooms"].as_array().unwrap().len(), 2);
    assert_eq!(data["program"]["lunch"], "45 min between 12:00 and 14:00");

    let missing = EventId::parse("e_01aaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    let err = events::get_event(&ctx, &missing).await.unwrap_err();
    assert_eq!(
        err.for_model(),
        "Event e_01aaaaaaaaaaaaaaaaaaaaaaaa was not found. Check the id, for example with a list tool, and try again."
    );
    let e = w
        .err(&u, "get_event", json!({"event_id": "Spring Open"}))
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
    assert!(
        e.message
            .starts_with("Event with id \"Spring Open\" was not found"),
        "{}",
        e.message
    );
}

async fn update_changes_only_what_is_given(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let id = EventId::parse(&s.event).unwrap();
    let changes = EventChanges {
        dates: Some(EventDates::parse(&[DAY1, DAY2]).unwrap()),
        venue: Some(Some(Venue::parse("Old Mill").unwrap())),
        capacity: Some(None),
        ..EventChanges::default()
    };
    let u1 = events::update_event(&ctx, &id, changes)
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
    assert_eq!(u1.changed.labels(), ["dates", "venue", "capacity"]);
    assert!(u1.changed.contains(events::EventField::Capacity));
    assert_eq!(u1.record.capacity, None);
    assert_eq!(events::get_event(&ctx, &id).await.unwrap(), u1.record);

    // The same values again change nothing and write nothing.
    let before = w.records(&u).await;
    let again = EventChanges {
        venue: Some(Some(Venue::parse("Old Mill").unwrap())),
        ..EventChanges::default()
    };
    let planned = events::update_event(&ctx.next_action(), &id, again)
        .await
        .unwrap();
    assert!(!planned.changes_anything());
    assert!(planned.commit().await.unwrap().is_unchanged());
    assert_eq!(w.records(&u).await, before);

    let r = w
        .ok(
            &u,
            "update_event",
            json!({"event_id": s.event, "name": "Spring Open 2026", "venue": ""}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Changed the name and venue of \"Spring Open 2026\": now Sat 12 Dec 2026, Sun 13 Dec 2026, 09:00–17:00 (Europe/Berlin)."
    );

    let err = events::update_event(&ctx.next_action(), &id, EventChanges::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid (arguments): nothing to change; give at least one field"
    );

    let low = EventChanges {
        capacity: Some(Some(0)),
        ..EventChanges::default()
    };
    assert!(matches!(
        events::update_event(&ctx.next_action(), &id, low)
            .await
            .unwrap_err(),
        ServiceError::Invalid { .. }
    ));

    w.ok(
        &u,
        "register_attendee",
        json!({"event_id": s.event, "name": "Kim", "email": "kim@example.org"}),
    )
    .await;
    let e = w
        .err(
            &u,
            "update_event",
            json!({"event_id": s.event, "capacity": 1}),
        )
        .await;
    assert!(e.message.starts_with("Invalid capacity: 2 people are already registered for \"Spring Open 2026\", more than 1"), "{}", e.message);

    let e = w
        .err(
            &u,
            "update_event",
            json!({"event_id": s.event, "tracks": []}),
        )
        .await;
    assert_eq!(
        e.message,
        "Invalid tracks: the session \"Keynote\" is in the track \"Main\"; move it to another track first"
    );

    let e = w
        .err(
            &u,
            "update_event",
            json!({"event_id": s.event, "dates": ["2026-01-01"]}),
        )
        .await;
    assert!(e.message.contains("is in the past"), "{}", e.message);

    let missing = w
        .err(
            &u,
            "update_event",
            json!({"event_id": "e_01aaaaaaaaaaaaaaaaaaaaaaaa", "name": "x"}),
        )
        .await;
    assert_eq!(missing.kind, ToolErrorKind::NotFound);
}

async fn slug_changes_move_the_public_address(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let a = create(&w, &u, "Spring Open").await;
    create(&w, &u, "Taken").await;
    let changes = EventChanges {
        slug: Some(Slug::parse("spring").unwrap()),
        ..EventChanges::default()
    };
    let done = events::update_event(&ctx, &a.id, changes)
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
    assert_eq!(done.changed.labels(), ["public address"]);
    // The old address is now a reservation pointing at the new one.
    let old = w.dump("SLUG#spring-open").await;
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].3["released"]["moved_to"], "spring");
    assert_eq!(w.dump("SLUG#spring").await.len(), 1);
    let taken = EventChanges {
        slug: Some(Slug::parse("taken").unwrap()),
        ..EventChanges::default()
    };
    let err = events::update_event(&ctx.next_action(), &a.id, taken)
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::AlreadyExists { .. }), "{err:?}");
}

/// Finding 9 of the security review: a freed public address cannot be claimed by another
/// account while it is reserved; the owner can take it back; the reservation expires.
async fn slug_reservation_keeps_old_addresses_for_their_owner(w: World) {
    let alice = w.account("alice").await;
    let bob = w.account("bob").await;
    let s = seed(&w, &alice, false).await;
    w.ok(&alice, "publish_event", json!({"event_id": s.event}))
        .await;
    let id = EventId::parse(&s.event).unwrap();
    let move_to = |slug: &str| EventChanges {
        slug: Some(Slug::parse(slug).unwrap()),
        ..EventChanges::default()
    };
    events::update_event(&w.web(&alice), &id, move_to("spring-2027"))
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
    assert_eq!(
        events::moved_to(w.table.as_ref(), "spring-open")
            .await
            .unwrap()
            .unwrap()
            .as_str(),
        "spring-2027"
    );

    // Bob can neither choose the old address nor get it generated.
    let mut taken = new_event("Spring Open", &[DAY1]);
    taken.slug = Some(Slug::parse("spring-open").unwrap());
    let err = events::create_event(&w.web(&bob), taken.clone())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("stays reserved for them"), "{err}");
    let generated = create(&w, &bob, "Spring Open").await;
    assert_eq!(generated.slug.as_str(), "spring-open-2");
    let err = events::update_event(&w.web(&bob), &generated.id, move_to("spring-open"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("stays reserved"), "{err}");

    // Alice can take it back; the row is live again and no longer expires.
    events::update_event(&w.web(&alice).next_action(), &id, move_to("spring-open"))
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
    let row = w.dump("SLUG#spring-open").await;
    assert_eq!(row[0].2, None);
    let owner: SlugOwner = serde_json::from_value(row[0].3.clone()).unwrap();
    assert!(owner.released.is_none());
    assert!(
        events::moved_to(w.table.as_ref(), "spring-open")
            .await
            .unwrap()
            .is_none()
    );

    // Once the reservation has expired, anyone may take the address.
    w.clock
        .advance_millis((steward_events::limits::SLUG_RESERVED_SECS + 1) * 1000);
    events::create_event(&w.web(&bob), {
        let mut e = new_event("Spring", &["2027-03-01"]);
        e.slug = Some(Slug::parse("spring-2027").unwrap());
        e
    })
    .await
    .unwrap()
    .commit()
    .await
    .unwrap();
}

async fn lifecycle_publish_cancel_reopen(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, false).await;
    let r = w
        .ok(&u, "publish_event", json!({"event_id": s.event}))
        .await;
    assert_eq!(
        r.summary,
        "Published \"Spring Open\": its page is live at https://steward.test/e/spring-open. Registration is open; 1 of 100 places taken."
    );
    assert_eq!(r.url.as_deref(), Some("https://steward.test/e/spring-open"));
    let again = w
        .ok(&u, "publish_event", json!({"event_id": s.event}))
        .await;
    assert!(
        again
            .summary
            .starts_with("Already published: \"Spring Open\""),
        "{}",
        again.summary
    );

    let r = w.ok(&u, "cancel_event", json!({"event_id": s.event})).await;
    assert_eq!(
        r.summary,
        "Cancelled \"Spring Open\". Its 1 registration(s) are kept and its page now says it is cancelled."
    );
    let again = w.ok(&u, "cancel_event", json!({"event_id": s.event})).await;
    assert_eq!(again.summary, "\"Spring Open\" was already cancelled.");

    // A cancelled event is read-only, with a message that says how to get out of it.
    for (tool, args) in [
        ("publish_event", json!({"event_id": s.event})),
        (
            "add_room",
            json!({"event_id": s.event, "name": "Annex", "capacity": 10}),
        ),
        ("update_event", json!({"event_id": s.event, "name": "X"})),
        (
            "set_registration",
            json!({"event_id": s.event, "open": false}),
        ),
    ] {
        let e = w.err(&u, tool, args).await;
        assert_eq!(e.kind, ToolErrorKind::Forbidden, "{tool}");
        assert_eq!(
            e.message,
            "Not allowed: event \"Spring Open\" is cancelled, so it cannot be changed; reopen it first (reopen_event) or undo the cancellation",
            "{tool}"
        );
    }

    let r = w.ok(&u, "reopen_event", json!({"event_id": s.event})).await;
    assert_eq!(
        r.summary,
        "Reopened \"Spring Open\" as a draft; publish it again to put its page back online."
    );
    let again = w.ok(&u, "reopen_event", json!({"event_id": s.event})).await;
    assert_eq!(
        again.summary,
        "\"Spring Open\" is not cancelled (draft); nothing to reopen."
    );

    for tool in ["publish_event", "cancel_event", "reopen_event"] {
        let e = w
            .err(
                &u,
                tool,
                json!({"event_id": "e_01aaaaaaaaaaaaaaaaaaaaaaaa"}),
            )
            .await;
        assert_eq!(e.kind, ToolErrorKind::NotFound, "{tool}");
    }
}

async fn delete_removes_a_draft_and_everything_in_it(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, false).await;
    let id = EventId::parse(&s.event).unwrap();
    let err = events::delete_event(&ctx, &id).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Not allowed: event \"Spring Open\" has 1 attendee record(s), so it cannot be deleted; cancel it instead (cancel_event)"
    );

    let empty = create(&w, &u, "Scratch").await;
    w.ok(
        &u,
        "add_room",
        json!({"event_id": empty.id, "name": "Aula", "capacity": 10}),
    )
    .await;
    w.ok(
        &u,
        "add_session",
        json!({"event_id": empty.id, "title": "Talk", "duration_minutes": 30, "speakers": ["Ann"]}),
    )
    .await;
    let r = w
        .ok(&u, "delete_event", json!({"event_id": empty.id}))
        .await;
    assert_eq!(
        r.summary,
        "Deleted the draft \"Scratch\" and 4 record(s) in it."
    );
    assert!(
        w.records(&u)
            .await
            .iter()
            .all(|(sk, ..)| !sk.contains(empty.id.as_str()))
    );
    // The deleted draft's address stays reserved to its owner, pointing nowhere.
    let reserved = w.dump("SLUG#scratch").await;
    assert_eq!(reserved.len(), 1);
    assert!(reserved[0].2.is_some(), "the reservation expires");
    assert!(reserved[0].3["released"]["moved_to"].is_null());

    w.ok(&u, "publish_event", json!({"event_id": s.event}))
        .await;
    let e = w
        .err(&u, "delete_event", json!({"event_id": s.event}))
        .await;
    assert_eq!(
        e.message,
        "Not allowed: event \"Spring Open\" is published, and only a draft can be deleted; cancel it instead (cancel_event)"
    );
    let e = w
        .err(&u, "delete_event", json!({"event_id": empty.id}))
        .await;
    assert_eq!(e.kind, ToolErrorKind::NotFound);
}

async fn registration_settings(w: World) {
    let u = w.account("alice").await;
    let ctx = w.web(&u);
    let s = seed(&w, &u, true).await;
    let id = EventId::parse(&s.event).unwrap();
    let r = w
        .ok(
            &u,
            "set_registration",
            json!({"event_id": s.event, "closes_at": "2026-12-10T18:00"}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Registration for \"Spring Open\" is open until Thu 10 Dec 2026, 18:00; 1 of 100 places taken."
    );
    let r = w
        .ok(
            &u,
            "set_registration",
            json!({"event_id": s.event, "open": false, "closes_at": ""}),
        )
        .await;
    assert_eq!(
        r.summary,
        "Registration for \"Spring Open\" is closed; 1 of 100 places taken."
    );
    let e = events::get_event(&ctx, &id).await.unwrap();
    assert!(!e.registration.open);
    assert_eq!(e.registration.closes_at, None);
    let r = w
        .ok(
            &u,
            "set_registration",
            json!({"event_id": s.event, "open": false}),
        )
        .await;
    assert!(r.summary.starts_with("Nothing changed"), "{}", r.summary);

    let err = events::set_registration(&ctx, &id, None, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid (arguments): nothing to change; give open, closes_at or both"
    );
    let e = w
        .err(
            &u,
            "set_registration",
            json!({"event_id": s.event, "closes_at": "Thursday"}),
        )
        .await;
    assert!(
        e.message
            .starts_with("Invalid closes_at: \"Thursday\" is not a date and time"),
        "{}",
        e.message
    );

    // After the closing time the phrase says so.
    w.ok(
        &u,
        "set_registration",
        json!({"event_id": s.event, "open": true, "closes_at": "2026-12-01"}),
    )
    .await;
    w.clock
        .set_millis(steward_store::testing::TEST_START_MILLIS + 2 * 86_400_000);
    let r = w.ok(&u, "get_event", json!({"event_id": s.event})).await;
    assert!(
        r.summary
            .contains("registration closed on Tue 1 Dec 2026, 23:59"),
        "{}",
        r.summary
    );
    let _ = TimeZoneName::parse("UTC");
}

async fn time_zone_defaults_follow_the_account(w: World) {
    let u = w.account("alice").await;
    steward_harness::accounts::set_time_zone(&w.web(&u), "America/New_York")
        .await
        .unwrap();
    let e = create(&w, &u, "NYC Meetup").await;
    assert_eq!(e.time_zone.as_str(), "America/New_York");
    let _ = Backend::Sqlite;
}

steward_store::backend_tests!(setup = world;
    create_uses_defaults_and_reserves_a_slug,
    create_refuses_bad_input,
    create_tool_reports_the_new_id_and_defaults,
    get_and_list,
    update_changes_only_what_is_given,
    slug_changes_move_the_public_address,
    slug_reservation_keeps_old_addresses_for_their_owner,
    lifecycle_publish_cancel_reopen,
    delete_removes_a_draft_and_everything_in_it,
    registration_settings,
    time_zone_defaults_follow_the_account,
);
