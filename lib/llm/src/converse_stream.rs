//! Assembles a `ConverseStream` answer from Amazon Bedrock into the same [`CreateResponse`] the
//! `Converse` call gives.
//!
//! The events: `messageStart` (the role), per content block an optional `contentBlockStart`
//! (tool calls: id and name), `contentBlockDelta`s (text, reasoning text, signature or
//! redacted reasoning, tool input as JSON fragments, citations) and `contentBlockStop`; then
//! `messageStop` (the stop reason) and `metadata` (usage with cache reads and writes). Each
//! finished block is built as the SDK's own Converse block and mapped by the same code as a
//! non-streamed answer ([`crate::converse::from_block`], [`crate::converse::from_parts`]), so
//! both paths give the same blocks, usage and stop reason.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use aws_sdk_bedrockruntime::primitives::Blob;
use aws_sdk_bedrockruntime::types as bt;
use serde_json::Value;

use crate::converse::{from_block, from_parts, to_document, unsupported_block};
use crate::error::{LlmError, body_snippet};
use crate::wire::{ContentBlock, CreateResponse};

fn malformed(message: impl Into<String>) -> LlmError {
    LlmError::MalformedResponse {
        message: message.into(),
    }
}

/// One content block being assembled.
#[derive(Debug)]
enum Partial {
    Text(String),
    Reasoning {
        text: String,
        signature: Option<String>,
    },
    Redacted(Vec<u8>),
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
    /// A block Steward has no use for (image, tool result…), named by its kind.
    Unsupported(&'static str),
}

impl Partial {
    fn kind(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Reasoning { .. } => "reasoning",
            Self::Redacted(_) => "redacted reasoning",
            Self::ToolUse { .. } => "tool use",
            Self::Unsupported(kind) => kind,
        }
    }
}

/// Builds one answer from its events: feed each to [`StreamAssembler::event`], then call
/// [`StreamAssembler::finish`] when the stream ends.
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    started: bool,
    blocks: BTreeMap<i32, (Partial, bool)>,
    stop_reason: Option<bt::StopReason>,
    usage: Option<bt::TokenUsage>,
}

impl StreamAssembler {
    /// True once a content block has begun: the model is generating (and billing) output, so a
    /// failure is not retried.
    pub(crate) fn output_started(&self) -> bool {
        !self.blocks.is_empty()
    }

    /// Reads one event of the stream.
    pub(crate) fn event(&mut self, event: bt::ConverseStreamOutput) -> Result<(), LlmError> {
        match event {
            bt::ConverseStreamOutput::MessageStart(_) => {
                if self.started {
                    return Err(malformed("the stream sent messageStart twice"));
                }
                self.started = true;
            }
            bt::ConverseStreamOutput::ContentBlockStart(start) => {
                self.require_start("contentBlockStart")?;
                let index = start.content_block_index;
                if self.blocks.contains_key(&index) {
                    return Err(malformed(format!(
                        "content block {index} started twice in the stream"
                    )));
                }
                let partial = match start.start {
                    Some(bt::ContentBlockStart::ToolUse(tool)) => Partial::ToolUse {
                        id: tool.tool_use_id,
                        name: tool.name,
                        input: String::new(),
                    },
                    Some(bt::ContentBlockStart::Image(_)) => Partial::Unsupported("image"),
                    Some(bt::ContentBlockStart::ToolResult(_)) => {
                        Partial::Unsupported("toolResult")
                    }
                    _ => Partial::Unsupported("other"),
                };
                self.blocks.insert(index, (partial, false));
            }
            bt::ConverseStreamOutput::ContentBlockDelta(delta) => {
                self.require_start("contentBlockDelta")?;
                let index = delta.content_block_index;
                let Some(delta) = delta.delta else {
                    return Err(malformed(format!(
                        "the stream sent an empty delta for content block {index}"
                    )));
                };
                self.apply_delta(index, delta)?;
            }
            bt::ConverseStreamOutput::ContentBlockStop(stop) => {
                let index = stop.content_block_index;
                match self.blocks.get_mut(&index) {
                    Some((_, stopped @ false)) => *stopped = true,
                    Some(_) => {
                        return Err(malformed(format!(
                            "content block {index} stopped twice in the stream"
                        )));
                    }
                    // A block with no deltas at all (an empty text) has nothing to keep.
                    None => {}
                }
            }
            bt::ConverseStreamOutput::MessageStop(stop) => {
                self.require_start("messageStop")?;
                self.stop_reason = Some(stop.stop_reason);
            }
            bt::ConverseStreamOutput::Metadata(metadata) => {
                self.usage = metadata.usage;
            }
            // Newer event kinds carry nothing this answer needs.
            other => tracing::debug!(event = ?other, "skipping an unknown Converse stream event"),
        }
        Ok(())
    }

    fn require_start(&self, kind: &str) -> Result<(), LlmError> {
        if !self.started {
            return Err(malformed(format!(
                "the stream sent {kind} before messageStart"
            )));
        }
        if self.stop_reason.is_some() {
            return Err(malformed(format!(
                "the stream sent {kind} after messageStop"
            )));
        }
        Ok(())
    }

    fn apply_delta(&mut self, index: i32, delta: bt::ContentBlockDelta) -> Result<(), LlmError> {
        // The first delta of a block without a start event says what the block is.
        let (partial, stopped) = match self.blocks.entry(index) {
            Entry::Occupied(slot) => slot.into_mut(),
            Entry::Vacant(slot) => {
                let fresh = match &delta {
                    bt::ContentBlockDelta::Text(_) => Partial::Text(String::new()),
                    bt::ContentBlockDelta::ReasoningContent(
                        bt::ReasoningContentBlockDelta::RedactedContent(_),
                    ) => Partial::Redacted(Vec::new()),
                    bt::ContentBlockDelta::ReasoningContent(_) => Partial::Reasoning {
                        text: String::new(),
                        signature: None,
                    },
                    // Citations arrive beside the text they cite; a non-streamed answer keeps that text
                    // alone too.
                    bt::ContentBlockDelta::Citation(_) => Partial::Text(String::new()),
                    bt::ContentBlockDelta::Image(_) => Partial::Unsupported("image"),
                    bt::ContentBlockDelta::ToolResult(_) => Partial::Unsupported("toolResult"),
                    bt::ContentBlockDelta::ToolUse(_) => {
                        return Err(malformed(format!(
                            "the stream sent tool input for content block {index}, which never started"
                        )));
                    }
                    _ => Partial::Unsupported("other"),
                };
                slot.insert((fresh, false))
            }
        };
        if *stopped {
            return Err(malformed(format!(
                "the stream sent a delta for content block {index}, which had stopped"
            )));
        }
        let mismatch = |partial: &Partial| {
            malformed(format!(
                "the stream mixed delta kinds in content block {index} (a {} block)",
                partial.kind()
            ))
        };
        match (partial, delta) {
            (Partial::Text(text), bt::ContentBlockDelta::Text(piece)) => text.push_str(&piece),
            (Partial::Text(_), bt::ContentBlockDelta::Citation(_)) => {}
            (
                Partial::Reasoning { text, .. },
                bt::ContentBlockDelta::ReasoningContent(bt::ReasoningContentBlockDelta::Text(
                    piece,
                )),
            ) => text.push_str(&piece),
            (
                Partial::Reasoning { signature, .. },
                bt::ContentBlockDelta::ReasoningContent(bt::ReasoningContentBlockDelta::Signature(
                    piece,
                )),
            ) => signature.get_or_insert_with(String::new).push_str(&piece),
            (
                Partial::Redacted(bytes),
                bt::ContentBlockDelta::ReasoningContent(
                    bt::ReasoningContentBlockDelta::RedactedContent(blob),
                ),
            ) => bytes.extend_from_slice(blob.as_ref()),
            (Partial::ToolUse { input, .. }, bt::ContentBlockDelta::ToolUse(piece)) => {
                input.push_str(&piece.input)
            }
            (Partial::Unsupported(_), _) => {}
            (partial, _) => return Err(mismatch(partial)),
        }
        Ok(())
    }

    /// The complete answer once the stream has ended, or
    /// [`LlmError::MalformedResponse`] when it ended early or a block cannot be built.
    pub(crate) fn finish(self, model: &str, id: String) -> Result<CreateResponse, LlmError> {
        if !self.started {
            return Err(malformed("the stream ended without messageStart"));
        }
        let Some(stop_reason) = self.stop_reason else {
            return Err(malformed(format!(
                "the stream ended after {} content block(s) without messageStop: the answer is incomplete",
                self.blocks.len()
            )));
        };
        let content = self
            .blocks
            .into_values()
            .map(|(partial, _)| build_block(partial))
            .collect::<Result<Vec<_>, _>>()?;
        from_parts(&stop_reason, Some(content), self.usage.as_ref(), model, id)
    }
}

/// A finished block, built as the SDK's Converse block and mapped like a non-streamed one.
fn build_block(partial: Partial) -> Result<ContentBlock, LlmError> {
    let built = |error: aws_sdk_bedrockruntime::error::BuildError| {
        malformed(format!("a streamed block could not be built: {error}"))
    };
    let block = match partial {
        Partial::Text(text) => bt::ContentBlock::Text(text),
        Partial::Reasoning { text, signature } => {
            bt::ContentBlock::ReasoningContent(bt::ReasoningContentBlock::ReasoningText(
                bt::ReasoningTextBlock::builder()
                    .text(text)
                    .set_signature(signature)
                    .build()
                    .map_err(built)?,
            ))
        }
        Partial::Redacted(bytes) => bt::ContentBlock::ReasoningContent(
            bt::ReasoningContentBlock::RedactedContent(Blob::new(bytes)),
        ),
        Partial::ToolUse { id, name, input } => {
            // A tool called with no arguments streams no input at all.
            let value: Value = if input.trim().is_empty() {
                Value::Object(serde_json::Map::new())
            } else {
                serde_json::from_str(&input).map_err(|error| {
                    malformed(format!(
                        "the streamed input of tool call {id} is not JSON ({error}): {}",
                        body_snippet(input.as_bytes())
                    ))
                })?
            };
            bt::ContentBlock::ToolUse(
                bt::ToolUseBlock::builder()
                    .tool_use_id(id)
                    .name(name)
                    .input(to_document(&value))
                    .build()
                    .map_err(built)?,
            )
        }
        Partial::Unsupported(kind) => return Ok(unsupported_block(kind)),
    };
    Ok(from_block(&block))
}

#[cfg(test)]
#[path = "converse_stream_tests.rs"]
mod tests;
