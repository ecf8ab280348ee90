//! Test helpers (feature `testing`): a Converse answer written as the AWS event stream
//! `ConverseStream` sends, for fake Bedrock servers in this crate's and other crates' tests.

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use serde_json::{Value, json};

fn frame(message: &Message) -> Vec<u8> {
    let mut frame = Vec::new();
    // Writing into a Vec fails only for headers or payloads beyond the format's limits, which
    // a test's answer never reaches; an empty frame then fails the test's client clearly.
    if aws_smithy_eventstream::frame::write_message_to(message, &mut frame).is_err() {
        frame.clear();
    }
    frame
}

fn string(value: &str) -> HeaderValue {
    HeaderValue::String(value.to_owned().into())
}

/// One event frame: an event of type `kind` (`messageStart`, `contentBlockDelta`…) with a JSON
/// payload.
pub fn event_frame(kind: &str, payload: &Value) -> Vec<u8> {
    frame(
        &Message::new(payload.to_string().into_bytes())
            .add_header(Header::new(":message-type", string("event")))
            .add_header(Header::new(":event-type", string(kind)))
            .add_header(Header::new(":content-type", string("application/json"))),
    )
}

/// One exception frame (`throttlingException`, `modelStreamErrorException`…) with a JSON
/// payload.
pub fn exception_frame(kind: &str, payload: &Value) -> Vec<u8> {
    frame(
        &Message::new(payload.to_string().into_bytes())
            .add_header(Header::new(":message-type", string("exception")))
            .add_header(Header::new(":exception-type", string(kind)))
            .add_header(Header::new(":content-type", string("application/json"))),
    )
}

/// A whole Converse answer (its JSON body) as the complete `ConverseStream` body.
pub fn converse_stream_body(answer: &Value) -> Vec<u8> {
    converse_stream_events(answer)
        .into_iter()
        .flat_map(|(kind, payload)| event_frame(kind, &payload))
        .collect()
}

/// The `ConverseStream` events (type, payload) of a whole Converse answer: text, reasoning and
/// tool input split into two deltas each, usage in the closing metadata. Blocks of other kinds
/// are left out.
pub fn converse_stream_events(answer: &Value) -> Vec<(&'static str, Value)> {
    let halves = |text: &str| -> [String; 2] {
        let middle = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(text.len(), |(i, _)| i);
        [text[..middle].to_owned(), text[middle..].to_owned()]
    };
    let mut events = vec![("messageStart", json!({"role": "assistant"}))];
    let empty = Vec::new();
    let blocks = answer["output"]["message"]["content"]
        .as_array()
        .unwrap_or(&empty);
    for (index, block) in blocks.iter().enumerate() {
        let delta = |delta: Value| {
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": delta}),
            )
        };
        if let Some(text) = block["text"].as_str() {
            for piece in halves(text) {
                events.push(delta(json!({ "text": piece })));
            }
        } else if let Some(reasoning) = block["reasoningContent"]["reasoningText"].as_object() {
            for piece in halves(reasoning["text"].as_str().unwrap_or_default()) {
                events.push(delta(json!({"reasoningContent": {"text": piece}})));
            }
            if let Some(signature) = reasoning.get("signature") {
                events.push(delta(json!({"reasoningContent": {"signature": signature}})));
            }
        } else if let Some(tool) = block["toolUse"].as_object() {
            events.push((
                "contentBlockStart",
                json!({"contentBlockIndex": index, "start": {"toolUse": {
                    "toolUseId": tool["toolUseId"], "name": tool["name"]}}}),
            ));
            for piece in halves(&tool["input"].to_string()) {
                events.push(delta(json!({"toolUse": {"input": piece}})));
            }
        } else {
            continue;
        }
        events.push(("contentBlockStop", json!({ "contentBlockIndex": index })));
    }
    events.push(("messageStop", json!({"stopReason": answer["stopReason"]})));
    events.push((
        "metadata",
        json!({"usage": answer["usage"], "metrics": {"latencyMs": 812}}),
    ));
    events
}
