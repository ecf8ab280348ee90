//! Media in a request (images and documents a person sent) kept as references to a blob store,
//! and their resolution to bytes just before a model call.
//!
//! A stored transcript holds [`ImageSource::Stored`] and [`DocumentSource::Stored`]: a blob key
//! and a media type, never the bytes. Before each call the caller lists the keys
//! ([`CreateRequest::stored_media_keys`]), reads those blobs, and gets a copy of the request with
//! every reference replaced by inline base64 bytes
//! ([`CreateRequest::with_stored_media_resolved`]). The encoding (standard alphabet, padded) is
//! a pure function of the bytes, so the same stored rows and the same blobs give byte-identical
//! requests on every call, and the provider's prompt cache keeps hitting.
//!
//! A reference must never reach a provider: every client calls
//! [`CreateRequest::ensure_media_resolved`] before it builds or sends anything, and refuses with
//! [`LlmError::UnresolvedMedia`].

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::error::LlmError;
use crate::wire::{
    ContentBlock, CreateRequest, DocumentSource, ImageSource, Message, ToolResultContent,
};

/// The `type` tag of a stored source on the wire. The `steward_` prefix keeps it apart from
/// every source type the Anthropic API defines (`base64`, `url`, `text`, `content`, `file`).
pub const STORED_SOURCE_TYPE: &str = "steward_stored";

/// A stored media reference whose bytes were not among the blobs given for resolution.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stored media {key:?} is not among the blobs given; the request was not resolved")]
pub struct MissingMedia {
    /// The blob key that had no bytes.
    pub key: String,
}

impl CreateRequest {
    /// The blob keys of every stored media reference in the request (message blocks and the
    /// blocks of tool results), each once, in order of first appearance.
    pub fn stored_media_keys(&self) -> Vec<&str> {
        stored_media_keys(&self.messages)
    }

    /// A copy of the request with every stored media reference replaced by the blob's bytes,
    /// base64-encoded (standard alphabet, padded), under the reference's media type. Everything
    /// else is unchanged. Fails, naming the key, when a referenced blob is not in `blobs`.
    pub fn with_stored_media_resolved<B: AsRef<[u8]>>(
        &self,
        blobs: &HashMap<String, B>,
    ) -> Result<CreateRequest, MissingMedia> {
        Ok(CreateRequest {
            messages: resolve_stored_media(&self.messages, blobs)?,
            ..self.clone()
        })
    }

    /// `Ok` when no stored media reference is left in the request; otherwise the error every
    /// client returns before any network call. Also catches a reference inside a block kept
    /// verbatim as [`ContentBlock::Unknown`] (a stored source in an unexpected shape).
    pub fn ensure_media_resolved(&self) -> Result<(), LlmError> {
        match first_unresolved(&self.messages) {
            Some(key) => Err(LlmError::UnresolvedMedia { key }),
            None => Ok(()),
        }
    }
}

/// The blob keys of every stored media reference in `messages`, each once, in order of first
/// appearance.
pub fn stored_media_keys(messages: &[Arc<Message>]) -> Vec<&str> {
    let mut keys: Vec<&str> = Vec::new();
    for message in messages {
        collect_keys(&message.content, &mut keys);
    }
    keys
}

fn collect_keys<'a>(blocks: &'a [ContentBlock], keys: &mut Vec<&'a str>) {
    for block in blocks {
        let key = match block {
            ContentBlock::Image(image) => match &image.source {
                ImageSource::Stored { key, .. } => Some(key.as_str()),
                _ => None,
            },
            ContentBlock::Document(document) => match &document.source {
                DocumentSource::Stored { key, .. } => Some(key.as_str()),
                _ => None,
            },
            ContentBlock::ToolResult(result) => {
                if let Some(ToolResultContent::Blocks(inner)) = &result.content {
                    collect_keys(inner, keys);
                }
                None
            }
            _ => None,
        };
        if let Some(key) = key
            && !keys.contains(&key)
        {
            keys.push(key);
        }
    }
}

/// `messages` with every stored media reference replaced by base64 bytes from `blobs` (see
/// [`CreateRequest::with_stored_media_resolved`]). Only the messages holding a reference are
/// copied; the others stay shared.
pub fn resolve_stored_media<B: AsRef<[u8]>>(
    messages: &[Arc<Message>],
    blobs: &HashMap<String, B>,
) -> Result<Vec<Arc<Message>>, MissingMedia> {
    let mut resolved = messages.to_vec();
    for message in &mut resolved {
        if first_unresolved_in(&message.content).is_some() {
            resolve_blocks(&mut Arc::make_mut(message).content, blobs)?;
        }
    }
    Ok(resolved)
}

fn resolve_blocks<B: AsRef<[u8]>>(
    blocks: &mut [ContentBlock],
    blobs: &HashMap<String, B>,
) -> Result<(), MissingMedia> {
    for block in blocks {
        match block {
            ContentBlock::Image(image) => {
                if let ImageSource::Stored { key, media_type } = &image.source {
                    image.source = ImageSource::Base64 {
                        media_type: media_type.clone(),
                        data: encoded(key, blobs)?,
                    };
                }
            }
            ContentBlock::Document(document) => {
                if let DocumentSource::Stored { key, media_type } = &document.source {
                    document.source = DocumentSource::Base64 {
                        media_type: media_type.clone(),
                        data: encoded(key, blobs)?,
                    };
                }
            }
            ContentBlock::ToolResult(result) => {
                if let Some(ToolResultContent::Blocks(inner)) = &mut result.content {
                    resolve_blocks(inner, blobs)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn encoded<B: AsRef<[u8]>>(key: &str, blobs: &HashMap<String, B>) -> Result<String, MissingMedia> {
    blobs
        .get(key)
        .map(|bytes| STANDARD.encode(bytes.as_ref()))
        .ok_or_else(|| MissingMedia {
            key: key.to_owned(),
        })
}

/// The key of the first stored media reference left in `messages`, if any.
fn first_unresolved(messages: &[Arc<Message>]) -> Option<String> {
    messages
        .iter()
        .find_map(|message| first_unresolved_in(&message.content))
}

fn first_unresolved_in(blocks: &[ContentBlock]) -> Option<String> {
    blocks.iter().find_map(|block| match block {
        ContentBlock::Image(image) => match &image.source {
            ImageSource::Stored { key, .. } => Some(key.clone()),
            _ => None,
        },
        ContentBlock::Document(document) => match &document.source {
            DocumentSource::Stored { key, .. } => Some(key.clone()),
            _ => None,
        },
        ContentBlock::ToolResult(result) => match &result.content {
            Some(ToolResultContent::Blocks(inner)) => first_unresolved_in(inner),
            _ => None,
        },
        ContentBlock::Unknown(value) => stored_in_value(value),
        _ => None,
    })
}

/// A stored source anywhere inside a verbatim JSON value: an object whose `type` is
/// [`STORED_SOURCE_TYPE`]. Its key, or a placeholder when it has none.
fn stored_in_value(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some(STORED_SOURCE_TYPE) {
                let key = map.get("key").and_then(Value::as_str).unwrap_or("(no key)");
                return Some(key.to_owned());
            }
            map.values().find_map(stored_in_value)
        }
        Value::Array(items) => items.iter().find_map(stored_in_value),
        _ => None,
    }
}

/// Longest document name derived from a title, in characters. The name only labels the file
/// for the model; a short one keeps an untrusted file name from carrying much text.
#[cfg(any(feature = "http", feature = "bedrock"))]
pub(crate) const DOCUMENT_NAME_CHARS_MAX: usize = 64;

/// Names for the documents of one request, unique within it and deterministic: the same
/// request always gets the same names (the prompt cache needs the same bytes).
///
/// A name is the document's title reduced to ASCII letters and digits, hyphens, parentheses
/// and square brackets, words separated by single spaces (what Bedrock accepts), at most
/// [`DOCUMENT_NAME_CHARS_MAX`] characters; `document-N` (N counting the request's documents
/// from 1) when nothing is left. A name already given in the request gets ` (N)` appended.
#[cfg(any(feature = "http", feature = "bedrock"))]
#[derive(Debug, Default)]
pub(crate) struct DocumentNames {
    given: Vec<String>,
}

#[cfg(any(feature = "http", feature = "bedrock"))]
impl DocumentNames {
    /// The name of the request's next document.
    pub(crate) fn next(&mut self, title: Option<&str>) -> String {
        let ordinal = self.given.len() + 1;
        let base = title.map(safe_name).unwrap_or_default();
        let base = if base.is_empty() {
            format!("document-{ordinal}")
        } else {
            base
        };
        let mut name = base.clone();
        let mut suffix = ordinal;
        while self.given.contains(&name) {
            name = format!("{base} ({suffix})");
            suffix += 1;
        }
        self.given.push(name.clone());
        name
    }
}

#[cfg(any(feature = "http", feature = "bedrock"))]
fn safe_name(title: &str) -> String {
    let mapped: String = title
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '(' | ')' | '[' | ']') {
                c
            } else {
                ' '
            }
        })
        .collect();
    let words: Vec<&str> = mapped.split_whitespace().collect();
    let joined = words.join(" ");
    joined
        .chars()
        .take(DOCUMENT_NAME_CHARS_MAX)
        .collect::<String>()
        .trim_end()
        .to_owned()
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
