//! Downloading an attachment with care: from the provider's API only, capped in size before and
//! during the download, within a deadline, and checked to be what it claims (a JPEG, PNG, WebP
//! or GIF image or a PDF, within the model providers' limits) before anyone keeps it.
//!
//! A fetcher takes a [`MediaRef`] — the provider's media id parsed from the webhook — and never
//! a URL from a message. [`WhatsappMediaFetcher`] asks the Graph API for the file's URL and
//! downloads it with the access token, only from the configured API base's origin or Meta's
//! media hosts ([`WHATSAPP_MEDIA_HOST_SUFFIXES`]); [`TelegramMediaFetcher`] asks `getFile` for
//! the file path and downloads it from the configured Bot API base. Every failure is a
//! [`FetchError`]; [`crate::fetch_error_reply`] is its one short line for the person.

mod download;
mod limits;
mod sniff;
mod telegram;
mod whatsapp;

use async_trait::async_trait;

use crate::{MediaKind, MediaRef};
use sniff::Declared;

pub use download::media_http_client;
pub use limits::{
    FILE_PATH_BYTES_MAX, IMAGE_BYTES_MAX, IMAGE_SIDE_PX_MAX, MEDIA_FETCH_TIMEOUT,
    MEDIA_FETCH_TIMEOUT_SECS, MEDIA_ID_BYTES_MAX, META_ANSWER_BYTES_MAX, PDF_BYTES_MAX,
    PDF_PAGES_MAX, SizeLimit, TELEGRAM_GET_FILE_BYTES_MAX,
};
pub use sniff::{
    Checked, Dimensions, MediaType, check_bytes, image_dimensions, pdf_is_complete, pdf_pages_seen,
    sniff,
};
pub use telegram::{TelegramMediaFetcher, is_safe_file_path};
pub use whatsapp::{WHATSAPP_MEDIA_HOST_SUFFIXES, WhatsappMediaFetcher, is_allowed_download_url};

/// A downloaded attachment that passed every check.
#[derive(Clone, PartialEq, Eq)]
pub struct FetchedMedia {
    /// The file's bytes, exactly as the provider served them.
    pub bytes: Vec<u8>,
    /// Its type, read from the bytes (and agreeing with every declared type).
    pub media_type: MediaType,
    /// An image's width and height from its header; `None` for a PDF.
    pub dimensions: Option<Dimensions>,
}

impl std::fmt::Debug for FetchedMedia {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchedMedia")
            .field("bytes", &self.bytes.len())
            .field("media_type", &self.media_type)
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

/// Why an attachment was not fetched. Carries no provider error text and no URL (a Telegram
/// URL holds the bot token), so it is safe to log; [`crate::fetch_error_reply`] renders it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The attachment is of a kind Steward does not read (voice, video, sticker …); nothing
    /// was asked of the provider.
    #[error("{} attachments are not fetched", .0.noun())]
    UnsupportedKind(MediaKind),
    /// The reference carries no usable media id (missing, or not a plain id).
    #[error("the attachment has no usable media id")]
    NoMediaId,
    /// Over a size limit: declared (by the message, the provider or `Content-Length`) before
    /// the download, or counted while streaming (`declared: None`; the download stopped there).
    #[error("the file is over the {}-byte limit{}", .limit.bytes(), .declared.map(|d| format!(" (declared {d} bytes)")).unwrap_or_default())]
    TooLarge {
        /// The limit it ran into.
        limit: SizeLimit,
        /// The size declared, when the refusal came before any byte was read.
        declared: Option<u64>,
    },
    /// Not a type Steward reads (declared or sniffed): an HTML page, a ZIP, a Word file …
    #[error("the file is not an accepted type ({found})")]
    WrongType {
        /// What it was said or found to be.
        found: String,
    },
    /// A declared type disagrees with the bytes (says PNG, is JPEG).
    #[error("declared {} but the bytes are {}", .declared.mime(), .actual.mime())]
    TypeMismatch {
        /// What was declared.
        declared: MediaType,
        /// What the bytes are.
        actual: MediaType,
    },
    /// The bytes are an accepted type that does not fit the kind of attachment (a "photo" that
    /// is a PDF).
    #[error("a {} whose bytes are {}", .kind.noun(), .actual.mime())]
    KindMismatch {
        /// The kind the message said.
        kind: MediaKind,
        /// What the bytes are.
        actual: MediaType,
    },
    /// The provider no longer has it (404, 410): an expired media id or download URL.
    #[error("the provider answered {status}: gone or expired")]
    NotFound {
        /// The HTTP status.
        status: u16,
    },
    /// The provider refused (400 on the media id, 401, 403): another business account's
    /// media, a wrong token, a `file_id` of another bot.
    #[error("the provider refused with {status}")]
    Refused {
        /// The HTTP status.
        status: u16,
    },
    /// The download URL the provider answered is not on an allowed host (the access token is
    /// never sent there).
    #[error("the download URL is not on an allowed host")]
    ForeignUrl,
    /// Telegram's `file_path` is not a plain relative path.
    #[error("the file path is not a plain relative path")]
    BadFilePath,
    /// The provider failed: a 5xx or 429, an unexpected status, a malformed answer, a broken
    /// connection.
    #[error("the provider failed ({reason}{})", .status.map(|s| format!(", status {s}")).unwrap_or_default())]
    Provider {
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// What went wrong, in a few fixed words.
        reason: &'static str,
    },
    /// The fetch took longer than its deadline.
    #[error("the download timed out")]
    Timeout,
    /// An image whose header cannot be read (or says zero pixels).
    #[error("the image header is unreadable")]
    CorruptImage,
    /// An image over [`IMAGE_SIDE_PX_MAX`] on a side.
    #[error("the image is {width}×{height} pixels, over {IMAGE_SIDE_PX_MAX} on a side")]
    TooManyPixels {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// A PDF that does not end like one (`%%EOF` missing): truncated or damaged.
    #[error("the PDF is incomplete")]
    CorruptPdf,
    /// A PDF with more than [`PDF_PAGES_MAX`] pages (a lower bound was already over).
    #[error("the PDF has at least {pages_seen} pages, over {PDF_PAGES_MAX}")]
    TooManyPages {
        /// The pages counted.
        pages_seen: usize,
    },
}

/// Downloads and checks attachments of one channel.
#[async_trait]
pub trait MediaFetcher: Send + Sync {
    /// Downloads `media` (an image or a document; other kinds are
    /// [`FetchError::UnsupportedKind`]) and checks it; the bytes only if every check passed.
    async fn fetch(&self, media: &MediaRef) -> Result<FetchedMedia, FetchError>;
}

/// Whether `kind` is ever fetched: photos and files (a file may be a PDF or an image).
pub fn is_fetchable(kind: MediaKind) -> bool {
    matches!(kind, MediaKind::Image | MediaKind::Document)
}

/// Whether `id` may name a file in a provider's URL: 1 to [`MEDIA_ID_BYTES_MAX`] ASCII letters,
/// digits, `_` and `-` (WhatsApp media ids are digits; Telegram `file_id`s are URL-safe base64).
/// Anything else could change the path it is put in.
pub fn is_plain_media_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MEDIA_ID_BYTES_MAX
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What both fetchers check before any request: the kind and the provider's id for the file,
/// the type the message declared (a type Steward does not read is refused) and the size cap
/// for it, with a declared size over the cap refused. Returns the id and the cap.
fn before_request(media: &MediaRef) -> Result<(&str, SizeLimit), FetchError> {
    let id = media_id(media)?;
    let said = Declared::parse(media.mime.as_deref());
    said.refuse_other()?;
    let limit = said.cap(media.kind);
    download::check_declared_size(media.size_bytes, limit)?;
    Ok((id, limit))
}

/// The media id of `media`, after the kind and the id are checked.
fn media_id(media: &MediaRef) -> Result<&str, FetchError> {
    if !is_fetchable(media.kind) {
        return Err(FetchError::UnsupportedKind(media.kind));
    }
    media
        .provider_media_id
        .as_deref()
        .filter(|id| is_plain_media_id(id))
        .ok_or(FetchError::NoMediaId)
}

#[cfg(test)]
mod tests;
