//! What a downloaded file really is: its type read from its first bytes (magic numbers), never
//! taken on trust from the message, the provider's answer or the `Content-Type` header; and the
//! checks that it is one Steward reads, agrees with what was declared and with the kind of
//! attachment, and is within the providers' limits (bytes, pixels, pages).
//!
//! Nothing here decodes an image: width and height come from the header (`imagesize`), so a
//! decompression bomb costs nothing. A PDF gets cheap, honest checks only (see [`check_bytes`]).

use serde::{Deserialize, Serialize};

use super::FetchError;
use super::limits::{IMAGE_SIDE_PX_MAX, PDF_PAGES_MAX, SizeLimit};
use crate::MediaKind;

/// A media type Steward accepts: the images and documents the model providers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MediaType {
    /// `image/jpeg`.
    #[serde(rename = "image/jpeg")]
    Jpeg,
    /// `image/png`.
    #[serde(rename = "image/png")]
    Png,
    /// `image/webp`.
    #[serde(rename = "image/webp")]
    Webp,
    /// `image/gif`.
    #[serde(rename = "image/gif")]
    Gif,
    /// `application/pdf`.
    #[serde(rename = "application/pdf")]
    Pdf,
}

impl MediaType {
    /// Every accepted type.
    pub const ALL: [Self; 5] = [Self::Jpeg, Self::Png, Self::Webp, Self::Gif, Self::Pdf];

    /// The MIME type, as the model providers name it.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
            Self::Webp => "image/webp",
            Self::Gif => "image/gif",
            Self::Pdf => "application/pdf",
        }
    }

    /// Whether it is an image (an image block to the model; a PDF is a document block).
    pub fn is_image(self) -> bool {
        !matches!(self, Self::Pdf)
    }

    /// The byte limit of this type.
    pub fn size_limit(self) -> SizeLimit {
        if self.is_image() {
            SizeLimit::Image
        } else {
            SizeLimit::File
        }
    }
}

/// What a declared MIME type (the message's, the provider's answer, a `Content-Type`) claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Declared {
    /// Nothing, or a generic "some bytes" (`application/octet-stream`): the bytes decide.
    Nothing,
    /// One of the accepted types.
    Accepted(MediaType),
    /// A type Steward does not read (`text/html`, `application/zip`, `video/mp4` …).
    Other(String),
}

impl Declared {
    /// Reads a MIME type: parameters (`; charset=…`) and case ignored; common aliases
    /// (`image/jpg`, `image/pjpeg`, `application/x-pdf`) accepted.
    pub(crate) fn parse(mime: Option<&str>) -> Self {
        let Some(mime) = mime else {
            return Self::Nothing;
        };
        let essence = mime
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "" | "application/octet-stream" | "binary/octet-stream" => Self::Nothing,
            "image/jpeg" | "image/jpg" | "image/pjpeg" => Self::Accepted(MediaType::Jpeg),
            "image/png" => Self::Accepted(MediaType::Png),
            "image/webp" => Self::Accepted(MediaType::Webp),
            "image/gif" => Self::Accepted(MediaType::Gif),
            "application/pdf" | "application/x-pdf" => Self::Accepted(MediaType::Pdf),
            _ => Self::Other(essence.chars().take(100).collect()),
        }
    }

    /// Refuses a declared type Steward does not read, before anything is downloaded.
    pub(crate) fn refuse_other(&self) -> Result<(), FetchError> {
        match self {
            Self::Other(mime) => Err(FetchError::WrongType {
                found: mime.clone(),
            }),
            Self::Nothing | Self::Accepted(_) => Ok(()),
        }
    }

    /// The byte cap before the bytes are seen, for an attachment of `kind`: an image's when
    /// it is (or is declared) an image, otherwise the largest accepted type's.
    pub(crate) fn cap(&self, kind: MediaKind) -> SizeLimit {
        match (kind, self) {
            (MediaKind::Image, _) => SizeLimit::Image,
            (_, Self::Accepted(t)) => t.size_limit(),
            _ => SizeLimit::File,
        }
    }
}

/// The type of `bytes` by its magic number; `None` for anything Steward does not accept.
pub fn sniff(bytes: &[u8]) -> Option<MediaType> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(MediaType::Jpeg)
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(MediaType::Png)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(MediaType::Gif)
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some(MediaType::Webp)
    } else if bytes.starts_with(b"%PDF-") {
        Some(MediaType::Pdf)
    } else {
        None
    }
}

/// An image's size in pixels, read from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimensions {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// The width and height in `bytes`' header (an image of an accepted type); a header that
/// cannot be read, or says zero, is [`FetchError::CorruptImage`].
pub fn image_dimensions(bytes: &[u8]) -> Result<Dimensions, FetchError> {
    let size = imagesize::blob_size(bytes).map_err(|_| FetchError::CorruptImage)?;
    let side = |n: usize| u32::try_from(n).ok().filter(|&n| n > 0);
    match (side(size.width), side(size.height)) {
        (Some(width), Some(height)) => Ok(Dimensions { width, height }),
        _ => Err(FetchError::CorruptImage),
    }
}

/// How far from the end the `%%EOF` marker may sit: readers look for it in the last 1024
/// bytes, since some writers append blank lines or padding after it.
const PDF_EOF_WINDOW: usize = 1024;

/// Whether `bytes` ends like a complete PDF: `%%EOF` in the last [`PDF_EOF_WINDOW`] bytes
/// (a download cut short, or a file truncated by the sender, lacks it).
pub fn pdf_is_complete(bytes: &[u8]) -> bool {
    let tail = &bytes[bytes.len().saturating_sub(PDF_EOF_WINDOW)..];
    tail.windows(5).any(|w| w == b"%%EOF")
}

/// A lower bound on a PDF's pages: the page objects (`/Type /Page`, not `/Pages`) written
/// uncompressed. Pages inside compressed object streams are not seen, so this can be low —
/// never high for an ordinary PDF — which is why it only ever refuses, never vouches.
pub fn pdf_pages_seen(bytes: &[u8]) -> usize {
    const TYPE: &[u8] = b"/Type";
    let mut count = 0;
    let mut i = 0;
    while let Some(at) = find(&bytes[i..], TYPE) {
        let mut j = i + at + TYPE.len();
        while bytes.get(j).is_some_and(|b| b.is_ascii_whitespace()) {
            j += 1;
        }
        if bytes[j.min(bytes.len())..].starts_with(b"/Page") {
            let after = bytes.get(j + 5);
            // `/Pages` (the page tree) and other names continue with a regular character.
            if !after.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                count += 1;
            }
        }
        i = j.min(bytes.len());
    }
    count
}

/// The first position of `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A file that passed every check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Its type, from its bytes.
    pub media_type: MediaType,
    /// An image's width and height; `None` for a PDF.
    pub dimensions: Option<Dimensions>,
}

/// Checks downloaded `bytes` for an attachment of `kind`, against every type `declared` for
/// it (the message's MIME type, the provider's, the `Content-Type`):
///
/// * the bytes are an accepted type ([`FetchError::WrongType`] — an HTML error page, a ZIP …);
/// * a photo is an image, never a PDF ([`FetchError::KindMismatch`]; a file may be either);
/// * every declared accepted type agrees with the bytes ([`FetchError::TypeMismatch`]);
/// * within the type's byte limit ([`FetchError::TooLarge`]);
/// * an image's header reads and its sides are within [`IMAGE_SIDE_PX_MAX`]
///   ([`FetchError::CorruptImage`], [`FetchError::TooManyPixels`]);
/// * a PDF ends with `%%EOF` ([`FetchError::CorruptPdf`]) and shows no more than
///   [`PDF_PAGES_MAX`] page objects ([`FetchError::TooManyPages`]; a lower bound, so a longer
///   PDF with compressed page objects is left for the provider to refuse).
pub fn check_bytes(
    kind: MediaKind,
    declared: &[Option<&str>],
    bytes: &[u8],
) -> Result<Checked, FetchError> {
    let Some(media_type) = sniff(bytes) else {
        return Err(FetchError::WrongType {
            found: "unrecognised bytes".to_owned(),
        });
    };
    if kind == MediaKind::Image && !media_type.is_image() {
        return Err(FetchError::KindMismatch {
            kind,
            actual: media_type,
        });
    }
    for claim in declared.iter().map(|mime| Declared::parse(*mime)) {
        match claim {
            Declared::Accepted(said) if said != media_type => {
                return Err(FetchError::TypeMismatch {
                    declared: said,
                    actual: media_type,
                });
            }
            Declared::Other(found) => return Err(FetchError::WrongType { found }),
            Declared::Accepted(_) | Declared::Nothing => {}
        }
    }
    let limit = media_type.size_limit();
    if bytes.len() as u64 > limit.bytes() {
        return Err(FetchError::TooLarge {
            limit,
            declared: None,
        });
    }
    if media_type.is_image() {
        let dimensions = image_dimensions(bytes)?;
        if dimensions.width > IMAGE_SIDE_PX_MAX || dimensions.height > IMAGE_SIDE_PX_MAX {
            return Err(FetchError::TooManyPixels {
                width: dimensions.width,
                height: dimensions.height,
            });
        }
        return Ok(Checked {
            media_type,
            dimensions: Some(dimensions),
        });
    }
    if !pdf_is_complete(bytes) {
        return Err(FetchError::CorruptPdf);
    }
    let pages_seen = pdf_pages_seen(bytes);
    if pages_seen > PDF_PAGES_MAX {
        return Err(FetchError::TooManyPages { pages_seen });
    }
    Ok(Checked {
        media_type,
        dimensions: None,
    })
}
