use super::*;
use crate::wire::{DocumentBlock, ImageBlock, ToolResultBlock};

#[test]
fn arguments_must_be_one_json_object() {
    assert_eq!(parse_arguments(r#"{"a": 1}"#), Ok(json!({"a": 1})));
    assert_eq!(parse_arguments("  "), Ok(json!({})), "no arguments at all");
    assert!(
        parse_arguments(r#"{"a": 1"#)
            .expect_err("must fail")
            .contains("not valid JSON")
    );
    assert!(
        parse_arguments("[1]")
            .expect_err("must fail")
            .contains("an array")
    );
    assert!(
        parse_arguments(r#""{}""#)
            .expect_err("must fail")
            .contains("a string")
    );
}

#[test]
fn reasoning_only_messages_disappear_and_images_become_parts() {
    let image = ContentBlock::Image(ImageBlock {
        source: ImageSource::Base64 {
            media_type: "image/png".to_owned(),
            data: "iVBORw0KGgo=".to_owned(),
        },
        cache_control: None,
        extra: Extra::new(),
    });
    let request = CreateRequest::new(
        "m",
        10,
        vec![
            Message::user(vec![ContentBlock::text("What is this?"), image]),
            Message::assistant(vec![ContentBlock::thinking("hm", "sig")]),
            Message::user(vec![ContentBlock::Unknown(json!({"type": "document"}))]),
        ],
    );
    let chat = to_chat(&request).expect("chat");
    assert_eq!(chat.tool_choice, None, "no tools, no tool_choice");
    assert_eq!(chat.parallel_tool_calls, None);
    assert_eq!(
        serde_json::to_value(&chat.messages).expect("json"),
        json!([{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        ]}])
    );
}

#[test]
fn block_tool_results_become_text() {
    let result = ContentBlock::ToolResult(ToolResultBlock {
        tool_use_id: "call_1".to_owned(),
        content: Some(ToolResultContent::Blocks(vec![
            ContentBlock::text("line one"),
            ContentBlock::text("line two"),
        ])),
        is_error: None,
        cache_control: None,
        extra: Extra::new(),
    });
    let chat = to_chat(&CreateRequest::new(
        "m",
        10,
        vec![Message::user(vec![result])],
    ))
    .expect("chat");
    assert_eq!(
        chat.messages,
        vec![ChatMessage::Tool {
            tool_call_id: "call_1".to_owned(),
            content: "line one\nline two".to_owned()
        }]
    );
}

#[test]
fn a_missing_call_id_gets_a_stable_one() {
    let body = json!({
        "id": "chatcmpl-1",
        "choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"function": {"name": "list_events", "arguments": {}}}]},
            "finish_reason": "tool_calls"}]
    });
    let read = read_response(body.to_string().as_bytes(), "m").expect("read");
    let calls = crate::wire::tool_uses(&read.response.content);
    assert_eq!(calls[0].id, "chatcmpl-1_call_0");
    assert_eq!(calls[0].input, json!({}));
    assert_eq!(read.response.usage, Usage::default());
}

#[test]
fn pdfs_become_file_parts_and_other_documents_are_left_out() {
    let document = |media_type: &str, title: Option<&str>| {
        ContentBlock::Document(DocumentBlock {
            source: DocumentSource::Base64 {
                media_type: media_type.to_owned(),
                data: "JVBERi0xLjc=".to_owned(),
            },
            title: title.map(str::to_owned),
            cache_control: None,
            extra: Extra::new(),
        })
    };
    let request = CreateRequest::new(
        "m",
        10,
        vec![Message::user(vec![
            ContentBlock::text("set this up"),
            document("application/pdf", Some("Spring programme.pdf")),
            document("application/zip", None),
            document("application/PDF", None),
        ])],
    );
    let chat = to_chat(&request).expect("chat");
    assert_eq!(
        serde_json::to_value(&chat.messages).expect("json"),
        json!([{"role": "user", "content": [
            {"type": "text", "text": "set this up"},
            {"type": "file", "file": {
                "filename": "Spring programme pdf.pdf",
                "file_data": "data:application/pdf;base64,JVBERi0xLjc="
            }},
            {"type": "file", "file": {
                "filename": "document-2.pdf",
                "file_data": "data:application/pdf;base64,JVBERi0xLjc="
            }}
        ]}])
    );
}

#[test]
fn a_stored_reference_is_refused_before_mapping() {
    let stored = ContentBlock::Image(ImageBlock {
        source: ImageSource::Stored {
            key: "photo-1".to_owned(),
            media_type: "image/jpeg".to_owned(),
        },
        cache_control: None,
        extra: Extra::new(),
    });
    let request = CreateRequest::new("m", 10, vec![Message::user(vec![stored])]);
    assert_eq!(
        to_chat(&request).err(),
        Some(LlmError::UnresolvedMedia {
            key: "photo-1".to_owned()
        })
    );
}
