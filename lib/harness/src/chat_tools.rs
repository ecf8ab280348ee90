//! Tools that exist only inside a chat conversation, so they are in the chat runtime's tool
//! list but never in the shared registry (an MCP client has no conversation to focus and no
//! message to react to). They form their own small registry, [`ChatTools`]: each is a typed
//! definition — name, description, input type (its JSON Schema derived by `schemars`) and the
//! conversion of a checked input into a [`ChatToolCall`], which the turn carries out with the
//! conversation and the channel in hand.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use steward_llm::ToolSpec;

/// The only reactions the assistant may put on a message: a small, friendly set.
pub const REACTIONS: [&str; 5] = ["👍", "❤️", "🎉", "😂", "🙏"];

/// Name of the tool that switches the conversation's active record.
pub const SET_ACTIVE_RECORD: &str = "set_active_record";
/// Name of the tool that reacts to the user's message with an emoji.
pub const REACT: &str = "react";

/// Longest record id `set_active_record` accepts, in bytes: ids are short; anything longer is
/// not one.
const RECORD_ID_BYTES_MAX: usize = 200;

/// Input of `set_active_record`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SetActiveRecordInput {
    /// Id of the record to focus on, from the context block or a tool result.
    pub record_id: String,
}

/// Input of `react`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReactInput {
    /// One of: 👍 ❤️ 🎉 😂 🙏
    pub emoji: String,
}

/// A parsed call of a conversation-only tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatToolCall {
    /// Focus the conversation on this record id.
    SetActiveRecord(String),
    /// React with this emoji (one of [`REACTIONS`]).
    React(String),
}

/// One conversation-only tool, defined once: what the model sees and how its arguments are
/// checked.
pub struct ChatToolDef {
    name: &'static str,
    description: &'static str,
    input_schema: Value,
    parse: Box<dyn Fn(Value) -> Result<ChatToolCall, String> + Send + Sync>,
}

impl std::fmt::Debug for ChatToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatToolDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ChatToolDef {
    /// A tool whose input is `I`; `to_call` turns a deserialized input into the call, or a
    /// readable refusal.
    pub fn new<I: DeserializeOwned + JsonSchema + 'static>(
        name: &'static str,
        description: &'static str,
        to_call: fn(I) -> Result<ChatToolCall, String>,
    ) -> Self {
        Self {
            name,
            description,
            input_schema: schemars::schema_for!(I).to_value(),
            parse: Box::new(move |input| {
                serde_json::from_value::<I>(input)
                    .map_err(|e| format!("Invalid arguments: {e}"))
                    .and_then(to_call)
            }),
        }
    }

    /// Changes the input schema (a constraint the input type cannot say, such as an enum of
    /// emoji).
    fn with_schema(mut self, edit: impl FnOnce(&mut Value)) -> Self {
        edit(&mut self.input_schema);
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The tool as the model sees it.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: self.description.into(),
            input_schema: self.input_schema.clone(),
            cache_control: None,
        }
    }
}

/// The conversation-scoped registry: the tools of a chat conversation that are not in the
/// shared registry, in a fixed order after the registry's.
#[derive(Debug)]
pub struct ChatTools {
    tools: Vec<ChatToolDef>,
}

impl Default for ChatTools {
    fn default() -> Self {
        Self::new()
    }
}

impl ChatTools {
    /// `set_active_record`, then `react`.
    pub fn new() -> Self {
        Self {
            tools: vec![
                ChatToolDef::new::<SetActiveRecordInput>(
                    SET_ACTIVE_RECORD,
                    "Make a record the one this conversation is about, when the user switches to another one. The next turn's context block then carries its current details. Creating a record already makes it active; don't call this after a create. Use ids from the context block or tool results only.",
                    set_active_record,
                ),
                ChatToolDef::new::<ReactInput>(
                    REACT,
                    "Put an emoji reaction on the user's latest message, like a long-press reaction. Most turns get none. Use it for thanks, a simple acknowledgement or good news; at most once per turn. If the reaction says it all, reply with just <silent/>.",
                    react,
                )
                .with_schema(|schema| {
                    if let Some(emoji) = schema.pointer_mut("/properties/emoji") {
                        emoji["enum"] = Value::from(REACTIONS.to_vec());
                    }
                }),
            ],
        }
    }

    /// The tools as the model sees them.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(ChatToolDef::spec).collect()
    }

    /// Parses a call of `name` with `input`: `None` when `name` is not one of these tools,
    /// `Some(Err)` with a readable message when its arguments are wrong.
    pub fn parse(&self, name: &str, input: &Value) -> Option<Result<ChatToolCall, String>> {
        let tool = self.tools.iter().find(|t| t.name == name)?;
        Some((tool.parse)(input.clone()))
    }
}

fn set_active_record(input: SetActiveRecordInput) -> Result<ChatToolCall, String> {
    let id = input.record_id.trim();
    if id.is_empty() || id.len() > RECORD_ID_BYTES_MAX {
        return Err("Invalid arguments: record_id must be an id from the context block".into());
    }
    Ok(ChatToolCall::SetActiveRecord(id.to_owned()))
}

fn react(input: ReactInput) -> Result<ChatToolCall, String> {
    let emoji = input.emoji.trim();
    REACTIONS
        .iter()
        .find(|r| **r == emoji || r.trim_end_matches('\u{FE0F}') == emoji)
        .map(|r| ChatToolCall::React((*r).to_owned()))
        .ok_or_else(|| {
            format!(
                "Invalid arguments: emoji must be one of {}",
                REACTIONS.join(" ")
            )
        })
}

/// The conversation-only tools as the model sees them (see [`ChatTools::specs`]).
pub fn specs() -> Vec<ToolSpec> {
    ChatTools::new().specs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_refuses_readably() {
        let tools = ChatTools::new();
        assert_eq!(tools.parse("list_things", &json!({})), None);
        assert_eq!(
            tools.parse(REACT, &json!({"emoji": "👍"})),
            Some(Ok(ChatToolCall::React("👍".into())))
        );
        assert_eq!(
            tools.parse(REACT, &json!({"emoji": "❤"})),
            Some(Ok(ChatToolCall::React("❤️".into()))),
            "the heart without its variation selector is the same heart"
        );
        assert!(
            matches!(tools.parse(REACT, &json!({"emoji": "💩"})), Some(Err(m)) if m.contains("one of"))
        );
        assert!(
            matches!(tools.parse(SET_ACTIVE_RECORD, &json!({})), Some(Err(m)) if m.starts_with("Invalid arguments"))
        );
        assert_eq!(
            tools.parse(SET_ACTIVE_RECORD, &json!({"record_id": " ev_1 "})),
            Some(Ok(ChatToolCall::SetActiveRecord("ev_1".into())))
        );
        let names: Vec<_> = tools.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, [SET_ACTIVE_RECORD, REACT]);
        let react = &tools.specs()[1];
        assert_eq!(
            react.input_schema.pointer("/properties/emoji/enum"),
            Some(&json!(REACTIONS))
        );
    }
}
