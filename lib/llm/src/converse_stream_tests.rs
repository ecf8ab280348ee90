use aws_sdk_bedrockruntime::operation::converse::ConverseOutput as SdkConverseOutput;
use serde_json::json;

use super::*;
use crate::converse::from_converse;
use crate::wire::StopReason;

const MODEL: &str = "global.anthropic.claude-sonnet-5-5";

fn start() -> bt::ConverseStreamOutput {
    bt::ConverseStreamOutput::MessageStart(
        bt::MessageStartEvent::builder()
            .role(bt::ConversationRole::Assistant)
            .build()
            .expect("start"),
    )
}

fn delta(index: i32, delta: bt::ContentBlockDelta) -> bt::ConverseStreamOutput {
    bt::ConverseStreamOutput::ContentBlockDelta(
        bt::ContentBlockDeltaEvent::builder()
            .content_block_index(index)
            .delta(delta)
            .build()
            .expect("delta"),
    )
}

fn text(index: i32, piece: &str) -> bt::ConverseStreamOutput {
    delta(index, bt::ContentBlockDelta::Text(piece.to_owned()))
}

fn reasoning(index: i32, piece: bt::ReasoningContentBlockDelta) -> bt::ConverseStreamOutput {
    delta(index, bt::ContentBlockDelta::ReasoningContent(piece))
}

fn tool_start(index: i32, id: &str, name: &str) -> bt::ConverseStreamOutput {
    bt::ConverseStreamOutput::ContentBlockStart(
        bt::ContentBlockStartEvent::builder()
            .content_block_index(index)
            .start(bt::ContentBlockStart::ToolUse(
                bt::ToolUseBlockStart::builder()
                    .tool_use_id(id)
                    .name(name)
                    .build()
                    .expect("tool start"),
            ))
            .build()
            .expect("block start"),
    )
}

fn tool_input(index: i32, piece: &str) -> bt::ConverseStreamOutput {
    delta(
        index,
        bt::ContentBlockDelta::ToolUse(
            bt::ToolUseBlockDelta::builder()
                .input(piece)
                .build()
                .expect("tool delta"),
        ),
    )
}

fn block_stop(index: i32) -> bt::ConverseStreamOutput {
    bt::ConverseStreamOutput::ContentBlockStop(
        bt::ContentBlockStopEvent::builder()
            .content_block_index(index)
            .build()
            .expect("stop"),
    )
}

fn message_stop(reason: bt::StopReason) -> bt::ConverseStreamOutput {
    bt::ConverseStreamOutput::MessageStop(
        bt::MessageStopEvent::builder()
            .stop_reason(reason)
            .build()
            .expect("message stop"),
    )
}

fn usage() -> bt::TokenUsage {
    bt::TokenUsage::builder()
        .input_tokens(1200)
        .output_tokens(96)
        .total_tokens(5596)
        .cache_read_input_tokens(4000)
        .cache_write_input_tokens(300)
        .build()
        .expect("usage")
}

fn metadata() -> bt::ConverseStreamOutput {
    bt::ConverseStreamOutput::Metadata(
        bt::ConverseStreamMetadataEvent::builder()
            .usage(usage())
            .build(),
    )
}

fn assemble(events: Vec<bt::ConverseStreamOutput>) -> Result<CreateResponse, LlmError> {
    let mut assembler = StreamAssembler::default();
    for event in events {
        assembler.event(event)?;
    }
    assembler.finish(MODEL, "bedrock-req-1".to_owned())
}

#[test]
fn a_streamed_tool_call_is_the_answer_converse_gives() {
    let streamed = assemble(vec![
        start(),
        reasoning(
            0,
            bt::ReasoningContentBlockDelta::Text("They want ".to_owned()),
        ),
        reasoning(
            0,
            bt::ReasoningContentBlockDelta::Text("a picnic.".to_owned()),
        ),
        reasoning(
            0,
            bt::ReasoningContentBlockDelta::Signature("EqQB".to_owned()),
        ),
        block_stop(0),
        text(1, "I'll create "),
        text(1, "it now."),
        block_stop(1),
        tool_start(2, "tooluse_1", "create_event"),
        tool_input(2, "{\"name\": \"Pic"),
        tool_input(2, "nic\", \"capacity\": 40, \"dates\": [\"2026-07-04\"]}"),
        block_stop(2),
        tool_start(3, "tooluse_2", "list_events"),
        block_stop(3),
        message_stop(bt::StopReason::ToolUse),
        metadata(),
    ])
    .expect("assembled");

    let message = bt::Message::builder()
        .role(bt::ConversationRole::Assistant)
        .content(bt::ContentBlock::ReasoningContent(
            bt::ReasoningContentBlock::ReasoningText(
                bt::ReasoningTextBlock::builder()
                    .text("They want a picnic.")
                    .signature("EqQB")
                    .build()
                    .expect("reasoning"),
            ),
        ))
        .content(bt::ContentBlock::Text("I'll create it now.".to_owned()))
        .content(bt::ContentBlock::ToolUse(
            bt::ToolUseBlock::builder()
                .tool_use_id("tooluse_1")
                .name("create_event")
                .input(to_document(
                    &json!({"name": "Picnic", "capacity": 40, "dates": ["2026-07-04"]}),
                ))
                .build()
                .expect("tool"),
        ))
        .content(bt::ContentBlock::ToolUse(
            bt::ToolUseBlock::builder()
                .tool_use_id("tooluse_2")
                .name("list_events")
                .input(to_document(&json!({})))
                .build()
                .expect("tool"),
        ))
        .build()
        .expect("message");
    let whole = from_converse(
        SdkConverseOutput::builder()
            .output(bt::ConverseOutput::Message(message))
            .stop_reason(bt::StopReason::ToolUse)
            .usage(usage())
            .build()
            .expect("output"),
        MODEL,
        "bedrock-req-1".to_owned(),
    )
    .expect("whole");

    assert_eq!(streamed, whole);
    assert_eq!(streamed.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(streamed.usage.cache_read_input_tokens, 4000);
    assert_eq!(streamed.usage.cache_creation_input_tokens, 300);
    assert_eq!(streamed.content.len(), 4);
}

#[test]
fn redacted_reasoning_and_filtered_answers_map_as_converse_does() {
    let streamed = assemble(vec![
        start(),
        reasoning(
            0,
            bt::ReasoningContentBlockDelta::RedactedContent(Blob::new(vec![1, 2])),
        ),
        reasoning(
            0,
            bt::ReasoningContentBlockDelta::RedactedContent(Blob::new(vec![3])),
        ),
        block_stop(0),
        message_stop(bt::StopReason::ContentFiltered),
    ])
    .expect("assembled");
    assert_eq!(streamed.stop_reason, Some(StopReason::Refusal));
    assert_eq!(streamed.extra["provider_stop_reason"], "content_filtered");
    let ContentBlock::RedactedThinking(redacted) = &streamed.content[0] else {
        panic!("redacted reasoning: {:?}", streamed.content);
    };
    assert_eq!(redacted.data, aws_smithy_types::base64::encode([1u8, 2, 3]));
    assert_eq!(
        streamed.usage,
        crate::wire::Usage::default(),
        "no metadata, no usage"
    );

    assert!(matches!(
        assemble(vec![
            start(),
            message_stop(bt::StopReason::MalformedToolUse)
        ]),
        Err(LlmError::MalformedResponse { .. })
    ));
}

#[test]
fn broken_streams_are_malformed_responses() {
    let cases: Vec<(Vec<bt::ConverseStreamOutput>, &str)> = vec![
        (vec![], "without messageStart"),
        (vec![start(), text(0, "Hi")], "without messageStop"),
        (vec![text(0, "Hi")], "before messageStart"),
        (vec![start(), start()], "messageStart twice"),
        (vec![start(), tool_input(0, "{}")], "never started"),
        (
            vec![start(), text(0, "Hi"), tool_input(0, "{}")],
            "mixed delta kinds",
        ),
        (
            vec![start(), text(0, "Hi"), block_stop(0), text(0, "again")],
            "had stopped",
        ),
        (
            vec![
                start(),
                tool_start(0, "t", "n"),
                tool_input(0, "{\"a\": "),
                block_stop(0),
                message_stop(bt::StopReason::ToolUse),
            ],
            "is not JSON",
        ),
        (
            vec![
                start(),
                message_stop(bt::StopReason::EndTurn),
                text(0, "late"),
            ],
            "after messageStop",
        ),
    ];
    for (events, expected) in cases {
        match assemble(events) {
            Err(LlmError::MalformedResponse { message }) => {
                assert!(
                    message.contains(expected),
                    "{expected:?} not in {message:?}"
                )
            }
            other => panic!("expected a malformed response ({expected}), got {other:?}"),
        }
    }
}
