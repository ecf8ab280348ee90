//! Anthropic Messages API wire types: the request, the response, messages and content blocks.
//!
//! Two properties matter more than convenience here:
//!
//! - **Nothing is lost on replay.** A content block of a type this crate does not know is kept
//!   verbatim as [`ContentBlock::Unknown`], and every known block keeps fields it does not know
//!   in its `extra` map. A response stored and sent back later carries everything the API sent.
//!   A known block that does not match its expected shape is kept as `Unknown` too, rather than
//!   failing the whole message.
//! - **Serialization is deterministic.** The same value always serializes to the same bytes:
//!   struct fields in declaration order, maps (`extra`, tool inputs, schemas) in `serde_json`'s
//!   map order (sorted keys, as no crate here enables `preserve_order`). So the same stored rows
//!   always produce the same request bytes, which prompt caching and thinking signatures need.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Fields of a block or response that this crate does not model, kept verbatim for replay.
pub type Extra = Map<String, Value>;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (and tool results, which the API counts as user content).
    User,
    /// The model.
    Assistant,
}

/// A prompt-cache breakpoint: everything up to and including the marked block is cached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CacheControl {
    /// The only kind the API has: a short-lived cache entry (5 minutes unless `ttl` says `1h`).
    Ephemeral {
        /// Optional lifetime, `"5m"` or `"1h"`; absent means the API default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl: Option<String>,
    },
}

impl CacheControl {
    /// The default breakpoint: `{"type":"ephemeral"}`.
    pub fn ephemeral() -> Self {
        Self::Ephemeral { ttl: None }
    }
}

/// One block of the system prompt: `{"type":"text","text":…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "text")]
pub struct SystemBlock {
    /// The prompt text.
    pub text: String,
    /// A cache breakpoint after this block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl SystemBlock {
    /// A system text block without a cache breakpoint.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            cache_control: None,
        }
    }

    /// The same block with an ephemeral cache breakpoint.
    pub fn cached(mut self) -> Self {
        self.cache_control = Some(CacheControl::ephemeral());
        self
    }
}

/// A tool the model may call: name, description and JSON Schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name, as the model will use it in `tool_use`.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: Value,
    /// A cache breakpoint after this tool (set on the last tool to cache the whole list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// How the model reasons before answering (`thinking` in the request).
///
/// Current models (Claude Sonnet 5.x, Opus 4.7 and later) use `{"type":"adaptive"}` steered by
/// [`OutputConfig::effort`], and reject `enabled` with a budget; older ones (Sonnet 4.5, Opus 4.5
/// and earlier) only know `enabled` with `budget_tokens`. Some models reject `disabled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThinkingConfig {
    /// Manual extended thinking with a fixed budget: `{"type":"enabled","budget_tokens":N}`.
    Enabled {
        /// Tokens the model may spend thinking; must be below `max_tokens`.
        budget_tokens: u32,
    },
    /// The model decides when and how much to think: `{"type":"adaptive"}`.
    Adaptive {
        /// What thinking blocks carry back; absent means the model's default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display: Option<ThinkingDisplay>,
    },
    /// No reasoning: `{"type":"disabled"}`.
    Disabled,
}

impl ThinkingConfig {
    /// Adaptive thinking with the model's default display: `{"type":"adaptive"}`.
    pub fn adaptive() -> Self {
        Self::Adaptive { display: None }
    }
}

/// What an adaptive thinking block carries back (`thinking.display`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingDisplay {
    /// A summary of the reasoning in the `thinking` field.
    Summarized,
    /// An empty `thinking` field; the signature still carries the reasoning for replay.
    Omitted,
}

/// How much effort the model spends on a response (`output_config.effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// Fewest tokens; may skip thinking on simple messages.
    Low,
    /// A balance of cost, latency and depth.
    Medium,
    /// Thorough (the API default on current models).
    High,
    /// Extra-high, above `high`, on models that support it.
    #[serde(rename = "xhigh")]
    XHigh,
    /// No limit on thinking depth, on models that support it.
    Max,
}

/// Output settings (`output_config`): currently only the effort level.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputConfig {
    /// The effort level; absent means the model's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
}

/// A Messages API request (`POST /v1/messages`). The Claude API client adds `"stream": true`
/// after these fields when it sends one; stored and compared requests never carry it.
///
/// Optional fields are left out of the JSON when unset, so a request never carries a feature
/// the caller did not ask for (a rejected optional feature can then be switched off cleanly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateRequest {
    /// Model id (Claude API) or model/inference-profile id (Bedrock).
    pub model: String,
    /// Upper bound on output tokens, reasoning included.
    pub max_tokens: u32,
    /// The system prompt, as blocks so each can carry a cache breakpoint. Shared like
    /// `tools`: the harness builds it once and every request points at it (and the Claude API
    /// client encodes it once per list, `http.rs`).
    #[serde(default, skip_serializing_if = "no_system")]
    pub system: Arc<[SystemBlock]>,
    /// The conversation so far, oldest first. Each message is shared, not copied: the harness
    /// keeps a conversation's stored rows in memory between turns and every request of a turn
    /// points at them (cloning, then freeing, every earlier block for each model call was a
    /// tenth of a turn's CPU); a message is copied only where a request changes it (its cache
    /// breakpoint, resolved media, merged rows), with [`Arc::make_mut`].
    pub messages: Vec<Arc<Message>>,
    /// Tools the model may call, in a fixed order. Shared, not copied: the harness builds the
    /// list once at start-up and every request of every conversation points at it (copying
    /// and freeing the tools' JSON schemas was a tenth of a turn's CPU).
    #[serde(default, skip_serializing_if = "no_tools")]
    pub tools: Arc<[ToolSpec]>,
    /// Reasoning configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingConfig>,
    /// Output configuration (effort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_config: Option<OutputConfig>,
    /// Sampling temperature; leave unset on current models, which reject non-default values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

fn no_system(system: &Arc<[SystemBlock]>) -> bool {
    system.is_empty()
}

fn no_tools(tools: &Arc<[ToolSpec]>) -> bool {
    tools.is_empty()
}

impl CreateRequest {
    /// A request with only the required fields set.
    pub fn new(
        model: impl Into<String>,
        max_tokens: u32,
        messages: impl IntoIterator<Item = impl Into<Arc<Message>>>,
    ) -> Self {
        Self {
            model: model.into(),
            max_tokens,
            system: Arc::from([]),
            messages: messages.into_iter().map(Into::into).collect(),
            tools: Arc::from([]),
            thinking: None,
            output_config: None,
            temperature: None,
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its blocks, in order. A plain string is accepted on input and read as one text block.
    #[serde(deserialize_with = "content_string_or_blocks")]
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message with the given blocks.
    pub fn user(content: Vec<ContentBlock>) -> Self {
        Self {
            role: Role::User,
            content,
        }
    }

    /// An assistant message with the given blocks.
    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }

    /// A user message of one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::user(vec![ContentBlock::text(text)])
    }

    /// Sets (or clears) the cache breakpoint on the last block; the message-level breakpoint the
    /// API accepts. Returns false when the last block cannot carry one (reasoning, unknown) or
    /// the message is empty.
    pub fn set_cache_control_on_last(&mut self, cache_control: Option<CacheControl>) -> bool {
        match self.content.last_mut() {
            Some(block) => block.set_cache_control(cache_control),
            None => false,
        }
    }
}

fn content_string_or_blocks<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ContentBlock>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum StringOrBlocks {
        String(String),
        Blocks(Vec<ContentBlock>),
    }
    Ok(match StringOrBlocks::deserialize(deserializer)? {
        StringOrBlocks::String(text) => vec![ContentBlock::text(text)],
        StringOrBlocks::Blocks(blocks) => blocks,
    })
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// A cache breakpoint after this block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Fields not modelled here (for example `citations`), kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Where an image comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    /// Inline image bytes, base64-encoded.
    Base64 {
        /// MIME type, such as `image/jpeg`.
        media_type: String,
        /// The base64-encoded bytes.
        data: String,
    },
    /// An image the API fetches by URL.
    Url {
        /// The image URL.
        url: String,
    },
    /// A reference to image bytes in Steward's blob store, as stored transcripts keep it:
    /// `{"type":"steward_stored","key":…,"media_type":…}`. Never sent to a provider: it is
    /// replaced by [`ImageSource::Base64`] before each call
    /// ([`CreateRequest::with_stored_media_resolved`]), and every client refuses it
    /// ([`crate::LlmError::UnresolvedMedia`]). The `steward_` prefix keeps the tag apart from
    /// any source type of the Anthropic API.
    #[serde(rename = "steward_stored")]
    Stored {
        /// The blob's key in the blob store.
        key: String,
        /// MIME type of the stored bytes, such as `image/jpeg`.
        media_type: String,
    },
}

/// An image block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageBlock {
    /// The image.
    pub source: ImageSource,
    /// A cache breakpoint after this block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Fields not modelled here, kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Where a document comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DocumentSource {
    /// Inline document bytes, base64-encoded (the API takes `application/pdf`).
    Base64 {
        /// MIME type, such as `application/pdf`.
        media_type: String,
        /// The base64-encoded bytes.
        data: String,
    },
    /// A document the API fetches by URL.
    Url {
        /// The document URL.
        url: String,
    },
    /// A reference to document bytes in Steward's blob store, as stored transcripts keep it:
    /// `{"type":"steward_stored","key":…,"media_type":…}`; resolved and refused exactly like
    /// [`ImageSource::Stored`].
    #[serde(rename = "steward_stored")]
    Stored {
        /// The blob's key in the blob store.
        key: String,
        /// MIME type of the stored bytes, such as `application/pdf`.
        media_type: String,
    },
}

/// A document block (a PDF the person sent, for example).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentBlock {
    /// The document.
    pub source: DocumentSource,
    /// A title the model sees with the document (a file name, for example), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A cache breakpoint after this block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Fields not modelled here (for example `context` or `citations`), kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The model asking to call a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseBlock {
    /// The call's id; the matching `tool_result` names it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model wrote them (unvalidated).
    pub input: Value,
    /// A cache breakpoint after this block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Fields not modelled here (for example `caller`), kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The content of a tool result: a string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// Plain text (what Steward's tools return).
    Text(String),
    /// Blocks (text, images…).
    Blocks(Vec<ContentBlock>),
}

/// The result of a tool call, sent back in a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The id of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The result; absent means an empty result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ToolResultContent>,
    /// `Some(true)` when the call failed; absent when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// A cache breakpoint after this block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Fields not modelled here, kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The model's reasoning, signed; must be sent back unchanged when replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The (possibly summarized or empty) reasoning text.
    pub thinking: String,
    /// The API's signature over the reasoning; a changed block is rejected on replay.
    pub signature: String,
    /// Fields not modelled here, kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Reasoning the API returned encrypted; must be sent back unchanged when replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedactedThinkingBlock {
    /// The encrypted reasoning.
    pub data: String,
    /// Fields not modelled here, kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{"type":"text"}`.
    Text(TextBlock),
    /// `{"type":"image"}`.
    Image(ImageBlock),
    /// `{"type":"document"}`.
    Document(DocumentBlock),
    /// `{"type":"tool_use"}`.
    ToolUse(ToolUseBlock),
    /// `{"type":"tool_result"}`.
    ToolResult(ToolResultBlock),
    /// `{"type":"thinking"}`.
    Thinking(ThinkingBlock),
    /// `{"type":"redacted_thinking"}`.
    RedactedThinking(RedactedThinkingBlock),
    /// Any other block (or a known type in an unexpected shape), kept verbatim.
    Unknown(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextBlock {
            text: text.into(),
            cache_control: None,
            extra: Extra::new(),
        })
    }

    /// A tool call block.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolUse(ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input,
            cache_control: None,
            extra: Extra::new(),
        })
    }

    /// A tool result block with text content; `is_error` is left out of the JSON when false.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::ToolResult(ToolResultBlock {
            tool_use_id: tool_use_id.into(),
            content: Some(ToolResultContent::Text(text.into())),
            is_error: is_error.then_some(true),
            cache_control: None,
            extra: Extra::new(),
        })
    }

    /// A thinking block (tests and fixtures; real ones come from the API).
    pub fn thinking(thinking: impl Into<String>, signature: impl Into<String>) -> Self {
        Self::Thinking(ThinkingBlock {
            thinking: thinking.into(),
            signature: signature.into(),
            extra: Extra::new(),
        })
    }

    /// The block's `type` string as it appears on the wire (`None` for an unknown block
    /// without a string `type`).
    pub fn type_name(&self) -> Option<&str> {
        match self {
            Self::Text(_) => Some("text"),
            Self::Image(_) => Some("image"),
            Self::Document(_) => Some("document"),
            Self::ToolUse(_) => Some("tool_use"),
            Self::ToolResult(_) => Some("tool_result"),
            Self::Thinking(_) => Some("thinking"),
            Self::RedactedThinking(_) => Some("redacted_thinking"),
            Self::Unknown(value) => value.get("type").and_then(Value::as_str),
        }
    }

    /// True for `thinking` and `redacted_thinking` blocks.
    pub fn is_reasoning(&self) -> bool {
        matches!(self, Self::Thinking(_) | Self::RedactedThinking(_))
    }

    /// Sets (or clears) this block's cache breakpoint. Returns false, changing nothing, for
    /// blocks that cannot carry one (reasoning and unknown blocks).
    pub fn set_cache_control(&mut self, cache_control: Option<CacheControl>) -> bool {
        let slot = match self {
            Self::Text(block) => &mut block.cache_control,
            Self::Image(block) => &mut block.cache_control,
            Self::Document(block) => &mut block.cache_control,
            Self::ToolUse(block) => &mut block.cache_control,
            Self::ToolResult(block) => &mut block.cache_control,
            Self::Thinking(_) | Self::RedactedThinking(_) | Self::Unknown(_) => return false,
        };
        *slot = cache_control;
        true
    }
}

/// Borrowed view used to serialize known blocks with their `type` tag first.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum KnownBlockRef<'a> {
    Text(&'a TextBlock),
    Image(&'a ImageBlock),
    Document(&'a DocumentBlock),
    ToolUse(&'a ToolUseBlock),
    ToolResult(&'a ToolResultBlock),
    Thinking(&'a ThinkingBlock),
    RedactedThinking(&'a RedactedThinkingBlock),
}

/// Owned twin of [`KnownBlockRef`], used to try a value against the known shapes.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum KnownBlock {
    Text(TextBlock),
    Image(ImageBlock),
    Document(DocumentBlock),
    ToolUse(ToolUseBlock),
    ToolResult(ToolResultBlock),
    Thinking(ThinkingBlock),
    RedactedThinking(RedactedThinkingBlock),
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = match self {
            Self::Text(block) => KnownBlockRef::Text(block),
            Self::Image(block) => KnownBlockRef::Image(block),
            Self::Document(block) => KnownBlockRef::Document(block),
            Self::ToolUse(block) => KnownBlockRef::ToolUse(block),
            Self::ToolResult(block) => KnownBlockRef::ToolResult(block),
            Self::Thinking(block) => KnownBlockRef::Thinking(block),
            Self::RedactedThinking(block) => KnownBlockRef::RedactedThinking(block),
            Self::Unknown(value) => return value.serialize(serializer),
        };
        known.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(Self::from_value(value))
    }
}

impl ContentBlock {
    /// Reads a block from JSON: a known type in its expected shape becomes that variant,
    /// anything else is kept verbatim as [`ContentBlock::Unknown`].
    pub fn from_value(value: Value) -> Self {
        match KnownBlock::deserialize(&value) {
            Ok(KnownBlock::Text(block)) => Self::Text(block),
            Ok(KnownBlock::Image(block)) => Self::Image(block),
            Ok(KnownBlock::Document(block)) => Self::Document(block),
            Ok(KnownBlock::ToolUse(block)) => Self::ToolUse(block),
            Ok(KnownBlock::ToolResult(block)) => Self::ToolResult(block),
            Ok(KnownBlock::Thinking(block)) => Self::Thinking(block),
            Ok(KnownBlock::RedactedThinking(block)) => Self::RedactedThinking(block),
            Err(_) => Self::Unknown(value),
        }
    }
}

/// Why the model stopped. Serialized as the plain API string; unknown values are kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model wants tool results before it goes on.
    ToolUse,
    /// `max_tokens` was reached; the answer is cut off.
    MaxTokens,
    /// A custom stop sequence was generated.
    StopSequence,
    /// A long-running turn was paused; send the response back to let it continue.
    PauseTurn,
    /// The model declined to answer.
    Refusal,
    /// The context window filled up; the answer is cut off.
    ModelContextWindowExceeded,
    /// A stop reason this crate does not know yet, kept as sent.
    Unknown(String),
}

impl StopReason {
    /// The API string for this stop reason.
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::StopSequence => "stop_sequence",
            Self::PauseTurn => "pause_turn",
            Self::Refusal => "refusal",
            Self::ModelContextWindowExceeded => "model_context_window_exceeded",
            Self::Unknown(other) => other,
        }
    }

    /// Reads an API string; anything unrecognised becomes [`StopReason::Unknown`].
    pub fn parse(value: &str) -> Self {
        match value {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "pause_turn" => Self::PauseTurn,
            "refusal" => Self::Refusal,
            "model_context_window_exceeded" => Self::ModelContextWindowExceeded,
            other => Self::Unknown(other.to_owned()),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = String::deserialize(deserializer)?;
        Ok(Self::parse(&value))
    }
}

/// Token counts of one response. Missing or `null` counts read as 0.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens that were neither written to nor read from the cache.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub cache_read_input_tokens: u64,
    /// Other usage fields (service tier, cache breakdown…), kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

fn zero_if_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(deserializer)?.unwrap_or(0))
}

/// A Messages API response (non-streaming).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateResponse {
    /// The message id (`msg_…`).
    pub id: String,
    /// The model that answered.
    pub model: String,
    /// Always [`Role::Assistant`].
    pub role: Role,
    /// The answer's blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Why the model stopped (`null` only in streaming, kept optional to be safe).
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Token counts.
    #[serde(default)]
    pub usage: Usage,
    /// Fields not modelled here (`type`, `stop_sequence`, `container`…), kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CreateResponse {
    /// A response with the given content and stop reason, id `msg_local`, zero usage (for
    /// scripted clients and tests).
    pub fn new(content: Vec<ContentBlock>, stop_reason: StopReason) -> Self {
        Self {
            id: "msg_local".to_owned(),
            model: "scripted".to_owned(),
            role: Role::Assistant,
            content,
            stop_reason: Some(stop_reason),
            usage: Usage::default(),
            extra: Extra::new(),
        }
    }

    /// The response as the assistant message to append to the conversation (content verbatim).
    pub fn to_message(&self) -> Message {
        Message {
            role: self.role,
            content: self.content.clone(),
        }
    }
}

/// All text of the given blocks, concatenated in order with nothing in between (the API may
/// split one answer across several text blocks). Reasoning, tool calls and unknown blocks are
/// skipped.
pub fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

/// The tool calls among the given blocks, in order.
pub fn tool_uses(content: &[ContentBlock]) -> Vec<&ToolUseBlock> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolUse(tool_use) => Some(tool_use),
            _ => None,
        })
        .collect()
}

/// The messages without reasoning: every `thinking` and `redacted_thinking` block is removed;
/// text, tool calls and everything else stay exactly as they were.
///
/// Used after the API rejected a replayed thinking signature. A message left with no content
/// is dropped (the API rejects empty messages, and inventing placeholder text would put words
/// in the model's mouth); neighbouring messages that share a role are merged into one, blocks in
/// order, so roles keep alternating and every `tool_use` still precedes its `tool_result`.
pub fn strip_reasoning(messages: &[Message]) -> Vec<Message> {
    let mut stripped: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        let content: Vec<ContentBlock> = message
            .content
            .iter()
            .filter(|block| !block.is_reasoning())
            .cloned()
            .collect();
        if content.is_empty() {
            continue;
        }
        match stripped.last_mut() {
            Some(previous) if previous.role == message.role => previous.content.extend(content),
            _ => stripped.push(Message {
                role: message.role,
                content,
            }),
        }
    }
    stripped
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
