//! WhatsApp webhook fixtures: signed with a test secret, verified, then parsed.

use steward_channels::whatsapp::{SignatureError, parse_webhook, sign, verify_signature};
use steward_channels::{
    AUDIO_REPLY, Channel, InboundMessage, MediaKind, ParseError, STICKER_REPLY, VIDEO_REPLY,
    VOICE_REPLY, WEBHOOK_BODY_BYTES_MAX, check_body_size, media_answer, media_reply,
};

use crate::fixture;

const APP_SECRET: &[u8] = b"test-app-secret-0123456789";

/// What the webhook route does: size cap, signature on the raw bytes, then parse.
fn receive(name: &str) -> Vec<InboundMessage> {
    let body = fixture(&format!("whatsapp/{name}.json"));
    let header = sign(&body, APP_SECRET);
    check_body_size(body.len()).unwrap();
    verify_signature(&body, Some(&header), APP_SECRET).unwrap();
    parse_webhook(&body).unwrap()
}

fn only(name: &str) -> InboundMessage {
    let mut messages = receive(name);
    assert_eq!(messages.len(), 1, "{name}: {messages:?}");
    messages.remove(0)
}

#[test]
fn text() {
    let m = only("text");
    assert_eq!(m.channel, Channel::Whatsapp);
    assert_eq!(m.conversation_id, "16505551234");
    assert_eq!(m.conversation_key(), "wa:16505551234");
    assert_eq!(m.external_user_id, "16505551234");
    assert_eq!(
        m.provider_message_id,
        "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="
    );
    assert_eq!(
        m.message_ref.as_deref(),
        Some(m.provider_message_id.as_str())
    );
    assert_eq!(
        m.text.as_deref(),
        Some("Set up my event for Saturday, two tracks")
    );
    assert_eq!(m.timestamp, 1_749_416_383);
    assert_eq!(m.display_name.as_deref(), Some("Sheena Nelson"));
    assert_eq!(m.button_id, None);
    assert_eq!(m.media, None);
    assert_eq!(m.callback_query_id, None);
}

#[test]
fn button_reply() {
    let m = only("button_reply");
    assert_eq!(m.button_id.as_deref(), Some("b1"));
    assert_eq!(m.text.as_deref(), Some("Later"));
    assert_eq!(
        m.replied_to_id.as_deref(),
        Some("wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3NTg4RjlGNEQ0QTQ5RUZBRDAA")
    );
}

#[test]
fn list_reply() {
    let m = only("list_reply");
    assert_eq!(m.button_id.as_deref(), Some("track-2"));
    assert_eq!(m.text.as_deref(), Some("Track 2"));
}

#[test]
fn legacy_button() {
    let m = only("legacy_button");
    assert_eq!(m.button_id.as_deref(), Some("confirm-yes"));
    assert_eq!(m.text.as_deref(), Some("Yes, publish"));
}

#[test]
fn image_becomes_a_media_message() {
    let m = only("image");
    let media = m.media.clone().unwrap();
    assert_eq!(media.kind, MediaKind::Image);
    assert_eq!(media.provider_media_id.as_deref(), Some("1003383421387256"));
    assert_eq!(media.mime.as_deref(), Some("image/jpeg"));
    // The caption is the text; the photo itself is fetched and read, so no answer here.
    assert_eq!(m.text.as_deref(), Some("The venue floor plan"));
    assert_eq!(steward_channels::media_reply(&m), None);
    assert_eq!(media_answer(&m), None);
}

#[test]
fn documents_keep_their_caption_and_file_name() {
    let m = only("document");
    let media = m.media.clone().unwrap();
    assert_eq!(media.kind, MediaKind::Document);
    assert_eq!(media.provider_media_id.as_deref(), Some("2003383421387256"));
    assert_eq!(media.mime.as_deref(), Some("application/pdf"));
    assert_eq!(media.file_name.as_deref(), Some("programme.pdf"));
    assert_eq!(m.text.as_deref(), Some("Programme for Saturday"));
    assert_eq!(media_answer(&m), None, "a PDF is fetched and read");
    let bare = only("document_no_caption");
    assert_eq!(bare.text, None);
    assert_eq!(media_reply(&bare), None);
}

#[test]
fn voice_audio_video_and_stickers_get_a_fixed_answer() {
    for (name, kind, reply) in [
        ("voice", MediaKind::Voice, VOICE_REPLY),
        ("audio", MediaKind::Audio, AUDIO_REPLY),
        ("video", MediaKind::Video, VIDEO_REPLY),
        ("sticker", MediaKind::Sticker, STICKER_REPLY),
    ] {
        let m = only(name);
        let media = m.media.clone().unwrap();
        assert_eq!(media.kind, kind, "{name}");
        assert!(media.provider_media_id.is_some(), "{name}");
        assert_eq!(m.text, None, "{name}");
        assert_eq!(media_reply(&m), Some(reply), "{name}");
    }
}

#[test]
fn locations_and_contacts_become_text() {
    let m = only("location");
    assert_eq!(m.media.as_ref().map(|x| x.kind), Some(MediaKind::Location));
    assert_eq!(
        m.text.as_deref(),
        Some("Location: 52.5219, 13.4132 — Alexanderplatz, 10178 Berlin")
    );
    assert_eq!(media_answer(&m), None, "the text goes on to the turn");
    let m = only("contacts");
    assert_eq!(m.media.as_ref().map(|x| x.kind), Some(MediaKind::Contact));
    assert_eq!(
        m.text.as_deref(),
        Some(
            "Contact: Ada Lovelace, +44 20 7946 0000, ada@example.org\n\
             Contact: Charles Babbage, +44 20 7946 0001"
        )
    );
    assert_eq!(media_answer(&m), None);
}

#[test]
fn reactions_statuses_unsupported_and_system_are_dropped() {
    for name in ["reaction", "status", "unsupported", "system"] {
        assert!(receive(name).is_empty(), "{name}");
    }
}

#[test]
fn business_scoped_id_without_phone() {
    let m = only("business_scoped_id");
    assert_eq!(m.conversation_id, "US.13491208655302741918");
    assert_eq!(m.external_user_id, "US.13491208655302741918");
    assert_eq!(m.conversation_key(), "wa:US.13491208655302741918");
    assert_eq!(m.display_name.as_deref(), Some("Sheena Nelson"));
    assert_eq!(m.text.as_deref(), Some("Hi, it's Sheena"));
}

#[test]
fn several_messages_in_one_post() {
    let messages = receive("several");
    let got: Vec<(&str, &str, &str, Option<&str>)> = messages
        .iter()
        .map(|m| {
            (
                m.provider_message_id.as_str(),
                m.conversation_id.as_str(),
                m.text.as_deref().unwrap_or_default(),
                m.display_name.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("wamid.AAA1", "16505551234", "First", Some("Sheena Nelson")),
            (
                "wamid.AAA2",
                "447700900123",
                "Second, from Omar",
                Some("Omar Haddad")
            ),
            (
                "wamid.AAA4",
                "16505551234",
                "Third, in another entry",
                Some("Sheena Nelson")
            ),
        ]
    );
}

#[test]
fn bad_or_missing_signature_is_rejected() {
    let body = fixture("whatsapp/text.json");
    let good = sign(&body, APP_SECRET);
    assert_eq!(
        verify_signature(&body, None, APP_SECRET),
        Err(SignatureError::Missing)
    );
    assert_eq!(
        verify_signature(&body, Some(&sign(&body, b"another-secret")), APP_SECRET),
        Err(SignatureError::Mismatch)
    );
    assert_eq!(
        verify_signature(&body, Some("sha256=not-hex"), APP_SECRET),
        Err(SignatureError::Malformed)
    );
    // One changed byte in the body.
    let mut tampered = body.clone();
    if let Some(b) = tampered.iter_mut().find(|b| **b == b'S') {
        *b = b's';
    }
    assert_eq!(
        verify_signature(&tampered, Some(&good), APP_SECRET),
        Err(SignatureError::Mismatch)
    );
    // Re-serialised JSON is not the raw body: the signature is over the exact bytes.
    let reserialised =
        serde_json::to_vec(&serde_json::from_slice::<serde_json::Value>(&body).unwrap()).unwrap();
    assert_eq!(
        verify_signature(&reserialised, Some(&good), APP_SECRET),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn oversized_body_is_rejected() {
    let mut body = fixture("whatsapp/text.json");
    body.resize(WEBHOOK_BODY_BYTES_MAX + 1, b' ');
    assert!(check_body_size(body.len()).is_err());
    assert!(matches!(parse_webhook(&body), Err(ParseError::TooLarge(_))));
}

#[test]
fn malformed_json_is_an_error() {
    let body = b"{\"object\": \"whatsapp_business_account\", \"entry\": [";
    let header = sign(body, APP_SECRET);
    assert_eq!(verify_signature(body, Some(&header), APP_SECRET), Ok(()));
    assert!(matches!(
        parse_webhook(body),
        Err(ParseError::MalformedJson(_))
    ));
}

#[test]
fn unexpected_shapes_drop_only_what_cannot_be_understood() {
    let body = br#"{
      "object": "whatsapp_business_account",
      "entry": [
        {"changes": "not a list"},
        {"changes": [{"field": "messages", "value": {"contacts": 7, "messages": [
          {"id": "m1", "type": "text", "timestamp": "1", "from": "1", "text": {"body": ["x"]}},
          {"id": "m2", "type": "text", "timestamp": "1", "from": "has space", "text": {"body": "x"}},
          {"id": "m3", "type": "text", "timestamp": "later", "from": "1", "text": {"body": "x"}},
          {"id": "m4", "type": "interactive", "timestamp": "1", "from": "1", "interactive": {"type": "nfm_reply"}},
          {"id": "m5", "type": "text", "timestamp": "1", "from": "1", "group_id": "g", "text": {"body": "x"}},
          {"id": "m6", "type": "text", "timestamp": "1", "from": "1", "text": {"body": "   "}},
          {"id": "m7", "type": "image", "timestamp": "1", "from": "1"},
          {"id": "m8", "type": "text", "timestamp": 2, "from": "1", "text": {"body": "kept"}},
          null, 5, "x", []
        ]}}]}
      ]
    }"#;
    let messages = parse_webhook(body).unwrap();
    let ids: Vec<&str> = messages
        .iter()
        .map(|m| m.provider_message_id.as_str())
        .collect();
    // m7: an image without its media part still gets the "text only" reply.
    assert_eq!(ids, ["m7", "m8"]);
    assert_eq!(messages[1].text.as_deref(), Some("kept"));
    assert_eq!(messages[1].display_name, None);
}

#[test]
fn parsed_messages_round_trip_through_the_queue_as_json() {
    for name in ["text", "button_reply", "image", "business_scoped_id"] {
        for m in receive(name) {
            let json = serde_json::to_string(&m).unwrap();
            let back: InboundMessage = serde_json::from_str(&json).unwrap();
            assert_eq!(back, m);
        }
    }
}
