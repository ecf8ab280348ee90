//! MCP over real HTTP: the `initialize` lifecycle and the stateless protocol, tools/list from
//! the registry, tools/call through the registry (results, readable failures, generic bugs),
//! the tenant gate and paused accounts.
#![allow(clippy::unwrap_used, missing_docs)]

// The harness tests' "notes" domain, shared rather than copied.
#[path = "../../harness/tests/support/notes.rs"]
#[allow(clippy::unwrap_used, missing_docs, dead_code)]
mod notes;
#[path = "support/mcp_server.rs"]
mod server;

use serde_json::{Value, json};
use steward_harness::{accounts, tokens};
use steward_store::testing::Backend;

use server::{TestServer, V_INIT, V_STATELESS, outcome};

async fn world(backend: Backend) -> Option<TestServer> {
    TestServer::loopback(backend).await
}

async fn initialize_then_list_and_call(s: TestServer) {
    let (_, token) = s.caller("u1").await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V_INIT, "capabilities": {},
        "clientInfo": {"name": "tests", "version": "1"}}});
    let res = s.post(Some(&token), &[], &init).await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers().get("mcp-session-id").is_none(),
        "stateless: no session"
    );
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let init: Value = res.json().await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], V_INIT);
    assert_eq!(init["result"]["serverInfo"]["name"], "steward");
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let res = s
        .post(Some(&token), &[("mcp-protocol-version", V_INIT)], &note)
        .await;
    assert_eq!(res.status(), 202);

    let list = s.rpc(&token, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "add_note",
            "add_notes",
            "rename_note",
            "delete_note",
            "list_notes",
            "get_note",
            "undo_last_action",
            "big_list",
            "explode",
            "broken_store"
        ],
        "the registry's order, no fixtures"
    );
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    assert_eq!(
        by_name("delete_note")["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false})
    );
    assert_eq!(by_name("list_notes")["annotations"]["readOnlyHint"], true);
    assert_eq!(
        by_name("rename_note")["annotations"]["idempotentHint"],
        true
    );
    assert_eq!(by_name("add_note")["annotations"]["destructiveHint"], false);
    let schema = &by_name("add_note")["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["title"].is_object());
    assert!(
        by_name("add_note")["description"]
            .as_str()
            .unwrap()
            .contains("note")
    );

    let added = s
        .call(&token, "add_note", json!({"title": "Buy chairs"}))
        .await;
    assert_eq!(added["isError"], false);
    let id = added["structuredContent"]["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(outcome(&added), added["structuredContent"]);
    let got = s.call(&token, "get_note", json!({"id": id})).await;
    assert_eq!(got["isError"], false);
    assert_eq!(got["structuredContent"]["data"]["title"], "Buy chairs");
}

async fn stateless_calls_need_no_initialize(s: TestServer) {
    let (_, token) = s.caller("u1").await;
    // An initialize-era client may call straight away: no session to find.
    let listed = s.rpc(&token, "tools/list", json!({})).await;
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 10);

    // The 2026-07-28 protocol: discover, then calls carrying _meta, never initialize.
    let (status, discover) = s.stateless(&token, "server/discover", json!({})).await;
    assert_eq!(status, 200, "{discover}");
    let versions = discover["result"]["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!(V_STATELESS)) && versions.contains(&json!(V_INIT)));
    let (status, list) = s.stateless(&token, "tools/list", json!({})).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["result"]["tools"][0]["name"], "add_note");
    assert!(list["result"]["ttlMs"].is_u64());
    assert_eq!(list["result"]["cacheScope"], "private");
    let (status, call) = s
        .stateless(
            &token,
            "tools/call",
            json!({"name": "add_note", "arguments": {"title": "Stateless"}}),
        )
        .await;
    assert_eq!(status, 200, "{call}");
    assert_eq!(call["result"]["isError"], false);
    assert_eq!(call["result"]["resultType"], "complete");

    // The stateless protocol has no initialize: it is an unknown method there.
    let (status, init) = s.stateless(&token, "initialize", json!({})).await;
    assert_eq!(status, 404, "{init}");
    assert_eq!(init["error"]["code"], -32601);
}

async fn invalid_arguments_are_tool_errors(s: TestServer) {
    let (_, token) = s.caller("u1").await;
    let result = s
        .call(&token, "add_note", json!({"title": 5, "priority": 9}))
        .await;
    assert_eq!(result["isError"], true);
    let error = outcome(&result)["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("Invalid arguments"), "{error}");
    assert!(
        error.contains("title") && error.contains("priority"),
        "{error}"
    );
    // Missing arguments are an empty object, not a protocol error.
    let result = s
        .rpc(&token, "tools/call", json!({"name": "add_note"}))
        .await;
    assert_eq!(result["result"]["isError"], true);
}

async fn unknown_tools_are_invalid_params(s: TestServer) {
    let (_, token) = s.caller("u1").await;
    let reply = s
        .rpc(
            &token,
            "tools/call",
            json!({"name": "send_chat_message", "arguments": {}}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send_chat_message")
    );
}

async fn failures_are_readable_and_bugs_generic(s: TestServer) {
    let (_, token) = s.caller("u1").await;
    let missing = s.call(&token, "get_note", json!({"id": "nope"})).await;
    assert_eq!(missing["isError"], true);
    assert!(
        outcome(&missing)["error"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    for bug in ["explode", "broken_store"] {
        let result = s.call(&token, bug, json!({})).await;
        assert_eq!(result["isError"], true, "{bug}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("Internal error"), "{text}");
        assert!(
            !text.contains("kaboom") && !text.contains("secret"),
            "{text}"
        );
    }
}

async fn another_users_record_is_not_found(s: TestServer) {
    let (_, alice) = s.caller("alice").await;
    let (_, bob) = s.caller("bob").await;
    let added = s
        .call(&alice, "add_note", json!({"title": "Alice's"}))
        .await;
    let id = added["structuredContent"]["data"]["id"].clone();
    let seen = s.call(&bob, "get_note", json!({"id": id})).await;
    assert_eq!(seen["isError"], true);
    assert!(
        outcome(&seen)["error"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    let renamed = s
        .call(&bob, "rename_note", json!({"id": id, "title": "Bob's now"}))
        .await;
    assert_eq!(renamed["isError"], true);
    let still = s.call(&alice, "get_note", json!({"id": id})).await;
    assert_eq!(still["structuredContent"]["data"]["title"], "Alice's");
    let bobs = s.call(&bob, "list_notes", json!({})).await;
    assert_eq!(bobs["structuredContent"]["data"], json!([]));
}

async fn calls_act_as_mcp_and_can_be_undone(s: TestServer) {
    let (user, token) = s.caller("u1").await;
    s.call(&token, "add_note", json!({"title": "Oops"})).await;
    let undone = s.call(&token, "undo_last_action", json!({})).await;
    assert_eq!(undone["isError"], false, "{undone}");
    let notes = s.call(&token, "list_notes", json!({})).await;
    assert_eq!(notes["structuredContent"]["data"], json!([]));
    // The audit rows name the MCP actor.
    let audit = s
        .table
        .query_all(
            &steward_store::Query::prefix(format!("USER#{user}"), "AUDIT#"),
            100,
        )
        .await
        .unwrap();
    assert!(!audit.is_empty());
    assert!(audit.iter().all(|row| row.data["actor"] == "mcp"));
}

async fn paused_accounts_read_but_cannot_write(s: TestServer) {
    let (user, token) = s.caller("u1").await;
    accounts::pause(s.table.as_ref(), &user).await.unwrap();
    let write = s.call(&token, "add_note", json!({"title": "x"})).await;
    assert_eq!(write["isError"], true);
    assert!(
        outcome(&write)["error"]
            .as_str()
            .unwrap()
            .contains("paused")
    );
    let read = s.call(&token, "list_notes", json!({})).await;
    assert_eq!(read["isError"], false);
}

async fn token_use_is_recorded(s: TestServer) {
    let (user, token) = s.caller("u1").await;
    s.rpc(&token, "tools/list", json!({})).await;
    let listed = tokens::list_tokens(s.table.as_ref(), &user).await.unwrap();
    assert_eq!(
        listed[0].last_used_ms,
        Some(steward_store::testing::TEST_START_MILLIS)
    );
}

steward_store::backend_tests!(setup = world;
    initialize_then_list_and_call,
    stateless_calls_need_no_initialize,
    invalid_arguments_are_tool_errors,
    unknown_tools_are_invalid_params,
    failures_are_readable_and_bugs_generic,
    another_users_record_is_not_found,
    calls_act_as_mcp_and_can_be_undone,
    paused_accounts_read_but_cannot_write,
    token_use_is_recorded,
);
