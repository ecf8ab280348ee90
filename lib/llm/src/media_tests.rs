use super::*;
use crate::LlmClient;
use crate::scripted::ScriptedClient;
use crate::wire::{DocumentBlock, Extra, ImageBlock, ToolResultBlock};
use proptest::prelude::*;
use serde_json::json;

fn stored_image(key: &str) -> ContentBlock {
    ContentBlock::Image(ImageBlock {
        source: ImageSource::Stored {
            key: key.to_owned(),
            media_type: "image/jpeg".to_owned(),
        },
        cache_control: None,
        extra: Extra::new(),
    })
}

fn stored_document(key: &str, title: Option<&str>) -> ContentBlock {
    ContentBlock::Document(DocumentBlock {
        source: DocumentSource::Stored {
            key: key.to_owned(),
            media_type: "application/pdf".to_owned(),
        },
        title: title.map(str::to_owned),
        cache_control: None,
        extra: Extra::new(),
    })
}

/// A conversation with stored media in a message and inside a tool result.
fn stored_request() -> CreateRequest {
    let result = ContentBlock::ToolResult(ToolResultBlock {
        tool_use_id: "toolu_1".to_owned(),
        content: Some(ToolResultContent::Blocks(vec![
            ContentBlock::text("The poster:"),
            stored_image("poster.png"),
        ])),
        is_error: None,
        cache_control: None,
        extra: Extra::new(),
    });
    let mut last = Message::user(vec![stored_document("programme.pdf", Some("Programme"))]);
    last.set_cache_control_on_last(Some(crate::CacheControl::ephemeral()));
    CreateRequest::new(
        "claude-sonnet-5-5",
        1000,
        vec![
            Message::user(vec![
                stored_image("photo.jpg"),
                ContentBlock::text("set this up"),
            ]),
            Message::assistant(vec![ContentBlock::tool_use("toolu_1", "poster", json!({}))]),
            Message::user(vec![result, stored_image("photo.jpg")]),
            last,
        ],
    )
}

fn blobs() -> HashMap<String, Vec<u8>> {
    HashMap::from([
        // 0xfb 0xff needs both `+` and `/` and one `=` of padding in the standard alphabet.
        ("photo.jpg".to_owned(), vec![0xfb, 0xff]),
        ("poster.png".to_owned(), b"png!".to_vec()),
        ("programme.pdf".to_owned(), b"%PDF-1.7".to_vec()),
    ])
}

#[test]
fn keys_are_listed_once_in_order_of_first_appearance_tool_results_included() {
    assert_eq!(
        stored_request().stored_media_keys(),
        vec!["photo.jpg", "poster.png", "programme.pdf"]
    );
    assert!(
        CreateRequest::new("m", 1, vec![Message::user_text("hi")])
            .stored_media_keys()
            .is_empty()
    );
}

#[test]
fn resolution_puts_the_bytes_inline_and_changes_nothing_else() {
    let stored = stored_request();
    let resolved = stored
        .with_stored_media_resolved(&blobs())
        .expect("resolved");
    assert!(resolved.stored_media_keys().is_empty());
    assert_eq!(resolved.ensure_media_resolved(), Ok(()));
    let value = serde_json::to_value(&resolved).expect("json");
    assert_eq!(
        value["messages"][0]["content"][0]["source"],
        json!({"type": "base64", "media_type": "image/jpeg", "data": "+/8="})
    );
    assert_eq!(
        value["messages"][2]["content"][0]["content"][1]["source"],
        json!({"type": "base64", "media_type": "image/jpeg", "data": "cG5nIQ=="})
    );
    assert_eq!(
        value["messages"][3]["content"][0],
        json!({
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjc="},
            "title": "Programme",
            "cache_control": {"type": "ephemeral"}
        })
    );
    // Everything but the sources is as it was.
    let mut expected = serde_json::to_value(&stored).expect("json");
    for pointer in [
        "/messages/0/content/0/source",
        "/messages/2/content/0/content/1/source",
        "/messages/2/content/1/source",
        "/messages/3/content/0/source",
    ] {
        *expected.pointer_mut(pointer).expect("source") =
            value.pointer(pointer).expect("source").clone();
    }
    assert_eq!(value, expected);
    // The stored request itself is untouched.
    assert_eq!(stored.stored_media_keys().len(), 3);
}

#[test]
fn the_same_stored_rows_resolve_to_the_same_bytes_every_time() {
    let first = serde_json::to_vec(
        &stored_request()
            .with_stored_media_resolved(&blobs())
            .expect("first"),
    )
    .expect("json");
    let second = serde_json::to_vec(
        &stored_request()
            .with_stored_media_resolved(&blobs())
            .expect("second"),
    )
    .expect("json");
    assert_eq!(first, second);
    // And through a stored row: serialized, read back, resolved again.
    let row = serde_json::to_vec(&stored_request()).expect("row");
    let reread: CreateRequest = serde_json::from_slice(&row).expect("reread");
    let third = serde_json::to_vec(&reread.with_stored_media_resolved(&blobs()).expect("third"))
        .expect("json");
    assert_eq!(first, third);
}

#[test]
fn a_missing_blob_is_an_error_naming_its_key() {
    let mut partial = blobs();
    partial.remove("poster.png");
    let error = stored_request()
        .with_stored_media_resolved(&partial)
        .expect_err("must fail");
    assert_eq!(
        error,
        MissingMedia {
            key: "poster.png".to_owned()
        }
    );
    assert!(error.to_string().contains("\"poster.png\""), "{error}");
}

#[test]
fn an_unresolved_reference_is_refused_wherever_it_sits() {
    assert_eq!(
        stored_request().ensure_media_resolved(),
        Err(LlmError::UnresolvedMedia {
            key: "photo.jpg".to_owned()
        })
    );
    let in_tool_result = CreateRequest::new(
        "m",
        1,
        vec![Message::user(vec![ContentBlock::ToolResult(
            ToolResultBlock {
                tool_use_id: "t".to_owned(),
                content: Some(ToolResultContent::Blocks(vec![stored_document("d", None)])),
                is_error: None,
                cache_control: None,
                extra: Extra::new(),
            },
        )])],
    );
    assert_eq!(
        in_tool_result.ensure_media_resolved(),
        Err(LlmError::UnresolvedMedia {
            key: "d".to_owned()
        })
    );
    // A stored source in a shape this crate does not read is kept verbatim, and still refused.
    let odd = CreateRequest::new(
        "m",
        1,
        vec![Message::user(vec![ContentBlock::from_value(json!({
            "type": "image",
            "source": {"type": STORED_SOURCE_TYPE, "key": "odd"}
        }))])],
    );
    assert!(matches!(
        odd.messages[0].content[0],
        ContentBlock::Unknown(_)
    ));
    assert_eq!(
        odd.ensure_media_resolved(),
        Err(LlmError::UnresolvedMedia {
            key: "odd".to_owned()
        })
    );
    assert!(
        LlmError::UnresolvedMedia {
            key: "odd".to_owned()
        }
        .to_string()
        .contains("a stored media reference was not resolved")
    );
}

#[tokio::test]
async fn the_scripted_client_refuses_like_the_real_ones_without_using_an_outcome() {
    let client = ScriptedClient::new().text("ok");
    assert_eq!(
        client.create(&stored_request()).await,
        Err(LlmError::UnresolvedMedia {
            key: "photo.jpg".to_owned()
        })
    );
    assert_eq!(client.calls(), 0);
    assert_eq!(client.remaining(), 1);
    let resolved = stored_request()
        .with_stored_media_resolved(&blobs())
        .expect("resolved");
    assert!(client.create(&resolved).await.is_ok());
    assert_eq!(client.calls(), 1);
}

#[test]
fn document_names_are_safe_unique_and_deterministic() {
    let mut names = DocumentNames::default();
    assert_eq!(
        names.next(Some("Programme_v2 (final).pdf")),
        "Programme v2 (final) pdf"
    );
    assert_eq!(names.next(None), "document-2");
    assert_eq!(names.next(Some("  ..  ")), "document-3");
    assert_eq!(
        names.next(Some("Programme v2 (final) pdf")),
        "Programme v2 (final) pdf (4)"
    );
    assert_eq!(names.next(Some("Café [menu]\n\tday-1")), "Caf [menu] day-1");
    let long = "a".repeat(200);
    assert_eq!(names.next(Some(&long)).len(), DOCUMENT_NAME_CHARS_MAX);
    // The same titles in the same order give the same names.
    let mut again = DocumentNames::default();
    assert_eq!(
        again.next(Some("Programme_v2 (final).pdf")),
        "Programme v2 (final) pdf"
    );
}

/// What Bedrock accepts in a document name.
fn bedrock_valid(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(' ')
        && !name.ends_with(' ')
        && !name.contains("  ")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '(' | ')' | '[' | ']'))
}

proptest! {
    #[test]
    fn any_titles_give_valid_distinct_names(titles in proptest::collection::vec(proptest::option::of(".{0,80}"), 1..8)) {
        let mut names = DocumentNames::default();
        let given: Vec<String> = titles.iter().map(|title| names.next(title.as_deref())).collect();
        for name in &given {
            prop_assert!(bedrock_valid(name), "{name:?}");
        }
        let mut distinct = given.clone();
        distinct.sort();
        distinct.dedup();
        prop_assert_eq!(distinct.len(), given.len());
    }
}
