//! Mapping between Steward's Messages-shaped request/response and Amazon Bedrock's Converse
//! types, for every Bedrock model.
//!
//! The mapping is a pure function of the request, so the same stored rows give the same
//! Converse input on every call; [`canonical_json`] then makes the bytes on the wire the same
//! too (the SDK keeps JSON documents in hash maps, whose order changes from call to call).
//!
//! What each model family takes, judged from the model id ([`ConverseFeatures`]):
//!
//! | | cache points | thinking, effort, betas, replayed reasoning |
//! | --- | --- | --- |
//! | Claude (`anthropic.…`) | yes | yes (as `additionalModelRequestFields`) |
//! | Amazon Nova (`amazon.nova…`) | yes | no |
//! | anything else | no | no |
//!
//! What a model does not take is left out of every request (and named once at start-up by the
//! caller, from [`ConverseFeatures::dropped`]).

#[cfg(test)]
use aws_sdk_bedrockruntime::operation::converse::ConverseOutput as SdkConverseOutput;
use aws_sdk_bedrockruntime::primitives::Blob;
use aws_sdk_bedrockruntime::types as bt;
use aws_smithy_types::{Document, Number};
use serde_json::{Map, Value, json};

use crate::error::{InvalidKind, LlmError};
use crate::media::DocumentNames;
use crate::wire::{
    CacheControl, ContentBlock, CreateRequest, CreateResponse, DocumentBlock, DocumentSource,
    Extra, ImageSource, Message, RedactedThinkingBlock, Role, StopReason, ThinkingBlock,
    ToolResultContent, Usage,
};

/// Put before a failed tool's result for models without the `status` field.
const TOOL_ERROR_PREFIX: &str = "Error: ";

/// The text added to a user message that carries a document but no text: Converse rejects
/// such a message ("A text block must be included when using documents").
const DOCUMENT_ONLY_TEXT: &str = "(document attached)";

/// What a Bedrock model accepts beyond text and tools, judged from its id.
///
/// An application inference profile ARN does not say which model it serves, so it gets
/// neither feature (safe: nothing is sent that the model could reject).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConverseFeatures {
    /// Prompt-cache checkpoints (`cachePoint` blocks): Claude and Amazon Nova models.
    pub cache_points: bool,
    /// Anthropic request fields (thinking, effort, betas), signed reasoning replayed in the
    /// history, and the `status` of a tool result: Claude models.
    pub anthropic_fields: bool,
}

impl ConverseFeatures {
    /// The features of `model_id` (a model id, an inference-profile id, or an ARN of either).
    pub fn for_model(model_id: &str) -> Self {
        let id = model_id
            .rsplit('/')
            .next()
            .unwrap_or(model_id)
            .to_ascii_lowercase();
        let claude = id.contains("anthropic.");
        let nova = id.contains("amazon.nova");
        Self {
            cache_points: claude || nova,
            anthropic_fields: claude,
        }
    }

    /// What Steward's requests carry that this model does not take, for the start-up note.
    pub fn dropped(&self) -> Vec<&'static str> {
        let mut dropped = Vec::new();
        if !self.cache_points {
            dropped.push("prompt-cache breakpoints");
        }
        if !self.anthropic_fields {
            dropped.push("reasoning settings (thinking, effort) and replayed reasoning");
        }
        dropped
    }
}

/// A Converse call's input, built from a [`CreateRequest`].
#[derive(Debug, Clone)]
pub(crate) struct ConverseInput {
    pub system: Vec<bt::SystemContentBlock>,
    pub messages: Vec<bt::Message>,
    pub tool_config: Option<bt::ToolConfiguration>,
    pub inference: bt::InferenceConfiguration,
    pub additional_fields: Option<Document>,
}

fn build_error(error: impl std::fmt::Display) -> LlmError {
    LlmError::InvalidRequest {
        message: format!("could not build the Converse request: {error}"),
        kind: InvalidKind::Other,
    }
}

/// The Converse input for `request`. `betas` go to Claude models as `anthropic_beta`. Refused
/// while the request holds stored media references ([`CreateRequest::ensure_media_resolved`]).
pub(crate) fn to_converse(
    request: &CreateRequest,
    betas: &[String],
) -> Result<ConverseInput, LlmError> {
    request.ensure_media_resolved()?;
    let features = ConverseFeatures::for_model(&request.model);
    let mut system = Vec::with_capacity(request.system.len() + 1);
    for block in request.system.iter() {
        system.push(bt::SystemContentBlock::Text(block.text.clone()));
        if let Some(point) = cache_point(features, block.cache_control.as_ref())? {
            system.push(bt::SystemContentBlock::CachePoint(point));
        }
    }

    // Blocks per message first; then drop empty messages and merge neighbours that share a
    // role, so a message whose every block was left out never reaches the API.
    // Document names are unique across the whole request, as Converse requires.
    let mut names = DocumentNames::default();
    let mut merged: Vec<(Role, Vec<bt::ContentBlock>)> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let blocks = message_blocks(message, features, &mut names)?;
        if blocks.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((role, previous)) if *role == message.role => previous.extend(blocks),
            _ => merged.push((message.role, blocks)),
        }
    }
    for (role, content) in &mut merged {
        if *role == Role::User {
            give_documents_text(content);
        }
    }
    let messages = merged
        .into_iter()
        .map(|(role, content)| {
            bt::Message::builder()
                .role(match role {
                    Role::User => bt::ConversationRole::User,
                    Role::Assistant => bt::ConversationRole::Assistant,
                })
                .set_content(Some(content))
                .build()
                .map_err(build_error)
        })
        .collect::<Result<Vec<_>, _>>()?;

    let tool_config = if request.tools.is_empty() {
        None
    } else {
        let mut tools = Vec::with_capacity(request.tools.len() + 1);
        for tool in request.tools.iter() {
            let spec = bt::ToolSpecification::builder()
                .name(&tool.name)
                .description(&tool.description)
                .input_schema(bt::ToolInputSchema::Json(to_document(&tool.input_schema)))
                .build()
                .map_err(build_error)?;
            tools.push(bt::Tool::ToolSpec(spec));
            if let Some(point) = cache_point(features, tool.cache_control.as_ref())? {
                tools.push(bt::Tool::CachePoint(point));
            }
        }
        Some(
            bt::ToolConfiguration::builder()
                .set_tools(Some(tools))
                .build()
                .map_err(build_error)?,
        )
    };

    let mut inference = bt::InferenceConfiguration::builder()
        .max_tokens(i32::try_from(request.max_tokens).unwrap_or(i32::MAX));
    if let Some(temperature) = request.temperature {
        inference = inference.temperature(temperature as f32);
    }

    let mut additional = Map::new();
    if features.anthropic_fields {
        let encode = |value: Result<Value, serde_json::Error>| value.map_err(build_error);
        if let Some(thinking) = &request.thinking {
            additional.insert(
                "thinking".to_owned(),
                encode(serde_json::to_value(thinking))?,
            );
        }
        if let Some(output_config) = &request.output_config {
            additional.insert(
                "output_config".to_owned(),
                encode(serde_json::to_value(output_config))?,
            );
        }
        if !betas.is_empty() {
            additional.insert("anthropic_beta".to_owned(), json!(betas));
        }
    }
    let additional_fields =
        (!additional.is_empty()).then(|| to_document(&Value::Object(additional)));

    Ok(ConverseInput {
        system,
        messages,
        tool_config,
        inference: inference.build(),
        additional_fields,
    })
}

/// A cache checkpoint for a block that carries a breakpoint, on models that take them.
fn cache_point(
    features: ConverseFeatures,
    cache_control: Option<&CacheControl>,
) -> Result<Option<bt::CachePointBlock>, LlmError> {
    let (true, Some(CacheControl::Ephemeral { ttl })) = (features.cache_points, cache_control)
    else {
        return Ok(None);
    };
    bt::CachePointBlock::builder()
        .r#type(bt::CachePointType::Default)
        .set_ttl(ttl.as_deref().map(bt::CacheTtl::from))
        .build()
        .map(Some)
        .map_err(build_error)
}

/// Adds [`DOCUMENT_ONLY_TEXT`] before the first document of a user message that has no text.
fn give_documents_text(content: &mut Vec<bt::ContentBlock>) {
    let has_text = content
        .iter()
        .any(|block| matches!(block, bt::ContentBlock::Text(text) if !text.trim().is_empty()));
    if has_text {
        return;
    }
    if let Some(first) = content
        .iter()
        .position(|block| matches!(block, bt::ContentBlock::Document(_)))
    {
        content.insert(first, bt::ContentBlock::Text(DOCUMENT_ONLY_TEXT.to_owned()));
    }
}

/// One message's Converse blocks; blocks the model cannot take are left out. `names` names
/// the documents.
fn message_blocks(
    message: &Message,
    features: ConverseFeatures,
    names: &mut DocumentNames,
) -> Result<Vec<bt::ContentBlock>, LlmError> {
    let mut blocks = Vec::with_capacity(message.content.len());
    for block in &message.content {
        let (converse, cache_control) = match block {
            ContentBlock::Text(text) if text.text.is_empty() => continue,
            ContentBlock::Text(text) => (
                bt::ContentBlock::Text(text.text.clone()),
                text.cache_control.as_ref(),
            ),
            ContentBlock::Image(image) => match image_block(&image.source)? {
                Some(converse) => (
                    bt::ContentBlock::Image(converse),
                    image.cache_control.as_ref(),
                ),
                None => continue,
            },
            ContentBlock::Document(document) => match document_block(document, names)? {
                Some(converse) => (
                    bt::ContentBlock::Document(converse),
                    document.cache_control.as_ref(),
                ),
                None => continue,
            },
            ContentBlock::ToolUse(call) => (
                bt::ContentBlock::ToolUse(
                    bt::ToolUseBlock::builder()
                        .tool_use_id(&call.id)
                        .name(&call.name)
                        .input(to_document(&call.input))
                        .build()
                        .map_err(build_error)?,
                ),
                call.cache_control.as_ref(),
            ),
            ContentBlock::ToolResult(result) => {
                let mut content = Vec::new();
                match &result.content {
                    Some(ToolResultContent::Text(text)) if !text.is_empty() => {
                        content.push(bt::ToolResultContentBlock::Text(text.clone()))
                    }
                    Some(ToolResultContent::Blocks(inner)) => {
                        for block in inner {
                            match block {
                                ContentBlock::Text(text) if !text.text.is_empty() => content
                                    .push(bt::ToolResultContentBlock::Text(text.text.clone())),
                                ContentBlock::Image(image) => {
                                    if let Some(converse) = image_block(&image.source)? {
                                        content.push(bt::ToolResultContentBlock::Image(converse));
                                    }
                                }
                                ContentBlock::Document(document) => {
                                    if let Some(converse) = document_block(document, names)? {
                                        content
                                            .push(bt::ToolResultContentBlock::Document(converse));
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                let failed = result.is_error == Some(true);
                if content.is_empty() {
                    // Converse rejects a blank result; say plainly that it was empty.
                    content.push(bt::ToolResultContentBlock::Text("(no output)".to_owned()));
                }
                // Only Claude models take the `status` field; others read the failure from
                // the text, as on Chat Completions.
                let status =
                    (failed && features.anthropic_fields).then_some(bt::ToolResultStatus::Error);
                if failed
                    && !features.anthropic_fields
                    && let Some(bt::ToolResultContentBlock::Text(first)) = content.first_mut()
                {
                    first.insert_str(0, TOOL_ERROR_PREFIX);
                }
                (
                    bt::ContentBlock::ToolResult(
                        bt::ToolResultBlock::builder()
                            .tool_use_id(&result.tool_use_id)
                            .set_content(Some(content))
                            .set_status(status)
                            .build()
                            .map_err(build_error)?,
                    ),
                    result.cache_control.as_ref(),
                )
            }
            ContentBlock::Thinking(thinking) if features.anthropic_fields => (
                bt::ContentBlock::ReasoningContent(bt::ReasoningContentBlock::ReasoningText(
                    bt::ReasoningTextBlock::builder()
                        .text(&thinking.thinking)
                        .set_signature(
                            (!thinking.signature.is_empty()).then(|| thinking.signature.clone()),
                        )
                        .build()
                        .map_err(build_error)?,
                )),
                None,
            ),
            ContentBlock::RedactedThinking(redacted) if features.anthropic_fields => {
                match aws_smithy_types::base64::decode(&redacted.data) {
                    Ok(bytes) => (
                        bt::ContentBlock::ReasoningContent(
                            bt::ReasoningContentBlock::RedactedContent(Blob::new(bytes)),
                        ),
                        None,
                    ),
                    Err(_) => continue,
                }
            }
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => continue,
            ContentBlock::Unknown(_) => continue,
        };
        blocks.push(converse);
        if let Some(point) = cache_point(features, cache_control)? {
            blocks.push(bt::ContentBlock::CachePoint(point));
        }
    }
    Ok(blocks)
}

/// A Converse image from inline base64 bytes; URL images (Converse only reads S3) and
/// unknown formats are left out, a stored reference is refused.
fn image_block(source: &ImageSource) -> Result<Option<bt::ImageBlock>, LlmError> {
    let (media_type, data) = match source {
        ImageSource::Base64 { media_type, data } => (media_type, data),
        ImageSource::Url { .. } => return Ok(None),
        ImageSource::Stored { key, .. } => {
            return Err(LlmError::UnresolvedMedia { key: key.clone() });
        }
    };
    let format = match media_type.to_ascii_lowercase().as_str() {
        "image/png" => bt::ImageFormat::Png,
        "image/jpeg" | "image/jpg" => bt::ImageFormat::Jpeg,
        "image/gif" => bt::ImageFormat::Gif,
        "image/webp" => bt::ImageFormat::Webp,
        _ => return Ok(None),
    };
    let Ok(bytes) = aws_smithy_types::base64::decode(data) else {
        return Ok(None);
    };
    bt::ImageBlock::builder()
        .format(format)
        .source(bt::ImageSource::Bytes(Blob::new(bytes)))
        .build()
        .map(Some)
        .map_err(build_error)
}

/// A Converse document from inline base64 bytes, named by `names` (see [`DocumentNames`]);
/// URL documents (Converse only reads S3), formats Converse does not know and bytes that are
/// not base64 are left out, a stored reference is refused.
fn document_block(
    document: &DocumentBlock,
    names: &mut DocumentNames,
) -> Result<Option<bt::DocumentBlock>, LlmError> {
    let (media_type, data) = match &document.source {
        DocumentSource::Base64 { media_type, data } => (media_type, data),
        DocumentSource::Url { .. } => return Ok(None),
        DocumentSource::Stored { key, .. } => {
            return Err(LlmError::UnresolvedMedia { key: key.clone() });
        }
    };
    let format = match media_type.to_ascii_lowercase().as_str() {
        "application/pdf" => bt::DocumentFormat::Pdf,
        "text/plain" => bt::DocumentFormat::Txt,
        "text/csv" => bt::DocumentFormat::Csv,
        "text/html" => bt::DocumentFormat::Html,
        "text/markdown" => bt::DocumentFormat::Md,
        "application/msword" => bt::DocumentFormat::Doc,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => {
            bt::DocumentFormat::Docx
        }
        "application/vnd.ms-excel" => bt::DocumentFormat::Xls,
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => {
            bt::DocumentFormat::Xlsx
        }
        _ => return Ok(None),
    };
    let Ok(bytes) = aws_smithy_types::base64::decode(data) else {
        return Ok(None);
    };
    bt::DocumentBlock::builder()
        .format(format)
        .name(names.next(document.title.as_deref()))
        .source(bt::DocumentSource::Bytes(Blob::new(bytes)))
        .build()
        .map(Some)
        .map_err(build_error)
}

/// The response for a whole (non-streamed) Converse answer. `id` names the call (Converse has
/// no message id). The client streams; this is the reference its streamed assembly is tested
/// against.
#[cfg(test)]
pub(crate) fn from_converse(
    output: SdkConverseOutput,
    model: &str,
    id: String,
) -> Result<CreateResponse, LlmError> {
    let content = match &output.output {
        Some(bt::ConverseOutput::Message(message)) => {
            Some(message.content.iter().map(from_block).collect())
        }
        _ => None,
    };
    from_parts(
        &output.stop_reason,
        content,
        output.usage.as_ref(),
        model,
        id,
    )
}

/// The response from the parts of a Converse answer, whether it came whole or streamed
/// (`content` is `None` when the answer had no message).
pub(crate) fn from_parts(
    provider_stop_reason: &bt::StopReason,
    content: Option<Vec<ContentBlock>>,
    usage: Option<&bt::TokenUsage>,
    model: &str,
    id: String,
) -> Result<CreateResponse, LlmError> {
    let provider_stop = provider_stop_reason.as_str().to_owned();
    let stop_reason = match provider_stop_reason {
        bt::StopReason::EndTurn => StopReason::EndTurn,
        bt::StopReason::ToolUse => StopReason::ToolUse,
        bt::StopReason::MaxTokens => StopReason::MaxTokens,
        bt::StopReason::StopSequence => StopReason::StopSequence,
        bt::StopReason::ModelContextWindowExceeded => StopReason::ModelContextWindowExceeded,
        // A guardrail or the model's content filter blocked the answer: the person hears the
        // same line as for a refusal.
        bt::StopReason::GuardrailIntervened | bt::StopReason::ContentFiltered => {
            StopReason::Refusal
        }
        bt::StopReason::MalformedToolUse | bt::StopReason::MalformedModelOutput => {
            return Err(LlmError::MalformedResponse {
                message: format!(
                    "the model's answer could not be used (stop reason {provider_stop}); nothing was kept"
                ),
            });
        }
        other => StopReason::Unknown(other.as_str().to_owned()),
    };
    let Some(content) = content else {
        return Err(LlmError::MalformedResponse {
            message: format!("the Converse answer has no message (stop reason {provider_stop})"),
        });
    };
    let usage = usage
        .map(|usage| Usage {
            input_tokens: count(usage.input_tokens),
            output_tokens: count(usage.output_tokens),
            cache_creation_input_tokens: count(usage.cache_write_input_tokens.unwrap_or(0)),
            cache_read_input_tokens: count(usage.cache_read_input_tokens.unwrap_or(0)),
            extra: Extra::new(),
        })
        .unwrap_or_default();
    let mut extra = Extra::new();
    if stop_reason.as_str() != provider_stop {
        extra.insert(
            "provider_stop_reason".to_owned(),
            Value::String(provider_stop),
        );
    }
    Ok(CreateResponse {
        id,
        model: model.to_owned(),
        role: Role::Assistant,
        content,
        stop_reason: Some(stop_reason),
        usage,
        extra,
    })
}

fn count(tokens: i32) -> u64 {
    u64::try_from(tokens).unwrap_or(0)
}

/// One Converse content block as a Messages block. Blocks Steward has no use for are kept as
/// unknown blocks naming their kind (and are left out when the history is sent back).
pub(crate) fn from_block(block: &bt::ContentBlock) -> ContentBlock {
    match block {
        bt::ContentBlock::Text(text) => ContentBlock::text(text.clone()),
        bt::ContentBlock::ToolUse(call) => ContentBlock::tool_use(
            call.tool_use_id.clone(),
            call.name.clone(),
            from_document(&call.input),
        ),
        bt::ContentBlock::ReasoningContent(bt::ReasoningContentBlock::ReasoningText(text)) => {
            ContentBlock::Thinking(ThinkingBlock {
                thinking: text.text.clone(),
                signature: text.signature.clone().unwrap_or_default(),
                extra: Extra::new(),
            })
        }
        bt::ContentBlock::ReasoningContent(bt::ReasoningContentBlock::RedactedContent(blob)) => {
            ContentBlock::RedactedThinking(RedactedThinkingBlock {
                data: aws_smithy_types::base64::encode(blob.as_ref()),
                extra: Extra::new(),
            })
        }
        bt::ContentBlock::CitationsContent(cited) => ContentBlock::text(
            cited
                .content
                .iter()
                .flatten()
                .filter_map(|part| part.as_text().ok().map(String::as_str))
                .collect::<String>(),
        ),
        other => unsupported_block(block_kind(other)),
    }
}

/// The stand-in for a Converse block Steward has no use for, naming its kind.
pub(crate) fn unsupported_block(kind: &str) -> ContentBlock {
    ContentBlock::Unknown(json!({
        "type": "converse_unsupported",
        "kind": kind,
    }))
}

fn block_kind(block: &bt::ContentBlock) -> &'static str {
    match block {
        bt::ContentBlock::Audio(_) => "audio",
        bt::ContentBlock::Document(_) => "document",
        bt::ContentBlock::Image(_) => "image",
        bt::ContentBlock::Video(_) => "video",
        bt::ContentBlock::SearchResult(_) => "searchResult",
        bt::ContentBlock::ToolResult(_) => "toolResult",
        bt::ContentBlock::GuardContent(_) => "guardContent",
        bt::ContentBlock::CachePoint(_) => "cachePoint",
        _ => "other",
    }
}

/// A JSON value as an SDK document.
pub(crate) fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(flag) => Document::Bool(*flag),
        Value::Number(number) => Document::Number(if let Some(n) = number.as_u64() {
            Number::PosInt(n)
        } else if let Some(n) = number.as_i64() {
            Number::NegInt(n)
        } else {
            Number::Float(number.as_f64().unwrap_or(0.0))
        }),
        Value::String(text) => Document::String(text.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), to_document(value)))
                .collect(),
        ),
    }
}

/// An SDK document as JSON, object keys sorted.
pub(crate) fn from_document(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(flag) => Value::Bool(*flag),
        Document::Number(Number::PosInt(n)) => Value::from(*n),
        Document::Number(Number::NegInt(n)) => Value::from(*n),
        Document::Number(Number::Float(n)) => serde_json::Number::from_f64(*n)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Document::String(text) => Value::String(text.clone()),
        Document::Array(items) => Value::Array(items.iter().map(from_document).collect()),
        Document::Object(map) => {
            let mut entries: Vec<(&String, &Document)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), from_document(value)))
                    .collect(),
            )
        }
    }
}

/// The same JSON with every object's keys in sorted order, or `None` when `body` is not JSON.
///
/// The SDK serializes documents (tool schemas, tool inputs, additional fields) from hash maps,
/// so their key order differs from one call to the next; sorted keys make the same request the
/// same bytes, which the provider's prompt cache needs.
pub(crate) fn canonical_json(body: &[u8]) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(body).ok()?;
    serde_json::to_vec(&sorted(value)).ok()
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, sorted(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
#[path = "converse_tests.rs"]
mod tests;
