//! The official conformance suite's fixture tools (`test_simple_text`, `test_image_content`, …),
//! which it calls by name to check content types, errors, schemas and headers. Served only when
//! [`super::McpConfig::conformance_fixtures`] is on, which only a loopback-bound local server can
//! set: never in production. They touch no data.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ProgressNotificationParam, ResourceContents,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// A 1×1 red PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// An empty 8 kHz mono WAV file.
const WAV_BASE64: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// The fixture tools, in the order they are listed after the registry's.
pub(super) fn tools() -> Vec<Tool> {
    let no_args = json!({"type": "object", "properties": {}});
    let mut tools: Vec<Tool> = [
        ("test_simple_text", "Returns a simple text response."),
        ("test_image_content", "Returns an image."),
        ("test_audio_content", "Returns audio."),
        ("test_embedded_resource", "Returns an embedded resource."),
        (
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
        ),
        ("test_error_handling", "Always fails with a tool error."),
        (
            "test_tool_with_progress",
            "Reports progress, then returns text.",
        ),
        ("test_logging_tool", "Returns text; sends no log messages."),
        (
            "test_missing_capability",
            "Needs the client's sampling capability.",
        ),
    ]
    .into_iter()
    .map(|(name, description)| tool(name, description, &no_args))
    .collect();
    tools.push(tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        &json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }),
    ));
    tools.push(tool(
        "test_custom_headers",
        "Echoes a parameter that clients also send as the Mcp-Param-Region header.",
        &json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]
        }),
    ));
    tools
}

fn tool(name: &'static str, description: &'static str, schema: &Value) -> Tool {
    let schema: JsonObject = schema.as_object().cloned().unwrap_or_default();
    Tool::new(name, description, Arc::new(schema))
}

fn text_result(text: &str) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// Runs fixture `name`; None when no fixture has that name (the registry's tools then).
pub(super) async fn call(
    name: &str,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let result = match name {
        "test_simple_text" => text_result("This is a simple text response for testing."),
        "test_image_content" => {
            CallToolResult::success(vec![ContentBlock::image(PNG_BASE64, "image/png")])
        }
        "test_audio_content" => {
            CallToolResult::success(vec![ContentBlock::audio(WAV_BASE64, "audio/wav")])
        }
        "test_embedded_resource" => {
            CallToolResult::success(vec![ContentBlock::resource(ResourceContents::text(
                "This is an embedded resource content.",
                "test://embedded-resource",
            ))])
        }
        "test_multiple_content_types" => CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG_BASE64, "image/png"),
            ContentBlock::resource(
                ResourceContents::text(
                    r#"{"test":"data","value":123}"#,
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ]),
        "test_error_handling" => CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )]),
        "test_tool_with_progress" => {
            report_progress(context).await;
            text_result("Progress test completed.")
        }
        "test_logging_tool" | "json_schema_2020_12_tool" | "test_custom_headers" => {
            text_result("Fixture tool ran.")
        }
        "test_missing_capability" => {
            let declared = context
                .client_capabilities()
                .is_some_and(|c| c.sampling.is_some());
            if !declared {
                return Some(Err(ErrorData::missing_required_client_capability(
                    sampling_capability(),
                )));
            }
            text_result("The client declared sampling.")
        }
        "test_streaming_elicitation" => return Some(Ok(ask_for_input().into())),
        _ => return None,
    };
    Some(Ok(result.into()))
}

/// An input-required result holding one elicitation request (2026-07-28 multi round-trip).
fn ask_for_input() -> InputRequiredResult {
    let request = serde_json::from_value::<InputRequest>(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
        }
    }));
    match request {
        Ok(request) => InputRequiredResult::from_input_requests(InputRequests::from([(
            "name".to_owned(),
            request,
        )])),
        Err(_) => InputRequiredResult::from_request_state("fixture"),
    }
}

#[allow(deprecated)]
fn sampling_capability() -> ClientCapabilities {
    ClientCapabilities::builder().enable_sampling().build()
}

/// Sends 0/100, 50/100, 100/100 when the request carries a progress token.
async fn report_progress(context: &RequestContext<RoleServer>) {
    let Some(token) = context.meta.get_progress_token() else {
        return;
    };
    for step in [0.0, 50.0, 100.0] {
        let note = ProgressNotificationParam::new(token.clone(), step).with_total(100.0);
        if context.peer.notify_progress(note).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
