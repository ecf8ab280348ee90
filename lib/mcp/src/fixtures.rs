//! The official conformance suite's fixture tools (`test_simple_text`, `test_image_content`, …),
//! which it calls by name to check content types, errors, schemas and headers. Served only when
//! [`super::McpConfig::conformance_fixtures`] is on, which only a loopback-bound local server can
//! set: never in production. They touch no data.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, JsonObject, ProgressNotificationParam, PromptMessage,
    ResourceContents, Role, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use super::elicitation::{StateKey, form_request};

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
    for (name, description) in [
        (
            "test_input_required_result_elicitation",
            "Asks for a name in-protocol, then greets.",
        ),
        (
            "test_input_required_result_request_state",
            "Asks for a confirmation with a sealed request state, then checks it.",
        ),
        (
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a sampled greeting and the roots at once.",
        ),
        (
            "test_input_required_result_multi_round",
            "Asks two questions in two rounds.",
        ),
        (
            "test_input_required_result_tampered_state",
            "Asks with a sealed state and refuses it altered.",
        ),
        (
            "test_input_required_result_capabilities",
            "Asks only for what the client declared it can answer.",
        ),
    ] {
        tools.push(tool(name, description, &no_args));
    }
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

/// Runs the fixture `request` names; None when no fixture has that name (the registry's tools
/// then). `key` seals the multi-round-trip fixtures' request states.
pub(super) async fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    key: Option<&StateKey>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let name = request.name.as_ref();
    if name.starts_with(INPUT_REQUIRED_PREFIX) {
        let key = key?;
        return Some(input_required(name, request, context, key));
    }
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

/// The names of the multi-round-trip fixtures.
const INPUT_REQUIRED_PREFIX: &str = "test_input_required_result_";

/// The prompt fixture of the multi-round-trip suite.
const PROMPT_FIXTURE: &str = "test_input_required_result_prompt";

/// A form elicitation asking for one string (or boolean) field `field`.
fn ask_field(message: &str, field: &str, kind: &str) -> Option<InputRequest> {
    form_request(
        message,
        json!({"type": "object", "properties": {field: {"type": kind}}, "required": [field]}),
    )
}

/// A sampling request asking the client's model for `text`.
fn ask_sampling(text: &str) -> Option<InputRequest> {
    serde_json::from_value(json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": 50
        }
    }))
    .ok()
}

/// A `roots/list` request.
fn ask_roots() -> Option<InputRequest> {
    serde_json::from_value(json!({"method": "roots/list", "params": {}})).ok()
}

/// Whether `responses` holds an accepted elicitation under `key`.
fn accepted(responses: Option<&InputResponses>, key: &str) -> bool {
    responses
        .and_then(|r| r.get(key))
        .and_then(|v| v.get("action"))
        .and_then(Value::as_str)
        == Some("accept")
}

/// Whether `responses` holds an object (any client result) under `key`.
fn answered(responses: Option<&InputResponses>, key: &str) -> bool {
    responses
        .and_then(|r| r.get(key))
        .is_some_and(Value::is_object)
}

/// An input-required result with `requests` (None: a request could not be built, a bug) and
/// `state`.
fn input_required_result(
    requests: Vec<(&str, Option<InputRequest>)>,
    state: Option<String>,
) -> Result<CallToolResponse, ErrorData> {
    let mut map = InputRequests::new();
    for (key, request) in requests {
        let request = request.ok_or_else(|| ErrorData::internal_error("fixture request", None))?;
        map.insert(key.to_owned(), request);
    }
    Ok(InputRequiredResult::new(Some(map), state).into())
}

/// The state of round `round` of fixture `name`, sealed.
fn seal_round(key: &StateKey, name: &str, round: u8) -> String {
    key.seal(&[round], format!("fixture:{name}").as_bytes())
}

/// The round a returned state is for, when it opens for fixture `name`.
fn open_round(key: &StateKey, name: &str, state: &str) -> Option<u8> {
    let bytes = key.open(state, format!("fixture:{name}").as_bytes()).ok()?;
    match bytes.as_slice() {
        [round] => Some(*round),
        _ => None,
    }
}

/// The multi-round-trip fixtures (SEP-2322): each asks first, and completes once the retry
/// carries the answers (and, where it issued one, its own sealed state).
fn input_required(
    name: &str,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    key: &StateKey,
) -> Result<CallToolResponse, ErrorData> {
    let responses = request.input_responses.as_ref();
    let state = request.request_state.as_deref();
    let done = |text: &str| Ok(text_result(text).into());
    match name {
        "test_input_required_result_elicitation" => {
            if accepted(responses, "user_name") {
                return done("Hello, the name was received.");
            }
            input_required_result(
                vec![(
                    "user_name",
                    ask_field("What is your name?", "name", "string"),
                )],
                None,
            )
        }
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            if let Some(state) = state {
                if open_round(key, name, state) != Some(1) {
                    return Err(ErrorData::invalid_params(
                        "requestState failed its integrity check; nothing ran",
                        None,
                    ));
                }
                if accepted(responses, "confirm") {
                    return done("state-ok: the request state was verified.");
                }
            }
            input_required_result(
                vec![("confirm", ask_field("Please confirm", "ok", "boolean"))],
                Some(seal_round(key, name, 1)),
            )
        }
        "test_input_required_result_multiple_inputs" => {
            let round_ok = state.is_some_and(|s| open_round(key, name, s) == Some(1));
            if round_ok
                && accepted(responses, "user_name")
                && answered(responses, "greeting")
                && answered(responses, "client_roots")
            {
                return done("All three answers were received.");
            }
            input_required_result(
                vec![
                    (
                        "user_name",
                        ask_field("What is your name?", "name", "string"),
                    ),
                    ("greeting", ask_sampling("Generate a greeting")),
                    ("client_roots", ask_roots()),
                ],
                Some(seal_round(key, name, 1)),
            )
        }
        "test_input_required_result_multi_round" => {
            match state.and_then(|s| open_round(key, name, s)) {
                Some(2) if accepted(responses, "step2") => done("Both steps were answered."),
                Some(1) if accepted(responses, "step1") => input_required_result(
                    vec![(
                        "step2",
                        ask_field("Step 2: What is your favorite color?", "color", "string"),
                    )],
                    Some(seal_round(key, name, 2)),
                ),
                _ => input_required_result(
                    vec![(
                        "step1",
                        ask_field("Step 1: What is your name?", "name", "string"),
                    )],
                    Some(seal_round(key, name, 1)),
                ),
            }
        }
        "test_input_required_result_capabilities" => {
            let caps = context.client_capabilities();
            let mut requests = Vec::new();
            if caps.as_ref().is_some_and(|c| c.elicitation.is_some()) {
                requests.push((
                    "user_name",
                    ask_field("What is your name?", "name", "string"),
                ));
            }
            if caps.as_ref().is_some_and(|c| c.sampling.is_some()) {
                requests.push(("greeting", ask_sampling("Generate a greeting")));
            }
            if caps.as_ref().is_some_and(|c| c.roots.is_some()) {
                requests.push(("client_roots", ask_roots()));
            }
            let all_answered =
                !requests.is_empty() && requests.iter().all(|(k, _)| answered(responses, k));
            if requests.is_empty() || all_answered {
                return done("Nothing more to ask.");
            }
            input_required_result(requests, None)
        }
        _ => Err(ErrorData::invalid_params(
            format!("no fixture tool named {name:?}"),
            None,
        )),
    }
}

/// The prompt fixture (SEP-2322 on `prompts/get`); None for any other prompt name.
pub(super) fn prompt(
    request: &GetPromptRequestParams,
    _context: &RequestContext<RoleServer>,
) -> Option<GetPromptResponse> {
    if request.name != PROMPT_FIXTURE {
        return None;
    }
    if accepted(request.input_responses.as_ref(), "user_context") {
        let message = PromptMessage::new_text(Role::User, "Use the context the person gave.");
        return Some(GetPromptResult::new(vec![message]).into());
    }
    let question = ask_field("What context should the prompt use?", "context", "string")?;
    Some(
        InputRequiredResult::from_input_requests(InputRequests::from([(
            "user_context".to_owned(),
            question,
        )]))
        .into(),
    )
}
