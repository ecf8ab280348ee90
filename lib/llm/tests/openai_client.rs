//! The OpenAI-compatible client against a fake Chat Completions server on 127.0.0.1. Fixtures
//! follow the shapes of OpenAI's Chat Completions reference examples.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use steward_llm::{
    CacheControl, ContentBlock, CreateRequest, Effort, LlmClient, LlmError, Message, OpenAiClient,
    OpenAiConfig, OutputConfig, StopReason, SystemBlock, ThinkingConfig, ToolSpec, text_of,
    tool_uses,
};
use support::{FakeServer, Reply};

const KEY: &str = "sk-proj-test-key";
const MODEL: &str = "gpt-5-mini";

fn client(server: &FakeServer) -> OpenAiClient {
    client_with_key(server, Some(KEY))
}

fn client_with_key(server: &FakeServer, key: Option<&str>) -> OpenAiClient {
    OpenAiClient::new(
        OpenAiConfig::new(key.map(str::to_owned))
            .with_base_url(format!("{}/v1/", server.base_url()))
            .with_timeout(Duration::from_secs(5))
            .with_retry_backoff(Duration::ZERO),
    )
    .expect("client")
}

fn add_room_tool() -> ToolSpec {
    ToolSpec {
        name: "add_room".to_owned(),
        description: "Add a room to an event.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "capacity": {"type": "integer"}},
            "required": ["name"]
        }),
        cache_control: Some(CacheControl::ephemeral()),
    }
}

fn request(messages: Vec<Message>) -> CreateRequest {
    let mut request = CreateRequest::new(MODEL, 16_000, messages);
    request.system = vec![
        SystemBlock::new("You are Steward."),
        SystemBlock::new("Today is Tuesday.").cached(),
    ]
    .into();
    request.tools = vec![add_room_tool()].into();
    request.thinking = Some(ThinkingConfig::adaptive());
    request.output_config = Some(OutputConfig {
        effort: Some(Effort::Medium),
    });
    request
}

fn simple_request() -> CreateRequest {
    request(vec![Message::user_text("Add two rooms")])
}

/// A stored conversation with a parallel tool round (one call failed).
fn round_trip_history() -> Vec<Message> {
    let mut results = Message::user(vec![
        ContentBlock::tool_result("call_a", "Added Main Hall (200).", false),
        ContentBlock::tool_result("call_b", "Room B already exists.", true),
        ContentBlock::text("[context: 2 rooms]"),
    ]);
    results.set_cache_control_on_last(Some(CacheControl::ephemeral()));
    vec![
        Message::user_text("Add Main Hall for 200 and Room B for 40"),
        Message::assistant(vec![
            ContentBlock::thinking("Two rooms.", "sig"),
            ContentBlock::text("Adding both."),
            ContentBlock::tool_use(
                "call_a",
                "add_room",
                json!({"name": "Main Hall", "capacity": 200}),
            ),
            ContentBlock::tool_use(
                "call_b",
                "add_room",
                json!({"name": "Room B", "capacity": 40}),
            ),
        ]),
        results,
    ]
}

/// A Chat Completions response body.
fn completion(message: Value, finish_reason: &str, usage: Value) -> Value {
    json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1_741_569_952,
        "model": "gpt-5-mini-2025-08-07",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": usage,
        "service_tier": "default"
    })
}

fn usage(prompt: u64, cached: u64, completion: u64) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    })
}

fn text_answer(text: &str) -> Reply {
    Reply::json(
        200,
        completion(
            json!({"role": "assistant", "content": text, "refusal": null, "annotations": []}),
            "stop",
            usage(19, 0, 10),
        ),
    )
}

fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

fn calls_answer(calls: Vec<Value>) -> Reply {
    Reply::json(
        200,
        completion(
            json!({"role": "assistant", "content": null, "tool_calls": calls, "refusal": null}),
            "tool_calls",
            usage(82, 0, 17),
        ),
    )
}

fn body(received: &support::Received) -> Value {
    serde_json::from_slice(&received.body).expect("json body")
}

fn openai_error(status: u16, message: &str, kind: &str, code: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

#[tokio::test]
async fn a_tool_round_trip_maps_every_block() {
    let server = FakeServer::start(vec![text_answer(
        "Both rooms are set; Room B existed already.",
    )])
    .await;

    let response = client(&server)
        .create(&request(round_trip_history()))
        .await
        .expect("response");

    assert_eq!(
        text_of(&response.content),
        "Both rooms are set; Room B existed already."
    );
    assert_eq!(response.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(response.id, "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT");
    let received = server.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.headers["authorization"].to_str().expect("ascii"),
        format!("Bearer {KEY}")
    );
    assert_eq!(
        body(sent),
        json!({
            "model": MODEL,
            "messages": [
                {"role": "system", "content": "You are Steward.\n\nToday is Tuesday."},
                {"role": "user", "content": "Add Main Hall for 200 and Room B for 40"},
                {"role": "assistant", "content": "Adding both.", "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "add_room", "arguments": "{\"capacity\":200,\"name\":\"Main Hall\"}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "add_room", "arguments": "{\"capacity\":40,\"name\":\"Room B\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_a", "content": "Added Main Hall (200)."},
                {"role": "tool", "tool_call_id": "call_b", "content": "Error: Room B already exists."},
                {"role": "user", "content": "[context: 2 rooms]"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "add_room", "description": "Add a room to an event.",
                "parameters": add_room_tool().input_schema
            }}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "max_completion_tokens": 16000
        })
    );
}

#[tokio::test]
async fn parallel_tool_calls_come_back_in_order() {
    let server = FakeServer::start(vec![calls_answer(vec![
        tool_call(
            "call_a",
            "add_room",
            r#"{"name": "Main Hall", "capacity": 200}"#,
        ),
        tool_call(
            "call_b",
            "add_room",
            r#"{"name": "Room B", "capacity": 40}"#,
        ),
    ])])
    .await;
    let response = client(&server)
        .create(&simple_request())
        .await
        .expect("response");
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
    let calls = tool_uses(&response.content);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[1].id.as_str()),
        ("call_a", "call_b")
    );
    assert_eq!(
        calls[0].input,
        json!({"name": "Main Hall", "capacity": 200})
    );
}

#[tokio::test]
async fn cached_tokens_are_read_from_the_prompt_details() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        completion(
            json!({"role": "assistant", "content": "Hi!"}),
            "stop",
            usage(2006, 1920, 300),
        ),
    )])
    .await;
    let response = client(&server)
        .create(&simple_request())
        .await
        .expect("response");
    assert_eq!(response.usage.input_tokens, 86);
    assert_eq!(response.usage.cache_read_input_tokens, 1920);
    assert_eq!(response.usage.cache_creation_input_tokens, 0);
    assert_eq!(response.usage.output_tokens, 300);
}

#[tokio::test]
async fn finish_reasons_and_refusals_are_mapped() {
    let cases = [
        (
            json!({"role": "assistant", "content": "Done."}),
            "stop",
            StopReason::EndTurn,
        ),
        (
            json!({"role": "assistant", "content": "Half an ans"}),
            "length",
            StopReason::MaxTokens,
        ),
        (
            json!({"role": "assistant", "content": ""}),
            "content_filter",
            StopReason::Refusal,
        ),
        (
            json!({"role": "assistant", "content": null, "refusal": "I'm sorry, I cannot assist with that request."}),
            "stop",
            StopReason::Refusal,
        ),
        // Ollama says `stop` even when it calls tools.
        (
            json!({"role": "assistant", "content": "", "tool_calls": [tool_call("call_1", "add_room", "{\"name\":\"A\"}")]}),
            "stop",
            StopReason::ToolUse,
        ),
        (
            json!({"role": "assistant", "content": "Hm."}),
            "eos",
            StopReason::Unknown("eos".to_owned()),
        ),
    ];
    for (message, finish, expected) in cases {
        let server = FakeServer::start(vec![Reply::json(
            200,
            completion(message, finish, usage(5, 0, 5)),
        )])
        .await;
        let response = client(&server)
            .create(&simple_request())
            .await
            .expect("response");
        assert_eq!(response.stop_reason, Some(expected), "{finish}");
        if finish == "content_filter" {
            assert!(response.content.is_empty());
        }
    }
}

#[tokio::test]
async fn a_call_cut_off_by_the_length_limit_is_dropped_not_corrected() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        completion(
            json!({"role": "assistant", "content": "Adding", "tool_calls": [tool_call("call_1", "add_room", "{\"name\": \"Main")]}),
            "length",
            usage(5, 0, 5),
        ),
    )])
    .await;
    let response = client(&server)
        .create(&simple_request())
        .await
        .expect("response");
    assert_eq!(response.stop_reason, Some(StopReason::MaxTokens));
    assert!(tool_uses(&response.content).is_empty());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn unreadable_arguments_are_sent_back_for_correction_and_never_returned() {
    let server = FakeServer::start(vec![
        calls_answer(vec![
            tool_call(
                "call_a",
                "add_room",
                r#"{"name": "Main Hall", "capacity": 200"#,
            ),
            tool_call("call_b", "add_room", r#"{"name": "Room B"}"#),
        ]),
        calls_answer(vec![
            tool_call(
                "call_c",
                "add_room",
                r#"{"name": "Main Hall", "capacity": 200}"#,
            ),
            tool_call("call_d", "add_room", r#"{"name": "Room B"}"#),
        ]),
    ])
    .await;
    let response = client(&server)
        .create(&simple_request())
        .await
        .expect("response");
    let calls = tool_uses(&response.content);
    assert_eq!(
        calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["call_c", "call_d"]
    );
    assert_eq!(
        response.usage.input_tokens, 164,
        "both attempts are counted"
    );

    let received = server.received();
    assert_eq!(received.len(), 2);
    let retry = body(&received[1]);
    let messages = retry["messages"].as_array().expect("messages");
    let n = messages.len();
    assert_eq!(
        messages[n - 3]["tool_calls"][0]["function"]["arguments"],
        r#"{"name": "Main Hall", "capacity": 200"#,
        "the model sees its own broken call"
    );
    let error = messages[n - 2]["content"].as_str().expect("text");
    assert_eq!(messages[n - 2]["tool_call_id"], "call_a");
    assert!(
        error.starts_with("Error: nothing was run: the arguments are not valid JSON"),
        "{error}"
    );
    assert_eq!(messages[n - 1]["tool_call_id"], "call_b");
    assert!(
        messages[n - 1]["content"]
            .as_str()
            .expect("text")
            .starts_with("Not run")
    );

    // Broken twice: a typed error, nothing to store.
    let broken = || calls_answer(vec![tool_call("call_x", "add_room", "[1, 2]")]);
    let server = FakeServer::start(vec![broken(), broken(), text_answer("never")]).await;
    match client(&server).create(&simple_request()).await {
        Err(LlmError::MalformedResponse { message }) => {
            assert!(message.contains("must be a JSON object"), "{message}")
        }
        other => panic!("expected a malformed-response error, got {other:?}"),
    }
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn the_same_conversation_is_the_same_bytes_on_every_call() {
    let history = round_trip_history();
    let requests: Vec<CreateRequest> = (1..=history.len())
        .map(|n| request(history[..n].to_vec()))
        .collect();
    let replies = (0..requests.len() * 2).map(|_| text_answer("ok")).collect();
    let server = FakeServer::start(replies).await;
    let client = client(&server);
    for request in requests.iter().chain(requests.iter()) {
        client.create(request).await.expect("response");
    }
    let received = server.received();
    for (n, first) in received[..requests.len()].iter().enumerate() {
        assert_eq!(
            first.body,
            received[n + requests.len()].body,
            "request {n} changed between calls"
        );
    }
    // A later turn's request starts with the earlier turn's messages, byte for byte.
    let earlier = String::from_utf8(received[1].body.to_vec()).expect("utf8");
    let later = String::from_utf8(received[2].body.to_vec()).expect("utf8");
    let prefix = earlier.split("]}]").next().expect("assistant message");
    assert!(later.starts_with(prefix), "{earlier}\n{later}");
}

#[tokio::test]
async fn failures_map_to_the_shared_error_type() {
    let cases = [
        (
            openai_error(429, "Rate limit reached for gpt-5-mini in organization org-x on requests per min (RPM): Limit 500.", "requests", "rate_limit_exceeded")
                .header("retry-after", "7"),
            LlmError::RateLimited { retry_after: Some(Duration::from_secs(7)) },
        ),
        (
            openai_error(404, "The model `gpt-9` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
            LlmError::ModelUnavailable {
                model: MODEL.to_owned(),
                message: "The model `gpt-9` does not exist or you do not have access to it.".to_owned(),
            },
        ),
        (
            openai_error(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 129000 tokens.", "invalid_request_error", "context_length_exceeded"),
            LlmError::ContextWindowExceeded {
                message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 129000 tokens.".to_owned(),
            },
        ),
        (
            openai_error(401, "Incorrect API key provided: sk-proj-****.", "invalid_request_error", "invalid_api_key"),
            LlmError::Authentication { message: "Incorrect API key provided: sk-proj-****.".to_owned() },
        ),
    ];
    for (reply, expected) in cases {
        let server = FakeServer::start(vec![reply, text_answer("never")]).await;
        assert_eq!(
            client(&server).create(&simple_request()).await,
            Err(expected.clone())
        );
        assert_eq!(server.received().len(), 1, "not retried: {expected:?}");
    }
}

#[tokio::test]
async fn an_overload_is_retried_once_and_a_slow_server_times_out() {
    let server = FakeServer::start(vec![
        Reply::raw(503, "Service Unavailable"),
        text_answer("second time lucky"),
    ])
    .await;
    let response = client(&server)
        .create(&simple_request())
        .await
        .expect("retried");
    assert_eq!(text_of(&response.content), "second time lucky");
    assert_eq!(server.received().len(), 2);

    let server = FakeServer::start(vec![
        text_answer("late").delayed(Duration::from_secs(3)),
        text_answer("late").delayed(Duration::from_secs(3)),
    ])
    .await;
    let slow = OpenAiClient::new(
        OpenAiConfig::new(None)
            .with_base_url(format!("{}/v1", server.base_url()))
            .with_timeout(Duration::from_millis(200))
            .with_retry_backoff(Duration::ZERO),
    )
    .expect("client");
    assert_eq!(slow.create(&simple_request()).await, Err(LlmError::Timeout));
    assert_eq!(server.received().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn an_unexpected_shape_is_a_typed_error_with_the_body_cut_short() {
    let long = format!(
        "{{\"status\":\"ok\",\"padding\":\"{}\"}}",
        "x".repeat(5_000)
    );
    let server = FakeServer::start(vec![Reply::raw(200, &long)]).await;
    match client(&server).create(&simple_request()).await {
        Err(LlmError::MalformedResponse { message }) => {
            assert!(message.contains("\"status\":\"ok\""), "{message}");
            assert!(message.len() < 1_000, "cut short: {} bytes", message.len());
        }
        other => panic!("expected a malformed-response error, got {other:?}"),
    }
    let server = FakeServer::start(vec![Reply::json(200, json!({"id": "x", "choices": []}))]).await;
    assert!(matches!(
        client(&server).create(&simple_request()).await,
        Err(LlmError::MalformedResponse { .. })
    ));
}

#[tokio::test]
async fn a_local_server_without_a_key_gets_no_authorization_header() {
    let server = FakeServer::start(vec![text_answer("Hi")]).await;
    client_with_key(&server, None)
        .create(&simple_request())
        .await
        .expect("response");
    assert!(server.received()[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn a_pdf_goes_out_as_a_file_part_and_the_photo_as_an_image() {
    let server = FakeServer::start(vec![text_answer("Done.")]).await;
    let resolved = request(vec![support::stored_media_message()])
        .with_stored_media_resolved(&support::media_blobs())
        .expect("resolved");
    client(&server).create(&resolved).await.expect("response");
    let sent = body(&server.received()[0]);
    assert_eq!(
        sent["messages"][1],
        json!({"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "file", "file": {
                "filename": "Spring Open programme pdf.pdf",
                "file_data": "data:application/pdf;base64,JVBERi0xLjc="
            }},
            {"type": "text", "text": "Set this up"}
        ]})
    );
}

#[tokio::test]
async fn an_unresolved_media_reference_never_reaches_the_server() {
    let server = FakeServer::start(vec![text_answer("Done.")]).await;
    let stored = request(vec![support::stored_media_message()]);
    assert_eq!(
        client(&server).create(&stored).await,
        Err(LlmError::UnresolvedMedia {
            key: "media/photo-1".to_owned()
        })
    );
    assert_eq!(server.received().len(), 0);
}
