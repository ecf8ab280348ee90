//! The risk policy: descriptions come from the database, not from the arguments; calls that
//! are not risky, or that name nothing, give none.

use serde_json::{Value, json};
use steward_events::EventsRiskPolicy;
use steward_harness::{Actor, RiskPolicy, UserId};

use crate::support::{DAY2, World, seed, world};

async fn describe(w: &World, u: &UserId, tool: &str, args: Value) -> Option<String> {
    EventsRiskPolicy
        .describe_risk(&w.ctx(u, Actor::Agent), tool, &args)
        .await
        .unwrap()
}

async fn risky_calls_are_described_from_the_database(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, false).await;
    let ev = s.event.as_str();

    // A draft: publishing is risky, logistics changes are not.
    assert_eq!(
        describe(
            &w,
            &u,
            "publish_event",
            json!({"event_id": ev, "name": "Harmless Test"})
        )
        .await
        .as_deref(),
        Some("Publish \"Spring Open\" — its page becomes public at /e/spring-open")
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "update_event",
            json!({"event_id": ev, "dates": [DAY2]})
        )
        .await,
        None
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "remove_session",
            json!({"event_id": ev, "session_id": s.sessions[0]})
        )
        .await,
        None
    );
    assert_eq!(
        describe(&w, &u, "delete_event", json!({"event_id": ev}))
            .await
            .as_deref(),
        Some("Delete the draft event \"Spring Open\" with its 2 room(s) and 3 session(s)")
    );

    w.ok(&u, "publish_event", json!({"event_id": ev})).await;
    w.ok(
        &u,
        "register_attendee",
        json!({"event_id": ev, "name": "Kim", "email": "kim@example.org"}),
    )
    .await;
    assert_eq!(
        describe(&w, &u, "publish_event", json!({"event_id": ev})).await,
        None,
        "already published"
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "cancel_event",
            json!({"event_id": ev, "name": "Some Other Event"})
        )
        .await
        .as_deref(),
        Some("Cancel \"Spring Open\" (2 registrations)")
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "withdraw_attendee",
            json!({"event_id": ev, "attendee_id": s.attendee, "name": "Nobody"})
        )
        .await
        .as_deref(),
        Some("Withdraw Sam Roe from \"Spring Open\"")
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "update_event",
            json!({"event_id": ev, "dates": [DAY2], "name": "Renamed"})
        )
        .await
        .as_deref(),
        Some(
            "Change the date of the published event \"Spring Open\" from Sat 12 Dec 2026 to Sun 13 Dec 2026"
        )
    );
    assert_eq!(
        describe(&w, &u, "update_event", json!({"event_id": ev, "start_time": "10:00", "venue": "Old Mill", "time_zone": "Europe/London"})).await.as_deref(),
        Some("Change the published event \"Spring Open\": the times from 09:00–17:00 to 10:00–17:00, the time zone from Europe/Berlin to Europe/London and the venue from \"Town Hall\" to \"Old Mill\"")
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "update_event",
            json!({"event_id": ev, "slug": "spring"})
        )
        .await
        .as_deref(),
        Some(
            "Change the public address of the published event \"Spring Open\" from /e/spring-open to /e/spring (the old link stops working)"
        )
    );
    // Same values, or fields that are not logistics: no confirmation.
    assert_eq!(
        describe(
            &w,
            &u,
            "update_event",
            json!({"event_id": ev, "venue": "Town Hall", "start_time": "09:00"})
        )
        .await,
        None
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "update_event",
            json!({"event_id": ev, "description": "New words", "name": "New"})
        )
        .await,
        None
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "remove_session",
            json!({"event_id": ev, "session_id": s.sessions[0]})
        )
        .await
        .as_deref(),
        Some("Remove the session \"Keynote\" from the published event \"Spring Open\"")
    );
    assert_eq!(
        describe(
            &w,
            &u,
            "remove_room",
            json!({"event_id": ev, "room_id": s.rooms[1]})
        )
        .await
        .as_deref(),
        Some("Remove the room \"Lab\" from the published event \"Spring Open\"")
    );
    assert_eq!(
        describe(&w, &u, "delete_event", json!({"event_id": ev})).await,
        None,
        "not a draft"
    );

    // Not risky tools, and calls that name nothing or do not parse.
    for (tool, args) in [
        (
            "add_room",
            json!({"event_id": ev, "name": "X", "capacity": 3}),
        ),
        ("get_event", json!({"event_id": ev})),
        ("no_such_tool", json!({})),
        (
            "cancel_event",
            json!({"event_id": "e_01zzzzzzzzzzzzzzzzzzzzzzzz"}),
        ),
        ("cancel_event", json!({"event_id": "Spring Open"})),
        ("cancel_event", json!({"event": ev})),
        ("cancel_event", json!("garbage")),
        (
            "withdraw_attendee",
            json!({"event_id": ev, "attendee_id": "a_01zzzzzzzzzzzzzzzzzzzzzzzz"}),
        ),
        (
            "update_event",
            json!({"event_id": ev, "dates": ["not a date"]}),
        ),
        ("remove_session", json!({"event_id": ev, "session_id": 42})),
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

    // Another user's ids describe nothing.
    let b = w.account("bob").await;
    assert_eq!(
        describe(&w, &b, "cancel_event", json!({"event_id": ev})).await,
        None
    );

    w.ok(
        &u,
        "withdraw_attendee",
        json!({"event_id": ev, "attendee_id": s.attendee}),
    )
    .await;
    assert_eq!(
        describe(
            &w,
            &u,
            "withdraw_attendee",
            json!({"event_id": ev, "attendee_id": s.attendee})
        )
        .await,
        None,
        "already withdrawn"
    );
    w.ok(&u, "cancel_event", json!({"event_id": ev})).await;
    assert_eq!(
        describe(&w, &u, "cancel_event", json!({"event_id": ev})).await,
        None,
        "already cancelled"
    );
}

async fn every_risky_tool_is_one_the_policy_knows(w: World) {
    // The risky flag (MCP destructiveHint) and the policy must agree on the set of tools.
    let known = [
        "cancel_event",
        "publish_event",
        "delete_event",
        "withdraw_attendee",
        "update_event",
        "remove_session",
        "remove_room",
    ];
    let risky: Vec<&str> = w
        .registry
        .tools()
        .iter()
        .filter(|t| t.is_risky())
        .map(|t| t.name())
        .collect();
    let mut sorted = risky.clone();
    sorted.sort_unstable();
    let mut expected = known.to_vec();
    expected.sort_unstable();
    assert_eq!(sorted, expected);
}

steward_store::backend_tests!(setup = world;
    risky_calls_are_described_from_the_database,
    every_risky_tool_is_one_the_policy_knows,
);
