//! What a tool call came to, as the model (and an MCP client) sees it, and how it is capped.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::error::ServiceError;
use crate::ids::ActionId;
use crate::limits::TOOL_RESULT_CHARS_MAX;
use crate::tool::ToolResult;

/// The kind of a failed tool call, for callers that branch on it (MCP error flags, tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The arguments did not fit the tool's schema or input type.
    InvalidArguments,
    /// [`ServiceError::NotFound`].
    NotFound,
    /// [`ServiceError::Invalid`].
    Invalid,
    /// [`ServiceError::Conflict`].
    Conflict,
    /// [`ServiceError::AlreadyExists`].
    AlreadyExists,
    /// [`ServiceError::Forbidden`] (e.g. a paused account).
    Forbidden,
    /// [`ServiceError::TooManyChanges`].
    TooManyChanges,
    /// [`ServiceError::CannotUndo`].
    CannotUndo,
    /// [`ServiceError::NotConfirmed`]: held by the confirmation gate.
    NotConfirmed,
    /// A bug or infrastructure failure; the message is generic and names a reference.
    Internal,
}

impl ToolErrorKind {
    /// The kind as serialized (`snake_case`): the `error.type` of a failed call's span.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::NotFound => "not_found",
            Self::Invalid => "invalid",
            Self::Conflict => "conflict",
            Self::AlreadyExists => "already_exists",
            Self::Forbidden => "forbidden",
            Self::TooManyChanges => "too_many_changes",
            Self::CannotUndo => "cannot_undo",
            Self::NotConfirmed => "not_confirmed",
            Self::Internal => "internal",
        }
    }
}

/// A failed tool call: a message the model can act on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolError {
    /// What kind of failure.
    pub kind: ToolErrorKind,
    /// The readable message (generic for [`ToolErrorKind::Internal`]).
    pub message: String,
    /// The message for an MCP client, when it differs from `message`
    /// ([`ServiceError::for_mcp`]); never stored or sent to the model.
    #[serde(skip)]
    pub mcp_message: Option<String>,
}

/// The result of running a tool through the registry. Serializes for the model as
/// `{"ok":true,"summary":…,"data":…,"url":…}` or `{"ok":false,"error":"…"}`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool succeeded.
    Ok(ToolResult),
    /// The tool failed in a way the model can read.
    Err(ToolError),
}

impl ToolOutcome {
    /// A failure of `kind` with `message`.
    pub fn error(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self::Err(ToolError {
            kind,
            message: message.into(),
            mcp_message: None,
        })
    }

    /// The generic answer to a bug: names the action id so the logs can be found, reveals
    /// nothing else.
    pub fn internal(action: ActionId) -> Self {
        Self::error(
            ToolErrorKind::Internal,
            format!(
                "Internal error (reference {action}). Nothing more is known here; tell the user something went wrong and suggest trying again later."
            ),
        )
    }

    /// The outcome for an expected service failure. Store and internal errors must not come
    /// here (they are logged and turned into [`ToolOutcome::internal`] by the registry); if
    /// they do, the message is still withheld.
    pub fn from_service_error(error: &ServiceError, action: ActionId) -> Self {
        let kind = match error {
            ServiceError::NotFound { .. } => ToolErrorKind::NotFound,
            ServiceError::Invalid { .. } => ToolErrorKind::Invalid,
            ServiceError::Conflict { .. } => ToolErrorKind::Conflict,
            ServiceError::AlreadyExists { .. } => ToolErrorKind::AlreadyExists,
            ServiceError::Forbidden { .. } => ToolErrorKind::Forbidden,
            ServiceError::TooManyChanges { .. } => ToolErrorKind::TooManyChanges,
            ServiceError::CannotUndo { .. } => ToolErrorKind::CannotUndo,
            ServiceError::NotConfirmed { .. } => ToolErrorKind::NotConfirmed,
            ServiceError::Store(_) | ServiceError::Internal(_) => return Self::internal(action),
        };
        let (model, mcp) = (error.for_model(), error.for_mcp());
        Self::Err(ToolError {
            kind,
            mcp_message: (mcp != model).then_some(mcp),
            message: model,
        })
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Ok(_))
    }

    /// The error, when the call failed.
    pub fn error_ref(&self) -> Option<&ToolError> {
        match self {
            Self::Ok(_) => None,
            Self::Err(e) => Some(e),
        }
    }

    /// The outcome as a JSON value (uncapped).
    pub fn to_json(&self) -> Value {
        match self {
            Self::Ok(r) => {
                let mut v = json!({"ok": true, "summary": r.summary});
                if let Some(data) = &r.data {
                    v["data"] = data.clone();
                }
                if let Some(url) = &r.url {
                    v["url"] = Value::String(url.clone());
                }
                v
            }
            Self::Err(e) => json!({"ok": false, "error": e.message}),
        }
    }

    /// The outcome as the JSON text handed to the model, at most [`TOOL_RESULT_CHARS_MAX`]
    /// characters. An over-long result stays valid JSON: the data is replaced by a prefix of
    /// its JSON text (`data_truncated`, cut on a character boundary) and a `truncated` field
    /// says what happened and what to do.
    pub fn to_model_text(&self) -> String {
        // `ok` first, then summary, data, url: the order the model reads best.
        let text = serde_json::to_string(self).unwrap_or_default();
        if chars(&text) <= TOOL_RESULT_CHARS_MAX {
            return text;
        }
        cap_json(&self.to_json(), TOOL_RESULT_CHARS_MAX)
    }
}

impl ToolOutcome {
    /// The outcome as the JSON text handed to an MCP client: [`ToolOutcome::to_model_text`]
    /// with each failure in its MCP wording ([`ServiceError::for_mcp`]).
    pub fn to_mcp_text(&self) -> String {
        match self {
            Self::Err(ToolError {
                kind,
                mcp_message: Some(mcp),
                ..
            }) => Self::error(*kind, mcp.clone()).to_model_text(),
            _ => self.to_model_text(),
        }
    }
}

impl Serialize for ToolOutcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Ok(r) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("ok", &true)?;
                m.serialize_entry("summary", &r.summary)?;
                if let Some(data) = &r.data {
                    m.serialize_entry("data", data)?;
                }
                if let Some(url) = &r.url {
                    m.serialize_entry("url", url)?;
                }
                m.end()
            }
            Self::Err(e) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("ok", &false)?;
                m.serialize_entry("error", &e.message)?;
                m.end()
            }
        }
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The first `n` characters of `s` (never splitting a character).
fn prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// The largest `n` in `0..=max_n` with `build(n)` at most `limit` characters, and that text;
/// `None` when even `build(0)` is too long. `build(n)` grows with `n`.
fn fit(max_n: usize, limit: usize, build: impl Fn(usize) -> String) -> Option<String> {
    let smallest = build(0);
    if chars(&smallest) > limit {
        return None;
    }
    let (mut lo, mut hi, mut best) = (0, max_n, smallest);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let text = build(mid);
        if chars(&text) <= limit {
            lo = mid;
            best = text;
        } else {
            hi = mid - 1;
        }
    }
    Some(best)
}

fn to_text(v: &Value) -> String {
    // Serializing a `Value` cannot fail (its map keys are strings).
    serde_json::to_string(v).unwrap_or_default()
}

/// `value` as JSON text of at most `limit` characters, still valid JSON: first the `data`,
/// then the `summary` or `error` text is cut, each with a visible marker.
fn cap_json(value: &Value, limit: usize) -> String {
    let full = to_text(value);
    if chars(&full) <= limit {
        return full;
    }
    let marker = format!(
        "This result was cut to {limit} characters. Ask for less (a narrower filter, one item at a time) to see the rest."
    );
    let mut base = value.clone();
    let data_text = base
        .as_object_mut()
        .and_then(|m| m.remove("data"))
        .map(|d| to_text(&d));
    base["truncated"] = Value::String(marker.clone());

    if let Some(data_text) = &data_text {
        let with_data = |n: usize| {
            let mut v = base.clone();
            v["data_truncated"] = Value::String(format!("{}…", prefix(data_text, n)));
            to_text(&v)
        };
        if let Some(text) = fit(chars(data_text), limit, with_data) {
            return text;
        }
    }
    // The data alone cannot be made to fit: cut the longest text field as well.
    for field in ["summary", "error", "url"] {
        if let Some(Value::String(long)) = base.get(field).cloned() {
            let with_text = |n: usize| {
                let mut v = base.clone();
                v[field] = Value::String(format!("{}…", prefix(&long, n)));
                to_text(&v)
            };
            if let Some(text) = fit(chars(&long), limit, with_text) {
                return text;
            }
            base[field] = Value::String("…".to_owned());
        }
    }
    to_text(&json!({"ok": value.get("ok").cloned().unwrap_or(Value::Null), "truncated": marker}))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn small_results_are_left_alone() {
        let o = ToolOutcome::Ok(ToolResult::new("Done.").with_data(json!({"id": "n1"})));
        assert_eq!(
            o.to_model_text(),
            r#"{"ok":true,"summary":"Done.","data":{"id":"n1"}}"#
        );
        let v: Value = serde_json::from_str(&o.to_model_text()).unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(v["data"]["id"], "n1");
        assert_eq!(serde_json::to_value(&o).unwrap(), o.to_json());
    }

    #[test]
    fn errors_serialize_as_ok_false() {
        let o = ToolOutcome::error(ToolErrorKind::NotFound, "note 1 was not found.");
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({"ok": false, "error": "note 1 was not found."})
        );
    }

    #[test]
    fn long_data_is_cut_to_the_limit_as_valid_json() {
        let items: Vec<Value> = (0..5_000)
            .map(|i| json!({"id": format!("n{i}"), "title": "Ünïcödé 🎉 title"}))
            .collect();
        let o = ToolOutcome::Ok(ToolResult::new("Listed 5000 notes.").with_data(json!(items)));
        let text = o.to_model_text();
        assert!(chars(&text) <= TOOL_RESULT_CHARS_MAX);
        assert!(chars(&text) > TOOL_RESULT_CHARS_MAX - 50, "uses the budget");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["summary"], "Listed 5000 notes.");
        assert!(v["truncated"].as_str().unwrap().contains("cut to 20000"));
        assert!(v["data_truncated"].as_str().unwrap().ends_with('…'));
    }

    #[test]
    fn a_huge_summary_is_cut_too() {
        let o = ToolOutcome::Ok(ToolResult::new("é".repeat(50_000)).with_data(json!([1, 2, 3])));
        let text = o.to_model_text();
        assert!(chars(&text) <= TOOL_RESULT_CHARS_MAX);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(v["summary"].as_str().unwrap().ends_with('…'));
        let e = ToolOutcome::error(ToolErrorKind::Invalid, "ß".repeat(30_000));
        let text = e.to_model_text();
        assert!(chars(&text) <= TOOL_RESULT_CHARS_MAX);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["ok"], false);
    }

    proptest::proptest! {
        /// Whatever the content, the capped text fits the limit and is valid JSON.
        #[test]
        fn capped_text_fits_and_parses(
            summary in ".{0,300}",
            items in proptest::collection::vec(".{0,40}", 0..80),
            limit in 150usize..1_500,
            failed in proptest::bool::ANY,
        ) {
            let outcome = if failed {
                ToolOutcome::error(ToolErrorKind::Invalid, summary)
            } else {
                ToolOutcome::Ok(ToolResult::new(summary).with_data(json!(items)))
            };
            let text = cap_json(&outcome.to_json(), limit);
            proptest::prop_assert!(chars(&text) <= limit, "{} > {limit}", chars(&text));
            let parsed: Value = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(&parsed["ok"], &json!(!failed));
        }
    }

    #[test]
    fn prefix_never_splits_a_character() {
        assert_eq!(prefix("a🎉b", 2), "a🎉");
        assert_eq!(prefix("abc", 10), "abc");
        assert_eq!(prefix("abc", 0), "");
    }
}
