//! Held calls for MCP clients that can elicit (2026-07-28 with the `elicitation` capability),
//! over real MCP HTTP, for EVERY capability the registry declares holdable: the first call is an
//! `InputRequiredResult` asking the person (the description from the database) with a sealed
//! request state, and changes nothing; the retry with "accept" runs exactly once; decline,
//! a lapsed state, an altered state, a replayed state, another account's state and a state
//! sent with other arguments never run. Clients without elicitation keep "NOT EXECUTED", and
//! every held call queues one chat notice for the person.
#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../../harness/tests/support/notes.rs"]
#[allow(clippy::unwrap_used, missing_docs, dead_code)]
mod notes;
#[path = "support/mcp_server.rs"]
mod server;
#[path = "../../events/tests/domain/support.rs"]
mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_events::{EventsConfig, registry};
use steward_harness::approval_chat::ApprovalNotice;
use steward_harness::{ConfirmKind, UserId, keys};
use steward_mcp::McpConfig;
use steward_store::testing::Backend;
use steward_store::{Query, QueueError, TurnQueue};

use server::TestServer;
use support::{DAY1, DAY2, PUBLIC_BASE, Seeded, World, seed};

/// A queue that keeps what is enqueued (the held calls' chat notices).
#[derive(Debug, Default)]
struct Notices {
    bodies: Mutex<Vec<(String, String)>>,
}

#[async_trait]
impl TurnQueue for Notices {
    async fn enqueue(&self, _group: &str, dedupe_id: &str, body: &str) -> Result<(), QueueError> {
        self.bodies
            .lock()
            .unwrap()
            .push((dedupe_id.to_owned(), body.to_owned()));
        Ok(())
    }
}

const ELICIT: &str = r#"{"elicitation": {}}"#;

struct Rig {
    s: TestServer,
    w: World,
    notices: Arc<Notices>,
}

async fn rig() -> Rig {
    let notices = Arc::new(Notices::default());
    let queue: Arc<dyn TurnQueue> = notices.clone();
    let registry = Arc::new(registry(&EventsConfig::with_public_base_url(PUBLIC_BASE)));
    let s = TestServer::start_with(Backend::Sqlite, Arc::clone(&registry), move |_| {
        McpConfig::loopback().with_notices(queue)
    })
    .await
    .unwrap();
    let w = World {
        table: Arc::clone(&s.table),
        clock: s.clock.clone(),
        registry,
        backend: Backend::Sqlite,
    };
    Rig { s, w, notices }
}

#[derive(Clone, Copy)]
enum Setup {
    Draft,
    Bare,
    Published,
    Cancelled,
    /// Published, then its description changed (an undo would change the public page).
    PublishedEdited,
}

struct Case {
    tool: &'static str,
    setup: Setup,
    args: fn(&Seeded) -> Value,
}

fn cases() -> Vec<Case> {
    let event = |s: &Seeded| json!({"event_id": s.event});
    vec![
        Case {
            tool: "update_event",
            setup: Setup::Published,
            args: |s| json!({"event_id": s.event, "dates": [DAY2]}),
        },
        Case {
            tool: "publish_event",
            setup: Setup::Draft,
            args: event,
        },
        Case {
            tool: "cancel_event",
            setup: Setup::Published,
            args: event,
        },
        Case {
            tool: "reopen_event",
            setup: Setup::Cancelled,
            args: event,
        },
        Case {
            tool: "delete_event",
            setup: Setup::Bare,
            args: event,
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
            args: event,
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
        Setup::Bare => {
            let e = w
                .ok(
                    user,
                    "create_event",
                    json!({"name": "Scratch", "dates": [DAY1]}),
                )
                .await;
            Seeded {
                event: support::id_of(&e),
                slug: String::new(),
                rooms: Vec::new(),
                sessions: Vec::new(),
                person: String::new(),
                attendee: String::new(),
            }
        }
    }
}

/// Audited changes of `user` so far: each call that ran is one.
async fn actions(r: &Rig, user: &UserId) -> usize {
    r.s.table
        .query_all(
            &Query::prefix(keys::user_pk(user), keys::ACTION_SK_PREFIX),
            10_000,
        )
        .await
        .unwrap()
        .len()
}

/// `tools/call` of `tool` with `args` from a client that can elicit; `retry`: the input
/// responses and request state of a retry. Status and JSON-RPC reply.
async fn call(r: &Rig, token: &str, tool: &str, args: &Value, retry: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(Value::Object(extra)) = retry {
        for (k, v) in extra {
            params[k] = v;
        }
    }
    let caps: Value = serde_json::from_str(ELICIT).unwrap();
    let (status, reply) = r.s.stateless_as(token, "tools/call", params, caps).await;
    assert_eq!(status, 200, "{reply}");
    reply
}

fn answer(action: &str, state: &str) -> Option<Value> {
    Some(json!({"inputResponses": {"confirm": {"action": action}}, "requestState": state}))
}

/// The first call: held, asking the person; returns the request state.
async fn held(
    r: &Rig,
    token: &str,
    user: &UserId,
    label: &str,
    tool: &str,
    args: &Value,
) -> String {
    let before = actions(r, user).await;
    let reply = call(r, token, tool, args, None).await;
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "{label}: {reply}");
    let question = &result["inputRequests"]["confirm"];
    assert_eq!(question["method"], "elicitation/create", "{label}");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("tests asks to do this in Steward: "),
        "{label}: {message}"
    );
    assert_eq!(
        actions(r, user).await,
        before,
        "{label}: a held call changes nothing"
    );
    result["requestState"].as_str().unwrap().to_owned()
}

fn refused(reply: &Value) -> bool {
    reply.get("error").is_some() || reply["result"]["isError"] == true
}

/// The arguments naming another event id; `None` for a capability without arguments to vary.
fn other_event(args: &Value) -> Option<Value> {
    let mut other = args.clone();
    let id = other.get("event_id")?.as_str()?.to_owned();
    let last = if id.ends_with('0') { '1' } else { '0' };
    other["event_id"] = json!(format!("{}{last}", &id[..id.len() - 1]));
    Some(other)
}

async fn one(r: &Rig, n: usize, case: &Case) {
    let label = case.tool;
    let user = r.s.account(&format!("a{n}")).await;
    let token = r.s.token(&user).await;
    let s = prepare(&r.w, &user, case.setup).await;
    let args = (case.args)(&s);
    let before = actions(r, &user).await;

    let state = held(r, &token, &user, label, case.tool, &args).await;
    // Altered, another account's, other arguments, another capability: refused, nothing runs.
    // One character changed in the middle (the last one of a base64 segment may carry only
    // padding bits, which decoders ignore).
    let tampered = {
        let mut bytes = state.clone().into_bytes();
        let at = bytes.len() / 2;
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        String::from_utf8(bytes).unwrap()
    };
    let reply = call(r, &token, case.tool, &args, answer("accept", &tampered)).await;
    assert_eq!(reply["error"]["code"], -32602, "{label} tampered: {reply}");
    let (stranger, stranger_token) = r.s.caller(&format!("x{n}")).await;
    let reply = call(
        r,
        &stranger_token,
        case.tool,
        &args,
        answer("accept", &state),
    )
    .await;
    assert!(refused(&reply), "{label} other account: {reply}");
    assert_eq!(actions(r, &stranger).await, 0);
    if let Some(other) = other_event(&args) {
        let reply = call(r, &token, case.tool, &other, answer("accept", &state)).await;
        assert!(refused(&reply), "{label} other arguments: {reply}");
    }
    let other_tool = if case.tool == "delete_event" {
        "cancel_event"
    } else {
        "delete_event"
    };
    let reply = call(
        r,
        &token,
        other_tool,
        &json!({"event_id": s.event}),
        answer("accept", &state),
    )
    .await;
    assert!(refused(&reply), "{label} other capability: {reply}");
    // No answer under the key: asked again, nothing runs.
    let reply = call(
        r,
        &token,
        case.tool,
        &args,
        Some(json!({"inputResponses": {"wrong": {"action": "accept"}}, "requestState": state})),
    )
    .await;
    assert_eq!(
        reply["result"]["resultType"], "input_required",
        "{label}: {reply}"
    );
    assert_eq!(actions(r, &user).await, before, "{label}: nothing ran yet");

    // Accept: runs exactly once.
    let reply = call(r, &token, case.tool, &args, answer("accept", &state)).await;
    assert_eq!(reply["result"]["isError"], false, "{label} accept: {reply}");
    assert_eq!(actions(r, &user).await, before + 1, "{label}: ran once");
    // Replayed: refused.
    let reply = call(r, &token, case.tool, &args, answer("accept", &state)).await;
    assert!(refused(&reply), "{label} replay: {reply}");
    assert_eq!(
        actions(r, &user).await,
        before + 1,
        "{label}: a replay never runs"
    );

    // Decline (a fresh account in the same state): nothing runs, and a later accept of the
    // same state runs nothing either.
    let user2 = r.s.account(&format!("b{n}")).await;
    let token2 = r.s.token(&user2).await;
    let s2 = prepare(&r.w, &user2, case.setup).await;
    let args2 = (case.args)(&s2);
    let before2 = actions(r, &user2).await;
    let state2 = held(r, &token2, &user2, label, case.tool, &args2).await;
    let reply = call(r, &token2, case.tool, &args2, answer("decline", &state2)).await;
    assert_eq!(reply["result"]["isError"], true, "{label} decline: {reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("NOT EXECUTED. The account holder declined"),
        "{text}"
    );
    let reply = call(r, &token2, case.tool, &args2, answer("accept", &state2)).await;
    assert!(refused(&reply), "{label} accept after decline: {reply}");
    assert_eq!(
        actions(r, &user2).await,
        before2,
        "{label}: a decline never runs"
    );

    // Lapsed: an hour later the state is refused.
    let user3 = r.s.account(&format!("c{n}")).await;
    let token3 = r.s.token(&user3).await;
    let s3 = prepare(&r.w, &user3, case.setup).await;
    let args3 = (case.args)(&s3);
    let before3 = actions(r, &user3).await;
    let state3 = held(r, &token3, &user3, label, case.tool, &args3).await;
    r.s.clock.advance_millis(61 * 60 * 1000);
    let reply = call(r, &token3, case.tool, &args3, answer("accept", &state3)).await;
    assert!(refused(&reply), "{label} lapsed: {reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("expired"), "{label}: {reply}");
    assert_eq!(
        actions(r, &user3).await,
        before3,
        "{label}: a lapsed state never runs"
    );
}

#[tokio::test]
async fn every_holdable_capability_asks_clients_that_can_elicit_and_runs_once_on_accept() {
    let r = rig().await;
    let mut holdable: Vec<&str> =
        r.w.registry
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
    for (n, case) in cases().iter().enumerate() {
        one(&r, n, case).await;
    }
}

#[tokio::test]
async fn clients_without_elicitation_get_not_executed_and_every_held_call_queues_one_notice() {
    let r = rig().await;
    let (user, token) = r.s.caller("u1").await;
    let s = prepare(&r.w, &user, Setup::Published).await;
    let args = json!({"event_id": s.event});
    let before = actions(&r, &user).await;
    for _ in 0..2 {
        let (_, reply) =
            r.s.stateless(
                &token,
                "tools/call",
                json!({"name": "cancel_event", "arguments": args}),
            )
            .await;
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("NOT EXECUTED"), "{reply}");
        assert!(text.contains("linked chat"), "{text}");
    }
    let result = r.s.call(&token, "cancel_event", args.clone()).await;
    assert_eq!(
        result["isError"], true,
        "2025-11-25 clients cannot be asked: {result}"
    );
    assert_eq!(actions(&r, &user).await, before);
    let notices = r.notices.bodies.lock().unwrap().clone();
    assert_eq!(
        notices.len(),
        3,
        "one per held call; the queue dedupes them"
    );
    assert!(
        notices.iter().all(|(id, _)| id == &notices[0].0),
        "one dedupe id per request"
    );
    let notice = ApprovalNotice::from_body(&notices[0].1).unwrap();
    assert_eq!(notice.user, user);
    // A state sent by a client is only ever a state this server sealed.
    let (_, reply) =
        r.s.stateless_as(
            &token,
            "tools/call",
            json!({"name": "cancel_event", "arguments": args, "requestState": "rs1.made.up",
                   "inputResponses": {"confirm": {"action": "accept"}}}),
            serde_json::from_str(ELICIT).unwrap(),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert_eq!(actions(&r, &user).await, before);
}
