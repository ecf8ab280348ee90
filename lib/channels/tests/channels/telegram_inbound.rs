//! Telegram update fixtures: secret checked, then parsed.

use steward_channels::telegram::{SecretError, parse_update, verify_secret};
use steward_channels::{
    AUDIO_REPLY, Channel, ChatKind, InboundMessage, MediaAnswer, MediaKind, ParseError,
    STICKER_REPLY, VOICE_REPLY, WEBHOOK_BODY_BYTES_MAX, media_answer, media_reply,
};

use crate::fixture;

const SECRET: &str = "test-webhook-secret_0123";

fn receive(name: &str) -> Option<InboundMessage> {
    let body = fixture(&format!("telegram/{name}.json"));
    verify_secret(Some(SECRET), SECRET).unwrap();
    parse_update(&body).unwrap()
}

#[test]
fn text_message() {
    let m = receive("text").unwrap();
    assert_eq!(m.channel, Channel::Telegram);
    assert_eq!(m.conversation_id, "111222333");
    assert_eq!(m.conversation_key(), "tg:111222333");
    assert_eq!(m.external_user_id, "111222333");
    assert_eq!(m.provider_message_id, "875310001");
    assert_eq!(m.message_ref.as_deref(), Some("1365"));
    assert_eq!(m.text.as_deref(), Some("Close registration on Thursday"));
    assert_eq!(m.timestamp, 1_750_200_000);
    assert_eq!(m.display_name.as_deref(), Some("Ada Lovelace"));
    assert_eq!(m.callback_query_id, None);
}

/// Security review finding 2: a group chat never reaches a conversation. Its message is only
/// marked as a group's, with nothing of what was said.
#[test]
fn telegram_group_message_is_marked_and_carries_no_text() {
    let m = receive("group_text").unwrap();
    assert_eq!(m.chat, ChatKind::Group);
    assert_eq!(m.conversation_id, "-1001234567890");
    assert_eq!(m.external_user_id, "444555666");
    assert_eq!(m.text, None);
    assert_eq!(m.media, None);
    assert_eq!(m.display_name, None);
    // A private chat is the default and is what every other fixture is.
    assert_eq!(receive("text").unwrap().chat, ChatKind::Private);
}

#[test]
fn callback_query() {
    let m = receive("callback_query").unwrap();
    assert_eq!(m.provider_message_id, "875310002");
    assert_eq!(m.button_id.as_deref(), Some("b1"));
    assert_eq!(m.text.as_deref(), Some("Not yet"));
    assert_eq!(m.callback_query_id.as_deref(), Some("4382bfdwdsb323b2d9"));
    assert_eq!(m.conversation_id, "111222333");
    assert_eq!(m.external_user_id, "111222333");
    assert_eq!(m.replied_to_id.as_deref(), Some("1366"));
    assert!(m.timestamp > 1_750_000_000);
}

#[test]
fn photo_is_media_with_the_largest_size() {
    let m = receive("photo").unwrap();
    let media = m.media.clone().unwrap();
    assert_eq!(media.kind, MediaKind::Image);
    assert_eq!(
        media.provider_media_id.as_deref(),
        Some("AgACAgQAAxkBAAIBS-large")
    );
    assert_eq!(media.size_bytes, Some(98765));
    // The caption is the text; the photo itself is fetched and read, so no answer here.
    assert_eq!(m.text.as_deref(), Some("Our venue"));
    assert_eq!(media_reply(&m), None);
    assert_eq!(media_answer(&m), None);
}

#[test]
fn voice_audio_video_and_stickers() {
    for (name, kind, file, reply) in [
        (
            "voice",
            MediaKind::Voice,
            "AwACAgQ-voice",
            Some(VOICE_REPLY),
        ),
        (
            "audio",
            MediaKind::Audio,
            "CQACAgQ-audio",
            Some(AUDIO_REPLY),
        ),
        ("video", MediaKind::Video, "BAACAgQ-video", None),
        (
            "sticker",
            MediaKind::Sticker,
            "CAACAgQ-sticker",
            Some(STICKER_REPLY),
        ),
    ] {
        let m = receive(name).unwrap();
        let media = m.media.clone().unwrap();
        assert_eq!(media.kind, kind, "{name}");
        assert_eq!(media.provider_media_id.as_deref(), Some(file), "{name}");
        assert!(media.size_bytes.is_some(), "{name}");
        assert_eq!(media_reply(&m), reply, "{name}");
    }
    // The video came with a caption: it goes on as the text.
    let video = receive("video").unwrap();
    assert_eq!(
        video.text.as_deref(),
        Some("The room, with the stage on the left")
    );
    assert!(matches!(
        media_answer(&video),
        Some(MediaAnswer::BeforeReply(line)) if line.contains("videos")
    ));
    let audio = receive("audio").unwrap();
    assert_eq!(
        audio.media.and_then(|m| m.file_name).as_deref(),
        Some("jingle.mp3")
    );
}

#[test]
fn locations_venues_and_contacts_become_text() {
    for (name, kind, text) in [
        (
            "location",
            MediaKind::Location,
            "Location: 52.5219, 13.4132",
        ),
        (
            "venue",
            MediaKind::Location,
            "Location: 52.5219, 13.4132 — Alexanderplatz, 10178 Berlin",
        ),
        (
            "contact",
            MediaKind::Contact,
            "Contact: Ada Lovelace, +442079460000",
        ),
    ] {
        let m = receive(name).unwrap();
        assert_eq!(m.media.as_ref().map(|x| x.kind), Some(kind), "{name}");
        assert_eq!(m.text.as_deref(), Some(text), "{name}");
        assert_eq!(media_answer(&m), None, "{name}");
    }
}

#[test]
fn a_documents_caption_is_its_text() {
    let m = receive("document_caption").unwrap();
    assert_eq!(m.text.as_deref(), Some("ABCD2345"));
    let media = m.media.unwrap();
    assert_eq!(media.kind, MediaKind::Document);
    assert_eq!(media.file_name.as_deref(), Some("programme.pdf"));
    assert_eq!(media.size_bytes, Some(120_000));
}

#[test]
fn document_is_media() {
    let m = receive("document").unwrap();
    let media = m.media.unwrap();
    assert_eq!(media.kind, MediaKind::Document);
    assert_eq!(media.mime.as_deref(), Some("application/pdf"));
    assert_eq!(m.text, None);
}

#[test]
fn edited_and_unknown_updates_are_dropped() {
    assert_eq!(receive("edited_message"), None);
    assert_eq!(receive("unknown_update"), None);
}

#[test]
fn secret_header() {
    assert_eq!(verify_secret(Some(SECRET), SECRET), Ok(()));
    assert_eq!(verify_secret(None, SECRET), Err(SecretError::Missing));
    assert_eq!(
        verify_secret(Some("test-webhook-secret_0124"), SECRET),
        Err(SecretError::Mismatch)
    );
}

#[test]
fn malformed_and_oversized() {
    assert!(matches!(
        parse_update(b"not json"),
        Err(ParseError::MalformedJson(_))
    ));
    let big = vec![b' '; WEBHOOK_BODY_BYTES_MAX + 1];
    assert!(matches!(parse_update(&big), Err(ParseError::TooLarge(_))));
}
