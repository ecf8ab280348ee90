//! A stored conversation as export and replay need it: per turn, what the person said (and
//! whether it was a button press), the model's responses, each tool call with whether it was
//! held, ran or failed, and the reply they saw — read from the two transcripts
//! (`MODEL#…`, `SEEN#…`) and the commit headers under the owner's partition.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use steward_harness::audit::{ActionHeader, audit_rows};
use steward_harness::conversation;
use steward_harness::keys::{ACTION_SK_PREFIX, SEEN_SK_PREFIX, conversation_pk, user_pk};
use steward_harness::transcript::{ModelRow, RowSource, SeenRow};
use steward_harness::{ChannelName, ConversationKey, UserId};
use steward_llm::{ContentBlock, Role, ToolResultContent};
use steward_store::{Query, Table};

use crate::records::CASE_ITEMS_MAX;

/// Why a stored conversation cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StoredError {
    /// The key is not a conversation key.
    #[error("{0:?} is not a conversation key such as web:<user id> or tg:<chat id>")]
    BadKey(String),
    /// No such conversation, or no owner.
    #[error("conversation {0} has no owner in this store (unknown, or its identity was unlinked)")]
    NoOwner(String),
    /// The store failed or holds an unreadable row.
    #[error("reading conversation {key}: {problem}")]
    Read {
        /// The conversation.
        key: String,
        /// What failed.
        problem: String,
    },
}

/// What a tool call came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallState {
    /// It committed a change.
    Ran,
    /// The gate held it.
    Held,
    /// It answered with an error.
    Failed,
    /// It answered without changing anything (a read, or a change that found nothing to do).
    Answered,
}

impl CallState {
    /// In words.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ran => "ran",
            Self::Held => "held",
            Self::Failed => "failed",
            Self::Answered => "answered without a change",
        }
    }
}

/// One tool call in a stored conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    /// The model's id for it.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub input: Value,
    /// What it came to.
    pub state: CallState,
}

/// One model response.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredStep {
    /// A final answer.
    Text(String),
    /// Tool calls.
    Calls(Vec<StoredCall>),
}

/// One turn.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTurn {
    /// Its number.
    pub number: u64,
    /// What the person sent.
    pub text: String,
    /// Whether it was the title of a button on the previous reply.
    pub pressed: bool,
    /// The model's responses, in order.
    pub steps: Vec<StoredStep>,
    /// The reply they saw, if any.
    pub reply: Option<String>,
    /// Its buttons.
    pub buttons: Vec<String>,
    /// When the person sent it (epoch ms).
    pub at_ms: i64,
}

impl StoredTurn {
    /// Every tool call of the turn, in order.
    pub fn calls(&self) -> impl Iterator<Item = &StoredCall> {
        self.steps.iter().flat_map(|s| match s {
            StoredStep::Calls(calls) => calls.as_slice(),
            StoredStep::Text(_) => &[],
        })
    }
}

/// A stored conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredConversation {
    /// Its key.
    pub key: ConversationKey,
    /// Its owner.
    pub user: UserId,
    /// Turns the model took part in, in order (turns answered without it are left out).
    pub turns: Vec<StoredTurn>,
    /// Sort keys of records the conversation's tool calls created.
    pub created: BTreeSet<String>,
    /// The records the conversation's tool calls changed or deleted (but did not create), as
    /// they were before its first change: sort key → data.
    pub before: BTreeMap<String, Value>,
}

/// Reads conversation `key` (`<channel>:<id>`) from `table`.
pub async fn read_conversation(
    table: &dyn Table,
    key: &str,
) -> Result<StoredConversation, StoredError> {
    let key = ConversationKey::parse(key.trim()).map_err(|_| StoredError::BadKey(key.into()))?;
    let fail = |problem: String| StoredError::Read {
        key: key.to_string(),
        problem,
    };
    let channel =
        ChannelName::parse(key.channel()).map_err(|_| StoredError::BadKey(key.to_string()))?;
    let conv = conversation::load(table, &key, &channel)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let user = conv
        .meta
        .user
        .clone()
        .ok_or_else(|| StoredError::NoOwner(key.to_string()))?;
    let pk = conversation_pk(&key);
    let model_items = table
        .query_all(&Query::prefix(&pk, "MODEL#"), CASE_ITEMS_MAX)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let seen_items = table
        .query_all(&Query::prefix(&pk, SEEN_SK_PREFIX), CASE_ITEMS_MAX)
        .await
        .map_err(|e| fail(e.to_string()))?;
    // Which calls of this conversation committed, and what they created.
    let headers = table
        .query_all(
            &Query::prefix(user_pk(&user), ACTION_SK_PREFIX),
            CASE_ITEMS_MAX,
        )
        .await
        .map_err(|e| fail(e.to_string()))?;
    let mut ran = BTreeSet::new();
    let mut created = BTreeSet::new();
    let mut before: BTreeMap<String, Value> = BTreeMap::new();
    for item in &headers {
        let header: ActionHeader = item.parse().map_err(|e| fail(e.to_string()))?;
        let Some(effect) = &header.effect else {
            continue;
        };
        if effect.conversation != key {
            continue;
        }
        ran.insert(effect.tool_use.as_str().to_owned());
        for row in audit_rows(table, &user, &header)
            .await
            .map_err(|e| fail(e.to_string()))?
        {
            match &row.before {
                None if row.after.is_some() => {
                    created.insert(row.sk.clone());
                }
                Some(image) if !created.contains(&row.sk) => {
                    before
                        .entry(row.sk.clone())
                        .or_insert_with(|| image.data.clone());
                }
                _ => {}
            }
        }
    }

    // The model transcript, by turn: responses and the results sent back.
    let mut steps: BTreeMap<u64, Vec<StoredStep>> = BTreeMap::new();
    let mut results: BTreeMap<String, (String, bool)> = BTreeMap::new();
    let mut model_rows: Vec<(u64, ModelRow)> = Vec::new();
    for item in &model_items {
        let Some(turn) = item
            .sk
            .split('#')
            .nth(2)
            .and_then(|t| t.parse::<u64>().ok())
        else {
            continue;
        };
        let row: ModelRow = item.parse().map_err(|e| fail(e.to_string()))?;
        for block in &row.message.content {
            if let ContentBlock::ToolResult(r) = block {
                let text = match &r.content {
                    Some(ToolResultContent::Text(t)) => t.clone(),
                    _ => String::new(),
                };
                results.insert(r.tool_use_id.clone(), (text, r.is_error == Some(true)));
            }
        }
        model_rows.push((turn, row));
    }
    for (turn, row) in &model_rows {
        if row.source != RowSource::Model {
            continue;
        }
        let mut calls = Vec::new();
        let mut text = String::new();
        for block in &row.message.content {
            match block {
                ContentBlock::ToolUse(call) => {
                    let state = if ran.contains(&call.id) {
                        CallState::Ran
                    } else {
                        match results.get(&call.id) {
                            Some((t, _)) if t.starts_with("NOT EXECUTED") => CallState::Held,
                            Some((_, true)) => CallState::Failed,
                            _ => CallState::Answered,
                        }
                    };
                    calls.push(StoredCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input: call.input.clone(),
                        state,
                    });
                }
                ContentBlock::Text(t) => text.push_str(&t.text),
                _ => {}
            }
        }
        let step = if calls.is_empty() {
            StoredStep::Text(text)
        } else {
            StoredStep::Calls(calls)
        };
        steps.entry(*turn).or_default().push(step);
    }

    // The visible transcript: what the person sent and saw.
    let mut turns = Vec::new();
    let mut previous_buttons: Vec<String> = Vec::new();
    let mut by_turn: BTreeMap<u64, (Option<SeenRow>, Option<SeenRow>)> = BTreeMap::new();
    for item in &seen_items {
        let mut parts = item.sk.split('#').skip(1);
        let (Some(turn), Some(index)) = (
            parts.next().and_then(|t| t.parse::<u64>().ok()),
            parts.next().and_then(|i| i.parse::<u32>().ok()),
        ) else {
            continue;
        };
        let row: SeenRow = item.parse().map_err(|e| fail(e.to_string()))?;
        let entry = by_turn.entry(turn).or_default();
        match row.role {
            Role::User if index == steward_harness::transcript::SEEN_USER => entry.0 = Some(row),
            Role::Assistant if row.text.is_some() => entry.1 = Some(row),
            _ => {}
        }
    }
    for (number, (said, reply)) in by_turn {
        let reply_buttons = reply
            .as_ref()
            .map(|r| r.buttons.clone())
            .unwrap_or_default();
        if let (Some(said), Some(turn_steps)) = (said, steps.remove(&number)) {
            let at_ms = said.at_ms;
            let text = said.text.unwrap_or_default();
            let pressed = previous_buttons
                .iter()
                .any(|b| b.trim().eq_ignore_ascii_case(text.trim()));
            turns.push(StoredTurn {
                number,
                text,
                pressed,
                steps: turn_steps,
                reply: reply.as_ref().and_then(|r| r.text.clone()),
                buttons: reply_buttons.clone(),
                at_ms,
            });
        }
        previous_buttons = reply_buttons;
    }
    Ok(StoredConversation {
        key,
        user,
        turns,
        created,
        before,
    })
}
