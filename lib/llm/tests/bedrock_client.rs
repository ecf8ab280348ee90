//! The Bedrock client against a fake Converse endpoint on 127.0.0.1 (the real SDK, signed with
//! test credentials). Fixtures follow the shapes of the Converse API reference examples.

mod support;

use std::time::Duration;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
use serde_json::{Value, json};
use steward_llm::{
    BedrockClient, BedrockConfig, ContentBlock, CreateRequest, Effort, InvalidKind, LlmClient,
    LlmError, Message, OutputConfig, StopReason, SystemBlock, ThinkingConfig, ToolSpec, text_of,
    tool_uses,
};
use support::{FakeServer, Reply};

const MODEL_ID: &str = "global.anthropic.claude-sonnet-5-5";
const LLAMA: &str = "us.meta.llama4-maverick-17b-instruct-v1:0";

fn sdk_config(server: &FakeServer) -> SdkConfig {
    SdkConfig::builder()
        .http_client(steward_net::sdk_http_client())
        .endpoint_url(server.base_url())
        .region(Region::new("us-east-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "AKIDTESTONLY",
            "test-secret",
            None,
            None,
            "fixed-test-credentials",
        )))
        .behavior_version(BehaviorVersion::latest())
        .build()
}

fn client(server: &FakeServer, betas: Vec<String>) -> BedrockClient {
    BedrockClient::with_config(
        &sdk_config(server),
        BedrockConfig {
            betas,
            retry_backoff: Duration::ZERO,
            ..BedrockConfig::default()
        },
    )
}

/// A tool with enough properties that a hash map would reorder them between calls.
fn create_event_tool() -> ToolSpec {
    ToolSpec {
        name: "create_event".to_owned(),
        description: "Create an event.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"}, "starts_at": {"type": "string"},
                "ends_at": {"type": "string"}, "venue": {"type": "string"},
                "capacity": {"type": "integer"}, "timezone": {"type": "string"},
                "summary": {"type": "string"}, "public": {"type": "boolean"}
            },
            "required": ["name", "starts_at"]
        }),
        cache_control: Some(steward_llm::CacheControl::ephemeral()),
    }
}

fn request(model: &str, messages: Vec<Message>) -> CreateRequest {
    let mut request = CreateRequest::new(model, 16_000, messages);
    request.system = vec![SystemBlock::new("You are Steward.").cached()].into();
    request.tools = vec![create_event_tool()].into();
    request.thinking = Some(ThinkingConfig::adaptive());
    request.output_config = Some(OutputConfig {
        effort: Some(Effort::Medium),
    });
    request
}

fn simple_request() -> CreateRequest {
    request(MODEL_ID, vec![Message::user_text("Set up Saturday")])
}

/// The conversation of a tool round trip, as the harness stores it.
fn round_trip_history() -> Vec<Message> {
    let mut last = Message::user(vec![ContentBlock::tool_result(
        "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
        "Created Spring Open (evt_1).",
        false,
    )]);
    last.set_cache_control_on_last(Some(steward_llm::CacheControl::ephemeral()));
    vec![
        Message::user_text("Set up Spring Open on Saturday"),
        Message::assistant(vec![
            ContentBlock::thinking("The person wants an event.", "c2lnbmF0dXJl"),
            ContentBlock::text("Setting it up."),
            ContentBlock::tool_use(
                "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                "create_event",
                json!({"name": "Spring Open", "starts_at": "2026-12-05T09:00"}),
            ),
        ]),
        last,
    ]
}

/// A Converse response body.
fn converse_answer(content: Value, stop_reason: &str, usage: Value) -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": usage,
        "metrics": {"latencyMs": 812}
    })
}

fn plain_usage() -> Value {
    json!({"inputTokens": 125, "outputTokens": 60, "totalTokens": 185})
}

fn text_answer(text: &str) -> Reply {
    Reply::converse_stream(&converse_answer(
        json!([{"text": text}]),
        "end_turn",
        plain_usage(),
    ))
}

/// A Bedrock service error: the type in `x-amzn-errortype`, the message in the body.
fn aws_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(status, json!({"message": message})).header("x-amzn-errortype", kind)
}

fn body(received: &support::Received) -> Value {
    serde_json::from_slice(&received.body).expect("json body")
}

#[tokio::test]
async fn a_tool_round_trip_maps_every_block_and_signs_the_request() {
    let server = FakeServer::start(vec![Reply::converse_stream(&converse_answer(
            json!([
                {"reasoningContent": {"reasoningText": {"text": "Rooms next.", "signature": "c2lnMg=="}}},
                {"text": "Done. Shall I add rooms?"}
            ]),
            "end_turn",
            plain_usage(),
        ))])
    .await;
    let client = client(&server, vec!["context-1m-2025-08-07".to_owned()]);

    let response = client
        .create(&request(MODEL_ID, round_trip_history()))
        .await
        .expect("response");

    assert_eq!(text_of(&response.content), "Done. Shall I add rooms?");
    assert_eq!(
        response.content[0],
        ContentBlock::thinking("Rooms next.", "c2lnMg==")
    );
    assert_eq!(response.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(response.usage.input_tokens, 125);
    assert_eq!(response.usage.output_tokens, 60);
    assert!(response.id.starts_with("bedrock"), "{}", response.id);

    let received = server.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(
        sent.path,
        "/model/global.anthropic.claude-sonnet-5-5/converse-stream"
    );
    let authorization = sent.headers["authorization"].to_str().expect("ascii");
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTESTONLY/"),
        "{authorization}"
    );
    assert_eq!(
        sent.headers["content-length"].to_str().expect("ascii"),
        sent.body.len().to_string()
    );
    let cache_point = json!({"cachePoint": {"type": "default"}});
    assert_eq!(
        body(sent),
        json!({
            "additionalModelRequestFields": {
                "anthropic_beta": ["context-1m-2025-08-07"],
                "output_config": {"effort": "medium"},
                "thinking": {"type": "adaptive"}
            },
            "inferenceConfig": {"maxTokens": 16000},
            "messages": [
                {"role": "user", "content": [{"text": "Set up Spring Open on Saturday"}]},
                {"role": "assistant", "content": [
                    {"reasoningContent": {"reasoningText": {"text": "The person wants an event.", "signature": "c2lnbmF0dXJl"}}},
                    {"text": "Setting it up."},
                    {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "create_event",
                                 "input": {"name": "Spring Open", "starts_at": "2026-12-05T09:00"}}}
                ]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                                    "content": [{"text": "Created Spring Open (evt_1)."}]}},
                    cache_point
                ]}
            ],
            "system": [{"text": "You are Steward."}, cache_point],
            "toolConfig": {"tools": [
                {"toolSpec": {"name": "create_event", "description": "Create an event.",
                              "inputSchema": {"json": create_event_tool().input_schema}}},
                cache_point
            ]}
        })
    );
}

#[tokio::test]
async fn parallel_tool_calls_and_cached_usage_come_back_in_order() {
    let server = FakeServer::start(vec![Reply::converse_stream(&converse_answer(
            json!([
                {"text": "Adding both rooms."},
                {"toolUse": {"toolUseId": "tooluse_a", "name": "add_room", "input": {"name": "Main Hall", "capacity": 200}}},
                {"toolUse": {"toolUseId": "tooluse_b", "name": "add_room", "input": {"name": "Room B", "capacity": 40}}}
            ]),
            "tool_use",
            json!({"inputTokens": 12, "outputTokens": 80, "totalTokens": 5092,
                   "cacheReadInputTokens": 4000, "cacheWriteInputTokens": 1000}),
        ))])
    .await;
    let response = client(&server, Vec::new())
        .create(&simple_request())
        .await
        .expect("response");
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
    let calls = tool_uses(&response.content);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[1].id.as_str()),
        ("tooluse_a", "tooluse_b")
    );
    assert_eq!(calls[1].input, json!({"name": "Room B", "capacity": 40}));
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.cache_read_input_tokens, 4000);
    assert_eq!(response.usage.cache_creation_input_tokens, 1000);
}

#[tokio::test]
async fn the_same_conversation_is_the_same_bytes_on_every_call() {
    // Turn by turn, as the harness grows the conversation; each request twice.
    let history = round_trip_history();
    let requests: Vec<CreateRequest> = (1..=history.len())
        .map(|n| request(MODEL_ID, history[..n].to_vec()))
        .collect();
    let replies = (0..requests.len() * 2).map(|_| text_answer("ok")).collect();
    let server = FakeServer::start(replies).await;
    let client = client(&server, Vec::new());
    for request in requests.iter().chain(requests.iter()) {
        client.create(request).await.expect("response");
    }
    let received = server.received();
    for (n, first) in received[..requests.len()].iter().enumerate() {
        let again = &received[n + requests.len()];
        assert_eq!(first.body, again.body, "request {n} changed between calls");
    }
    // Object keys go out sorted, whatever order the SDK's hash maps hold them in.
    let first = String::from_utf8(received[0].body.to_vec()).expect("utf8");
    assert!(
        first.contains(r#""properties":{"capacity":{"type":"integer"},"ends_at""#),
        "{first}"
    );
}

#[tokio::test]
async fn other_models_get_no_claude_fields_cache_points_or_reasoning() {
    let server = FakeServer::start(vec![text_answer("Sure.")]).await;
    client(&server, vec!["context-1m-2025-08-07".to_owned()])
        .create(&request(LLAMA, round_trip_history()))
        .await
        .expect("response");
    let sent = body(&server.received()[0]);
    assert_eq!(sent.get("additionalModelRequestFields"), None);
    let text = sent.to_string();
    assert!(!text.contains("cachePoint"), "{text}");
    assert!(!text.contains("reasoningContent"), "{text}");
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"text": "Setting it up."},
            {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "create_event",
                         "input": {"name": "Spring Open", "starts_at": "2026-12-05T09:00"}}}
        ])
    );
}

#[tokio::test]
async fn every_stop_reason_is_mapped() {
    let cases = [
        ("end_turn", Ok(StopReason::EndTurn)),
        ("max_tokens", Ok(StopReason::MaxTokens)),
        ("stop_sequence", Ok(StopReason::StopSequence)),
        (
            "model_context_window_exceeded",
            Ok(StopReason::ModelContextWindowExceeded),
        ),
        ("guardrail_intervened", Ok(StopReason::Refusal)),
        ("content_filtered", Ok(StopReason::Refusal)),
        (
            "a_reason_from_the_future",
            Ok(StopReason::Unknown("a_reason_from_the_future".to_owned())),
        ),
        ("malformed_tool_use", Err("malformed_tool_use")),
        ("malformed_model_output", Err("malformed_model_output")),
    ];
    for (wire, expected) in cases {
        let server = FakeServer::start(vec![Reply::converse_stream(&converse_answer(
            json!([{"text": "Sorry."}]),
            wire,
            plain_usage(),
        ))])
        .await;
        let outcome = client(&server, Vec::new()).create(&simple_request()).await;
        match (outcome, expected) {
            (Ok(response), Ok(stop)) => assert_eq!(response.stop_reason, Some(stop), "{wire}"),
            (Err(LlmError::MalformedResponse { message }), Err(name)) => {
                assert!(message.contains(name), "{message}")
            }
            (other, expected) => panic!("{wire}: got {other:?}, expected {expected:?}"),
        }
    }
}

#[tokio::test]
async fn service_errors_map_to_the_shared_error_type() {
    let signature = "messages.1.content.0: Invalid `signature` in `thinking` block";
    let unavailable = |message: &str| LlmError::ModelUnavailable {
        model: MODEL_ID.to_owned(),
        message: message.to_owned(),
    };
    let on_demand = "Invocation of model ID anthropic.claude-sonnet-5-5 with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model.";
    let no_access = "You don't have access to the model with the specified model ID.";
    let not_authorized = "User: arn:aws:sts::123456789012:assumed-role/agent/fn is not authorized to perform: bedrock:InvokeModel";
    let cases = [
        (
            aws_error(400, "ValidationException", signature),
            LlmError::InvalidRequest {
                message: signature.to_owned(),
                kind: InvalidKind::ThinkingSignatureRejected,
            },
        ),
        (
            aws_error(400, "ValidationException", "invalid beta flag"),
            LlmError::InvalidRequest {
                message: "invalid beta flag".to_owned(),
                kind: InvalidKind::OptionalFeatureRejected,
            },
        ),
        (
            aws_error(
                400,
                "ValidationException",
                "Input is too long for requested model.",
            ),
            LlmError::ContextWindowExceeded {
                message: "Input is too long for requested model.".to_owned(),
            },
        ),
        (
            aws_error(400, "ValidationException", on_demand),
            unavailable(on_demand),
        ),
        (
            aws_error(
                400,
                "ValidationException",
                "The provided model identifier is invalid.",
            ),
            unavailable("The provided model identifier is invalid."),
        ),
        (
            aws_error(404, "ResourceNotFoundException", "Model not found"),
            unavailable("Model not found"),
        ),
        (
            aws_error(403, "AccessDeniedException", no_access),
            unavailable(no_access),
        ),
        (
            aws_error(403, "AccessDeniedException", not_authorized),
            LlmError::Authentication {
                message: not_authorized.to_owned(),
            },
        ),
        (
            aws_error(
                429,
                "ThrottlingException",
                "Too many tokens, please wait before trying again.",
            ),
            LlmError::RateLimited { retry_after: None },
        ),
        (
            aws_error(
                400,
                "ServiceQuotaExceededException",
                "Your account quota is used up.",
            ),
            LlmError::RateLimited { retry_after: None },
        ),
    ];
    for (reply, expected) in cases {
        let server = FakeServer::start(vec![reply, text_answer("never")]).await;
        assert_eq!(
            client(&server, Vec::new()).create(&simple_request()).await,
            Err(expected.clone())
        );
        assert_eq!(server.received().len(), 1, "not retried: {expected:?}");
    }
    assert!(
        unavailable(on_demand).to_string().contains("STEWARD_MODEL"),
        "the operator is told which setting to change"
    );
}

#[tokio::test]
async fn an_overload_is_retried_once() {
    let server = FakeServer::start(vec![
        aws_error(503, "ServiceUnavailableException", "Service unavailable"),
        text_answer("second time lucky"),
    ])
    .await;
    let response = client(&server, Vec::new())
        .create(&simple_request())
        .await
        .expect("second attempt succeeds");
    assert_eq!(text_of(&response.content), "second time lucky");
    assert_eq!(server.received().len(), 2);

    let server = FakeServer::start(vec![
        aws_error(424, "ModelNotReadyException", "Model is not ready"),
        aws_error(408, "ModelTimeoutException", "Model timed out"),
        text_answer("never"),
    ])
    .await;
    assert_eq!(
        client(&server, Vec::new()).create(&simple_request()).await,
        Err(LlmError::Timeout)
    );
    assert_eq!(server.received().len(), 2, "never a second retry");
}

#[tokio::test]
async fn a_slow_answer_times_out() {
    let server = FakeServer::start(vec![
        text_answer("late").delayed(Duration::from_secs(3)),
        text_answer("late").delayed(Duration::from_secs(3)),
    ])
    .await;
    let client = BedrockClient::with_config(
        &sdk_config(&server),
        BedrockConfig {
            timeout: Some(Duration::from_millis(200)),
            retry_backoff: Duration::ZERO,
            ..BedrockConfig::default()
        },
    );
    assert_eq!(
        client.create(&simple_request()).await,
        Err(LlmError::Timeout)
    );
    assert_eq!(server.received().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn a_malformed_answer_is_a_clear_error() {
    let server = FakeServer::start(vec![Reply::raw(200, "not an event stream at all")]).await;
    match client(&server, Vec::new()).create(&simple_request()).await {
        Err(LlmError::MalformedResponse { message }) => {
            assert!(message.contains("unexpected end of stream"), "{message}")
        }
        other => panic!("expected a malformed-response error, got {other:?}"),
    }
}

/// The events of a tool-calling answer, as frames.
fn tool_answer() -> Value {
    converse_answer(
        json!([
            {"reasoningContent": {"reasoningText": {"text": "Two rooms to add.", "signature": "c2lnMw=="}}},
            {"text": "Adding both rooms."},
            {"toolUse": {"toolUseId": "tooluse_a", "name": "add_room", "input": {"name": "Main Hall", "capacity": 200}}}
        ]),
        "tool_use",
        json!({"inputTokens": 12, "outputTokens": 80, "totalTokens": 5092,
               "cacheReadInputTokens": 4000, "cacheWriteInputTokens": 1000}),
    )
}

fn frames(answer: &Value) -> Vec<Vec<u8>> {
    steward_llm::testing::converse_stream_events(answer)
        .into_iter()
        .map(|(kind, payload)| steward_llm::testing::event_frame(kind, &payload))
        .collect()
}

fn paced_client(server: &FakeServer, idle: Duration) -> BedrockClient {
    BedrockClient::with_config(
        &sdk_config(server),
        BedrockConfig {
            timeout: Some(Duration::from_secs(60)),
            idle_timeout: idle,
            retry_backoff: Duration::ZERO,
            ..BedrockConfig::default()
        },
    )
}

#[tokio::test]
async fn a_slow_but_steady_stream_outlasts_the_idle_timeout() {
    // Each event 120 ms after the last: every gap well inside the 400 ms idle timeout, the
    // whole answer several times longer than it.
    let paced: Vec<(Duration, Vec<u8>)> = frames(&tool_answer())
        .into_iter()
        .map(|frame| (Duration::from_millis(120), frame))
        .collect();
    assert!(paced.len() >= 10, "{} events", paced.len());
    let server = FakeServer::start(vec![Reply::event_stream(paced)]).await;
    let response = paced_client(&server, Duration::from_millis(400))
        .create(&simple_request())
        .await
        .expect("answered");
    assert_eq!(
        response.content,
        vec![
            ContentBlock::thinking("Two rooms to add.", "c2lnMw=="),
            ContentBlock::text("Adding both rooms."),
            ContentBlock::tool_use(
                "tooluse_a",
                "add_room",
                json!({"name": "Main Hall", "capacity": 200})
            ),
        ]
    );
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(response.usage.cache_read_input_tokens, 4000);
    assert_eq!(response.usage.cache_creation_input_tokens, 1000);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_stream_that_stalls_is_an_idle_timeout_and_not_retried() {
    let all = frames(&tool_answer());
    let (first, rest) = all.split_at(all.len() / 2);
    // Half the answer, then 20 s of silence: far beyond the 300 ms idle timeout, far inside
    // the 60 s ceiling (with only the ceiling the answer would arrive and this would fail).
    let mut paced: Vec<(Duration, Vec<u8>)> = first
        .iter()
        .map(|frame| (Duration::from_millis(20), frame.clone()))
        .collect();
    paced.push((Duration::from_secs(20), rest.concat()));
    let server = FakeServer::start(vec![
        Reply::event_stream(paced),
        Reply::converse_stream(&tool_answer()),
    ])
    .await;
    assert_eq!(
        paced_client(&server, Duration::from_millis(300))
            .create(&simple_request())
            .await,
        Err(LlmError::Timeout)
    );
    assert_eq!(
        server.received().len(),
        1,
        "a stalled answer is never paid twice"
    );
}

/// A streamed answer cut by an exception after its first `cut` events.
fn excepting(cut: usize, kind: &str, payload: Value) -> Reply {
    let mut sent: Vec<Vec<u8>> = frames(&tool_answer());
    sent.truncate(cut);
    sent.push(steward_llm::testing::exception_frame(kind, &payload));
    Reply::event_stream(vec![(Duration::ZERO, sent.concat())])
}

#[tokio::test]
async fn an_exception_mid_stream_maps_like_its_status_and_is_retried_only_before_output() {
    // Unavailable right after messageStart: nothing generated yet, retried once.
    let server = FakeServer::start(vec![
        excepting(
            1,
            "serviceUnavailableException",
            json!({"message": "Service unavailable"}),
        ),
        Reply::converse_stream(&tool_answer()),
    ])
    .await;
    let response = client(&server, Vec::new())
        .create(&simple_request())
        .await
        .expect("retried");
    assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(server.received().len(), 2);

    // The same after the first block began: output is being billed, so no retry.
    let server = FakeServer::start(vec![
        excepting(
            2,
            "serviceUnavailableException",
            json!({"message": "Service unavailable"}),
        ),
        Reply::converse_stream(&tool_answer()),
    ])
    .await;
    assert_eq!(
        client(&server, Vec::new()).create(&simple_request()).await,
        Err(LlmError::Overloaded)
    );
    assert_eq!(server.received().len(), 1);

    let cases = [
        (
            "throttlingException",
            json!({"message": "Too many tokens"}),
            LlmError::RateLimited { retry_after: None },
        ),
        (
            "modelStreamErrorException",
            json!({"message": "Overloaded", "originalStatusCode": 529, "originalMessage": "Overloaded"}),
            LlmError::Overloaded,
        ),
        (
            "validationException",
            json!({"message": "Input is too long for requested model."}),
            LlmError::ContextWindowExceeded {
                message: "Input is too long for requested model.".to_owned(),
            },
        ),
        (
            "internalServerException",
            json!({"message": "Internal error"}),
            LlmError::Api {
                status: 500,
                message: "Internal error".to_owned(),
            },
        ),
    ];
    for (kind, payload, expected) in cases {
        let server = FakeServer::start(vec![
            excepting(3, kind, payload),
            Reply::converse_stream(&tool_answer()),
        ])
        .await;
        assert_eq!(
            client(&server, Vec::new()).create(&simple_request()).await,
            Err(expected),
            "{kind}"
        );
        assert_eq!(server.received().len(), 1, "{kind}");
    }
}

#[tokio::test]
async fn a_stream_cut_short_is_a_clear_error() {
    let mut sent = frames(&tool_answer());
    sent.truncate(sent.len() - 2);
    let server = FakeServer::start(vec![Reply::event_stream(vec![(
        Duration::ZERO,
        sent.concat(),
    )])])
    .await;
    match client(&server, Vec::new()).create(&simple_request()).await {
        Err(LlmError::MalformedResponse { message }) => {
            assert!(message.contains("without messageStop"), "{message}")
        }
        other => panic!("expected a malformed-response error, got {other:?}"),
    }
    assert_eq!(server.received().len(), 1);
}

/// What Bedrock accepts as a document name: ASCII letters and digits, hyphens, parentheses,
/// square brackets, and single spaces between words.
fn valid_document_name(name: &str) -> bool {
    !name.is_empty()
        && name.trim() == name
        && !name.contains("  ")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '(' | ')' | '[' | ']'))
}

#[tokio::test]
async fn a_document_goes_out_as_a_named_pdf_with_its_cache_point_the_same_bytes_each_time() {
    let server = FakeServer::start(vec![text_answer("Done."), text_answer("Done.")]).await;
    let client = client(&server, Vec::new());
    let stored = request(MODEL_ID, vec![support::stored_media_message()]);
    for _ in 0..2 {
        let resolved = stored
            .with_stored_media_resolved(&support::media_blobs())
            .expect("resolved");
        client.create(&resolved).await.expect("response");
    }
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].body, received[1].body, "same bytes on replay");
    let sent = body(&received[0]);
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": [
            {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
            {"document": {"format": "pdf", "name": "Spring Open programme pdf",
                          "source": {"bytes": "JVBERi0xLjc="}}},
            {"cachePoint": {"type": "default"}},
            {"text": "Set this up"}
        ]}])
    );
    let name = sent["messages"][0]["content"][1]["document"]["name"]
        .as_str()
        .expect("name");
    assert!(valid_document_name(name), "{name}");
}

#[tokio::test]
async fn an_unresolved_media_reference_never_reaches_bedrock() {
    let server = FakeServer::start(vec![text_answer("Done.")]).await;
    let stored = request(MODEL_ID, vec![support::stored_media_message()]);
    assert_eq!(
        client(&server, Vec::new()).create(&stored).await,
        Err(LlmError::UnresolvedMedia {
            key: "media/photo-1".to_owned()
        })
    );
    assert_eq!(server.received().len(), 0);
}
