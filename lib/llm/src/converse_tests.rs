use super::*;
use crate::wire::{DocumentBlock, DocumentSource, ImageBlock, Message, SystemBlock};

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
    request.system = vec![SystemBlock::new("sys").cached()].into();
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

fn pdf(title: Option<&str>, data: &str, cached: bool) -> ContentBlock {
    ContentBlock::Document(DocumentBlock {
        source: DocumentSource::Base64 {
            media_type: "application/pdf".to_owned(),
            data: data.to_owned(),
        },
        title: title.map(str::to_owned),
        cache_control: cached.then(CacheControl::ephemeral),
        extra: Extra::new(),
    })
}

fn converse_document(block: &bt::ContentBlock) -> &bt::DocumentBlock {
    match block {
        bt::ContentBlock::Document(document) => document,
        other => panic!("not a document: {other:?}"),
    }
}

#[test]
fn documents_become_named_pdf_blocks_with_their_cache_point() {
    let request = CreateRequest::new(
        "global.anthropic.claude-sonnet-5-5",
        100,
        vec![
            Message::user(vec![
                ContentBlock::text("set this up"),
                pdf(Some("Spring Open: programme.pdf"), "JVBERi0xLjc=", true),
            ]),
            Message::assistant(vec![ContentBlock::text("Which one?")]),
            // No title twice, then a title already given: names stay unique across messages.
            Message::user(vec![
                pdf(None, "JVBERi0x", false),
                pdf(None, "JVBERi0y", false),
                pdf(Some("Spring Open  programme pdf"), "JVBERi0z", false),
            ]),
        ],
    );
    let input = to_converse(&request, &[]).expect("input");
    let first = converse_document(&input.messages[0].content[1]);
    assert_eq!(first.format, bt::DocumentFormat::Pdf);
    assert_eq!(first.name, "Spring Open programme pdf");
    assert_eq!(
        first.source,
        Some(bt::DocumentSource::Bytes(Blob::new(b"%PDF-1.7".to_vec())))
    );
    assert!(matches!(
        input.messages[0].content[2],
        bt::ContentBlock::CachePoint(_)
    ));
    assert_eq!(input.messages[0].content.len(), 3);
    // A message of documents only gets a text block first, which Converse requires.
    let third = &input.messages[2].content;
    assert_eq!(
        third[0],
        bt::ContentBlock::Text(DOCUMENT_ONLY_TEXT.to_owned())
    );
    let names: Vec<&str> = third[1..]
        .iter()
        .map(|block| converse_document(block).name.as_str())
        .collect();
    assert_eq!(
        names,
        vec!["document-2", "document-3", "Spring Open programme pdf (4)"]
    );
    // The same request maps to the same input every time.
    assert_eq!(
        to_converse(&request, &[]).expect("again").messages,
        input.messages
    );
}

#[test]
fn documents_converse_cannot_take_are_left_out_and_stored_ones_refused() {
    let url = ContentBlock::Document(DocumentBlock {
        source: DocumentSource::Url {
            url: "https://example.com/a.pdf".to_owned(),
        },
        title: None,
        cache_control: None,
        extra: Extra::new(),
    });
    let odd_type = ContentBlock::Document(DocumentBlock {
        source: DocumentSource::Base64 {
            media_type: "application/zip".to_owned(),
            data: "UEsDBA==".to_owned(),
        },
        title: None,
        cache_control: None,
        extra: Extra::new(),
    });
    let request = CreateRequest::new(
        "global.anthropic.claude-sonnet-5-5",
        100,
        vec![Message::user(vec![
            ContentBlock::text("look"),
            url,
            odd_type,
            pdf(None, "not base64!", false),
        ])],
    );
    let input = to_converse(&request, &[]).expect("input");
    assert_eq!(
        input.messages[0].content,
        vec![bt::ContentBlock::Text("look".to_owned())]
    );

    for stored in [
        ContentBlock::Document(DocumentBlock {
            source: DocumentSource::Stored {
                key: "blob-1".to_owned(),
                media_type: "application/pdf".to_owned(),
            },
            title: None,
            cache_control: None,
            extra: Extra::new(),
        }),
        ContentBlock::Image(ImageBlock {
            source: ImageSource::Stored {
                key: "blob-1".to_owned(),
                media_type: "image/png".to_owned(),
            },
            cache_control: None,
            extra: Extra::new(),
        }),
    ] {
        let request = CreateRequest::new(
            "global.anthropic.claude-sonnet-5-5",
            100,
            vec![Message::user(vec![stored])],
        );
        assert_eq!(
            to_converse(&request, &[]).err(),
            Some(LlmError::UnresolvedMedia {
                key: "blob-1".to_owned()
            })
        );
    }
}

#[test]
fn a_document_in_a_tool_result_is_carried() {
    let result = ContentBlock::ToolResult(crate::wire::ToolResultBlock {
        tool_use_id: "t1".to_owned(),
        content: Some(ToolResultContent::Blocks(vec![pdf(
            Some("Invoice"),
            "JVBERi0xLjc=",
            false,
        )])),
        is_error: None,
        cache_control: None,
        extra: Extra::new(),
    });
    let request = CreateRequest::new(
        "global.anthropic.claude-sonnet-5-5",
        100,
        vec![
            Message::user_text("fetch it"),
            Message::assistant(vec![ContentBlock::tool_use("t1", "fetch", json!({}))]),
            Message::user(vec![result]),
        ],
    );
    let input = to_converse(&request, &[]).expect("input");
    let bt::ContentBlock::ToolResult(result) = &input.messages[2].content[0] else {
        panic!("not a tool result");
    };
    let [bt::ToolResultContentBlock::Document(document)] = result.content.as_slice() else {
        panic!("not one document: {:?}", result.content);
    };
    assert_eq!(document.name, "Invoice");
    assert_eq!(document.format, bt::DocumentFormat::Pdf);
}
