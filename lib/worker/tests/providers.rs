//! Whole turns through the harness with each real model client (Bedrock ConverseStream and an
//! OpenAI-compatible server) talking to a fake provider on 127.0.0.1 that speaks its wire
//! format: a parallel tool round with the events domain's real tools, the next turn on the
//! stored rows, and the friendly lines for a refusal and a failure.

#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use steward_channels::ChannelProfile;
use steward_events::EventsConfig;
use steward_harness::{
    Agent, ChannelName, ConversationKey, ModelSettings, Outbox, ShapedReply, TurnInput, TurnLimits,
    TurnOutcome, accounts,
};
use steward_llm::{
    BedrockClient, BedrockConfig, DEFAULT_BEDROCK_MODEL, LlmClient, OpenAiClient, OpenAiConfig,
};
use steward_store::{Clock, SqliteTable, SystemClock, Table};

/// A fake provider: canned JSON answers in order, every request body kept.
#[derive(Clone, Default)]
struct Fake {
    replies: Arc<Mutex<VecDeque<(u16, Value)>>>,
    received: Arc<Mutex<Vec<(String, Bytes)>>>,
}

impl Fake {
    async fn start(replies: Vec<(u16, Value)>) -> (Self, String) {
        let fake = Self {
            replies: Arc::new(Mutex::new(replies.into())),
            received: Arc::default(),
        };
        let state = fake.clone();
        let app = Router::new().fallback(move |uri: Uri, body: Bytes| {
            let state = state.clone();
            async move {
                state
                    .received
                    .lock()
                    .unwrap()
                    .push((uri.path().to_owned(), body));
                let next = state.replies.lock().unwrap().pop_front();
                let (status, body) = next.unwrap_or((418, json!({"message": "no more replies"})));
                // Bedrock's answers stream (`ConverseStream`): the same answer as event frames.
                if status == 200 && uri.path().ends_with("/converse-stream") {
                    let mut response: Response = (
                        StatusCode::OK,
                        steward_llm::testing::converse_stream_body(&body),
                    )
                        .into_response();
                    response.headers_mut().insert(
                        "content-type",
                        "application/vnd.amazon.eventstream".parse().unwrap(),
                    );
                    return response;
                }
                let mut response: Response =
                    (StatusCode::from_u16(status).unwrap(), body.to_string()).into_response();
                response
                    .headers_mut()
                    .insert("content-type", "application/json".parse().unwrap());
                if status == 429 {
                    response
                        .headers_mut()
                        .insert("x-amzn-errortype", "ThrottlingException".parse().unwrap());
                }
                response
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (fake, url)
    }

    fn bodies(&self) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .map(|(_, body)| serde_json::from_slice(body).unwrap())
            .collect()
    }

    fn raw(&self, n: usize) -> String {
        String::from_utf8(self.received.lock().unwrap()[n].1.to_vec()).unwrap()
    }
}

#[derive(Default)]
struct Phone(Mutex<Vec<String>>);

#[async_trait]
impl Outbox for Phone {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::TELEGRAM
    }
    async fn react(&self, _emoji: &str) -> Result<(), String> {
        Ok(())
    }
    async fn send(&self, reply: &ShapedReply) -> Result<(), String> {
        if let Some(text) = &reply.text {
            self.0.lock().unwrap().push(text.clone());
        }
        Ok(())
    }
}

/// Runs `messages` as turns of one conversation against `client`; returns what was sent.
async fn converse(client: Arc<dyn LlmClient>, model: &str, messages: &[&str]) -> Vec<String> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let table: Arc<dyn Table> =
        Arc::new(SqliteTable::in_memory_with_clock(Arc::clone(&clock)).unwrap());
    let profile =
        accounts::create_account(table.as_ref(), clock.as_ref(), "Ada", Some("Europe/Berlin"))
            .await
            .unwrap();
    let domain = steward_events::domain(&EventsConfig::with_public_base_url(
        "http://localhost:8080".to_owned(),
    ));
    let agent = Agent::new(
        table,
        clock,
        Some(client),
        ModelSettings::new(model),
        TurnLimits::default(),
        domain,
    );
    let phone = Phone::default();
    for (i, text) in messages.iter().enumerate() {
        let input = TurnInput {
            conversation: ConversationKey::telegram(7),
            channel: ChannelName::parse("tg").unwrap(),
            user: profile.user.clone(),
            message_id: format!("m{i}"),
            text: (*text).to_owned(),
        };
        let outcome = agent.handle(&input, &phone).await.unwrap();
        assert!(matches!(outcome, TurnOutcome::Replied { .. }));
    }
    phone.0.into_inner().unwrap()
}

fn converse_answer(content: Value, stop: &str) -> (u16, Value) {
    (
        200,
        json!({
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": 30, "outputTokens": 12, "totalTokens": 2042,
                      "cacheReadInputTokens": 2000, "cacheWriteInputTokens": 0},
            "metrics": {"latencyMs": 400}
        }),
    )
}

async fn bedrock(url: &str) -> Arc<dyn LlmClient> {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(steward_net::sdk_http_client())
        .test_credentials()
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(url)
        .load()
        .await;
    Arc::new(BedrockClient::with_config(
        &sdk,
        BedrockConfig {
            retry_backoff: std::time::Duration::ZERO,
            ..BedrockConfig::default()
        },
    ))
}

#[tokio::test]
async fn a_bedrock_turn_runs_tools_and_the_next_turn_replays_the_stored_rows() {
    let (fake, url) = Fake::start(vec![
        converse_answer(
            json!([
                {"reasoningContent": {"reasoningText": {"text": "Look them up.", "signature": "c2ln"}}},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "list_events", "input": {}}},
                {"toolUse": {"toolUseId": "tooluse_2", "name": "list_events", "input": {}}}
            ]),
            "tool_use",
        ),
        converse_answer(json!([{"text": "You have no events yet."}]), "end_turn"),
        converse_answer(json!([{"text": "You're welcome!"}]), "end_turn"),
        converse_answer(json!([{"text": "Blocked by a guardrail."}]), "guardrail_intervened"),
        (429, json!({"message": "Too many requests, please wait before trying again."})),
    ])
    .await;
    let sent = converse(
        bedrock(&url).await,
        DEFAULT_BEDROCK_MODEL,
        &[
            "What events do I have?",
            "Thanks",
            "Something a guardrail stops",
            "Again",
        ],
    )
    .await;
    assert_eq!(
        sent,
        [
            "You have no events yet.",
            "You're welcome!",
            steward_harness::turn::REFUSED,
            steward_harness::turn::SWAMPED
        ]
    );
    let bodies = fake.bodies();
    // The tool round went back as two tool results, in order, with the signed reasoning.
    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(
        messages[1]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "Look them up.", "signature": "c2ln"}}})
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results[0]["toolResult"]["toolUseId"], "tooluse_1");
    assert_eq!(results[1]["toolResult"]["toolUseId"], "tooluse_2");
    assert!(
        results[0]["toolResult"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("No events yet.")
    );
    assert!(bodies[0]["toolConfig"]["tools"].as_array().unwrap().len() > 10);
    assert_eq!(
        bodies[0]["additionalModelRequestFields"]["thinking"],
        json!({"type": "adaptive"})
    );
    // The next turn sends the stored rows again: the same system prompt and tools, byte for
    // byte, and the earlier messages unchanged apart from where the cache point sits.
    let tail = |raw: &str| raw[raw.find("\"system\"").unwrap()..].to_owned();
    assert_eq!(tail(&fake.raw(0)), tail(&fake.raw(2)));
    let strip = |messages: &Value| -> Vec<Value> {
        messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let content: Vec<Value> = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b.get("cachePoint").is_none())
                    .cloned()
                    .collect();
                json!({"role": m["role"], "content": content})
            })
            .collect()
    };
    assert_eq!(
        strip(&bodies[1]["messages"])[..3],
        strip(&bodies[2]["messages"])[..3]
    );
}

fn completion(message: Value, finish: &str) -> (u16, Value) {
    (
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_741_569_952,
            "model": "gpt-5-mini-2025-08-07",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 2100, "completion_tokens": 20, "total_tokens": 2120,
                      "prompt_tokens_details": {"cached_tokens": 2048}}
        }),
    )
}

#[tokio::test]
async fn an_openai_turn_runs_tools_corrects_bad_arguments_and_replays_the_same_bytes() {
    let call = |id: &str, arguments: &str| json!({"id": id, "type": "function", "function": {"name": "list_events", "arguments": arguments}});
    let (fake, url) = Fake::start(vec![
        completion(
            json!({"role": "assistant", "content": null, "tool_calls": [call("call_1", "{")]}),
            "tool_calls",
        ),
        completion(
            json!({"role": "assistant", "content": null, "tool_calls": [call("call_2", "{}"), call("call_3", "")]}),
            "tool_calls",
        ),
        completion(json!({"role": "assistant", "content": "You have no events yet."}), "stop"),
        completion(json!({"role": "assistant", "content": "You're welcome!"}), "stop"),
        completion(
            json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
            "stop",
        ),
        (429, json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})),
    ])
    .await;
    let client = OpenAiClient::new(
        OpenAiConfig::new(Some("sk-test".to_owned()))
            .with_base_url(format!("{url}/v1"))
            .with_retry_backoff(std::time::Duration::ZERO),
    )
    .unwrap();
    let sent = converse(
        Arc::new(client),
        "gpt-5-mini",
        &[
            "What events do I have?",
            "Thanks",
            "Something refused",
            "Again",
        ],
    )
    .await;
    assert_eq!(
        sent,
        [
            "You have no events yet.",
            "You're welcome!",
            steward_harness::turn::REFUSED,
            steward_harness::turn::SWAMPED
        ]
    );
    let bodies = fake.bodies();
    // The broken call was corrected inside the client; the harness stored only the good ones.
    let stored_round = &bodies[2]["messages"];
    let text = stored_round.to_string();
    assert!(!text.contains("call_1"), "{text}");
    let messages = stored_round.as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["tool_call_id"], "call_2");
    assert_eq!(messages[n - 1]["tool_call_id"], "call_3");
    assert!(
        messages[n - 1]["content"]
            .as_str()
            .unwrap()
            .contains("No events yet.")
    );
    assert_eq!(messages[0]["role"], "system");
    // The next turn's request starts with the previous request's messages, byte for byte.
    let before = fake.raw(2);
    let after = fake.raw(3);
    let end = before.find("],\"tools\"").unwrap();
    assert!(after.starts_with(&before[..end]), "{before}\n{after}");
}
