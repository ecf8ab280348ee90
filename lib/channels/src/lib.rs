//! Steward's channels: each messaging platform's rules as code (lengths, buttons, reactions,
//! the WhatsApp session window), parsing of what arrives into a provider-neutral
//! [`InboundMessage`], and sending what goes out through a [`ChannelSender`].
//!
//! The webhook path: [`check_body_size`] (413) → the channel's signature check on the raw
//! bytes ([`whatsapp::verify_signature`], [`telegram::verify_secret`]; 401) → the parser
//! ([`whatsapp::parse_webhook`], [`telegram::parse_update`]; a malformed body is logged and
//! answered 200) → enqueue. The web chat builds its message with [`web::web_message`].
//!
//! An attachment is downloaded later, in the turn, by a [`MediaFetcher`]
//! ([`WhatsappMediaFetcher`], [`TelegramMediaFetcher`]) from its [`MediaRef`]; what fails is a
//! [`FetchError`] with one line for the person ([`fetch_error_reply`]).

mod config;
mod inbound;
pub mod markup;
mod media;
mod media_fetch;
mod profile;
mod secret;
mod sender;
pub mod telegram;
pub mod web;
pub mod whatsapp;

pub use config::{
    CONNECT_TIMEOUT_SECS, ConfigError, ENV_TELEGRAM_API_BASE, ENV_TELEGRAM_BOT_TOKEN,
    ENV_TELEGRAM_WEBHOOK_SECRET, ENV_WHATSAPP_ACCESS_TOKEN, ENV_WHATSAPP_API_BASE,
    ENV_WHATSAPP_APP_SECRET, ENV_WHATSAPP_PHONE_NUMBER_ID, ENV_WHATSAPP_VERIFY_TOKEN,
    SEND_TIMEOUT_SECS, http_client,
};
pub use inbound::{
    BodyTooLarge, CARD_FIELD_CHARS_MAX, CONTACTS_MAX, Channel, ChatKind, ID_BYTES_MAX,
    InboundMessage, MediaKind, MediaRef, ParseError, WEBHOOK_BODY_BYTES_MAX, check_body_size,
    contact_text, is_valid_id, location_text,
};
pub use media::{
    AUDIO_REPLY, CORRUPT_IMAGE_REPLY, CORRUPT_PDF_REPLY, FILE_TOO_LARGE_REPLY,
    IMAGE_TOO_LARGE_REPLY, MEDIA_DOWNLOAD_FAILED_REPLY, MEDIA_GONE_REPLY,
    MEDIA_NOT_UNDERSTOOD_REPLY, MEDIA_REFUSED_REPLY, MEDIA_TIMEOUT_REPLY, MediaAnswer,
    PHOTO_IS_PDF_REPLY, STICKER_REPLY, TELEGRAM_TOO_LARGE_REPLY, TOO_MANY_PAGES_REPLY,
    TOO_MANY_PIXELS_REPLY, TYPE_MISMATCH_REPLY, UNREADABLE_CARD_REPLY, VIDEO_REPLY, VOICE_REPLY,
    WRONG_TYPE_REPLY, fetch_error_reply, media_answer, media_reply,
};
pub use media_fetch::{
    Checked, Dimensions, FILE_PATH_BYTES_MAX, FetchError, FetchedMedia, IMAGE_BYTES_MAX,
    IMAGE_SIDE_PX_MAX, MEDIA_FETCH_TIMEOUT, MEDIA_FETCH_TIMEOUT_SECS, MEDIA_ID_BYTES_MAX,
    META_ANSWER_BYTES_MAX, MediaFetcher, MediaType, PDF_BYTES_MAX, PDF_PAGES_MAX, SizeLimit,
    TELEGRAM_GET_FILE_BYTES_MAX, TelegramMediaFetcher, WHATSAPP_MEDIA_HOST_SUFFIXES,
    WhatsappMediaFetcher, check_bytes, image_dimensions, is_allowed_download_url, is_fetchable,
    is_plain_media_id, is_safe_file_path, media_http_client, pdf_is_complete, pdf_pages_seen,
    sniff,
};
pub use profile::ChannelProfile;
pub use secret::Secret;
pub use sender::{
    BUTTONS_ONLY_TEXT, ChannelSender, NoLedger, PartLedger, Recipient, SendError, SendReceipt,
    SentButton, button_id, button_index, with_typing,
};
pub use telegram::{TELEGRAM_API_BASE_DEFAULT, TelegramConfig, TelegramSender};
pub use web::{WebSender, web_message};
pub use whatsapp::{WHATSAPP_API_BASE_DEFAULT, WhatsappConfig, WhatsappSender};

/// The provider fixtures of `channel` (`tests/fixtures/<channel>/*.json`), each with its path,
/// for the parsers' unit tests; at least ten, so a test over them cannot pass on an empty list.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn fixture_bodies(channel: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let dir = format!("{}/tests/fixtures/{channel}", env!("CARGO_MANIFEST_DIR"));
    let bodies: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let body = std::fs::read(&path).unwrap();
            (path, body)
        })
        .collect();
    assert!(
        bodies.len() >= 10,
        "only {} fixtures in {dir}",
        bodies.len()
    );
    bodies
}
