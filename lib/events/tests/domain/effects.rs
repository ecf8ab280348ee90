//! Effects: the same tool call (same effect key) acts once and returns the same result, even
//! when the calls run at the same time.

use serde_json::json;
use steward_harness::{Actor, ToolOutcome};

use crate::support::{DAY1, World, effect, fresh_tool_use, seed, world};

async fn run_twice(
    w: &World,
    user: &steward_harness::UserId,
    tool: &str,
    args: serde_json::Value,
) -> (ToolOutcome, ToolOutcome) {
    let key = effect(&fresh_tool_use());
    let first = w
        .registry
        .call(
            w.ctx(user, Actor::Agent).with_effect(key.clone()),
            tool,
            args.clone(),
        )
        .await
        .unwrap();
    let second = w
        .registry
        .call(w.ctx(user, Actor::Agent).with_effect(key), tool, args)
        .await
        .unwrap();
    (first, second)
}

async fn a_retried_call_acts_once(w: World) {
    let u = w.account("alice").await;
    let (a, b) = run_twice(
        &w,
        &u,
        "create_event",
        json!({"name": "Spring Open", "dates": [DAY1]}),
    )
    .await;
    assert!(a.is_ok());
    assert_eq!(a, b, "the stored result is returned");
    let r = w.ok(&u, "list_events", json!({})).await;
    assert_eq!(r.data.unwrap().as_array().unwrap().len(), 1);

    let s = seed(&w, &u, true).await;
    let before = w.records(&u).await.len();
    let (a, b) = run_twice(&w, &u, "add_session", json!({"event_id": s.event, "title": "Extra", "duration_minutes": 20, "speakers": ["New Person"]})).await;
    assert_eq!(a, b);
    assert_eq!(
        w.records(&u).await.len(),
        before + 2,
        "one session and one person"
    );

    let (a, b) = run_twice(
        &w,
        &u,
        "register_attendee",
        json!({"event_id": s.event, "name": "Kim", "email": "kim@example.org"}),
    )
    .await;
    assert_eq!(a, b, "not a duplicate-address error the second time");
    assert!(a.is_ok());

    let (a, b) = run_twice(&w, &u, "undo_last_action", json!({})).await;
    assert_eq!(a, b);
    assert!(a.is_ok());
    let r = w
        .ok(&u, "list_attendees", json!({"event_id": s.event}))
        .await;
    assert_eq!(
        r.data.unwrap().as_array().unwrap().len(),
        1,
        "one undo, not two: Kim is gone, Sam stays"
    );
}

async fn concurrent_calls_with_one_key_act_once(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    for (tool, args) in [
        ("create_event", json!({"name": "Race", "dates": [DAY1]})),
        (
            "add_room",
            json!({"event_id": s.event, "name": "Annex", "capacity": 12}),
        ),
        (
            "register_attendee",
            json!({"event_id": s.event, "name": "Kim", "email": "kim@example.org"}),
        ),
    ] {
        let key = effect(&fresh_tool_use());
        let before = w.records(&u).await.len();
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let w = w.clone();
            let ctx = w.ctx(&u, Actor::Agent).with_effect(key.clone());
            let args = args.clone();
            tasks.push(tokio::spawn(async move {
                w.registry.call(ctx, tool, args).await.unwrap()
            }));
        }
        let mut outcomes = Vec::new();
        for t in tasks {
            outcomes.push(t.await.unwrap());
        }
        assert!(outcomes[0].is_ok(), "{tool}: {:?}", outcomes[0]);
        assert!(
            outcomes.iter().all(|o| o == &outcomes[0]),
            "{tool}: {outcomes:?}"
        );
        let grown = w.records(&u).await.len() - before;
        let expected = match tool {
            "create_event" => 2, // the event and its counter
            "add_room" => 1,
            _ => 2, // the attendee and the address reservation
        };
        assert_eq!(grown, expected, "{tool}");
    }
}

steward_store::backend_tests!(setup = world;
    a_retried_call_acts_once,
    concurrent_calls_with_one_key_act_once,
);
