//! The Claude API client against a fake server on 127.0.0.1.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use steward_llm::{
    AnthropicClient, AnthropicConfig, CreateRequest, CreateResponse, Effort, InvalidKind,
    LlmClient, LlmError, Message, OutputConfig, StopReason, SystemBlock, ThinkingConfig, text_of,
};
use support::{
    FakeServer, Reply, api_error, api_response, media_blobs, sse, stored_media_message,
    stream_events, tool_use_response,
};

const KEY: &str = "sk-ant-test-key";

fn request() -> CreateRequest {
    let mut request = CreateRequest::new(
        "claude-sonnet-5-5",
        16_000,
        vec![Message::user_text("Set up Saturday")],
    );
    request.system = vec![SystemBlock::new("You are Steward.").cached()].into();
    request.thinking = Some(ThinkingConfig::adaptive());
    request.output_config = Some(OutputConfig {
        effort: Some(Effort::Medium),
    });
    request
}

fn client(server: &FakeServer) -> AnthropicClient {
    client_with(server, |config| config)
}

fn client_with(
    server: &FakeServer,
    adjust: impl FnOnce(AnthropicConfig) -> AnthropicConfig,
) -> AnthropicClient {
    let config = AnthropicConfig::new(KEY)
        .with_base_url(server.base_url())
        .with_timeout(Duration::from_secs(5))
        .with_retry_backoff(Duration::ZERO);
    AnthropicClient::new(adjust(config)).expect("client")
}

#[tokio::test]
async fn sends_the_headers_and_the_exact_body_and_parses_the_answer() {
    let server = FakeServer::start(vec![Reply::streamed(&api_response())]).await;
    let client = client_with(&server, |config| {
        config.with_betas(vec![
            "context-1m-2025-08-07".to_owned(),
            "effort-2025-11-24".to_owned(),
        ])
    });

    let response = client.create(&request()).await.expect("response");

    assert_eq!(text_of(&response.content), "Your event is set up.");
    assert_eq!(response.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(response.usage.cache_read_input_tokens, 40);
    let received = server.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.headers["x-api-key"], KEY);
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert_eq!(
        sent.headers["anthropic-beta"],
        "context-1m-2025-08-07,effort-2025-11-24"
    );
    assert_eq!(sent.headers["content-type"], "application/json");
    // The request's own bytes, unchanged (the prompt-cache prefix stays byte-stable), then
    // the streaming switch.
    let mut expected = serde_json::to_vec(&request()).expect("json");
    expected.pop();
    expected.extend_from_slice(br#","stream":true}"#);
    assert_eq!(
        String::from_utf8_lossy(&sent.body),
        String::from_utf8_lossy(&expected)
    );
    let body: serde_json::Value = serde_json::from_slice(&sent.body).expect("json body");
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "claude-sonnet-5-5");
    assert_eq!(body["max_tokens"], 16_000);
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "medium"}));
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn sends_no_beta_header_without_betas_and_accepts_a_trailing_slash() {
    let server = FakeServer::start(vec![Reply::streamed(&api_response())]).await;
    let client = client_with(&server, |config| {
        config.with_base_url(format!("{}/", server.base_url()))
    });
    client.create(&request()).await.expect("response");
    let sent = &server.received()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert!(sent.headers.get("anthropic-beta").is_none());
}

#[tokio::test]
async fn retries_once_after_an_overload_then_succeeds() {
    let server = FakeServer::start(vec![
        Reply::json(529, api_error("overloaded_error", "Overloaded")),
        Reply::streamed(&api_response()),
    ])
    .await;
    let response = client(&server)
        .create(&request())
        .await
        .expect("second attempt succeeds");
    assert_eq!(response.id, "msg_fake");
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[0].body, received[1].body,
        "the retry sends the same bytes"
    );
}

#[tokio::test]
async fn a_timeout_is_not_retried_so_the_answer_is_never_paid_twice() {
    let server = FakeServer::start(vec![
        Reply::streamed(&api_response()).delayed(Duration::from_secs(3)),
        Reply::streamed(&api_response()),
    ])
    .await;
    let client = client_with(&server, |config| {
        config.with_timeout(Duration::from_millis(200))
    });
    assert_eq!(client.create(&request()).await, Err(LlmError::Timeout));
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_slow_but_steady_answer_within_its_budget_is_not_cut_off() {
    // Without a fixed timeout the call's timeout is sized to its max_tokens (minutes), so an
    // answer that takes seconds arrives; the old fixed 60 s would have been the only bound.
    let server = FakeServer::start(vec![
        Reply::streamed(&api_response()).delayed(Duration::from_millis(1_500)),
    ])
    .await;
    let client = AnthropicClient::new(
        AnthropicConfig::new(KEY)
            .with_base_url(server.base_url())
            .with_retry_backoff(Duration::ZERO),
    )
    .expect("client");
    let response = client.create(&request()).await.expect("answered");
    assert_eq!(response.id, "msg_fake");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn never_retries_twice() {
    let server = FakeServer::start(vec![
        Reply::json(529, api_error("overloaded_error", "Overloaded")),
        Reply::json(529, api_error("overloaded_error", "Overloaded")),
        Reply::streamed(&api_response()),
    ])
    .await;
    assert_eq!(
        client(&server).create(&request()).await,
        Err(LlmError::Overloaded)
    );
    assert_eq!(server.received().len(), 2);

    let server = FakeServer::start(vec![
        Reply::json(500, api_error("api_error", "Internal server error")),
        Reply::raw(503, "upstream unavailable"),
        Reply::streamed(&api_response()),
    ])
    .await;
    assert_eq!(
        client(&server).create(&request()).await,
        Err(LlmError::Api {
            status: 503,
            message: "upstream unavailable".to_owned()
        })
    );
    assert_eq!(server.received().len(), 2);

    let server = FakeServer::start(vec![
        Reply::streamed(&api_response()).delayed(Duration::from_secs(3)),
        Reply::streamed(&api_response()).delayed(Duration::from_secs(3)),
        Reply::streamed(&api_response()),
    ])
    .await;
    let client = client_with(&server, |config| {
        config.with_timeout(Duration::from_millis(200))
    });
    assert_eq!(client.create(&request()).await, Err(LlmError::Timeout));
    assert_eq!(server.received().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn a_rate_limit_carries_retry_after_and_is_not_retried() {
    let server = FakeServer::start(vec![
        Reply::json(
            429,
            api_error(
                "rate_limit_error",
                "Number of request tokens has exceeded your rate limit",
            ),
        )
        .header("retry-after", "7"),
        Reply::streamed(&api_response()),
    ])
    .await;
    assert_eq!(
        client(&server).create(&request()).await,
        Err(LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(7))
        })
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_bad_key_is_an_authentication_error() {
    let server = FakeServer::start(vec![Reply::json(
        401,
        api_error("authentication_error", "invalid x-api-key"),
    )])
    .await;
    let error = client(&server).create(&request()).await.expect_err("401");
    assert_eq!(
        error,
        LlmError::Authentication {
            message: "invalid x-api-key".to_owned()
        }
    );
    assert!(!error.to_string().contains(KEY));
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_rejected_thinking_signature_is_classified() {
    let message = "messages.1.content.0: Invalid `signature` in `thinking` block";
    let server = FakeServer::start(vec![Reply::json(
        400,
        api_error("invalid_request_error", message),
    )])
    .await;
    assert_eq!(
        client(&server).create(&request()).await,
        Err(LlmError::InvalidRequest {
            message: message.to_owned(),
            kind: InvalidKind::ThinkingSignatureRejected
        })
    );
    assert_eq!(
        server.received().len(),
        1,
        "an invalid request is never retried"
    );
}

#[tokio::test]
async fn a_rejected_optional_feature_is_classified() {
    for message in [
        "Unexpected value(s) `effort-2025-11-24` for the `anthropic-beta` header. Please consult our documentation at docs.claude.com or try again without the header.",
        "output_config: Extra inputs are not permitted",
        "thinking.type: Input tag 'adaptive' found using 'type' does not match any of the expected tags: 'disabled', 'enabled'",
    ] {
        let server = FakeServer::start(vec![Reply::json(
            400,
            api_error("invalid_request_error", message),
        )])
        .await;
        assert_eq!(
            client(&server).create(&request()).await,
            Err(LlmError::InvalidRequest {
                message: message.to_owned(),
                kind: InvalidKind::OptionalFeatureRejected
            }),
            "{message}"
        );
    }
}

#[tokio::test]
async fn a_full_context_window_is_recognised() {
    let server = FakeServer::start(vec![Reply::json(
        400,
        api_error(
            "invalid_request_error",
            "prompt is too long: 1000123 tokens > 1000000 maximum",
        ),
    )])
    .await;
    assert!(matches!(
        client(&server).create(&request()).await,
        Err(LlmError::ContextWindowExceeded { .. })
    ));
}

#[tokio::test]
async fn an_unstreamed_json_answer_is_read_whole() {
    // A proxy that ignores `stream` and answers with the whole message as JSON.
    let server = FakeServer::start(vec![Reply::json(200, api_response())]).await;
    let response = client(&server).create(&request()).await.expect("answer");
    let whole: CreateResponse = serde_json::from_value(api_response()).expect("answer");
    assert_eq!(response, whole);
}

#[tokio::test]
async fn a_malformed_success_body_is_a_clear_error() {
    for body in ["this is not json", r#"{"unexpected": "shape"}"#, ""] {
        let server = FakeServer::start(vec![
            Reply::raw(200, body).header("content-type", "application/json"),
        ])
        .await;
        match client(&server).create(&request()).await {
            Err(LlmError::MalformedResponse { message }) => {
                assert!(message.contains("the body starts"), "{message}");
            }
            other => panic!("expected a malformed-response error for {body:?}, got {other:?}"),
        }
        assert_eq!(server.received().len(), 1);
    }
}

/// Each event of `events` as its own chunk, `pause` before each.
fn paced(events: &[Value], pause: Duration) -> Vec<(Duration, String)> {
    events
        .iter()
        .map(|event| (pause, sse(std::slice::from_ref(event))))
        .collect()
}

#[tokio::test]
async fn a_slow_but_steady_stream_outlasts_the_idle_timeout() {
    // 15 events 120 ms apart: every gap is well inside the 400 ms idle timeout, the whole
    // answer takes several times longer than it.
    let events = stream_events(&tool_use_response());
    assert!(events.len() >= 12, "{} events", events.len());
    let server = FakeServer::start(vec![Reply::stream(paced(
        &events,
        Duration::from_millis(120),
    ))])
    .await;
    let client = client_with(&server, |config| {
        config
            .with_timeout(Duration::from_secs(60))
            .with_idle_timeout(Duration::from_millis(400))
    });

    let streamed = client.create(&request()).await.expect("answered");

    let whole: CreateResponse = serde_json::from_value(tool_use_response()).expect("answer");
    assert_eq!(streamed, whole, "the same answer as the non-streaming call");
    assert_eq!(streamed.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(streamed.usage.cache_read_input_tokens, 4000);
    assert_eq!(streamed.usage.cache_creation_input_tokens, 300);
    assert_eq!(streamed.usage.output_tokens, 96);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_stream_that_stalls_mid_answer_is_an_idle_timeout_and_not_retried() {
    let events = stream_events(&tool_use_response());
    let (first, rest) = events.split_at(events.len() / 2);
    // Half the answer, then 20 s of silence before the rest: far beyond the 300 ms idle
    // timeout, far inside the 60 s ceiling (if only the ceiling applied, the answer would
    // arrive complete and this test would fail).
    let mut chunks = paced(first, Duration::from_millis(20));
    chunks.push((Duration::from_secs(20), sse(rest)));
    let server = FakeServer::start(vec![
        Reply::stream(chunks),
        Reply::streamed(&tool_use_response()),
    ])
    .await;
    let client = client_with(&server, |config| {
        config
            .with_timeout(Duration::from_secs(60))
            .with_idle_timeout(Duration::from_millis(300))
    });
    assert_eq!(client.create(&request()).await, Err(LlmError::Timeout));
    assert_eq!(
        server.received().len(),
        1,
        "a stalled answer is never paid twice"
    );
}

/// A streamed answer cut by an `error` event after the first `cut` events.
fn erroring(cut: usize, kind: &str, message: &str) -> Reply {
    let mut events = stream_events(&tool_use_response());
    events.truncate(cut);
    events.push(json!({"type": "error", "error": {"type": kind, "message": message}}));
    Reply::stream(vec![(Duration::ZERO, sse(&events))])
}

#[tokio::test]
async fn an_error_event_maps_like_its_status_and_is_retried_only_before_output() {
    // Overloaded right after message_start (and a ping): nothing generated yet, retried once.
    let server = FakeServer::start(vec![
        erroring(2, "overloaded_error", "Overloaded"),
        Reply::streamed(&tool_use_response()),
    ])
    .await;
    let response = client(&server).create(&request()).await.expect("retried");
    assert_eq!(response.id, "msg_tool");
    assert_eq!(server.received().len(), 2);

    // Overloaded after the first block started: output is being billed, so no retry.
    let server = FakeServer::start(vec![
        erroring(4, "overloaded_error", "Overloaded"),
        Reply::streamed(&tool_use_response()),
    ])
    .await;
    assert_eq!(
        client(&server).create(&request()).await,
        Err(LlmError::Overloaded)
    );
    assert_eq!(server.received().len(), 1);

    for (kind, expected) in [
        (
            "rate_limit_error",
            LlmError::RateLimited { retry_after: None },
        ),
        (
            "authentication_error",
            LlmError::Authentication {
                message: "stream says no".to_owned(),
            },
        ),
        ("timeout_error", LlmError::Timeout),
    ] {
        let server = FakeServer::start(vec![erroring(5, kind, "stream says no")]).await;
        assert_eq!(
            client(&server).create(&request()).await,
            Err(expected),
            "{kind}"
        );
        assert_eq!(server.received().len(), 1, "{kind}");
    }
    // An internal error mid-answer is a 5xx kind, but output had begun: not retried.
    let server = FakeServer::start(vec![
        erroring(5, "api_error", "Internal server error"),
        Reply::streamed(&tool_use_response()),
    ])
    .await;
    assert_eq!(
        client(&server).create(&request()).await,
        Err(LlmError::Api {
            status: 500,
            message: "Internal server error".to_owned()
        })
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_malformed_or_cut_stream_is_a_clear_error() {
    let events = stream_events(&tool_use_response());
    let cut_short = sse(&events[..events.len() - 2]);
    let mut bad_data = sse(&events[..3]);
    bad_data.push_str("event: content_block_delta\ndata: {not json\n\n");
    let cases = [
        (cut_short, "without message_stop"),
        (bad_data, "not JSON"),
        (
            "this line has no colon\n\n".to_owned(),
            "not a valid event stream",
        ),
        (String::new(), "without message_start"),
    ];
    for (body, expected) in cases {
        let server = FakeServer::start(vec![Reply::stream(vec![(Duration::ZERO, body)])]).await;
        match client(&server).create(&request()).await {
            Err(LlmError::MalformedResponse { message }) => {
                assert!(
                    message.contains(expected),
                    "{expected:?} not in {message:?}"
                )
            }
            other => panic!("expected a malformed response ({expected}), got {other:?}"),
        }
        assert_eq!(server.received().len(), 1, "never retried: {expected}");
    }
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    // Bind then drop a loopback listener: its port is (almost certainly) closed now.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let client = AnthropicClient::new(
        AnthropicConfig::new(KEY)
            .with_base_url(format!("http://{addr}"))
            .with_retry_backoff(Duration::ZERO),
    )
    .expect("client");
    match client.create(&request()).await {
        Err(LlmError::Transport(message)) => assert!(!message.contains(KEY)),
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[tokio::test]
async fn media_goes_out_as_image_and_document_blocks_the_same_bytes_on_every_resolution() {
    let server = FakeServer::start(vec![
        Reply::streamed(&api_response()),
        Reply::streamed(&api_response()),
    ])
    .await;
    let client = client(&server);
    let stored = CreateRequest::new("claude-sonnet-5-5", 1024, vec![stored_media_message()]);
    for _ in 0..2 {
        let resolved = stored
            .with_stored_media_resolved(&media_blobs())
            .expect("resolved");
        client.create(&resolved).await.expect("response");
    }
    let received = server.received();
    assert_eq!(received.len(), 2);
    let expected = concat!(
        r#"{"model":"claude-sonnet-5-5","max_tokens":1024,"messages":[{"role":"user","content":["#,
        r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},"#,
        r#"{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjc="},"#,
        r#""title":"Spring Open: programme.pdf","cache_control":{"type":"ephemeral"}},"#,
        r#"{"type":"text","text":"Set this up"}]}],"stream":true}"#
    );
    assert_eq!(String::from_utf8_lossy(&received[0].body), expected);
    assert_eq!(
        received[0].body, received[1].body,
        "two resolutions of the same stored row send the same bytes"
    );
}

#[tokio::test]
async fn an_unresolved_media_reference_never_reaches_the_api() {
    let server = FakeServer::start(vec![Reply::streamed(&api_response())]).await;
    let stored = CreateRequest::new("claude-sonnet-5-5", 1024, vec![stored_media_message()]);
    assert_eq!(
        client(&server).create(&stored).await,
        Err(LlmError::UnresolvedMedia {
            key: "media/photo-1".to_owned()
        })
    );
    assert_eq!(server.received().len(), 0);
}
