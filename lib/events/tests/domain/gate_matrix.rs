//! The gate matrix, generated from the registry: every capability that can be held × every
//! surface (chat, an MCP client confirmed out of band, a web form). For each: the first call is
//! held and changes nothing; after the person's confirmation on that surface's terms the call
//! runs, exactly once; a lapsed confirmation, (MCP) a declined one, the confirmation used for
//! other arguments, and the identical call by another user never run.

use serde_json::{Value, json};
use steward_harness::gate::{self, GateOutcome, Surface};
use steward_harness::{Actor, ConfirmKind, ConversationKey, TokenId, UserId, keys};
use steward_store::Query;

use crate::support::{DAY1, DAY2, Seeded, World, seed, world};

/// How a capability is set up and called for the matrix.
struct Case {
    tool: &'static str,
    /// The event's state before the call: a draft, published, or published then cancelled.
    setup: Setup,
    args: fn(&Seeded) -> Value,
}

#[derive(Clone, Copy)]
enum Setup {
    Draft,
    Bare,
    Published,
    Cancelled,
    /// Published, then its description edited: the newest request changed a public page.
    PublishedEdited,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            tool: "update_event",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "dates": [DAY2]}),
        },
        Case {
            tool: "publish_event",
            setup: Setup::Draft,
            args: |s| json!({"event_id": s.event}),
        },
        Case {
            tool: "cancel_event",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event}),
        },
        Case {
            tool: "reopen_event",
            setup: Setup::Cancelled,
            args: |s| json!({"event_id": s.event}),
        },
        Case {
            tool: "delete_event",
            setup: Setup::Bare,
            args: |s| json!({"event_id": s.event}),
        },
        Case {
            tool: "add_room",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "name": "Annex", "capacity": 3}),
        },
        Case {
            tool: "update_room",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "room_id": s.rooms[0], "capacity": 99}),
        },
        Case {
            tool: "remove_room",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "room_id": s.rooms[1]}),
        },
        Case {
            tool: "add_session",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "title": "Extra", "duration_minutes": 30}),
        },
        Case {
            tool: "update_session",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "session_id": s.sessions[2], "title": "Debate"}),
        },
        Case {
            tool: "remove_session",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "session_id": s.sessions[2]}),
        },
        Case {
            tool: "build_timetable",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event}),
        },
        Case {
            tool: "set_registration",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "open": false}),
        },
        Case {
            tool: "withdraw_attendee",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "attendee_id": s.attendee}),
        },
        Case {
            tool: "undo_last_action",
            setup: Setup::PublishedEdited,
            args: |_| json!({}),
        },
    ]
}

/// The case's arguments naming the user's other event instead: the same capability with other
/// arguments. `None` for a capability without arguments to vary.
fn other_args(args: &Value, other_event: &str) -> Option<Value> {
    let mut other = args.clone();
    let id = other.get_mut("event_id")?;
    *id = json!(other_event);
    Some(other)
}

#[derive(Clone, Copy, Debug)]
enum Via {
    Chat,
    Mcp,
    Web,
}

/// What happens between the held call and the next identical one.
#[derive(Clone, Copy, Debug)]
enum Then {
    /// The person confirms on the surface's terms.
    Confirm,
    /// The person confirms, but only after the hour.
    Lapse,
    /// The person declines (MCP's Approvals page).
    Decline,
    /// The person confirms, but the next call carries other arguments.
    OtherArgs,
    /// The person confirms, but another user makes the identical call.
    OtherUser,
}

struct Run<'a> {
    w: &'a World,
    user: UserId,
    via: Via,
    conversation: ConversationKey,
}

impl Run<'_> {
    fn surface(&self, turn: u64, confirmed: bool) -> Surface {
        match self.via {
            Via::Chat => Surface::Chat {
                conversation: self.conversation.clone(),
                turn,
            },
            Via::Mcp => Surface::Mcp {
                token: Some(TokenId::parse(&"c".repeat(64)).unwrap()),
                client: "Claude desktop".into(),
            },
            Via::Web => Surface::Web { confirmed },
        }
    }

    async fn call(&self, tool: &str, args: &Value, turn: u64, confirmed: bool) -> GateOutcome {
        let actor = match self.via {
            Via::Chat => Actor::Agent,
            Via::Mcp => Actor::Mcp,
            Via::Web => Actor::User,
        };
        let ctx = self.w.ctx(&self.user, actor);
        gate::run(
            &self.w.registry,
            ctx,
            &self.surface(turn, confirmed),
            tool,
            args.clone(),
        )
        .await
        .unwrap()
        .unwrap()
    }

    /// Audited actions of this user so far: each change that ran is one.
    async fn actions(&self) -> usize {
        self.w
            .table
            .query_all(
                &Query::prefix(keys::user_pk(&self.user), keys::ACTION_SK_PREFIX),
                10_000,
            )
            .await
            .unwrap()
            .len()
    }
}

async fn prepare(w: &World, user: &UserId, setup: Setup) -> Seeded {
    match setup {
        Setup::Draft => seed(w, user, false).await,
        Setup::Published => seed(w, user, true).await,
        Setup::Cancelled => {
            let s = seed(w, user, true).await;
            w.ok(user, "cancel_event", json!({"event_id": s.event}))
                .await;
            s
        }
        Setup::PublishedEdited => {
            let s = seed(w, user, true).await;
            w.ok(
                user,
                "update_event",
                json!({"event_id": s.event, "description": "Now with a lunch break."}),
            )
            .await;
            s
        }
        Setup::Bare => bare(w, user, "Scratch").await,
    }
}

async fn bare(w: &World, user: &UserId, name: &str) -> Seeded {
    let e = w
        .ok(user, "create_event", json!({"name": name, "dates": [DAY1]}))
        .await;
    Seeded {
        event: crate::support::id_of(&e),
        slug: String::new(),
        rooms: Vec::new(),
        sessions: Vec::new(),
        person: String::new(),
        attendee: String::new(),
    }
}

/// A second event of `user` in the same state as the case's own (for "other arguments").
async fn second_event(w: &World, user: &UserId, setup: Setup) -> String {
    let s = bare(w, user, "Second Fair").await;
    if matches!(
        setup,
        Setup::Published | Setup::Cancelled | Setup::PublishedEdited
    ) {
        w.ok(user, "publish_event", json!({"event_id": s.event}))
            .await;
    }
    if matches!(setup, Setup::Cancelled) {
        w.ok(user, "cancel_event", json!({"event_id": s.event}))
            .await;
    }
    s.event
}

async fn one(w: &World, n: usize, case: &Case, via: Via, then: Then) {
    let user = w.account(&format!("m{n}")).await;
    let s = prepare(w, &user, case.setup).await;
    let args = (case.args)(&s);
    let other = match then {
        Then::OtherArgs => {
            let second = second_event(w, &user, case.setup).await;
            match other_args(&args, &second) {
                Some(other) => Some(other),
                None => return, // nothing to vary
            }
        }
        _ => None,
    };
    let run = Run {
        w,
        user,
        via,
        conversation: ConversationKey::telegram(1000 + n as i64),
    };
    let label = format!("{} via {via:?}, then {then:?}", case.tool);
    let before = run.actions().await;

    let first = run.call(case.tool, &args, 1, false).await;
    let GateOutcome::Held {
        message,
        confirmation,
    } = &first
    else {
        panic!("{label}: the first call must be held, got {first:?}");
    };
    assert!(message.starts_with("NOT EXECUTED"), "{label}: {message}");
    assert_eq!(
        run.actions().await,
        before,
        "{label}: a held call changes nothing"
    );

    match then {
        Then::Confirm | Then::OtherArgs | Then::OtherUser => {}
        Then::Lapse => w.clock.advance_millis(61 * 60 * 1000),
        Then::Decline => {
            gate::decline(w.table.as_ref(), &run.user, &confirmation.id, now(w))
                .await
                .unwrap();
        }
    }
    if matches!(via, Via::Mcp) && !matches!(then, Then::Decline) {
        let approved = gate::approve(w.table.as_ref(), &run.user, &confirmation.id, now(w)).await;
        assert_eq!(
            approved.is_ok(),
            !matches!(then, Then::Lapse),
            "{label}: {approved:?}"
        );
    }
    if matches!(then, Then::OtherUser) {
        // Someone else, on their own surface, makes the identical call: it cannot use the
        // person's confirmation, and the person's records stay untouched.
        let intruder = Run {
            w,
            user: w.account(&format!("x{n}")).await,
            via,
            conversation: ConversationKey::telegram(9000 + n as i64),
        };
        let theirs_before = intruder.actions().await;
        let tried = intruder.call(case.tool, &args, 2, true).await;
        assert!(
            !matches!(&tried, GateOutcome::Ran(o) if o.is_ok()),
            "{label}: another user's call must not run: {tried:?}"
        );
        assert_eq!(intruder.actions().await, theirs_before, "{label}");
        assert_eq!(run.actions().await, before, "{label}: never runs");
        return;
    }
    let second_args = other.as_ref().unwrap_or(&args);
    let second = run.call(case.tool, second_args, 2, true).await;
    match then {
        Then::Confirm => {
            assert!(
                matches!(&second, GateOutcome::Ran(o) if o.is_ok()),
                "{label}: runs after the confirmation: {second:?}"
            );
            assert_eq!(
                run.actions().await,
                before + 1,
                "{label}: exactly one change"
            );
            // The same call again: the confirmation is spent; nothing more happens.
            let third = run.call(case.tool, &args, 3, true).await;
            assert_eq!(
                run.actions().await,
                before + 1,
                "{label}: runs once ({third:?})"
            );
        }
        Then::OtherArgs => {
            // Held as a request of its own, or refused, or nothing to change: never a change.
            assert_eq!(
                run.actions().await,
                before,
                "{label}: other arguments never run on this confirmation ({second:?})"
            );
            // The confirmation was not used up by them: the confirmed call still runs, once.
            let confirmed = run.call(case.tool, &args, 3, true).await;
            assert!(
                matches!(&confirmed, GateOutcome::Ran(o) if o.is_ok()),
                "{label}: {confirmed:?}"
            );
            assert_eq!(run.actions().await, before + 1, "{label}");
        }
        Then::Lapse | Then::Decline | Then::OtherUser => {
            assert!(
                matches!(second, GateOutcome::Held { .. }),
                "{label}: {second:?}"
            );
            assert_eq!(run.actions().await, before, "{label}: never runs");
        }
    }
}

fn now(w: &World) -> i64 {
    use steward_store::Clock;
    w.clock.now_millis()
}

async fn every_holdable_capability_on_every_surface(w: World) {
    // The matrix covers exactly the capabilities the registry declares holdable.
    let mut holdable: Vec<&str> = w
        .registry
        .tools()
        .iter()
        .filter(|t| t.confirmation() == ConfirmKind::HeldWhen)
        .map(|t| t.name())
        .collect();
    let mut covered: Vec<&str> = cases().iter().map(|c| c.tool).collect();
    holdable.sort_unstable();
    covered.sort_unstable();
    assert_eq!(
        covered, holdable,
        "a new holdable capability needs a case here"
    );

    let mut n = 0;
    for case in cases() {
        for via in [Via::Chat, Via::Mcp, Via::Web] {
            let mut thens = vec![Then::Confirm, Then::Lapse, Then::OtherArgs, Then::OtherUser];
            if matches!(via, Via::Mcp) {
                thens.push(Then::Decline);
            }
            for then in thens {
                n += 1;
                one(&w, n, &case, via, then).await;
            }
        }
    }
}

#[tokio::test]
async fn gate_matrix_on_sqlite() {
    // SQLite only: the matrix seeds ~100 events; the gate's store behaviour is pinned on both
    // backends by the harness's own gate and approval tests.
    let w = world(steward_store::testing::Backend::Sqlite)
        .await
        .unwrap();
    every_holdable_capability_on_every_surface(w).await;
}
