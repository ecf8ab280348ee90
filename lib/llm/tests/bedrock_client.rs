//! The Bedrock client against a fake `InvokeModel` endpoint on 127.0.0.1.

mod support;

use std::time::Duration;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
use serde_json::json;
use steward_llm::{
    BedrockClient, BedrockConfig, CreateRequest, InvalidKind, LlmClient, LlmError, Message,
    StopReason, ThinkingConfig, text_of,
};
use support::{FakeServer, Reply, api_response};

const MODEL_ID: &str = "us.anthropic.claude-sonnet-5-5-v1:0";

fn sdk_config(server: &FakeServer) -> SdkConfig {
    SdkConfig::builder()
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

fn request() -> CreateRequest {
    let mut request = CreateRequest::new(
        MODEL_ID,
        16_000,
        vec![Message::user_text("Set up Saturday")],
    );
    request.thinking = Some(ThinkingConfig::adaptive());
    request
}

/// A Bedrock service error: the type in `x-amzn-errortype`, the message in the body.
fn aws_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(status, json!({"message": message})).header("x-amzn-errortype", kind)
}

#[tokio::test]
async fn invokes_the_model_with_the_bedrock_body_and_parses_the_answer() {
    let server = FakeServer::start(vec![Reply::json(200, api_response())]).await;
    let client = client(&server, vec!["context-1m-2025-08-07".to_owned()]);

    let response = client.create(&request()).await.expect("response");

    assert_eq!(text_of(&response.content), "Your event is set up.");
    assert_eq!(response.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(response.usage.output_tokens, 20);
    let received = server.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(
        sent.path,
        "/model/us.anthropic.claude-sonnet-5-5-v1%3A0/invoke"
    );
    let authorization = sent.headers["authorization"].to_str().expect("ascii");
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTESTONLY/"),
        "{authorization}"
    );
    assert!(
        authorization.contains("/us-east-1/bedrock/aws4_request"),
        "{authorization}"
    );
    let body: serde_json::Value = serde_json::from_slice(&sent.body).expect("json body");
    assert_eq!(
        body,
        json!({
            "anthropic_version": "bedrock-2023-05-31",
            "anthropic_beta": ["context-1m-2025-08-07"],
            "max_tokens": 16000,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Set up Saturday"}]}],
            "thinking": {"type": "adaptive"}
        })
    );
}

#[tokio::test]
async fn service_errors_map_to_the_shared_error_type() {
    let signature = "messages.1.content.0: Invalid `signature` in `thinking` block";
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
            aws_error(
                429,
                "ThrottlingException",
                "Too many tokens, please wait before trying again.",
            ),
            LlmError::RateLimited { retry_after: None },
        ),
        (
            aws_error(
                403,
                "AccessDeniedException",
                "You don't have access to the model with the specified model ID.",
            ),
            LlmError::Authentication {
                message: "You don't have access to the model with the specified model ID."
                    .to_owned(),
            },
        ),
        (
            aws_error(404, "ResourceNotFoundException", "Model not found"),
            LlmError::Api {
                status: 404,
                message: "Model not found".to_owned(),
            },
        ),
    ];
    for (reply, expected) in cases {
        let server = FakeServer::start(vec![reply, Reply::json(200, api_response())]).await;
        assert_eq!(
            client(&server, Vec::new()).create(&request()).await,
            Err(expected.clone())
        );
        assert_eq!(server.received().len(), 1, "not retried: {expected:?}");
    }
}

#[tokio::test]
async fn an_overload_is_retried_once() {
    let server = FakeServer::start(vec![
        aws_error(503, "ServiceUnavailableException", "Service unavailable"),
        Reply::json(200, api_response()),
    ])
    .await;
    let response = client(&server, Vec::new())
        .create(&request())
        .await
        .expect("second attempt succeeds");
    assert_eq!(response.id, "msg_fake");
    assert_eq!(server.received().len(), 2);

    let server = FakeServer::start(vec![
        aws_error(424, "ModelNotReadyException", "Model is not ready"),
        aws_error(408, "ModelTimeoutException", "Model timed out"),
        Reply::json(200, api_response()),
    ])
    .await;
    assert_eq!(
        client(&server, Vec::new()).create(&request()).await,
        Err(LlmError::Timeout)
    );
    assert_eq!(server.received().len(), 2, "never a second retry");
}

#[tokio::test]
async fn a_slow_answer_times_out() {
    let server = FakeServer::start(vec![
        Reply::json(200, api_response()).delayed(Duration::from_secs(3)),
        Reply::json(200, api_response()).delayed(Duration::from_secs(3)),
    ])
    .await;
    let client = BedrockClient::with_config(
        &sdk_config(&server),
        BedrockConfig {
            timeout: Duration::from_millis(200),
            retry_backoff: Duration::ZERO,
            ..BedrockConfig::default()
        },
    );
    assert_eq!(client.create(&request()).await, Err(LlmError::Timeout));
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_malformed_answer_is_a_clear_error() {
    let server = FakeServer::start(vec![Reply::raw(200, "not json at all")]).await;
    match client(&server, Vec::new()).create(&request()).await {
        Err(LlmError::MalformedResponse { message }) => {
            assert!(message.contains("not json at all"), "{message}")
        }
        other => panic!("expected a malformed-response error, got {other:?}"),
    }
}
