//! Tools that exist only inside a chat conversation, so they are in the chat runtime's tool
//! list but never in the shared registry (an MCP client has no conversation to focus and no
//! message to react to).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use steward_llm::ToolSpec;

/// The only reactions the assistant may put on a message: a small, friendly set.
pub const REACTIONS: [&str; 5] = ["👍", "❤️", "🎉", "😂", "🙏"];

/// Name of the tool that switches the conversation's active record.
pub const SET_ACTIVE_RECORD: &str = "set_active_record";
/// Name of the tool that reacts to the user's message with an emoji.
pub const REACT: &str = "react";

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

/// The conversation-only tools as the model sees them, in a fixed order after the registry's.
pub fn specs() -> Vec<ToolSpec> {
    let schema = |s: schemars::Schema| s.to_value();
    let mut react_schema = schema(schemars::schema_for!(ReactInput));
    if let Some(emoji) = react_schema.pointer_mut("/properties/emoji") {
        emoji["enum"] = Value::from(REACTIONS.to_vec());
    }
    vec![
        ToolSpec {
            name: SET_ACTIVE_RECORD.into(),
            description: "Make a record the one this conversation is about, when the user switches to another one. The next turn's context block then carries its current details. Creating a record already makes it active; don't call this after a create. Use ids from the context block or tool results only.".into(),
            input_schema: schema(schemars::schema_for!(SetActiveRecordInput)),
            cache_control: None,
        },
        ToolSpec {
            name: REACT.into(),
            description: "Put an emoji reaction on the user's latest message, like a long-press reaction. Most turns get none. Use it for thanks, a simple acknowledgement or good news; at most once per turn. If the reaction says it all, reply with just <silent/>.".into(),
            input_schema: react_schema,
            cache_control: None,
        },
    ]
}

/// Parses a call of `name` with `input`: None when `name` is not a conversation-only tool,
/// `Some(Err)` with a readable message when its arguments are wrong.
pub fn parse(name: &str, input: &Value) -> Option<Result<ChatToolCall, String>> {
    match name {
        SET_ACTIVE_RECORD => Some(
            serde_json::from_value::<SetActiveRecordInput>(input.clone())
                .map_err(|e| format!("Invalid arguments: {e}"))
                .and_then(|i| {
                    let id = i.record_id.trim();
                    if id.is_empty() || id.len() > 200 {
                        Err(
                            "Invalid arguments: record_id must be an id from the context block"
                                .into(),
                        )
                    } else {
                        Ok(ChatToolCall::SetActiveRecord(id.to_owned()))
                    }
                }),
        ),
        REACT => Some(
            serde_json::from_value::<ReactInput>(input.clone())
                .map_err(|e| format!("Invalid arguments: {e}"))
                .and_then(|i| {
                    let emoji = i.emoji.trim();
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
                }),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_refuses_readably() {
        assert_eq!(parse("list_things", &json!({})), None);
        assert_eq!(
            parse(REACT, &json!({"emoji": "👍"})),
            Some(Ok(ChatToolCall::React("👍".into())))
        );
        assert_eq!(
            parse(REACT, &json!({"emoji": "❤"})),
            Some(Ok(ChatToolCall::React("❤️".into()))),
            "the heart without its variation selector is the same heart"
        );
        assert!(
            matches!(parse(REACT, &json!({"emoji": "💩"})), Some(Err(m)) if m.contains("one of"))
        );
        assert!(
            matches!(parse(SET_ACTIVE_RECORD, &json!({})), Some(Err(m)) if m.starts_with("Invalid arguments"))
        );
        assert_eq!(
            parse(SET_ACTIVE_RECORD, &json!({"record_id": " ev_1 "})),
            Some(Ok(ChatToolCall::SetActiveRecord("ev_1".into())))
        );
        let names: Vec<_> = specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, [SET_ACTIVE_RECORD, REACT]);
    }
}
