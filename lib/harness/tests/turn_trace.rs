//! One trace per turn: the spans a turn makes with a held tool call and, on the next turn, the
//! confirmed one, exported through the production subscriber (`steward_edge::telemetry`) to an
//! in-memory exporter — their tree, names and GenAI attributes, and that no message text or
//! tool argument is in any attribute.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::collections::HashMap;

use opentelemetry::trace::SpanId;
use opentelemetry::{Array, StringValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value as Json, json};
use steward_edge::telemetry::{LogFormat, subscriber};
use steward_harness::Actor;
use steward_llm::{ContentBlock, CreateResponse, StopReason};
use steward_store::testing::Backend;
use tracing_subscriber::filter::Targets;

use chat::rig::Rig;
use support::notes;

fn respond(blocks: Vec<ContentBlock>, stop: StopReason, tokens: [u64; 4]) -> CreateResponse {
    let mut response = CreateResponse::new(blocks, stop);
    response.usage.input_tokens = tokens[0];
    response.usage.output_tokens = tokens[1];
    response.usage.cache_read_input_tokens = tokens[2];
    response.usage.cache_creation_input_tokens = tokens[3];
    response
}

fn call(id: &str, tool: &str, args: Json) -> CreateResponse {
    respond(
        vec![ContentBlock::tool_use(id, tool, args)],
        StopReason::ToolUse,
        [10, 5, 200, 30],
    )
}

fn text(t: &str) -> CreateResponse {
    respond(
        vec![ContentBlock::text(t)],
        StopReason::EndTurn,
        [12, 7, 230, 0],
    )
}

fn attributes(span: &SpanData) -> HashMap<String, Value> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.as_str().to_owned(), kv.value.clone()))
        .collect()
}

fn string(span: &SpanData, key: &str) -> String {
    match attributes(span).get(key) {
        Some(Value::String(s)) => s.as_str().to_owned(),
        other => panic!("{key} on {}: {other:?}", span.name),
    }
}

fn int(span: &SpanData, key: &str) -> i64 {
    match attributes(span).get(key) {
        Some(Value::I64(n)) => *n,
        other => panic!("{key} on {}: {other:?}", span.name),
    }
}

fn reasons(reason: &str) -> Value {
    Value::Array(Array::String(vec![StringValue::from(reason.to_owned())]))
}

/// The spans of one trace, children of `parent`, in start order.
fn children<'a>(spans: &'a [SpanData], parent: &SpanData) -> Vec<&'a SpanData> {
    let mut out: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent.span_context.span_id())
        .collect();
    out.sort_by_key(|s| s.start_time);
    out
}

#[tokio::test]
async fn a_turn_is_one_trace_with_its_model_calls_tool_calls_and_send() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let _tracing = tracing::subscriber::set_default(subscriber(
        LogFormat::Terminal,
        Targets::new(),
        Some(&provider),
    ));

    let r = Rig::on(Backend::Sqlite).await.unwrap();
    let secret_title = "Groceries-SECRET-TITLE";
    let ctx = r.world.ctx(&r.user, Actor::User);
    let id = notes::add(&ctx, secret_title).await.unwrap().id;

    // Turn 1: the model asks to delete; the gate holds it; the model asks the person.
    r.model
        .push(Ok(call("toolu_held1", "delete_note", json!({"id": id}))));
    r.model
        .push(Ok(text("Delete it? <buttons>Yes | No</buttons>")));
    r.say("m1", "please delete my PRIVATE-MESSAGE note").await;
    // Turn 2: the person said yes; the same call now runs, confirmed.
    r.model
        .push(Ok(call("toolu_conf1", "delete_note", json!({"id": id}))));
    r.model.push(Ok(text("Deleted.")));
    r.say("m2", "yes PRIVATE-YES").await;

    let spans = exporter.get_finished_spans().unwrap();
    let turns: Vec<&SpanData> = {
        let mut t: Vec<&SpanData> = spans
            .iter()
            .filter(|s| s.name == "invoke_agent steward")
            .collect();
        t.sort_by_key(|s| s.start_time);
        t
    };
    assert_eq!(turns.len(), 2, "one turn span per message");
    assert_ne!(
        turns[0].span_context.trace_id(),
        turns[1].span_context.trace_id(),
        "each message its own trace"
    );

    for (turn, expected_outcome, call_id) in [
        (turns[0], "held", "toolu_held1"),
        (turns[1], "confirmed", "toolu_conf1"),
    ] {
        assert_eq!(turn.parent_span_id, SpanId::INVALID);
        assert_eq!(string(turn, "gen_ai.operation.name"), "invoke_agent");
        assert_eq!(string(turn, "gen_ai.agent.name"), "steward");
        assert_eq!(string(turn, "gen_ai.conversation.id"), r.conv.to_string());

        let names: Vec<&str> = children(&spans, turn)
            .iter()
            .map(|s| s.name.as_ref())
            .collect();
        assert_eq!(
            names,
            [
                "chat claude-test",
                "execute_tool delete_note",
                "chat claude-test",
                "send tg"
            ],
            "the turn's spans, in order"
        );
        let kids = children(&spans, turn);
        let (first_chat, tool, second_chat, send) = (kids[0], kids[1], kids[2], kids[3]);
        for chat in [first_chat, second_chat] {
            assert_eq!(chat.span_context.trace_id(), turn.span_context.trace_id());
            assert_eq!(string(chat, "gen_ai.operation.name"), "chat");
            assert_eq!(string(chat, "gen_ai.provider.name"), "steward.scripted");
            assert_eq!(string(chat, "gen_ai.request.model"), "claude-test");
        }
        assert_eq!(
            attributes(first_chat).get("gen_ai.response.finish_reasons"),
            Some(&reasons("tool_use"))
        );
        assert_eq!(
            attributes(second_chat).get("gen_ai.response.finish_reasons"),
            Some(&reasons("end_turn"))
        );
        // Input tokens include the cached ones, as the conventions count them.
        assert_eq!(int(first_chat, "gen_ai.usage.input_tokens"), 10 + 200 + 30);
        assert_eq!(int(first_chat, "gen_ai.usage.output_tokens"), 5);
        assert_eq!(int(first_chat, "gen_ai.usage.cache_read.input_tokens"), 200);
        assert_eq!(
            int(first_chat, "gen_ai.usage.cache_creation.input_tokens"),
            30
        );
        assert_eq!(int(second_chat, "gen_ai.usage.input_tokens"), 12 + 230);

        assert_eq!(string(tool, "gen_ai.operation.name"), "execute_tool");
        assert_eq!(string(tool, "gen_ai.tool.name"), "delete_note");
        assert_eq!(string(tool, "gen_ai.tool.call.id"), call_id);
        assert_eq!(string(tool, "steward.tool.outcome"), expected_outcome);
        assert!(!attributes(tool).contains_key("error.type"));

        assert_eq!(string(send, "steward.channel"), "tg");
    }

    // Privacy: no message text, tool argument or note title in any attribute.
    for span in &spans {
        for (key, value) in attributes(span) {
            let shown = value.as_str();
            for secret in [secret_title, "PRIVATE-MESSAGE", "PRIVATE-YES", id.as_str()] {
                assert!(
                    !shown.contains(secret),
                    "{secret} in {key} of {}",
                    span.name
                );
            }
        }
    }
}

#[tokio::test]
async fn a_tool_the_model_made_up_is_refused_and_named_unknown() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let _tracing = tracing::subscriber::set_default(subscriber(
        LogFormat::Terminal,
        Targets::new(),
        Some(&provider),
    ));
    let r = Rig::on(Backend::Sqlite).await.unwrap();
    r.model.push(Ok(call(
        "toolu_x1",
        "email everyone my PRIVATE plans",
        json!({}),
    )));
    r.model
        .push(Ok(call("toolu_x2", "rename_note", json!({"id": 7}))));
    r.model.push(Ok(text("Sorry.")));
    r.say("m1", "hi").await;
    let spans = exporter.get_finished_spans().unwrap();
    let mut tools: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool"))
        .collect();
    tools.sort_by_key(|s| s.start_time);
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].name, "execute_tool unknown");
    assert_eq!(string(tools[0], "gen_ai.tool.name"), "unknown");
    assert_eq!(string(tools[0], "steward.tool.outcome"), "refused");
    assert_eq!(string(tools[1], "gen_ai.tool.name"), "rename_note");
    assert_eq!(string(tools[1], "steward.tool.outcome"), "refused");
    assert_eq!(string(tools[1], "error.type"), "invalid_arguments");
}
