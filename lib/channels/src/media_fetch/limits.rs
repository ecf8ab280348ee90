//! Every limit on a downloaded attachment, in one place, each with its reason. The byte and
//! pixel limits are the model providers' (Claude API and Bedrock's Converse API), so anything
//! that passes here can be handed to either as an image or document block unchanged.

use std::time::Duration;

/// Largest image, in bytes. Bedrock's Converse API takes images up to 3.75 MB; the Claude API
/// takes 5 MB of base64, which is 3.75 MB of raw bytes. The tighter reading (decimal MB) fits
/// both. WhatsApp and Telegram photos are compressed by the app and sit far below it; an
/// image sent as a file may not.
pub const IMAGE_BYTES_MAX: u64 = 3_750_000;

/// Largest PDF, in bytes: Bedrock's Converse API takes documents up to 4.5 MB (the Claude API
/// allows more, so this fits both). It is also the cap on a file whose type is not known yet,
/// since no accepted type may be larger.
pub const PDF_BYTES_MAX: u64 = 4_500_000;

/// Longest side of an image, in pixels: both providers refuse images over 8000 px on a side.
/// (They scale big images down themselves, so anything within this is accepted as is.)
pub const IMAGE_SIDE_PX_MAX: u32 = 8_000;

/// Most pages of a PDF: the providers read PDFs of up to 100 pages in one request. Counting
/// pages exactly needs a PDF parser; what is checked is a lower bound (see
/// [`super::sniff::pdf_pages_seen`]) — over this, the PDF is refused here; otherwise a longer
/// PDF is refused by the provider.
pub const PDF_PAGES_MAX: usize = 100;

/// Largest file the Telegram Bot API lets a bot download (`getFile` answers "file is too
/// big" above it). Far above [`PDF_BYTES_MAX`]; kept so that refusal has its own reason.
pub const TELEGRAM_GET_FILE_BYTES_MAX: u64 = 20 * 1024 * 1024;

/// Longest a whole fetch may take (both hops and the body), in seconds. A file within
/// [`PDF_BYTES_MAX`] downloads in a few seconds on any working link; a stalled provider must
/// not hold a turn (and its Lambda invocation) for long. Tests inject a shorter deadline.
pub const MEDIA_FETCH_TIMEOUT_SECS: u64 = 20;

/// [`MEDIA_FETCH_TIMEOUT_SECS`] as a duration.
pub const MEDIA_FETCH_TIMEOUT: Duration = Duration::from_secs(MEDIA_FETCH_TIMEOUT_SECS);

/// Longest provider answer about a file (WhatsApp's media JSON, Telegram's `getFile`), in
/// bytes: a few hundred bytes in practice; a bound so a broken provider cannot make us buffer.
pub const META_ANSWER_BYTES_MAX: u64 = 64 * 1024;

/// Longest media id or `file_id` accepted, in bytes (WhatsApp ids are ~16 digits, Telegram
/// `file_id`s under 100 characters).
pub const MEDIA_ID_BYTES_MAX: usize = 256;

/// Longest Telegram `file_path` accepted, in bytes (they look like `photos/file_12.jpg`).
pub const FILE_PATH_BYTES_MAX: usize = 256;

/// Which size limit a file ran into (the person-facing line names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeLimit {
    /// [`IMAGE_BYTES_MAX`].
    Image,
    /// [`PDF_BYTES_MAX`] (also the cap on a file of a type not known yet).
    File,
    /// [`TELEGRAM_GET_FILE_BYTES_MAX`]: Telegram will not hand the file to a bot at all.
    TelegramBotApi,
}

impl SizeLimit {
    /// The limit in bytes.
    pub fn bytes(self) -> u64 {
        match self {
            Self::Image => IMAGE_BYTES_MAX,
            Self::File => PDF_BYTES_MAX,
            Self::TelegramBotApi => TELEGRAM_GET_FILE_BYTES_MAX,
        }
    }
}
