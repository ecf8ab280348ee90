//! Attachments Steward cannot read yet get a clear short answer instead of silence, without
//! the model: a voice note is asked to be typed, a video or a sticker gets its line. A caption
//! is the message's text, so a voice note with "set this up" still reaches the turn (with a
//! line saying the voice note itself was not heard). Photos and files ([`crate::is_fetchable`])
//! get no answer here: they are downloaded and read by the model. Locations and contact cards
//! are turned into text by the parsers and go on like any message.
//!
//! A download that fails ([`FetchError`]) gets one short line too ([`fetch_error_reply`]): what
//! went wrong in the person's terms and what to do, never the provider's error text.

use crate::{FetchError, InboundMessage, MediaKind, SizeLimit};

/// The reply to an attachment of a kind Steward has no better answer for (a poll, a GIF …).
pub const MEDIA_NOT_UNDERSTOOD_REPLY: &str =
    "I can only read text and buttons for now — could you type that?";

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

/// An image over [`crate::IMAGE_BYTES_MAX`].
pub const IMAGE_TOO_LARGE_REPLY: &str =
    "That image is larger than 3.75 MB — could you send a smaller one?";
/// A file over [`crate::PDF_BYTES_MAX`].
pub const FILE_TOO_LARGE_REPLY: &str =
    "That file is larger than 4.5 MB — could you send a smaller one?";
/// A file Telegram will not hand to a bot ([`crate::TELEGRAM_GET_FILE_BYTES_MAX`]).
pub const TELEGRAM_TOO_LARGE_REPLY: &str =
    "Telegram doesn't let me download files over 20 MB — could you send a smaller one?";
/// A file of a type Steward does not read.
pub const WRONG_TYPE_REPLY: &str =
    "I can only read JPEG, PNG, WebP and GIF images and PDF files — could you send one of those?";
/// A file whose bytes are not the type it was declared as.
pub const TYPE_MISMATCH_REPLY: &str =
    "That file isn't what its type says — could you send it again as a PDF or an image?";
/// A photo whose bytes are a PDF.
pub const PHOTO_IS_PDF_REPLY: &str =
    "That photo came through as a PDF — could you send the PDF as a file instead?";
/// A file the provider no longer has (an expired media id or download link).
pub const MEDIA_GONE_REPLY: &str = "I couldn't get that file any more — could you send it again?";
/// A file the provider refused to hand over.
pub const MEDIA_REFUSED_REPLY: &str =
    "I wasn't allowed to download that file — could you send it again?";
/// A download that failed on the provider's side (or an answer that could not be trusted).
pub const MEDIA_DOWNLOAD_FAILED_REPLY: &str =
    "I couldn't download that file just now — could you try sending it again?";
/// A download past its deadline.
pub const MEDIA_TIMEOUT_REPLY: &str =
    "Downloading that file took too long — could you try again, or send a smaller one?";
/// An image whose header cannot be read.
pub const CORRUPT_IMAGE_REPLY: &str =
    "I couldn't read that image — it looks damaged. Could you send it again?";
/// An image over [`crate::IMAGE_SIDE_PX_MAX`] on a side.
pub const TOO_MANY_PIXELS_REPLY: &str =
    "That image is over 8000 pixels on a side — could you send a smaller one?";
/// A PDF that does not end like one.
pub const CORRUPT_PDF_REPLY: &str =
    "I couldn't read that PDF — it looks damaged or cut short. Could you send it again?";
/// A PDF over [`crate::PDF_PAGES_MAX`] pages.
pub const TOO_MANY_PAGES_REPLY: &str =
    "That PDF has over 100 pages — could you send just the pages I need?";

/// The one line for the person when fetching their attachment failed with `error`.
pub fn fetch_error_reply(error: &FetchError) -> &'static str {
    match error {
        FetchError::UnsupportedKind(kind) => kind_reply(*kind),
        FetchError::TooLarge { limit, .. } => match limit {
            SizeLimit::Image => IMAGE_TOO_LARGE_REPLY,
            SizeLimit::File => FILE_TOO_LARGE_REPLY,
            SizeLimit::TelegramBotApi => TELEGRAM_TOO_LARGE_REPLY,
        },
        FetchError::WrongType { .. } => WRONG_TYPE_REPLY,
        FetchError::TypeMismatch { .. } => TYPE_MISMATCH_REPLY,
        FetchError::KindMismatch { .. } => PHOTO_IS_PDF_REPLY,
        FetchError::NotFound { .. } => MEDIA_GONE_REPLY,
        FetchError::Refused { .. } => MEDIA_REFUSED_REPLY,
        FetchError::NoMediaId
        | FetchError::ForeignUrl
        | FetchError::BadFilePath
        | FetchError::Provider { .. } => MEDIA_DOWNLOAD_FAILED_REPLY,
        FetchError::Timeout => MEDIA_TIMEOUT_REPLY,
        FetchError::CorruptImage => CORRUPT_IMAGE_REPLY,
        FetchError::TooManyPixels { .. } => TOO_MANY_PIXELS_REPLY,
        FetchError::CorruptPdf => CORRUPT_PDF_REPLY,
        FetchError::TooManyPages { .. } => TOO_MANY_PAGES_REPLY,
    }
}

/// The line for an attachment of `kind` that is all there is to answer.
fn kind_reply(kind: MediaKind) -> &'static str {
    match kind {
        // Photos and files are fetched; only a fetcher asked about another kind says this.
        MediaKind::Image | MediaKind::Document => WRONG_TYPE_REPLY,
        MediaKind::Voice => VOICE_REPLY,
        MediaKind::Audio => AUDIO_REPLY,
        MediaKind::Video => VIDEO_REPLY,
        MediaKind::Sticker => STICKER_REPLY,
        MediaKind::Location | MediaKind::Contact | MediaKind::Other => MEDIA_NOT_UNDERSTOOD_REPLY,
    }
}

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
        MediaKind::Voice | MediaKind::Audio => {
            "(I can't listen to audio yet, so I went by your caption.)"
        }
        MediaKind::Video => "(I can't watch videos yet, so I went by your caption.)",
        MediaKind::Image
        | MediaKind::Document
        | MediaKind::Sticker
        | MediaKind::Location
        | MediaKind::Contact
        | MediaKind::Other => "(I can only read text for now, so I went by your caption.)",
    }
}

/// The answer for `message`'s attachment; `None` when it has none, when it is a photo or file
/// (fetched and read), or when it is a location or contact card the parser turned into text
/// (that text goes on like any message).
pub fn media_answer(message: &InboundMessage) -> Option<MediaAnswer> {
    let kind = message.media.as_ref()?.kind;
    if crate::is_fetchable(kind) {
        return None;
    }
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
    Some(MediaAnswer::Only(kind_reply(kind)))
}

/// The line for `message` if its attachment is all there is to answer (see [`media_answer`]);
/// `None` for text, buttons, captioned attachments, photos and files, locations and contacts.
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
        assert_eq!(only(MediaKind::Image), None, "photos are read");
        assert_eq!(only(MediaKind::Document), None, "files are read");
        assert_eq!(only(MediaKind::Other), Some(MEDIA_NOT_UNDERSTOOD_REPLY));
        assert_eq!(only(MediaKind::Location), Some(UNREADABLE_CARD_REPLY));
        for line in [
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

    /// One of each fetch failure.
    fn every_fetch_error() -> Vec<FetchError> {
        use crate::MediaType;
        let mut errors = vec![
            FetchError::UnsupportedKind(MediaKind::Voice),
            FetchError::NoMediaId,
            FetchError::WrongType {
                found: "text/html".into(),
            },
            FetchError::TypeMismatch {
                declared: MediaType::Png,
                actual: MediaType::Jpeg,
            },
            FetchError::KindMismatch {
                kind: MediaKind::Image,
                actual: MediaType::Pdf,
            },
            FetchError::NotFound { status: 404 },
            FetchError::Refused { status: 403 },
            FetchError::ForeignUrl,
            FetchError::BadFilePath,
            FetchError::Provider {
                status: Some(500),
                reason: "unexpected status",
            },
            FetchError::Timeout,
            FetchError::CorruptImage,
            FetchError::TooManyPixels {
                width: 9000,
                height: 10,
            },
            FetchError::CorruptPdf,
            FetchError::TooManyPages { pages_seen: 101 },
        ];
        for limit in [SizeLimit::Image, SizeLimit::File, SizeLimit::TelegramBotApi] {
            errors.push(FetchError::TooLarge {
                limit,
                declared: None,
            });
        }
        errors
    }

    #[test]
    fn each_fetch_failure_gets_one_short_line() {
        for error in every_fetch_error() {
            let line = fetch_error_reply(&error);
            assert!(line.chars().count() < 100, "{line}");
            assert!(line.ends_with('?'), "{line}: says what to do");
        }
        assert_eq!(
            fetch_error_reply(&FetchError::UnsupportedKind(MediaKind::Voice)),
            VOICE_REPLY
        );
    }

    #[test]
    fn the_lines_name_the_limits_in_force() {
        let megabytes = |bytes: u64| format!("{} MB", bytes as f64 / 1_000_000.0);
        assert!(IMAGE_TOO_LARGE_REPLY.contains(&megabytes(crate::IMAGE_BYTES_MAX)));
        assert!(FILE_TOO_LARGE_REPLY.contains(&megabytes(crate::PDF_BYTES_MAX)));
        let mebibytes = crate::TELEGRAM_GET_FILE_BYTES_MAX / (1024 * 1024);
        assert!(TELEGRAM_TOO_LARGE_REPLY.contains(&format!("{mebibytes} MB")));
        assert!(TOO_MANY_PIXELS_REPLY.contains(&crate::IMAGE_SIDE_PX_MAX.to_string()));
        assert!(TOO_MANY_PAGES_REPLY.contains(&crate::PDF_PAGES_MAX.to_string()));
    }

    #[test]
    fn a_caption_goes_on_with_a_note_and_cards_go_on_as_text() {
        let photo = message(Some(MediaKind::Image), Some("set this up"));
        assert_eq!(media_answer(&photo), None, "a photo goes to the model");
        let voice = message(Some(MediaKind::Voice), Some("set this up"));
        assert_eq!(
            media_answer(&voice),
            Some(MediaAnswer::BeforeReply(caption_note(MediaKind::Voice)))
        );
        assert_eq!(media_reply(&voice), None);
        let place = message(Some(MediaKind::Location), Some("Location: 52.52, 13.4"));
        assert_eq!(media_answer(&place), None);
        let blank = message(Some(MediaKind::Video), Some("  "));
        assert_eq!(media_reply(&blank), Some(VIDEO_REPLY));
    }
}
