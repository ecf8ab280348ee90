use super::*;
use crate::wire::{Message, SystemBlock};

#[test]
fn features_follow_the_model_family() {
    let claude = ConverseFeatures {
        cache_points: true,
        anthropic_fields: true,
    };
    for id in [
        "global.anthropic.claude-sonnet-5-5",
        "eu.anthropic.claude-sonnet-4-6",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-6",
    ] {
        assert_eq!(ConverseFeatures::for_model(id), claude, "{id}");
        assert!(ConverseFeatures::for_model(id).dropped().is_empty());
    }
    let nova = ConverseFeatures::for_model("us.amazon.nova-pro-v1:0");
    assert!(nova.cache_points && !nova.anthropic_fields);
    assert_eq!(nova.dropped().len(), 1);
    for id in [
        "meta.llama3-3-70b-instruct-v1:0",
        "mistral.mistral-large-2407-v1:0",
        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
    ] {
        let features = ConverseFeatures::for_model(id);
        assert!(!features.cache_points && !features.anthropic_fields, "{id}");
        assert_eq!(features.dropped().len(), 2);
    }
}

#[test]
fn documents_round_trip_every_json_value() {
    let value = json!({
        "b": [1, -2, 2.5, true, null, "x"],
        "a": {"nested": {"z": 0, "y": u64::MAX}}
    });
    assert_eq!(from_document(&to_document(&value)), value);
}

#[test]
fn canonical_json_sorts_keys_at_every_depth_and_keeps_arrays_in_order() {
    let body = br#"{"z":1,"a":{"y":[{"d":1,"c":2}],"b":"\u00e9"}}"#;
    let canonical = canonical_json(body).expect("json");
    assert_eq!(
        String::from_utf8(canonical).expect("utf8"),
        r#"{"a":{"b":"é","y":[{"c":2,"d":1}]},"z":1}"#
    );
    assert_eq!(canonical_json(b"not json"), None);
}

#[test]
fn messages_left_empty_are_dropped_and_neighbours_merged() {
    // On a model without reasoning, an assistant message holding only reasoning disappears;
    // the user messages around it become one.
    let mut request = CreateRequest::new(
        "mistral.mistral-large-2407-v1:0",
        100,
        vec![
            Message::user_text("one"),
            Message::assistant(vec![ContentBlock::thinking("hm", "sig")]),
            Message::user_text("two"),
        ],
    );
    request.system = vec![SystemBlock::new("sys").cached()];
    let input = to_converse(&request, &[]).expect("input");
    assert_eq!(input.messages.len(), 1);
    assert_eq!(
        input.messages[0].content,
        vec![
            bt::ContentBlock::Text("one".to_owned()),
            bt::ContentBlock::Text("two".to_owned())
        ]
    );
    assert_eq!(
        input.system,
        vec![bt::SystemContentBlock::Text("sys".to_owned())]
    );
    assert!(input.additional_fields.is_none());
    assert!(input.tool_config.is_none());
}

#[test]
fn a_cache_ttl_and_redacted_reasoning_are_carried_to_claude() {
    let mut text = ContentBlock::text("hello");
    text.set_cache_control(Some(CacheControl::Ephemeral {
        ttl: Some("1h".to_owned()),
    }));
    let redacted = ContentBlock::RedactedThinking(RedactedThinkingBlock {
        data: aws_smithy_types::base64::encode(b"secret"),
        extra: Extra::new(),
    });
    let request = CreateRequest::new(
        "us.anthropic.claude-sonnet-4-6",
        100,
        vec![
            Message::user(vec![text]),
            Message::assistant(vec![redacted, ContentBlock::text("hi")]),
        ],
    );
    let input = to_converse(&request, &[]).expect("input");
    let point = bt::CachePointBlock::builder()
        .r#type(bt::CachePointType::Default)
        .ttl(bt::CacheTtl::OneHour)
        .build()
        .expect("point");
    assert_eq!(
        input.messages[0].content[1],
        bt::ContentBlock::CachePoint(point)
    );
    assert_eq!(
        input.messages[1].content[0],
        bt::ContentBlock::ReasoningContent(bt::ReasoningContentBlock::RedactedContent(Blob::new(
            b"secret".to_vec()
        )))
    );
}

#[test]
fn a_failed_tool_result_has_a_status_on_claude_and_a_prefix_elsewhere() {
    let messages = || {
        vec![
            Message::user_text("add a room"),
            Message::assistant(vec![ContentBlock::tool_use("t1", "add_room", json!({}))]),
            Message::user(vec![ContentBlock::tool_result(
                "t1",
                "No such event.",
                true,
            )]),
        ]
    };
    let result = |model: &str| {
        let input = to_converse(&CreateRequest::new(model, 10, messages()), &[]).expect("input");
        match &input.messages[2].content[0] {
            bt::ContentBlock::ToolResult(result) => result.clone(),
            other => panic!("not a tool result: {other:?}"),
        }
    };
    let claude = result("global.anthropic.claude-sonnet-5-5");
    assert_eq!(claude.status, Some(bt::ToolResultStatus::Error));
    assert_eq!(
        claude.content,
        vec![bt::ToolResultContentBlock::Text(
            "No such event.".to_owned()
        )]
    );
    let llama = result("meta.llama3-3-70b-instruct-v1:0");
    assert_eq!(llama.status, None);
    assert_eq!(
        llama.content,
        vec![bt::ToolResultContentBlock::Text(
            "Error: No such event.".to_owned()
        )]
    );
}
