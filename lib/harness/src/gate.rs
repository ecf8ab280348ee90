//! The confirmation gate: risky tool calls are held by the server until the person confirms
//! on a LATER turn, with identical arguments, once, within an hour. The model cannot satisfy
//! it on its own: a confirmation created on this turn never opens on this turn, so "call,
//! get refused, call again" within one turn is refused again.
//!
//! A pending confirmation lives at `CONV#c / CONFIRM#<hash>`, where the hash is SHA-256 of
//! the tool name and the canonical JSON of the arguments (keys sorted at every depth), so a
//! confirmation for "cancel A" cannot cancel B. The description the person sees comes from the
//! domain's risk policy, built from the database, never from the model's arguments.
//!
//! Spending a confirmation is a version-checked write placed in the SAME transaction as the
//! tool's own writes (see [`crate::Ctx::with_confirmation`]), so two racing calls cannot both
//! pass and a crash can neither lose a confirmation nor act without spending it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use steward_store::{Item, StoreError, Table, WriteOp};

use crate::ids::ConversationKey;
use crate::keys;
use crate::limits::CONFIRMATION_TTL_SECS;

/// A pending confirmation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingConfirmation {
    /// The tool.
    pub tool: String,
    /// SHA-256 of the tool and its canonical arguments.
    pub hash: String,
    /// What the person is asked to confirm, from the risk policy.
    pub description: String,
    /// The turn it was created on; it opens only on a later one.
    pub created_turn: u64,
    /// When it was created (epoch ms); it lapses after [`CONFIRMATION_TTL_SECS`].
    pub created_ms: i64,
    /// Whether a confirmed call has spent it.
    pub consumed: bool,
}

/// What the gate decided for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum GateDecision {
    /// Not risky: run it.
    Pass,
    /// Confirmed on an earlier turn: run it, spending the confirmation with this write in the
    /// call's own transaction.
    Confirmed {
        /// The version-checked write that marks the confirmation consumed.
        consume: WriteOp,
    },
    /// Held: return this text to the model as the tool's (error) result.
    Held {
        /// The refusal, starting with "NOT EXECUTED".
        message: String,
    },
}

/// JSON with object keys sorted at every depth and no insignificant whitespace, so identical
/// arguments written in any key order hash identically.
pub fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// The hash a confirmation is filed under: SHA-256 of `tool`, a newline, and the canonical
/// JSON of `args`.
pub fn call_hash(tool: &str, args: &Value) -> String {
    let mut h = Sha256::new();
    h.update(tool.as_bytes());
    h.update(b"\n");
    h.update(canonical_json(args).as_bytes());
    hex::encode(h.finalize())
}

/// The refusal a held call returns to the model: the instructions travel inside the result,
/// the most reliable place for them.
pub fn held_message(description: &str) -> String {
    format!(
        "NOT EXECUTED. This needs the user's confirmation first: {description}. Ask them to confirm in one short line. If they clearly say yes in their next message, call this same tool again with identical arguments."
    )
}

/// Decides a call of `tool` with `args` on turn `turn` of `conversation` at `now_ms`, given
/// the risk policy's `description` (None: not risky).
pub async fn check(
    table: &dyn Table,
    conversation: &ConversationKey,
    turn: u64,
    now_ms: i64,
    tool: &str,
    args: &Value,
    description: Option<String>,
) -> Result<GateDecision, StoreError> {
    let Some(description) = description else {
        return Ok(GateDecision::Pass);
    };
    let hash = call_hash(tool, args);
    let pk = keys::conversation_pk(conversation);
    let sk = keys::confirm_sk(&hash);
    let existing = table.get(&pk, &sk).await?;
    let ttl_ms = CONFIRMATION_TTL_SECS * 1000;
    let parsed = existing
        .as_ref()
        .map(|item| {
            item.parse::<PendingConfirmation>()
                .map_err(|e| StoreError::Backend(format!("corrupt confirmation {sk}: {e}")))
        })
        .transpose()?;
    let open = parsed
        .as_ref()
        .filter(|p| !p.consumed && now_ms < p.created_ms + ttl_ms);

    if let (Some(pending), Some(item)) = (open, existing.as_ref())
        && pending.created_turn < turn
    {
        let spent = PendingConfirmation {
            consumed: true,
            ..pending.clone()
        };
        let next = Item::from_value(&pk, &sk, &spent)
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .with_version(item.version + 1)
            .with_ttl(expiry(pending.created_ms));
        return Ok(GateDecision::Confirmed {
            consume: WriteOp::put_if_version(next, item.version),
        });
    }
    if open.is_none() {
        // Nothing usable: file a fresh request (replacing a spent or lapsed one).
        let pending = PendingConfirmation {
            tool: tool.to_owned(),
            hash,
            description: description.clone(),
            created_turn: turn,
            created_ms: now_ms,
            consumed: false,
        };
        let item = Item::from_value(&pk, &sk, &pending)
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .with_ttl(expiry(now_ms));
        let op = match &existing {
            Some(old) => WriteOp::put_if_version(item.with_version(old.version + 1), old.version),
            None => WriteOp::put_if_absent(item),
        };
        match table.write(vec![op]).await {
            // A racing call filed it first: the same refusal stands.
            Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(GateDecision::Held {
        message: held_message(&description),
    })
}

/// Marks a confirmation spent outside a tool transaction: for a confirmed call whose handler
/// wrote nothing (so its transaction never carried the consume). Losing a race is fine.
pub async fn spend(table: &dyn Table, consume: WriteOp) -> Result<(), StoreError> {
    match table.write(vec![consume]).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

fn expiry(created_ms: i64) -> i64 {
    created_ms.div_euclid(1000) + CONFIRMATION_TTL_SECS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_hash_but_values_do() {
        let a = json!({"event_id": "e1", "opts": {"b": 1, "a": [2, {"y": 1, "x": 0}]}});
        let b = json!({"opts": {"a": [2, {"x": 0, "y": 1}], "b": 1}, "event_id": "e1"});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(call_hash("cancel_event", &a), call_hash("cancel_event", &b));
        assert_ne!(
            call_hash("cancel_event", &json!({"event_id": "e1"})),
            call_hash("cancel_event", &json!({"event_id": "e2"}))
        );
        assert_ne!(
            call_hash("cancel_event", &json!({"event_id": "e1"})),
            call_hash("publish_event", &json!({"event_id": "e1"}))
        );
        assert_eq!(canonical_json(&json!({"k": "a\"b"})), r#"{"k":"a\"b"}"#);
    }
}
