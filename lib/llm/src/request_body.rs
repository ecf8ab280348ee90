//! The Claude API's request body, with the frozen prefix encoded once.
//!
//! Every request of every conversation carries the same system prompt and tool schemas (the
//! harness builds them once and shares them: `CreateRequest::system` and `tools` are `Arc`s).
//! Escaping their text into JSON again for every model call was the largest part of encoding
//! a request (issue #16's turn profile, bench/RESULTS.md). [`BodyEncoder`] keeps the last
//! prefix's JSON and splices it into each body; a request with another prefix gets its own
//! encoding, which then becomes the kept one.
//!
//! Each message the caller shares between calls is encoded once too ([`MessageJson`]): only
//! the newest messages of a conversation are escaped into JSON for a call, the rest spliced in.
//!
//! The body is written once, into a buffer sized for it ([`size_hint`]), and the call's
//! attempts share it (`http.rs`): grown from nothing, a long conversation's 200 KB body was
//! reallocated eleven times on the way and then copied again for each attempt, each copy into
//! pages the kernel faulted in afresh (issue #16's 60-turn profile, bench/RESULTS.md).
//!
//! The body is byte for byte what `serde_json` makes of the request's fields in declaration
//! order followed by `"stream":true` (a test holds both encodings equal), so the prompt cache,
//! which keys on the prompt's content, sees the same prompt either way.

use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::message_json::MessageJson;
use crate::wire::{CreateRequest, OutputConfig, SystemBlock, ThinkingConfig, ToolSpec};

/// What a body holds besides the prefix and the messages: its keys and punctuation, the
/// model's name, the optional settings. A guess on the generous side.
const BODY_OVERHEAD_BYTES: usize = 512;

/// The encoded prefix of one pair of shared lists. It holds the lists themselves, so while it
/// is kept their addresses cannot be reused by other lists: `Arc::ptr_eq` on them is a sound
/// test of "the same prefix".
#[derive(Debug)]
struct EncodedPrefix {
    system: Arc<[SystemBlock]>,
    tools: Arc<[ToolSpec]>,
    system_json: Box<RawValue>,
    tools_json: Box<RawValue>,
}

impl EncodedPrefix {
    fn new(request: &CreateRequest) -> Result<Self, serde_json::Error> {
        Ok(Self {
            system: Arc::clone(&request.system),
            tools: Arc::clone(&request.tools),
            system_json: serde_json::value::to_raw_value(&*request.system)?,
            tools_json: serde_json::value::to_raw_value(&*request.tools)?,
        })
    }

    fn is_for(&self, request: &CreateRequest) -> bool {
        Arc::ptr_eq(&self.system, &request.system) && Arc::ptr_eq(&self.tools, &request.tools)
    }
}

/// Encodes request bodies, reusing the last prefix's JSON and the shared messages' (see the
/// [module docs](self)). Clones share what is kept.
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyEncoder {
    last: Arc<Mutex<Option<Arc<EncodedPrefix>>>>,
    messages: MessageJson,
}

impl BodyEncoder {
    /// The JSON body of `request` with `"stream":true` after its fields.
    pub(crate) fn streamed(&self, request: &CreateRequest) -> Result<Vec<u8>, serde_json::Error> {
        let prefix = self.prefix(request)?;
        let CreateRequest {
            model,
            max_tokens,
            system,
            messages,
            tools,
            thinking,
            output_config,
            temperature,
        } = request;
        let messages = self.messages.encode(messages)?;
        let mut body = Vec::with_capacity(size_hint(&prefix, &messages));
        serde_json::to_writer(
            &mut body,
            &Body {
                model,
                max_tokens: *max_tokens,
                system: (!system.is_empty()).then_some(&*prefix.system_json),
                messages: Messages(&messages),
                tools: (!tools.is_empty()).then_some(&*prefix.tools_json),
                thinking: thinking.as_ref(),
                output_config: output_config.as_ref(),
                temperature: *temperature,
                stream: true,
            },
        )?;
        Ok(body)
    }

    fn prefix(&self, request: &CreateRequest) -> Result<Arc<EncodedPrefix>, serde_json::Error> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = last.as_ref().filter(|p| p.is_for(request)) {
            return Ok(Arc::clone(kept));
        }
        let fresh = Arc::new(EncodedPrefix::new(request)?);
        *last = Some(Arc::clone(&fresh));
        Ok(fresh)
    }
}

/// About how many bytes a body takes: the prefix's JSON, each message's, a comma between
/// messages, and an allowance for the rest. Only a buffer's first size: should the allowance
/// fall short, the buffer grows as it would have anyway.
fn size_hint(prefix: &EncodedPrefix, messages: &[Arc<RawValue>]) -> usize {
    let messages: usize = messages.iter().map(|json| json.get().len() + 1).sum();
    prefix.system_json.get().len() + prefix.tools_json.get().len() + messages + BODY_OVERHEAD_BYTES
}

/// The messages' kept JSON, written as the body's list.
struct Messages<'a>(&'a [Arc<RawValue>]);

impl Serialize for Messages<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|json| &**json))
    }
}

/// The body's fields, in `CreateRequest`'s order (the destructuring in
/// [`BodyEncoder::streamed`] stops the build when a field is added there and not here).
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a RawValue>,
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<&'a OutputConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    stream: bool,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::wire::{CacheControl, ContentBlock, Effort, Message};
    use serde_json::json;

    /// What the body was before the prefix was kept: the request's own fields, then `stream`.
    fn plain(request: &CreateRequest) -> Vec<u8> {
        #[derive(Serialize)]
        struct Plain<'a> {
            #[serde(flatten)]
            request: &'a CreateRequest,
            stream: bool,
        }
        serde_json::to_vec(&Plain {
            request,
            stream: true,
        })
        .unwrap()
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: "Adds a room: \"quoted\", a tab\tand ünïcode.".to_owned(),
            input_schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            cache_control: Some(CacheControl::ephemeral()),
        }
    }

    fn full(system: &Arc<[SystemBlock]>, tools: &Arc<[ToolSpec]>, text: &str) -> CreateRequest {
        let mut request = CreateRequest::new(
            "claude-x",
            16_000,
            vec![Message::user(vec![ContentBlock::text(text)])],
        );
        request.system = Arc::clone(system);
        request.tools = Arc::clone(tools);
        request.thinking = Some(ThinkingConfig::adaptive());
        request.output_config = Some(OutputConfig {
            effort: Some(Effort::Low),
        });
        request.temperature = Some(0.5);
        request
    }

    #[test]
    fn the_body_is_byte_for_byte_the_plain_encoding() {
        let system: Arc<[SystemBlock]> =
            vec![SystemBlock::new("You are Steward.\n\"Be brief.\"").cached()].into();
        let tools: Arc<[ToolSpec]> = vec![tool("add_room"), tool("list_rooms")].into();
        let encoder = BodyEncoder::default();
        for text in ["first", "second, with the prefix kept"] {
            let request = full(&system, &tools, text);
            assert_eq!(
                String::from_utf8(encoder.streamed(&request).unwrap()).unwrap(),
                String::from_utf8(plain(&request)).unwrap()
            );
        }
        // Only the required fields: no system, no tools, nothing optional.
        let bare = CreateRequest::new(
            "claude-x",
            10,
            vec![Message::user(vec![ContentBlock::text("hi")])],
        );
        assert_eq!(encoder.streamed(&bare).unwrap(), plain(&bare));
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&encoder.streamed(&bare).unwrap()).unwrap(),
            json!({"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "stream": true})
        );
    }

    #[test]
    fn another_prefix_is_encoded_afresh_and_then_kept() {
        let encoder = BodyEncoder::default();
        let tools: Arc<[ToolSpec]> = vec![tool("add_room")].into();
        let a: Arc<[SystemBlock]> = vec![SystemBlock::new("Prompt A")].into();
        let b: Arc<[SystemBlock]> = vec![SystemBlock::new("Prompt B")].into();
        for (system, expect) in [(&a, "Prompt A"), (&b, "Prompt B"), (&a, "Prompt A")] {
            let body = encoder.streamed(&full(system, &tools, "hi")).unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["system"][0]["text"], expect);
        }
        // Equal content in a new list is still encoded from that list (identity, not equality).
        let same_text: Arc<[SystemBlock]> = vec![SystemBlock::new("Prompt A")].into();
        encoder.streamed(&full(&same_text, &tools, "hi")).unwrap();
        let kept = encoder.last.lock().unwrap().clone().unwrap();
        assert!(Arc::ptr_eq(&kept.system, &same_text));
    }

    /// A long conversation's body, the way the harness sends it: each user message holds JSON
    /// written as text (the context block), each turn a tool call and its JSON result.
    fn long_conversation(turns: usize) -> CreateRequest {
        let system: Arc<[SystemBlock]> = vec![SystemBlock::new("You are Steward.").cached()].into();
        let tools: Arc<[ToolSpec]> = vec![tool("add_room"), tool("create_event")].into();
        let mut request = full(&system, &tools, "first");
        for turn in 0..turns {
            let context = json!({"events": (0..20).map(|n| json!({"id": format!("e_{turn}_{n}"), "name": format!("Event \"{n}\""), "active": n == 0})).collect::<Vec<_>>()});
            request.messages.push(Arc::new(Message::user(vec![
                ContentBlock::text(format!("<context>\n{context}\n</context>")),
                ContentBlock::text(format!("Add room {turn}, please. ✓")),
            ])));
            request
                .messages
                .push(Arc::new(Message::assistant(vec![ContentBlock::tool_use(
                    format!("toolu_{turn}"),
                    "add_room",
                    json!({"name": format!("Room {turn}"), "capacity": 40, "tags": ["a", "b"]}),
                )])));
            let result = json!({"ok": true, "summary": format!("Added \"Room {turn}\"."), "data": {"id": turn}});
            request
                .messages
                .push(Arc::new(Message::user(vec![ContentBlock::tool_result(
                    format!("toolu_{turn}"),
                    result.to_string(),
                    false,
                )])));
            request
                .messages
                .push(Arc::new(Message::assistant(vec![ContentBlock::text(
                    format!("Done: Room {turn}."),
                )])));
        }
        request
    }

    #[test]
    fn bodies_that_splice_kept_messages_are_byte_for_byte_the_plain_encoding() {
        let encoder = BodyEncoder::default();
        let whole = long_conversation(8);
        // The harness's way: the history's messages shared into each request, the newest in a
        // copy of the request's own that carries the cache marker.
        let mut history: Vec<Arc<Message>> = Vec::new();
        for message in &whole.messages {
            history.push(Arc::clone(message));
            let mut request = whole.clone();
            request.messages = history.clone();
            let last = request.messages.last_mut().unwrap();
            Arc::make_mut(last).set_cache_control_on_last(Some(CacheControl::ephemeral()));
            assert_eq!(
                String::from_utf8(encoder.streamed(&request).unwrap()).unwrap(),
                String::from_utf8(plain(&request)).unwrap()
            );
        }
        // Every message but the newest was kept, and a body of them all is still the same.
        let request = CreateRequest {
            messages: history.clone(),
            ..whole.clone()
        };
        assert_eq!(encoder.streamed(&request).unwrap(), plain(&request));
    }

    #[test]
    fn the_buffer_is_sized_once_for_the_whole_body() {
        let encoder = BodyEncoder::default();
        for turns in [0, 1, 5, 60] {
            let request = long_conversation(turns);
            let body = encoder.streamed(&request).unwrap();
            assert_eq!(body, plain(&request));
            let prefix = encoder.prefix(&request).unwrap();
            let hint = size_hint(
                &prefix,
                &encoder.messages.encode(&request.messages).unwrap(),
            );
            // Enough that the buffer never grows, and no more than the allowance besides.
            assert!(
                hint >= body.len(),
                "{turns} turns: hint {hint} < body {}",
                body.len()
            );
            assert!(
                hint <= body.len() + BODY_OVERHEAD_BYTES,
                "{turns} turns: hint {hint} for a body of {}",
                body.len()
            );
            assert!(
                body.capacity() <= hint,
                "the buffer grew: {} > {hint}",
                body.capacity()
            );
        }
    }
}
