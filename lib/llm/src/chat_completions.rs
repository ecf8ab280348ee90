//! The Chat Completions wire format (OpenAI and compatible servers: vLLM, Ollama, LM Studio,
//! LiteLLM…) and its mapping to and from Steward's Messages-shaped request and response.
//!
//! The request is a pure function of the [`CreateRequest`], serialized from structs with a
//! fixed field order and `serde_json` maps with sorted keys, so the same stored rows give the
//! same bytes on every call (OpenAI's automatic prefix cache then hits).
//!
//! Left out of every request, because Chat Completions has no place for them (named once at
//! start-up from [`DROPPED_FEATURES`]): cache breakpoints (the server caches prefixes by
//! itself), reasoning settings and replayed reasoning, and block types other than text,
//! images, PDF documents (sent as `file` parts) and tools.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::LlmError;
use crate::error::body_snippet;
use crate::media::DocumentNames;
use crate::wire::{
    ContentBlock, CreateRequest, CreateResponse, DocumentBlock, DocumentSource, Extra, ImageSource,
    Message, Role, StopReason, ToolResultContent, Usage,
};

/// What Steward's requests carry that Chat Completions cannot express, for the start-up note.
pub const DROPPED_FEATURES: &[&str] = &[
    "prompt-cache breakpoints (the server caches repeated prefixes by itself)",
    "reasoning settings (thinking, effort) and replayed reasoning",
    "content blocks other than text, images, PDF documents and tool calls",
];

/// Put before a failed tool's result: Chat Completions has no error flag on tool messages.
const TOOL_ERROR_PREFIX: &str = "Error: ";

/// A Chat Completions request (`POST {base}/chat/completions`, non-streaming).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ChatTool>,
    /// `auto` whenever tools are offered (servers reject it without tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    /// `true` whenever tools are offered: several calls in one answer are welcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The output bound (`max_tokens` is deprecated and refused by reasoning models).
    pub max_completion_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

/// One Chat Completions message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    Assistant {
        /// `null` when the message only calls tools.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A user message's content: a plain string when it is only text (what every server takes),
/// parts when it carries images or files.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum UserContent {
    Text(String),
    Parts(Vec<UserPart>),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum UserPart {
    Text {
        text: String,
    },
    ImageUrl {
        image_url: ImageUrl,
    },
    /// A file inline: `{"type":"file","file":{"filename":…,"file_data":"data:…;base64,…"}}`.
    File {
        file: FilePart,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ImageUrl {
    url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FilePart {
    filename: String,
    /// A data URL of the file's bytes.
    file_data: String,
}

/// The only document type Chat Completions takes inline as a `file` part.
const PDF_MEDIA_TYPE: &str = "application/pdf";

/// A tool call in an assistant message, arguments as the JSON text the model wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ChatToolCall {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunctionCall,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct ChatFunctionCall {
    name: String,
    arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatTool {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction,
}

#[derive(Debug, Clone, Serialize)]
struct ChatFunction {
    name: String,
    description: String,
    parameters: Value,
}

/// The Chat Completions request for `request`; refused while it holds stored media
/// references ([`CreateRequest::ensure_media_resolved`]).
pub(crate) fn to_chat(request: &CreateRequest) -> Result<ChatRequest, LlmError> {
    request.ensure_media_resolved()?;
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        let system: Vec<&str> = request.system.iter().map(|b| b.text.as_str()).collect();
        messages.push(ChatMessage::System {
            content: system.join("\n\n"),
        });
    }
    let mut names = DocumentNames::default();
    for message in &request.messages {
        push_message(&mut messages, message, &mut names);
    }
    let tools: Vec<ChatTool> = request
        .tools
        .iter()
        .map(|tool| ChatTool {
            kind: "function",
            function: ChatFunction {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.input_schema.clone(),
            },
        })
        .collect();
    let offers_tools = !tools.is_empty();
    Ok(ChatRequest {
        model: request.model.clone(),
        messages,
        tools,
        tool_choice: offers_tools.then_some("auto"),
        parallel_tool_calls: offers_tools.then_some(true),
        max_completion_tokens: request.max_tokens,
        temperature: request.temperature,
    })
}

/// Appends the Chat Completions messages for one Messages-shaped message: a user message's
/// tool results become `tool` messages (first, right after the assistant's calls), the rest
/// one user message; an assistant message becomes one message with text and tool calls.
/// `names` gives each PDF document its file name, unique within the request.
fn push_message(out: &mut Vec<ChatMessage>, message: &Message, names: &mut DocumentNames) {
    match message.role {
        Role::User => {
            let mut parts: Vec<UserPart> = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::ToolResult(result) => out.push(ChatMessage::Tool {
                        tool_call_id: result.tool_use_id.clone(),
                        content: tool_result_text(
                            result.content.as_ref(),
                            result.is_error == Some(true),
                        ),
                    }),
                    ContentBlock::Text(text) if !text.text.is_empty() => {
                        parts.push(UserPart::Text {
                            text: text.text.clone(),
                        })
                    }
                    ContentBlock::Image(image) => {
                        if let Some(url) = image_url(&image.source) {
                            parts.push(UserPart::ImageUrl {
                                image_url: ImageUrl { url },
                            })
                        }
                    }
                    ContentBlock::Document(document) => {
                        if let Some(file) = pdf_file(document, names) {
                            parts.push(UserPart::File { file })
                        }
                    }
                    _ => {}
                }
            }
            if parts.is_empty() {
                return;
            }
            let only_text: Option<Vec<&str>> = parts
                .iter()
                .map(|part| match part {
                    UserPart::Text { text } => Some(text.as_str()),
                    UserPart::ImageUrl { .. } | UserPart::File { .. } => None,
                })
                .collect();
            let content = match only_text {
                Some(texts) => UserContent::Text(texts.join("\n\n")),
                None => UserContent::Parts(parts),
            };
            out.push(ChatMessage::User { content });
        }
        Role::Assistant => {
            let text = crate::wire::text_of(&message.content);
            let tool_calls: Vec<ChatToolCall> = crate::wire::tool_uses(&message.content)
                .into_iter()
                .map(|call| ChatToolCall {
                    id: call.id.clone(),
                    kind: "function",
                    function: ChatFunctionCall {
                        name: call.name.clone(),
                        arguments: call.input.to_string(),
                    },
                })
                .collect();
            if text.is_empty() && tool_calls.is_empty() {
                return;
            }
            out.push(ChatMessage::Assistant {
                content: (!text.is_empty()).then_some(text),
                tool_calls,
            });
        }
    }
}

/// The URL of an image part; `None` for a stored reference (refused before mapping anyway).
fn image_url(source: &ImageSource) -> Option<String> {
    match source {
        ImageSource::Base64 { media_type, data } => {
            Some(format!("data:{media_type};base64,{data}"))
        }
        ImageSource::Url { url } => Some(url.clone()),
        ImageSource::Stored { .. } => None,
    }
}

/// The `file` part of an inline PDF, named `<title or document-N>.pdf`; other documents
/// (URLs, other types) are left out: Chat Completions has no place for them.
fn pdf_file(document: &DocumentBlock, names: &mut DocumentNames) -> Option<FilePart> {
    let DocumentSource::Base64 { media_type, data } = &document.source else {
        return None;
    };
    if !media_type.eq_ignore_ascii_case(PDF_MEDIA_TYPE) {
        return None;
    }
    let name = names.next(document.title.as_deref());
    Some(FilePart {
        filename: format!("{name}.pdf"),
        file_data: format!("data:{PDF_MEDIA_TYPE};base64,{data}"),
    })
}

fn tool_result_text(content: Option<&ToolResultContent>, is_error: bool) -> String {
    let text = match content {
        None => String::new(),
        Some(ToolResultContent::Text(text)) => text.clone(),
        Some(ToolResultContent::Blocks(blocks)) => blocks
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.clone()),
                ContentBlock::Image(_) => Some("[image omitted]".to_owned()),
                ContentBlock::Document(_) => Some("[document omitted]".to_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    if is_error {
        format!("{TOOL_ERROR_PREFIX}{text}")
    } else {
        text
    }
}

/// A Chat Completions response; every field a server may leave out has a default.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ResponseToolCall>>,
}

#[derive(Debug, Deserialize)]
struct ResponseToolCall {
    #[serde(default)]
    id: Option<String>,
    function: ResponseFunction,
}

#[derive(Debug, Deserialize)]
struct ResponseFunction {
    name: String,
    /// Some servers send an object instead of its JSON text.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// A tool call whose arguments could not be read, with what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BrokenCall {
    pub id: String,
    pub name: String,
    pub problem: String,
}

/// A response read from the wire: the Messages-shaped response of its usable part, and the
/// calls whose arguments were broken (only when the model meant to call tools).
#[derive(Debug)]
pub(crate) struct ReadResponse {
    pub response: CreateResponse,
    pub broken: Vec<BrokenCall>,
    /// The assistant message exactly as the server sent it (raw arguments), to show the model
    /// its own broken call when asking for a correction.
    pub raw_assistant: ChatMessage,
}

/// Reads a success body. A body that is not a Chat Completions response is a
/// [`LlmError::MalformedResponse`] with the start of the body.
pub(crate) fn read_response(body: &[u8], model: &str) -> Result<ReadResponse, LlmError> {
    let malformed = |problem: String| LlmError::MalformedResponse {
        message: format!("{problem}; the body starts: {}", body_snippet(body)),
    };
    let parsed: ChatResponse =
        serde_json::from_slice(body).map_err(|error| malformed(error.to_string()))?;
    let id = parsed.id.unwrap_or_else(|| "chatcmpl-unknown".to_owned());
    let Some(choice) = parsed.choices.into_iter().next() else {
        return Err(malformed("the response has no choices".to_owned()));
    };
    let finish = choice.finish_reason.as_deref();
    let message = choice.message;
    let cut_off = finish == Some("length");

    let mut content = Vec::new();
    let text = message.content.clone().unwrap_or_default();
    if !text.is_empty() {
        content.push(ContentBlock::text(text));
    }
    let refused = message.refusal.as_deref().is_some_and(|r| !r.is_empty());
    if let Some(refusal) = message.refusal.as_ref().filter(|r| !r.is_empty()) {
        content.push(ContentBlock::text(refusal.clone()));
    }
    let mut broken = Vec::new();
    let mut raw_calls = Vec::new();
    let mut calls = 0usize;
    for (index, call) in message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let call_id = match call.id.filter(|id| !id.is_empty()) {
            Some(call_id) => call_id,
            None => format!("{id}_call_{index}"),
        };
        let raw = match &call.function.arguments {
            None => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        raw_calls.push(ChatToolCall {
            id: call_id.clone(),
            kind: "function",
            function: ChatFunctionCall {
                name: call.function.name.clone(),
                arguments: raw.clone(),
            },
        });
        match parse_arguments(&raw) {
            Ok(input) => {
                calls += 1;
                content.push(ContentBlock::tool_use(call_id, call.function.name, input));
            }
            // A call cut off by the output limit is incomplete, not wrong: it is dropped with
            // the rest of the cut-off answer rather than sent back for correction.
            Err(_) if cut_off => {}
            Err(problem) => broken.push(BrokenCall {
                id: call_id,
                name: call.function.name,
                problem,
            }),
        }
    }

    let stop_reason = match finish {
        _ if refused => StopReason::Refusal,
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        // Some servers (Ollama among them) say `stop` even when the answer calls tools.
        _ if calls > 0 || !broken.is_empty() => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some(other) => StopReason::Unknown(other.to_owned()),
    };

    let usage = parsed.usage.unwrap_or_default();
    let cached = usage
        .prompt_tokens_details
        .and_then(|details| details.cached_tokens)
        .unwrap_or(0);
    let prompt = usage.prompt_tokens.unwrap_or(0);
    let mut usage_extra = Extra::new();
    if let Some(reasoning) = usage
        .completion_tokens_details
        .and_then(|details| details.reasoning_tokens)
    {
        usage_extra.insert("reasoning_output_tokens".to_owned(), json!(reasoning));
    }
    let mut extra = Extra::new();
    if let Some(finish) = finish
        && finish != stop_reason.as_str()
    {
        extra.insert("provider_stop_reason".to_owned(), json!(finish));
    }
    let response = CreateResponse {
        id,
        model: parsed.model.unwrap_or_else(|| model.to_owned()),
        role: Role::Assistant,
        content,
        stop_reason: Some(stop_reason),
        usage: Usage {
            // Chat Completions counts cached tokens inside the prompt tokens.
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: usage.completion_tokens.unwrap_or(0),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: cached,
            extra: usage_extra,
        },
        extra,
    };
    Ok(ReadResponse {
        response,
        broken,
        raw_assistant: ChatMessage::Assistant {
            content: message.content.filter(|text| !text.is_empty()),
            tool_calls: raw_calls,
        },
    })
}

/// A call's arguments as the JSON object the tools take. Empty arguments are an empty object
/// (some servers send `""` for a call without parameters).
fn parse_arguments(raw: &str) -> Result<Value, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, but they are {}",
            match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            }
        )),
        Err(error) => Err(format!("the arguments are not valid JSON ({error})")),
    }
}

/// The tool messages that tell the model what was wrong with its calls, one per call of the
/// answer (Chat Completions wants every call answered). Nothing was run.
pub(crate) fn correction_messages(
    raw_assistant: &ChatMessage,
    broken: &[BrokenCall],
) -> Vec<ChatMessage> {
    let ChatMessage::Assistant { tool_calls, .. } = raw_assistant else {
        return Vec::new();
    };
    tool_calls
        .iter()
        .map(|call| {
            let content = match broken.iter().find(|b| b.id == call.id) {
                Some(b) => format!(
                    "{TOOL_ERROR_PREFIX}nothing was run: {} for {}. Call {} again with its arguments as one JSON object that matches its parameters.",
                    b.problem, b.name, b.name
                ),
                None => format!(
                    "Not run, because another call in the same answer had unreadable arguments. Call {} again together with the corrected call.",
                    call.function.name
                ),
            };
            ChatMessage::Tool {
                tool_call_id: call.id.clone(),
                content,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "chat_completions_tests.rs"]
mod tests;
