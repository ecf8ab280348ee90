//! The Claude API client against a fake server on 127.0.0.1.

mod support;

use std::time::Duration;

use serde_json::json;
use steward_llm::{
    AnthropicClient, AnthropicConfig, CreateRequest, Effort, InvalidKind, LlmClient, LlmError,
    Message, OutputConfig, StopReason, SystemBlock, ThinkingConfig, text_of,
};
use support::{FakeServer, Reply, api_error, api_response};

const KEY: &str = "sk-ant-test-key";

fn request() -> CreateRequest {
    let mut request = CreateRequest::new(
        "claude-sonnet-5-5",
        16_000,
        vec![Message::user_text("Set up Saturday")],
    );
    request.system = vec![SystemBlock::new("You are Steward.").cached()];
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
    let server = FakeServer::start(vec![Reply::json(200, api_response())]).await;
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
    assert_eq!(
        sent.body.as_ref(),
        serde_json::to_vec(&request()).expect("json").as_slice()
    );
    let body: serde_json::Value = serde_json::from_slice(&sent.body).expect("json body");
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
    let server = FakeServer::start(vec![Reply::json(200, api_response())]).await;
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
        Reply::json(200, api_response()),
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
        Reply::json(200, api_response()).delayed(Duration::from_secs(3)),
        Reply::json(200, api_response()),
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
        Reply::json(200, api_response()).delayed(Duration::from_millis(1_500)),
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
        Reply::json(200, api_response()),
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
        Reply::json(200, api_response()),
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
        Reply::json(200, api_response()).delayed(Duration::from_secs(3)),
        Reply::json(200, api_response()).delayed(Duration::from_secs(3)),
        Reply::json(200, api_response()),
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
        Reply::json(200, api_response()),
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
async fn a_malformed_success_body_is_a_clear_error() {
    for body in ["this is not json", r#"{"unexpected": "shape"}"#, ""] {
        let server = FakeServer::start(vec![Reply::raw(200, body)]).await;
        match client(&server).create(&request()).await {
            Err(LlmError::MalformedResponse { message }) => {
                assert!(message.contains("the body starts"), "{message}");
            }
            other => panic!("expected a malformed-response error for {body:?}, got {other:?}"),
        }
        assert_eq!(server.received().len(), 1);
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
