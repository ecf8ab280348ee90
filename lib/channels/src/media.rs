//! Attachments Steward cannot read yet get a clear short answer instead of silence, without
//! the model: a voice note is asked to be typed, a photo or a file is said to be unread. A
//! caption is the message's text, so a photo with "set this up" still reaches the turn (with a
//! line saying the photo itself was not read). Locations and contact cards are turned into
//! text by the parsers and go on like any message.

use crate::{InboundMessage, MediaKind};

/// The reply to an attachment of a kind Steward has no better answer for (a poll, a GIF …).
pub const MEDIA_NOT_UNDERSTOOD_REPLY: &str =
    "I can only read text and buttons for now — could you type that?";

/// The reply to a photo without a caption.
pub const PHOTO_REPLY: &str =
    "I can't look at photos yet — could you type what's in it (or the part you need)?";
/// The reply to a file without a caption.
pub const DOCUMENT_REPLY: &str =
    "I can't open files yet — could you paste the text you need into a message?";
/// The reply to a voice note.
pub const VOICE_REPLY: &str = "I can't listen to voice notes yet — could you type it?";
/// The reply to an audio file.
pub const AUDIO_REPLY: &str = "I can't listen to audio yet — could you type what you need?";
/// The reply to a video.
pub const VIDEO_REPLY: &str = "I can't watch videos yet — could you type what you need?";
/// The reply to a sticker: a short friendly line.
pub const STICKER_REPLY: &str = "🙂 What can I do for you?";
/// The reply to a location or contact card that carried nothing readable.
pub const UNREADABLE_CARD_REPLY: &str =
    "I couldn't read that location or contact — could you type it?";

/// What to do about a message's attachment, before and without the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaAnswer {
    /// Answer with this line; nothing else in the message can be acted on.
    Only(&'static str),
    /// The caption goes on as the message's text; this line goes before the reply, so the
    /// person knows the attachment itself was not read.
    BeforeReply(&'static str),
}

impl MediaAnswer {
    /// The line said.
    pub fn line(self) -> &'static str {
        match self {
            Self::Only(line) | Self::BeforeReply(line) => line,
        }
    }
}

/// The line said before the reply to a captioned attachment of `kind`.
fn caption_note(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Image => "(I can't look at photos yet, so I went by your caption.)",
        MediaKind::Document => "(I can't open files yet, so I went by your caption.)",
        MediaKind::Voice | MediaKind::Audio => {
            "(I can't listen to audio yet, so I went by your caption.)"
        }
        MediaKind::Video => "(I can't watch videos yet, so I went by your caption.)",
        MediaKind::Sticker | MediaKind::Location | MediaKind::Contact | MediaKind::Other => {
            "(I can only read text for now, so I went by your caption.)"
        }
    }
}

/// The answer for `message`'s attachment; `None` when it has none, or when it is a location
/// or contact card the parser turned into text (that text goes on like any message).
pub fn media_answer(message: &InboundMessage) -> Option<MediaAnswer> {
    let kind = message.media.as_ref()?.kind;
    let has_text = message
        .text
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty());
    if matches!(kind, MediaKind::Location | MediaKind::Contact) {
        return (!has_text).then_some(MediaAnswer::Only(UNREADABLE_CARD_REPLY));
    }
    if has_text {
        return Some(MediaAnswer::BeforeReply(caption_note(kind)));
    }
    Some(MediaAnswer::Only(match kind {
        MediaKind::Image => PHOTO_REPLY,
        MediaKind::Document => DOCUMENT_REPLY,
        MediaKind::Voice => VOICE_REPLY,
        MediaKind::Audio => AUDIO_REPLY,
        MediaKind::Video => VIDEO_REPLY,
        MediaKind::Sticker => STICKER_REPLY,
        MediaKind::Location | MediaKind::Contact | MediaKind::Other => MEDIA_NOT_UNDERSTOOD_REPLY,
    }))
}

/// The line for `message` if its attachment is all there is to answer (see [`media_answer`]);
/// `None` for text, buttons, captioned attachments, locations and contacts.
pub fn media_reply(message: &InboundMessage) -> Option<&'static str> {
    match media_answer(message)? {
        MediaAnswer::Only(line) => Some(line),
        MediaAnswer::BeforeReply(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Channel, MediaRef};

    fn message(kind: Option<MediaKind>, text: Option<&str>) -> InboundMessage {
        InboundMessage {
            channel: Channel::Whatsapp,
            conversation_id: "1".into(),
            external_user_id: "1".into(),
            provider_message_id: "m".into(),
            message_ref: None,
            text: text.map(str::to_owned),
            button_id: None,
            replied_to_id: None,
            media: kind.map(MediaRef::of),
            timestamp: 0,
            display_name: None,
            callback_query_id: None,
            chat: crate::inbound::ChatKind::Private,
        }
    }

    #[test]
    fn each_kind_gets_its_answer() {
        assert_eq!(media_answer(&message(None, Some("hi"))), None);
        let only = |kind| media_reply(&message(Some(kind), None));
        assert_eq!(only(MediaKind::Voice), Some(VOICE_REPLY));
        assert_eq!(only(MediaKind::Audio), Some(AUDIO_REPLY));
        assert_eq!(only(MediaKind::Video), Some(VIDEO_REPLY));
        assert_eq!(only(MediaKind::Sticker), Some(STICKER_REPLY));
        assert_eq!(only(MediaKind::Image), Some(PHOTO_REPLY));
        assert_eq!(only(MediaKind::Document), Some(DOCUMENT_REPLY));
        assert_eq!(only(MediaKind::Other), Some(MEDIA_NOT_UNDERSTOOD_REPLY));
        assert_eq!(only(MediaKind::Location), Some(UNREADABLE_CARD_REPLY));
        for line in [
            PHOTO_REPLY,
            DOCUMENT_REPLY,
            VOICE_REPLY,
            AUDIO_REPLY,
            VIDEO_REPLY,
            STICKER_REPLY,
            MEDIA_NOT_UNDERSTOOD_REPLY,
            UNREADABLE_CARD_REPLY,
        ] {
            assert!(line.chars().count() < 100, "{line}");
        }
    }

    #[test]
    fn a_caption_goes_on_with_a_note_and_cards_go_on_as_text() {
        let photo = message(Some(MediaKind::Image), Some("set this up"));
        assert_eq!(
            media_answer(&photo),
            Some(MediaAnswer::BeforeReply(caption_note(MediaKind::Image)))
        );
        assert_eq!(media_reply(&photo), None);
        let place = message(Some(MediaKind::Location), Some("Location: 52.52, 13.4"));
        assert_eq!(media_answer(&place), None);
        let blank = message(Some(MediaKind::Image), Some("  "));
        assert_eq!(media_reply(&blank), Some(PHOTO_REPLY));
    }
}
