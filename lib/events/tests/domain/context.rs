//! The per-turn context block: time in the user's zone, who and where, their events, the
//! active event's details; bounded in size.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_events::EventsContext;
use steward_events::limits::{CONTEXT_CHARS_MAX, CONTEXT_EVENTS_MAX};
use steward_harness::{Actor, ChannelName, ContextSource, Ctx, TimeZoneName, UserId, accounts};
use steward_store::{Item, Page, Query, RawItem, StoreError, Table, WriteOp};

use crate::support::{DAY1, World, seed, world};

async fn block(w: &World, u: &UserId, active: Option<&str>) -> String {
    EventsContext
        .context(
            &w.ctx(u, Actor::Agent),
            None,
            &ChannelName::parse("wa").unwrap(),
            active,
        )
        .await
        .unwrap()
}

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"))
}

async fn the_block_says_when_who_and_what(w: World) {
    let u = w.account("alice").await;
    let empty = block(&w, &u, None).await;
    // 2026-11-30T12:00Z is 1:00 PM in Berlin.
    assert_eq!(
        empty,
        "Current time: Monday, 30 Nov 2026, 1:00 PM (2026-11-30, Europe/Berlin)\nUser: Owner alice (channel: wa)\nEvents: none yet\nActive event: none"
    );

    let s = seed(&w, &u, true).await;
    w.ok(
        &u,
        "create_event",
        json!({"name": "Autumn Meetup", "dates": [DAY1]}),
    )
    .await;
    let text = block(&w, &u, Some(&s.event)).await;
    let events: Value = serde_json::from_str(line(&text, "Events (newest first): ")).unwrap();
    assert_eq!(events[0]["name"], "Autumn Meetup");
    assert_eq!(events[0]["active"], false);
    assert_eq!(events[1]["id"], s.event.as_str());
    assert_eq!(events[1]["status"], "published");
    assert_eq!(events[1]["registered"], 1);
    assert_eq!(events[1]["active"], true);
    let active: Value = serde_json::from_str(line(&text, "Active event: ")).unwrap();
    assert_eq!(active["name"], "Spring Open");
    assert_eq!(active["rooms"].as_array().unwrap().len(), 2);
    assert_eq!(active["sessions"], 3);
    // Counted, not read: the seed's one speaker.
    assert_eq!(active["people"], 1);
    assert_eq!(active["program"]["changeover_minutes"], 10);
    assert_eq!(active["timetable"], "up to date");
    assert_eq!(
        active["registration"]["state"],
        "open; 1 of 100 places taken"
    );

    // A record inside an event makes that event active, and is named.
    let text = block(&w, &u, Some(&s.sessions[1])).await;
    let active: Value = serde_json::from_str(line(&text, "Active event: ")).unwrap();
    assert_eq!(active["id"], s.event.as_str());
    assert_eq!(
        active["active_record"],
        json!({"kind": "session", "id": s.sessions[1], "name": "Workshop"})
    );

    // An unknown or foreign id makes nothing active.
    let b = w.account("bob").await;
    let text = block(&w, &b, Some(&s.event)).await;
    assert!(
        text.ends_with("Events: none yet\nActive event: none"),
        "{text}"
    );
    let text = block(&w, &u, Some("r_01zzzzzzzzzzzzzzzzzzzzzzzz")).await;
    assert!(text.ends_with("Active event: none"), "{text}");
}

async fn the_block_stays_within_its_bound(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, false).await;
    let long = "A very long event name that goes on and on for quite a while, really".to_owned();
    for i in 0..40 {
        w.ok(&u, "create_event", json!({"name": format!("{long} {i}"), "dates": [DAY1], "description": "x".repeat(3_000)})).await;
    }
    w.ok(
        &u,
        "update_event",
        json!({"event_id": s.event, "description": "y".repeat(3_000)}),
    )
    .await;
    let text = block(&w, &u, Some(&s.event)).await;
    assert!(
        text.chars().count() <= CONTEXT_CHARS_MAX,
        "{} chars",
        text.chars().count()
    );
    // The active event survives the cut, with its details.
    let active: Value = serde_json::from_str(line(&text, "Active event: ")).unwrap();
    assert_eq!(active["id"], s.event.as_str());
    let events: Value = serde_json::from_str(
        line(&text, "Events (newest first): ")
            .split(" (and older")
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["active"] == true)
    );
    assert!(text.contains("(and older ones; use list_events)"), "{text}");
}

async fn only_the_newest_events_are_read_yet_an_older_active_one_is_shown(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    for i in 0..CONTEXT_EVENTS_MAX {
        w.ok(
            &u,
            "create_event",
            json!({"name": format!("Later {i}"), "dates": [DAY1]}),
        )
        .await;
    }
    let listed = |text: &str| -> Vec<Value> {
        let events = line(text, "Events (newest first): ")
            .split(" (and older")
            .next()
            .unwrap()
            .to_owned();
        serde_json::from_str::<Vec<Value>>(&events).unwrap()
    };

    // Nothing active: the newest CONTEXT_EVENTS_MAX, newest first, and a pointer to the rest.
    let text = block(&w, &u, None).await;
    let events = listed(&text);
    assert_eq!(events.len(), CONTEXT_EVENTS_MAX);
    assert_eq!(
        events[0]["name"],
        format!("Later {}", CONTEXT_EVENTS_MAX - 1)
    );
    assert!(events.iter().all(|e| e["id"] != s.event.as_str()));
    assert!(text.contains("(and older ones; use list_events)"), "{text}");

    // The oldest event made active by its id, or by a record inside it, is listed and shown.
    for active in [s.event.clone(), s.rooms[0].clone()] {
        let text = block(&w, &u, Some(&active)).await;
        let events = listed(&text);
        assert_eq!(events.len(), CONTEXT_EVENTS_MAX + 1, "{text}");
        let last = events.last().unwrap();
        assert_eq!(last["id"], s.event.as_str());
        assert_eq!(last["active"], true);
        assert_eq!(last["registered"], 1);
        let shown: Value = serde_json::from_str(line(&text, "Active event: ")).unwrap();
        assert_eq!(shown["id"], s.event.as_str());
    }

    // Exactly CONTEXT_EVENTS_MAX events: no pointer to older ones.
    let b = w.account("bob").await;
    for i in 0..CONTEXT_EVENTS_MAX {
        w.ok(
            &b,
            "create_event",
            json!({"name": format!("B {i}"), "dates": [DAY1]}),
        )
        .await;
    }
    let text = block(&w, &b, None).await;
    assert_eq!(listed(&text).len(), CONTEXT_EVENTS_MAX);
    assert!(!text.contains("older ones"), "{text}");
}

async fn events_with_many_records_are_listed_in_their_place(w: World) {
    let u = w.account("carol").await;
    let make = async |name: &str, rooms: usize| {
        let e = w
            .ok(&u, "create_event", json!({"name": name, "dates": [DAY1]}))
            .await;
        let id = e.data.as_ref().unwrap()["id"].as_str().unwrap().to_owned();
        for i in 0..rooms {
            w.ok(
                &u,
                "add_room",
                json!({"event_id": id, "name": format!("Room {i}"), "capacity": 10}),
            )
            .await;
        }
    };
    // More records than one page of the newest-first read holds, between newer events with
    // a few records each and an older event without any.
    make("Oldest", 0).await;
    make("Many rooms", 2 * CONTEXT_EVENTS_MAX + 8).await;
    for i in 0..3 {
        make(&format!("Newer {i}"), 2).await;
    }
    let text = block(&w, &u, None).await;
    let events: Vec<Value> = serde_json::from_str(line(&text, "Events (newest first): ")).unwrap();
    let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["Newer 2", "Newer 1", "Newer 0", "Many rooms", "Oldest"],
        "{text}"
    );
}

/// The account the turn read at its start is the one the block shows: the source does not
/// read it again (a different name and zone here make the difference visible).
async fn the_block_uses_the_account_the_turn_read(w: World) {
    let u = w.account("alice").await;
    let mut account = accounts::get_profile(w.table.as_ref(), &u).await.unwrap();
    account.name = "Alice as the turn read her".into();
    account.time_zone = TimeZoneName::parse("America/New_York").unwrap();
    let text = EventsContext
        .context(
            &w.ctx(&u, Actor::Agent),
            Some(&account),
            &ChannelName::parse("wa").unwrap(),
            None,
        )
        .await
        .unwrap();
    // 2026-11-30T12:00Z is 7:00 AM in New York.
    assert!(
        text.starts_with("Current time: Monday, 30 Nov 2026, 7:00 AM (2026-11-30, America/New_York)\nUser: Alice as the turn read her (channel: wa)"),
        "{text}"
    );
}

/// Passes every call through, counting point reads and batch reads.
#[derive(Debug)]
struct Counted {
    inner: Arc<dyn Table>,
    gets: AtomicUsize,
    batches: AtomicUsize,
}

#[async_trait]
impl Table for Counted {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(pk, sk).await
    }
    async fn get_many(&self, keys: &[(String, String)]) -> Result<Vec<Option<Item>>, StoreError> {
        self.batches.fetch_add(1, Ordering::SeqCst);
        self.inner.get_many(keys).await
    }
    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }
    async fn query_raw(&self, query: &Query) -> Result<Page<RawItem>, StoreError> {
        self.inner.query_raw(query).await
    }
    async fn count(&self, query: &Query, max_items: usize) -> Result<usize, StoreError> {
        self.inner.count(query, max_items).await
    }
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        self.inner.write(ops).await
    }
}

/// With an active event, the block reads the event, its counter, its program and its
/// timetable's stamp in one batch (one round trip on DynamoDB), beside the listed events'
/// counters; the account it is given is not read again, so no point read is left.
async fn the_active_event_is_read_in_one_batch(w: World) {
    let u = w.account("alice").await;
    let s = seed(&w, &u, true).await;
    let counted = Arc::new(Counted {
        inner: Arc::clone(&w.table),
        gets: AtomicUsize::new(0),
        batches: AtomicUsize::new(0),
    });
    let account = accounts::get_profile(w.table.as_ref(), &u).await.unwrap();
    let ctx = Ctx::new(counted.clone(), w.clock_arc(), u.clone(), Actor::Agent);
    let text = EventsContext
        .context(
            &ctx,
            Some(&account),
            &ChannelName::parse("wa").unwrap(),
            Some(&s.event),
        )
        .await
        .unwrap();
    let active: Value = serde_json::from_str(line(&text, "Active event: ")).unwrap();
    assert_eq!(active["program"]["changeover_minutes"], 10);
    assert_eq!(active["timetable"], "up to date");
    assert_eq!(active["registered"], 1);
    assert_eq!(
        active["registration"]["state"],
        "open; 1 of 100 places taken"
    );
    assert_eq!(counted.gets.load(Ordering::SeqCst), 0);
    assert_eq!(
        counted.batches.load(Ordering::SeqCst),
        2,
        "the listed events' counters, then the active event's four records"
    );
}

steward_store::backend_tests!(setup = world;
    the_active_event_is_read_in_one_batch,
    the_block_says_when_who_and_what,
    the_block_uses_the_account_the_turn_read,
    the_block_stays_within_its_bound,
    only_the_newest_events_are_read_yet_an_older_active_one_is_shown,
    events_with_many_records_are_listed_in_their_place,
);
