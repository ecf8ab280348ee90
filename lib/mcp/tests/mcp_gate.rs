//! Held calls over real MCP HTTP: a capability whose declaration holds the call answers with a
//! tool error whose text starts "NOT EXECUTED" and changes nothing, however often it is
//! repeated; after the person's approval (what the Approvals page records) the identical call
//! runs once; the hint in tools/list comes from the same declaration.
#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../../harness/tests/support/notes.rs"]
#[allow(clippy::unwrap_used, missing_docs, dead_code)]
mod notes;
#[path = "support/mcp_server.rs"]
mod server;

use serde_json::json;
use steward_harness::gate;
use steward_harness::{Actor, Ctx};
use steward_store::testing::Backend;

use server::TestServer;

async fn world(backend: Backend) -> Option<TestServer> {
    TestServer::loopback(backend).await
}

async fn a_held_call_runs_only_after_the_person_approves_it(s: TestServer) {
    let (user, token) = s.caller("u1").await;
    let ctx = Ctx::new(
        s.table.clone(),
        std::sync::Arc::new(s.clock.clone()),
        user.clone(),
        Actor::User,
    );
    let note = notes::add(&ctx, "Groceries").await.unwrap().id;

    let list = s.rpc(&token, "tools/list", json!({})).await;
    let delete = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "delete_note")
        .unwrap()
        .clone();
    assert_eq!(delete["annotations"]["destructiveHint"], true);

    for _ in 0..2 {
        let held = s.call(&token, "delete_note", json!({"id": note})).await;
        assert_eq!(held["isError"], true, "{held}");
        let text = held["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("NOT EXECUTED"), "{text}");
        assert!(text.contains("Delete the note \"Groceries\""), "{text}");
        assert!(text.contains("Approvals page"), "{text}");
        assert_eq!(held["structuredContent"]["held"], true);
        assert!(notes::load(&ctx, &note).await.is_ok(), "nothing ran");
    }

    let now = {
        use steward_store::Clock;
        s.clock.now_millis()
    };
    let requests = gate::list_requests(s.table.as_ref(), &user, now)
        .await
        .unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].client.as_deref(),
        Some("tests"),
        "the token's label"
    );
    gate::approve(s.table.as_ref(), &user, &requests[0].id, now)
        .await
        .unwrap();

    let ran = s.call(&token, "delete_note", json!({"id": note})).await;
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(notes::load(&ctx, &note).await.is_err(), "deleted");

    // A second client (token) of the same account has no approval of its own.
    let other = s.token(&user).await;
    let note2 = notes::add(&ctx.next_action(), "Other").await.unwrap().id;
    let held = s.call(&token, "delete_note", json!({"id": note2})).await;
    assert_eq!(held["isError"], true);
    let reqs = gate::list_requests(s.table.as_ref(), &user, now)
        .await
        .unwrap();
    gate::approve(s.table.as_ref(), &user, &reqs[0].id, now)
        .await
        .unwrap();
    let by_other = s.call(&other, "delete_note", json!({"id": note2})).await;
    assert_eq!(
        by_other["isError"], true,
        "approved for the first token only"
    );
    assert!(notes::load(&ctx, &note2).await.is_ok());
}

async fn the_instructions_say_what_happens_to_held_calls(s: TestServer) {
    let (_, token) = s.caller("u1").await;
    let init = s
        .rpc(
            &token,
            "initialize",
            json!({"protocolVersion": server::V_INIT, "capabilities": {},
                   "clientInfo": {"name": "tests", "version": "1"}}),
        )
        .await;
    let text = init["result"]["instructions"].as_str().unwrap();
    assert!(
        text.contains("NOT EXECUTED") && text.contains("Approvals page"),
        "{text}"
    );
    assert!(text.contains("nothing you send can approve it"), "{text}");
}

steward_store::backend_tests!(setup = world;
    a_held_call_runs_only_after_the_person_approves_it,
    the_instructions_say_what_happens_to_held_calls,
);
