//! One web chat turn end to end through `steward serve`, once per model provider: the
//! Anthropic Messages API, Amazon Bedrock Converse (the SDK's endpoint pointed at loopback) and
//! an OpenAI-compatible Chat Completions server. Each fake speaks its provider's wire format on
//! 127.0.0.1 and answers from a plan: first a `create_event` tool call, then the reply. The
//! person's message goes in through the chat API, the tool runs (the event exists in the
//! store), the tool's result goes back to the model in that provider's shape, and the reply
//! comes out in the transcript.

#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use steward_harness::{Actor, Ctx, UserId};
use steward_store::{SqliteTable, SystemClock, Table};
use support::{Browser, FakeModel, Server, assistant_texts, temp_db};

const TEXT: &str = "create an event called Harbour Fest on 2031-05-17";
const REPLY: &str = "Done: Harbour Fest is on 17 May 2031.";
const NAME: &str = "Provider Tester";
const USER_ID: &str = "dev-provider-tester";

fn tool_input() -> Value {
    json!({"name": "Harbour Fest", "dates": ["2031-05-17"]})
}

/// The events of the signed-in person, straight from the store file.
async fn event_names(db: &Path) -> Vec<String> {
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(db).unwrap());
    let ctx = Ctx::new(
        table,
        Arc::new(SystemClock),
        UserId::parse(USER_ID).unwrap(),
        Actor::User,
    );
    steward_events::events::list_events(&ctx)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event.name.as_str().to_owned())
        .collect()
}

/// Signs in, sends [`TEXT`], waits for the reply; returns the transcript.
async fn one_turn(server: &mut Server) -> Value {
    let mut browser = Browser::new();
    browser.sign_in(&server.base, NAME).await;
    let status = browser.post_chat(&server.base, "m-1", TEXT).await;
    assert_eq!(status.as_u16(), 202);
    browser.wait_for_reply(server).await
}

#[tokio::test]
async fn anthropic_one_message_one_tool_call_one_reply() {
    let fake = FakeModel::start(vec![
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "create_event", "input": tool_input()}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }),
        json!({
            "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [{"type": "text", "text": REPLY}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }),
    ])
    .await;
    let db = temp_db("providers-anthropic");
    let mut server = Server::start(
        &db,
        &[
            ("STEWARD_MODEL_PROVIDER", "anthropic"),
            ("ANTHROPIC_API_KEY", "test-key"),
            ("ANTHROPIC_BASE_URL", &fake.base),
        ],
    )
    .await;
    assert!(
        server.model_label.starts_with("Anthropic"),
        "{}",
        server.model_label
    );
    let transcript = one_turn(&mut server).await;
    assert_eq!(assistant_texts(&transcript), [REPLY]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|(path, _)| path == "/v1/messages"));
    let second = &requests[1].1;
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(event_names(&db).await, ["Harbour Fest"]);
}

#[tokio::test]
async fn bedrock_converse_one_message_one_tool_call_one_reply() {
    let usage = json!({"inputTokens": 10, "outputTokens": 5, "totalTokens": 15});
    let fake = FakeModel::start(vec![
        json!({
            "output": {"message": {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "tooluse_1", "name": "create_event", "input": tool_input()}}
            ]}},
            "stopReason": "tool_use", "usage": usage, "metrics": {"latencyMs": 5}
        }),
        json!({
            "output": {"message": {"role": "assistant", "content": [{"text": REPLY}]}},
            "stopReason": "end_turn", "usage": usage, "metrics": {"latencyMs": 5}
        }),
    ])
    .await;
    let db = temp_db("providers-bedrock");
    let model = "eu.anthropic.claude-fake-v1:0";
    let mut server = Server::start(
        &db,
        &[
            ("STEWARD_MODEL_PROVIDER", "bedrock"),
            ("STEWARD_MODEL", model),
            ("AWS_ENDPOINT_URL", &fake.base),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDTEST"),
            ("AWS_SECRET_ACCESS_KEY", "test-secret"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
    )
    .await;
    assert!(
        server.model_label.starts_with("Amazon Bedrock"),
        "{}",
        server.model_label
    );
    let transcript = one_turn(&mut server).await;
    assert_eq!(assistant_texts(&transcript), [REPLY]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    for (path, _) in &requests {
        let decoded = path.replace("%3A", ":");
        assert_eq!(decoded, format!("/model/{model}/converse-stream"), "{path}");
    }
    let second = &requests[1].1;
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    let result = &last["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "tooluse_1");
    assert_eq!(event_names(&db).await, ["Harbour Fest"]);
}

#[tokio::test]
async fn openai_compatible_one_message_one_tool_call_one_reply() {
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    let fake = FakeModel::start(vec![
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-fake",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {
                    "name": "create_event", "arguments": tool_input().to_string()}}]
            }}],
            "usage": usage
        }),
        json!({
            "id": "chatcmpl-2", "object": "chat.completion", "created": 2, "model": "gpt-fake",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": REPLY}}],
            "usage": usage
        }),
    ])
    .await;
    let db = temp_db("providers-openai");
    let base = format!("{}/v1", fake.base);
    let mut server = Server::start(
        &db,
        &[
            ("STEWARD_MODEL_PROVIDER", "openai"),
            ("STEWARD_MODEL", "gpt-fake"),
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", &base),
        ],
    )
    .await;
    assert!(
        server.model_label.starts_with("OpenAI-compatible"),
        "{}",
        server.model_label
    );
    let transcript = one_turn(&mut server).await;
    assert_eq!(assistant_texts(&transcript), [REPLY]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|(path, _)| path == "/v1/chat/completions")
    );
    let second = &requests[1].1;
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_1");
    assert_eq!(event_names(&db).await, ["Harbour Fest"]);
}
