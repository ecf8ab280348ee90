//! Assembles a streamed Messages API answer (`stream: true`, server-sent events) into the same
//! [`CreateResponse`] the non-streaming call returns.
//!
//! The events, in order: `message_start` (the message with empty content and the input usage),
//! then per content block `content_block_start`, any number of `content_block_delta`
//! (`text_delta`, `input_json_delta`, `thinking_delta`, `signature_delta`, `citations_delta`)
//! and `content_block_stop`; then `message_delta` (stop reason, cumulative usage) and
//! `message_stop`. `ping` may come anywhere; `error` ends the stream with a failure.
//!
//! The assembler works on JSON values, not on typed blocks: each block starts as the object the
//! API sent, deltas fill its fields, and the finished message goes through the same
//! deserialization as a non-streamed body. So a streamed answer is exactly the answer the
//! non-streaming call gives, fields this crate does not model included. Event types it does not
//! know are skipped (the API announces that new ones may appear); a delta of an unknown type is
//! refused, since skipping it would silently drop part of the answer.

use serde_json::{Map, Value};

use crate::error::LlmError;
use crate::wire::CreateResponse;

/// What one event meant for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Keep reading.
    More,
    /// `message_stop` arrived: the answer is complete.
    Done,
}

/// One content block being assembled.
#[derive(Debug)]
struct Block {
    /// The block as `content_block_start` sent it, filled in by the deltas.
    value: Map<String, Value>,
    /// The concatenated `input_json_delta` fragments, parsed into `input` at the block's stop.
    partial_json: Option<String>,
    /// `content_block_stop` arrived.
    stopped: bool,
}

/// Builds one answer from its events. Feed each event's `data` to [`Assembler::event`], then
/// call [`Assembler::finish`].
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    message: Option<Map<String, Value>>,
    blocks: Vec<Block>,
    events: usize,
    stopped: bool,
}

fn malformed(message: impl Into<String>) -> LlmError {
    LlmError::MalformedResponse {
        message: message.into(),
    }
}

/// The object at `key` of `object`, or a clear error naming the event.
fn object_field(
    object: &mut Map<String, Value>,
    key: &str,
    event: &str,
) -> Result<Map<String, Value>, LlmError> {
    match object.remove(key) {
        Some(Value::Object(inner)) => Ok(inner),
        _ => Err(malformed(format!(
            "the stream's {event} event has no `{key}` object"
        ))),
    }
}

/// Appends `piece` to the string field `key` of `block` (creating it when absent).
fn append(block: &mut Map<String, Value>, key: &str, piece: &str) -> Result<(), LlmError> {
    match block
        .entry(key.to_owned())
        .or_insert_with(|| Value::String(String::new()))
    {
        Value::String(text) => {
            text.push_str(piece);
            Ok(())
        }
        _ => Err(malformed(format!(
            "a streamed delta appends to `{key}`, which is not a string in its block"
        ))),
    }
}

impl Assembler {
    /// True once the first content block has started: from then on the provider is generating
    /// (and billing) output, so a failure is not retried.
    pub(crate) fn output_started(&self) -> bool {
        !self.blocks.is_empty()
    }

    /// Reads one event's `data` (a JSON object whose `type` names the event).
    ///
    /// A streamed `error` event comes back as the same [`LlmError`] its HTTP status would give
    /// (through `error_of`, which maps the API's error type); anything malformed is
    /// [`LlmError::MalformedResponse`].
    pub(crate) fn event(
        &mut self,
        data: &str,
        error_of: impl FnOnce(&Value) -> LlmError,
    ) -> Result<Progress, LlmError> {
        self.events += 1;
        let value: Value = serde_json::from_str(data).map_err(|error| {
            malformed(format!(
                "event {} of the stream is not JSON ({error}): {}",
                self.events,
                crate::error::body_snippet(data.as_bytes())
            ))
        })?;
        let Value::Object(mut event) = value else {
            return Err(malformed(format!(
                "event {} of the stream is not a JSON object",
                self.events
            )));
        };
        let kind = match event.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => {
                return Err(malformed(format!(
                    "event {} of the stream has no `type`",
                    self.events
                )));
            }
        };
        if self.stopped && kind != "ping" {
            return Err(malformed(format!(
                "the stream sent a {kind} event after message_stop"
            )));
        }
        match kind.as_str() {
            "ping" => {}
            "error" => return Err(error_of(&Value::Object(event))),
            "message_start" => {
                if self.message.is_some() {
                    return Err(malformed("the stream sent message_start twice"));
                }
                let mut message = object_field(&mut event, "message", "message_start")?;
                // The answer's blocks are the streamed ones; message_start carries none.
                message.insert("content".to_owned(), Value::Array(Vec::new()));
                self.message = Some(message);
            }
            "content_block_start" => {
                self.require_message(&kind)?;
                let index = index_of(&event, &kind)?;
                if index != self.blocks.len() {
                    return Err(malformed(format!(
                        "content block {index} started, but block {} was expected next",
                        self.blocks.len()
                    )));
                }
                if let Some(previous) = self.blocks.last()
                    && !previous.stopped
                {
                    return Err(malformed(format!(
                        "content block {index} started before block {} stopped",
                        index - 1
                    )));
                }
                let value = object_field(&mut event, "content_block", &kind)?;
                self.blocks.push(Block {
                    value,
                    partial_json: None,
                    stopped: false,
                });
            }
            "content_block_delta" => {
                let block = self.open_block(&event, &kind)?;
                let mut delta = object_field(&mut event, "delta", &kind)?;
                apply_delta(block, &mut delta)?;
            }
            "content_block_stop" => {
                let block = self.open_block(&event, &kind)?;
                if let Some(json) = block.partial_json.take() {
                    // A tool called with no arguments streams no fragments at all.
                    let input = if json.trim().is_empty() {
                        Value::Object(Map::new())
                    } else {
                        serde_json::from_str(&json).map_err(|error| {
                            malformed(format!(
                                "the streamed tool input is not JSON ({error}): {}",
                                crate::error::body_snippet(json.as_bytes())
                            ))
                        })?
                    };
                    block.value.insert("input".to_owned(), input);
                }
                block.stopped = true;
            }
            "message_delta" => {
                let message = self.require_message(&kind)?;
                // stop_reason, stop_sequence and anything newer, set on the message.
                if let Some(Value::Object(delta)) = event.remove("delta") {
                    for (key, value) in delta {
                        message.insert(key, value);
                    }
                }
                // Cumulative counts: each one sent replaces the one from message_start; a
                // count sent as null leaves it as it was.
                if let Some(Value::Object(usage)) = event.remove("usage") {
                    let totals = message
                        .entry("usage".to_owned())
                        .or_insert_with(|| Value::Object(Map::new()));
                    let Value::Object(totals) = totals else {
                        return Err(malformed("the streamed message's `usage` is not an object"));
                    };
                    for (key, value) in usage {
                        if !value.is_null() {
                            totals.insert(key, value);
                        }
                    }
                }
            }
            "message_stop" => {
                self.require_message(&kind)?;
                self.stopped = true;
                return Ok(Progress::Done);
            }
            // New event types may appear in the API; they carry nothing this answer needs.
            other => tracing::debug!(event = other, "skipping an unknown stream event"),
        }
        Ok(Progress::More)
    }

    fn require_message(&mut self, kind: &str) -> Result<&mut Map<String, Value>, LlmError> {
        self.message
            .as_mut()
            .ok_or_else(|| malformed(format!("the stream sent {kind} before message_start")))
    }

    fn open_block(
        &mut self,
        event: &Map<String, Value>,
        kind: &str,
    ) -> Result<&mut Block, LlmError> {
        let index = index_of(event, kind)?;
        match self.blocks.get_mut(index) {
            Some(block) if !block.stopped => Ok(block),
            Some(_) => Err(malformed(format!(
                "the stream sent {kind} for content block {index}, which had stopped"
            ))),
            None => Err(malformed(format!(
                "the stream sent {kind} for content block {index}, which never started"
            ))),
        }
    }

    /// The complete answer, or [`LlmError::MalformedResponse`] when the stream ended early
    /// (no `message_stop`) or the assembled message is not a Messages API response.
    pub(crate) fn finish(self) -> Result<CreateResponse, LlmError> {
        let Some(mut message) = self.message else {
            return Err(malformed(format!(
                "the stream ended after {} event(s) without message_start",
                self.events
            )));
        };
        if !self.stopped {
            return Err(malformed(format!(
                "the stream ended after {} event(s) and {} content block(s) without message_stop: the answer is incomplete",
                self.events,
                self.blocks.len()
            )));
        }
        if let Some(open) = self.blocks.iter().position(|block| !block.stopped) {
            return Err(malformed(format!(
                "the stream stopped with content block {open} still open"
            )));
        }
        message.insert(
            "content".to_owned(),
            Value::Array(
                self.blocks
                    .into_iter()
                    .map(|block| Value::Object(block.value))
                    .collect(),
            ),
        );
        serde_json::from_value(Value::Object(message)).map_err(|error| {
            malformed(format!(
                "the streamed message is not a Messages API response: {error}"
            ))
        })
    }
}

/// The `index` of a block event.
fn index_of(event: &Map<String, Value>, kind: &str) -> Result<usize, LlmError> {
    event
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|index| usize::try_from(index).ok())
        .ok_or_else(|| malformed(format!("the stream's {kind} event has no block `index`")))
}

/// Applies one `content_block_delta` to its block.
fn apply_delta(block: &mut Block, delta: &mut Map<String, Value>) -> Result<(), LlmError> {
    let kind = delta
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let string = |delta: &Map<String, Value>, key: &str| -> Result<String, LlmError> {
        match delta.get(key) {
            Some(Value::String(piece)) => Ok(piece.clone()),
            _ => Err(malformed(format!(
                "a streamed {kind} has no `{key}` string"
            ))),
        }
    };
    match kind.as_str() {
        "text_delta" => append(&mut block.value, "text", &string(delta, "text")?),
        "thinking_delta" => append(&mut block.value, "thinking", &string(delta, "thinking")?),
        "signature_delta" => append(&mut block.value, "signature", &string(delta, "signature")?),
        "input_json_delta" => {
            let piece = string(delta, "partial_json")?;
            block
                .partial_json
                .get_or_insert_with(String::new)
                .push_str(&piece);
            Ok(())
        }
        "citations_delta" => {
            let citation = delta
                .remove("citation")
                .ok_or_else(|| malformed("a streamed citations_delta has no `citation`"))?;
            match block
                .value
                .entry("citations".to_owned())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(citations) => {
                    citations.push(citation);
                    Ok(())
                }
                // `citations: null` on the start event: the first citation makes the list.
                slot @ Value::Null => {
                    *slot = Value::Array(vec![citation]);
                    Ok(())
                }
                _ => Err(malformed("a streamed block's `citations` is not a list")),
            }
        }
        other => Err(malformed(format!(
            "the stream sent a content delta of unknown type {other:?}; the answer cannot be assembled without it"
        ))),
    }
}

#[cfg(test)]
#[path = "messages_stream_tests.rs"]
mod tests;
