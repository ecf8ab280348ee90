//! Stored results of tool calls that changed data (`CONV#c` / `EFFECT#<tool use id>`).
//!
//! The audited transaction writes the effect item together with the call's changes, with a
//! put-if-absent: a retried or concurrent run of the same call finds it and returns the stored
//! result instead of acting twice. Data changes are therefore exactly once.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use steward_store::{Item, Table};

use crate::error::ServiceError;
use crate::ids::{ActionId, EffectKey};
use crate::keys;
use crate::limits::EFFECT_TTL_SECS;

/// What was stored for one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEffect {
    /// The action that made the change.
    pub action: ActionId,
    /// The result the call returned the first time (`null` when it committed without one).
    pub result: Value,
    /// When the change was committed, in epoch milliseconds.
    pub at_ms: i64,
}

/// The stored result of the call `key`, if that call already changed data.
pub async fn stored_effect(
    table: &dyn Table,
    key: &EffectKey,
) -> Result<Option<StoredEffect>, ServiceError> {
    let pk = keys::conversation_pk(&key.conversation);
    let sk = keys::effect_sk(&key.tool_use);
    match table.get(&pk, &sk).await? {
        Some(item) => Ok(Some(item.parse()?)),
        None => Ok(None),
    }
}

/// The effect item to write with a call's changes; it expires after [`EFFECT_TTL_SECS`].
pub(crate) fn effect_item(
    key: &EffectKey,
    effect: &StoredEffect,
    now_secs: i64,
) -> Result<Item, ServiceError> {
    let item = Item::from_value(
        keys::conversation_pk(&key.conversation),
        keys::effect_sk(&key.tool_use),
        effect,
    )?;
    Ok(item.with_ttl(now_secs + EFFECT_TTL_SECS))
}
