use serde_json::{Value, json};

use super::*;
use crate::wire::{ContentBlock, StopReason};

fn no_error(_: &Value) -> LlmError {
    LlmError::Transport("no error event expected".to_owned())
}

fn feed(events: &[Value]) -> Result<CreateResponse, LlmError> {
    let mut assembler = Assembler::default();
    for event in events {
        assembler.event(&event.to_string(), no_error)?;
    }
    assembler.finish()
}

fn start() -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 30,
                  "cache_read_input_tokens": 40, "output_tokens": 1, "service_tier": "standard"}
    }})
}

fn stop(reason: &str, output_tokens: u64) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
               "usage": {"output_tokens": output_tokens, "input_tokens": null}}),
        json!({"type": "message_stop"}),
    ]
}

#[test]
fn every_delta_kind_assembles_into_the_non_streamed_answer() {
    let mut events = vec![
        start(),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "thinking_delta", "thinking": "Plan "}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "thinking_delta", "thinking": "it."}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "signature_delta", "signature": "c2ln"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "text_delta", "text": "Creating "}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "text_delta", "text": "it now."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block":
               {"type": "tool_use", "id": "toolu_1", "name": "create_event", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2,
               "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 2,
               "delta": {"type": "input_json_delta", "partial_json": "{\"name\": \"Pic"}}),
        json!({"type": "content_block_delta", "index": 2,
               "delta": {"type": "input_json_delta", "partial_json": "nic\", \"capacity\": 40}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "content_block_start", "index": 3, "content_block":
               {"type": "tool_use", "id": "toolu_2", "name": "list_events", "input": {}}}),
        json!({"type": "content_block_stop", "index": 3}),
        json!({"type": "some_future_event", "detail": 1}),
    ];
    events.extend(stop("tool_use", 88));
    let streamed = feed(&events).expect("assembled");

    let whole: CreateResponse = serde_json::from_value(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
        "content": [
            {"type": "thinking", "thinking": "Plan it.", "signature": "c2ln"},
            {"type": "text", "text": "Creating it now."},
            {"type": "tool_use", "id": "toolu_1", "name": "create_event",
             "input": {"name": "Picnic", "capacity": 40}},
            {"type": "tool_use", "id": "toolu_2", "name": "list_events", "input": {}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 30,
                  "cache_read_input_tokens": 40, "output_tokens": 88, "service_tier": "standard"}
    }))
    .expect("whole answer");
    assert_eq!(streamed, whole);
    assert_eq!(streamed.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(streamed.usage.cache_read_input_tokens, 40);
    assert_eq!(streamed.usage.cache_creation_input_tokens, 30);
    assert!(matches!(streamed.content[0], ContentBlock::Thinking(_)));
}

#[test]
fn citations_are_collected_on_their_text_block() {
    let mut events = vec![
        start(),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": "", "citations": null}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "citations_delta", "citation": {"cited_text": "a"}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "citations_delta", "citation": {"cited_text": "b"}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "Cited."}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    events.extend(stop("end_turn", 5));
    let streamed = feed(&events).expect("assembled");
    let ContentBlock::Text(text) = &streamed.content[0] else {
        panic!("a text block: {:?}", streamed.content);
    };
    assert_eq!(text.text, "Cited.");
    assert_eq!(
        text.extra["citations"],
        json!([{"cited_text": "a"}, {"cited_text": "b"}])
    );
}

#[test]
fn an_error_event_is_mapped_by_the_caller() {
    let mut assembler = Assembler::default();
    assembler
        .event(&start().to_string(), no_error)
        .expect("start");
    assert!(!assembler.output_started());
    let error = assembler
        .event(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            |event| {
                assert_eq!(event["error"]["type"], "overloaded_error");
                LlmError::Overloaded
            },
        )
        .expect_err("an error event fails");
    assert_eq!(error, LlmError::Overloaded);
}

#[test]
fn broken_streams_are_malformed_responses_never_panics() {
    let text_start = json!({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}});
    let cases: Vec<(Vec<Value>, &str)> = vec![
        (vec![], "without message_start"),
        (vec![start()], "without message_stop"),
        (vec![start(), text_start.clone()], "without message_stop"),
        (
            vec![json!({"type": "content_block_start", "index": 0, "content_block": {}})],
            "before message_start",
        ),
        (vec![start(), start()], "message_start twice"),
        (
            vec![
                start(),
                json!({"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": ""}}),
            ],
            "block 0 was expected",
        ),
        (
            vec![
                start(),
                json!({"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "x"}}),
            ],
            "never started",
        ),
        (
            vec![
                start(),
                text_start.clone(),
                json!({"type": "content_block_delta", "index": 0,
                 "delta": {"type": "mystery_delta", "x": 1}}),
            ],
            "unknown type",
        ),
        (
            vec![
                start(),
                text_start.clone(),
                json!({"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta"}}),
            ],
            "no `text` string",
        ),
        (
            vec![
                start(),
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": {}}}),
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": "{\"a\": "}}),
                json!({"type": "content_block_stop", "index": 0}),
            ],
            "tool input is not JSON",
        ),
        (
            vec![start(), text_start.clone(), json!({"type": "message_stop"})],
            "still open",
        ),
        (
            vec![
                start(),
                json!({"type": "message_stop"}),
                json!({"type": "message_start"}),
            ],
            "after message_stop",
        ),
        (vec![json!({"no": "type"})], "no `type`"),
        (vec![json!([1, 2])], "not a JSON object"),
        (
            vec![
                json!({"type": "message_start", "message": {"id": 5}}),
                json!({"type": "message_stop"}),
            ],
            "not a Messages API response",
        ),
    ];
    for (events, expected) in cases {
        match feed(&events) {
            Err(LlmError::MalformedResponse { message }) => {
                assert!(
                    message.contains(expected),
                    "{expected:?} not in {message:?}"
                )
            }
            other => panic!("expected a malformed response ({expected}), got {other:?}"),
        }
    }
    let mut assembler = Assembler::default();
    match assembler.event("data is not json", no_error) {
        Err(LlmError::MalformedResponse { message }) => {
            assert!(message.contains("not JSON"), "{message}")
        }
        other => panic!("expected a malformed response, got {other:?}"),
    }
}
