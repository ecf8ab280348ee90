//! The registry: derived tool lists, validation, readable failures, hidden bugs, the paused
//! gate, exactly-once replays and the result cap.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use steward_harness::{
    Actor, Registry, TOOL_RESULT_CHARS_MAX, ToolErrorKind, ToolOutcome, accounts,
};
use support::notes::{self, Calls};
use support::{World, effect};

fn registry() -> (Registry, Arc<Calls>) {
    let calls = Arc::new(Calls::default());
    (notes::registry(Arc::clone(&calls)), calls)
}

fn error_of(outcome: &ToolOutcome) -> (ToolErrorKind, String) {
    let e = outcome.error_ref().expect("an error outcome");
    (e.kind, e.message.clone())
}

#[test]
fn tool_lists_keep_the_insertion_order_and_flags() {
    let (r, _) = registry();
    let names: Vec<String> = r.model_tools().into_iter().map(|t| t.name).collect();
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
        ]
    );
    let mcp = serde_json::to_value(r.mcp_tools()).unwrap();
    let delete = &mcp[3];
    assert_eq!(delete["name"], "delete_note");
    assert_eq!(
        delete["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false})
    );
    assert_eq!(mcp[2]["annotations"]["idempotentHint"], true);
    assert_eq!(mcp[4]["annotations"]["readOnlyHint"], true);
    assert_eq!(mcp[0]["annotations"]["destructiveHint"], false);
    assert!(mcp[0]["inputSchema"]["properties"]["title"].is_object());
    let model = serde_json::to_value(r.model_tools()).unwrap();
    assert!(model[0]["input_schema"]["properties"]["title"].is_object());
    assert_eq!(model[0]["input_schema"]["required"], json!(["title"]));
}

#[test]
fn derived_tool_lists_snapshot() {
    let (r, _) = registry();
    insta::assert_json_snapshot!("model_tools", r.model_tools());
    insta::assert_json_snapshot!("mcp_tools", r.mcp_tools());
}

#[test]
fn duplicate_tools_are_refused() {
    let (r, _) = registry();
    let again = r.get("add_note").unwrap().clone();
    let err = r.with(again).unwrap_err();
    assert_eq!(err.to_string(), "tool \"add_note\" is registered twice");
}

async fn an_unknown_tool_is_a_distinct_error(w: World) {
    let u = w.account("u1").await;
    let (r, _) = registry();
    let err = r
        .call(w.ctx(&u, Actor::Agent), "drop_tables", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.name, "drop_tables");
    assert!(err.to_string().contains("Unknown tool \"drop_tables\""));
}

async fn invalid_arguments_name_each_field_and_run_nothing(w: World) {
    let u = w.account("u1").await;
    let (r, calls) = registry();
    let out = r
        .call(
            w.ctx(&u, Actor::Agent),
            "add_note",
            json!({"body": 5, "priority": 9}),
        )
        .await
        .unwrap();
    let (kind, msg) = error_of(&out);
    assert_eq!(kind, ToolErrorKind::InvalidArguments);
    assert!(msg.starts_with("Invalid arguments: "), "{msg}");
    assert!(msg.contains("title: required but missing"), "{msg}");
    assert!(msg.contains("body: "), "{msg}");
    assert!(msg.contains("priority: "), "{msg}");
    assert_eq!(calls.add_note.load(Ordering::SeqCst), 0);
    let model_json: Value = serde_json::from_str(&out.to_model_text()).unwrap();
    assert_eq!(model_json["ok"], false);
    assert!(
        model_json["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid arguments")
    );
    // Validation alone, without running.
    let checked = r.validate("add_note", json!({"title": 3})).unwrap();
    assert!(checked.is_err());
}

async fn a_model_invented_user_field_is_dropped_not_honoured(w: World) {
    let u1 = w.account("u1").await;
    let _u2 = w.account("u2").await;
    let (r, _) = registry();
    let out = r
        .call(
            w.ctx(&u1, Actor::Agent),
            "add_note",
            json!({"title": "Mine", "user_id": "u2", "user": "u2"}),
        )
        .await
        .unwrap();
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(
        notes::list(&w.ctx(&u1, Actor::User)).await.unwrap().len(),
        1
    );
    assert!(
        notes::list(&w.ctx(&_u2, Actor::User))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_service_error_comes_back_readable(w: World) {
    let u = w.account("u1").await;
    let (r, _) = registry();
    let out = r
        .call(w.ctx(&u, Actor::Agent), "get_note", json!({"id": "nope"}))
        .await
        .unwrap();
    let (kind, msg) = error_of(&out);
    assert_eq!(kind, ToolErrorKind::NotFound);
    assert_eq!(
        msg,
        "Note nope was not found. Check the id, for example with a list tool, and try again."
    );
    let out = r
        .call(w.ctx(&u, Actor::Agent), "add_note", json!({"title": "  "}))
        .await
        .unwrap();
    assert_eq!(
        error_of(&out),
        (
            ToolErrorKind::Invalid,
            "Invalid title: it is empty; give the note a title".to_owned()
        )
    );
}

async fn a_panic_becomes_a_generic_internal_error(w: World) {
    let u = w.account("u1").await;
    let (r, _) = registry();
    let ctx = w.ctx(&u, Actor::Agent);
    let out = r.call(ctx.clone(), "explode", json!({})).await.unwrap();
    let (kind, msg) = error_of(&out);
    assert_eq!(kind, ToolErrorKind::Internal);
    assert!(
        msg.contains(&format!("reference {}", ctx.action())),
        "{msg}"
    );
    assert!(!msg.contains("kaboom"), "no detail leaks: {msg}");
    // The registry keeps working after a panic.
    let out = r
        .call(ctx.next_action(), "list_notes", json!({}))
        .await
        .unwrap();
    assert!(out.is_ok());
}

async fn a_store_error_becomes_a_generic_internal_error(w: World) {
    let u = w.account("u1").await;
    let (r, _) = registry();
    let ctx = w.ctx(&u, Actor::Agent);
    let out = r
        .call(ctx.clone(), "broken_store", json!(null))
        .await
        .unwrap();
    let (kind, msg) = error_of(&out);
    assert_eq!(kind, ToolErrorKind::Internal);
    assert!(!msg.contains("disk"), "{msg}");
    assert!(msg.contains(&ctx.action().to_string()), "{msg}");
}

async fn a_paused_account_gets_reads_but_no_writes(w: World) {
    let u = w.account("u1").await;
    let (r, calls) = registry();
    let ctx = w.ctx(&u, Actor::Agent);
    let added = r
        .call(ctx.clone(), "add_note", json!({"title": "Before"}))
        .await
        .unwrap();
    assert!(added.is_ok());
    accounts::pause(w.table.as_ref(), &u).await.unwrap();

    for tool in r.tools() {
        let args = match tool.name() {
            "add_note" => json!({"title": "x"}),
            "add_notes" => json!({"titles": ["x"]}),
            "rename_note" | "delete_note" | "get_note" => json!({"id": "whatever", "title": "x"}),
            "big_list" => json!({"count": 1}),
            _ => json!({}),
        };
        let out = r.call(ctx.next_action(), tool.name(), args).await.unwrap();
        if tool.is_read_only() {
            // Reads run (and fail or succeed on their own terms, never for being paused).
            if let Some(e) = out.error_ref() {
                assert_ne!(e.kind, ToolErrorKind::Forbidden, "{}: {out:?}", tool.name());
            }
        } else {
            let (kind, msg) = error_of(&out);
            assert_eq!(kind, ToolErrorKind::Forbidden, "{}", tool.name());
            assert_eq!(msg, format!("Not allowed: {}", accounts::PAUSED_REASON));
        }
    }
    assert_eq!(
        calls.add_note.load(Ordering::SeqCst),
        1,
        "refused before running"
    );
    let listed = r
        .call(ctx.next_action(), "list_notes", json!({}))
        .await
        .unwrap();
    assert!(listed.is_ok());
}

async fn a_retried_tool_call_returns_the_stored_result_without_running(w: World) {
    let u = w.account("u1").await;
    let (r, calls) = registry();
    let first = r
        .call(
            w.agent_call(&u, "toolu_a"),
            "add_note",
            json!({"title": "Once"}),
        )
        .await
        .unwrap();
    let retry = r
        .call(
            w.agent_call(&u, "toolu_a"),
            "add_note",
            json!({"title": "Once"}),
        )
        .await
        .unwrap();
    assert!(first.is_ok());
    assert_eq!(first, retry);
    assert_eq!(calls.add_note.load(Ordering::SeqCst), 1);
    assert_eq!(notes::list(&w.ctx(&u, Actor::User)).await.unwrap().len(), 1);

    // Even after the account is paused, a call that already happened reports what it did.
    accounts::pause(w.table.as_ref(), &u).await.unwrap();
    let late = r
        .call(
            w.agent_call(&u, "toolu_a"),
            "add_note",
            json!({"title": "Once"}),
        )
        .await
        .unwrap();
    assert_eq!(late, first);
}

async fn a_retried_call_of_a_tool_that_committed_without_a_result_gets_a_plain_answer(w: World) {
    let u = w.account("u1").await;
    let (r, _) = registry();
    let a = notes::add(&w.ctx(&u, Actor::User), "A").await.unwrap();
    // delete_note commits with no stored result (`commit()`), then builds its own summary.
    let first = r
        .call(
            w.agent_call(&u, "toolu_d"),
            "delete_note",
            json!({"id": a.id}),
        )
        .await
        .unwrap();
    assert!(first.is_ok(), "{first:?}");
    let retry = r
        .call(
            w.agent_call(&u, "toolu_d"),
            "delete_note",
            json!({"id": a.id}),
        )
        .await
        .unwrap();
    let ToolOutcome::Ok(result) = retry else {
        panic!("expected ok, got {retry:?}");
    };
    assert!(
        result.summary.contains("already carried out"),
        "{}",
        result.summary
    );
}

async fn concurrent_tool_calls_with_one_effect_key_change_once(w: World) {
    let u = w.account("u1").await;
    let (r, _) = registry();
    let r = Arc::new(r);
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let r = Arc::clone(&r);
        let ctx = w.agent_call(&u, "toolu_c");
        tasks.push(tokio::spawn(async move {
            r.call(ctx, "add_notes", json!({"titles": ["X", "Y"]}))
                .await
                .unwrap()
        }));
    }
    let mut outs = Vec::new();
    for t in tasks {
        outs.push(t.await.unwrap());
    }
    assert!(outs.iter().all(|o| *o == outs[0] && o.is_ok()), "{outs:?}");
    assert_eq!(notes::list(&w.ctx(&u, Actor::User)).await.unwrap().len(), 2);
}

async fn long_results_are_capped_as_valid_utf8_json(w: World) {
    let u = w.account("u1").await;
    let (r, _) = registry();
    let out = r
        .call(w.ctx(&u, Actor::Agent), "big_list", json!({"count": 3000}))
        .await
        .unwrap();
    let text = out.to_model_text();
    assert!(text.chars().count() <= TOOL_RESULT_CHARS_MAX);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["summary"], "Here is the list.");
    assert!(v["truncated"].as_str().unwrap().contains("cut"));
    let cut = v["data_truncated"].as_str().unwrap();
    assert!(cut.ends_with('…'));
    assert!(cut.contains("Grüße aus Köln 🎉"));

    let small = r
        .call(w.ctx(&u, Actor::Agent), "big_list", json!({"count": 2}))
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&small.to_model_text()).unwrap();
    assert!(v.get("truncated").is_none());
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    let _ = effect("unused");
}

async fn world(backend: steward_store::testing::Backend) -> Option<World> {
    World::on(backend).await
}

steward_store::backend_tests!(setup = world;
    an_unknown_tool_is_a_distinct_error,
    invalid_arguments_name_each_field_and_run_nothing,
    a_model_invented_user_field_is_dropped_not_honoured,
    a_service_error_comes_back_readable,
    a_panic_becomes_a_generic_internal_error,
    a_store_error_becomes_a_generic_internal_error,
    a_paused_account_gets_reads_but_no_writes,
    a_retried_tool_call_returns_the_stored_result_without_running,
    a_retried_call_of_a_tool_that_committed_without_a_result_gets_a_plain_answer,
    concurrent_tool_calls_with_one_effect_key_change_once,
    long_results_are_capped_as_valid_utf8_json,
);
