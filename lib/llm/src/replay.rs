//! A model that replays a scripted conversation from a JSON file: for demos and browser tests
//! that chat without the network (`STEWARD_MODEL_PROVIDER=scripted:<path>`).
//!
//! The file is an array of steps, one per model call, played in order:
//!
//! ```json
//! [
//!   {"tool": "create_event", "input": {"name": "Picnic", "dates": ["2026-07-04"]}},
//!   {"text": "Done: Picnic is on 4 July."},
//!   {"tools": [{"tool": "list_events"}, {"tool": "get_event", "input": {"event_id": "e_1"}}]},
//!   {"text": "Here is what you have."}
//! ]
//! ```
//!
//! * `{"text": "…"}` — a final answer (`end_turn`).
//! * `{"tool": "<name>", "input": {…}}` — one tool call (`input` defaults to `{}`).
//! * `{"tools": [{"tool": …, "input": …}, …]}` — several tool calls in one response.
//!
//! Any step may add `"usage": {"input_tokens": …, "output_tokens": …,
//! "cache_read_input_tokens": …, "cache_creation_input_tokens": …}` (the Messages API's
//! names): the token counts its response reports; without it they are 0.
//!
//! The whole file is checked when it is loaded; a problem is reported naming the step
//! (counting from 1). Each call takes the next step, whichever conversation asks, and tool-call
//! ids are made fresh per call (as a real model's are), so a restarted server replaying the
//! script from the top never meets an earlier run's stored results. When the steps run out a
//! call fails with [`LlmError::ScriptExhausted`], which a turn treats like a model outage.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::client::LlmClient;
use crate::error::LlmError;
use crate::wire::{ContentBlock, CreateRequest, CreateResponse, StopReason, Usage};

/// Largest script file read, in bytes: scripts are written by hand; anything bigger is
/// almost certainly the wrong file, and reading it whole at start-up should stay cheap.
pub const SCRIPT_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// Longest tool name, in bytes: the Messages API's limit for tool names.
const TOOL_NAME_BYTES_MAX: usize = 64;

/// A script that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read the model script {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The file is not a JSON array.
    #[error("the model script is not a JSON array of steps: {0}")]
    NotAnArray(String),
    /// The array is empty.
    #[error("the model script has no steps")]
    Empty,
    /// One step is malformed.
    #[error("step {step} of the model script: {problem}")]
    Step {
        /// Which step, counting from 1.
        step: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// One step as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    tools: Option<Vec<RawCall>>,
}

/// One call inside `tools`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    tool: String,
    #[serde(default)]
    input: Option<Value>,
}

/// Parses a script (the file's text) into one response per step, checking every step.
pub fn parse_script(json: &str) -> Result<Vec<CreateResponse>, ReplayError> {
    let steps: Vec<Value> =
        serde_json::from_str(json).map_err(|e| ReplayError::NotAnArray(e.to_string()))?;
    if steps.is_empty() {
        return Err(ReplayError::Empty);
    }
    steps
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            let step = i + 1;
            parse_step(value).map_err(|problem| ReplayError::Step { step, problem })
        })
        .collect()
}

fn parse_step(mut value: Value) -> Result<CreateResponse, String> {
    let Some(object) = value.as_object_mut() else {
        return Err(
            "a step is an object: {\"text\": …}, {\"tool\": …, \"input\": {…}} or {\"tools\": […]}"
                .to_owned(),
        );
    };
    // The token counts the step reports (all 0 without), so usage pages and metrics have
    // numbers to show in demos and browser tests.
    let usage = match object.remove("usage") {
        None => Usage::default(),
        Some(u) => serde_json::from_value(u).map_err(|e| format!("\"usage\": {e}"))?,
    };
    let raw: RawStep = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let mut response = response_of(raw)?;
    response.usage = usage;
    Ok(response)
}

/// The response a step (without its usage) answers with.
fn response_of(raw: RawStep) -> Result<CreateResponse, String> {
    match raw {
        RawStep {
            text: Some(text),
            tool: None,
            input: None,
            tools: None,
        } => {
            if text.trim().is_empty() {
                return Err("\"text\" is empty".to_owned());
            }
            Ok(CreateResponse::new(
                vec![ContentBlock::text(text)],
                StopReason::EndTurn,
            ))
        }
        RawStep {
            text: None,
            tool: Some(tool),
            input,
            tools: None,
        } => Ok(CreateResponse::new(
            vec![tool_call(&tool, input)?],
            StopReason::ToolUse,
        )),
        RawStep {
            text: None,
            tool: None,
            input: None,
            tools: Some(calls),
        } => {
            if calls.is_empty() {
                return Err("\"tools\" is empty".to_owned());
            }
            let blocks = calls
                .into_iter()
                .enumerate()
                .map(|(k, call)| {
                    tool_call(&call.tool, call.input)
                        .map_err(|problem| format!("tool call {} in \"tools\": {problem}", k + 1))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(CreateResponse::new(blocks, StopReason::ToolUse))
        }
        RawStep {
            input: Some(_),
            tool: None,
            ..
        } => Err("\"input\" needs a \"tool\"".to_owned()),
        _ => Err("give exactly one of \"text\", \"tool\" or \"tools\"".to_owned()),
    }
}

/// A `tool_use` block with a placeholder id (replaced per call).
fn tool_call(name: &str, input: Option<Value>) -> Result<ContentBlock, String> {
    let name_ok = !name.is_empty()
        && name.len() <= TOOL_NAME_BYTES_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if !name_ok {
        return Err(format!(
            "the tool name {name:?} is not 1 to {TOOL_NAME_BYTES_MAX} letters, digits, '_' or '-'"
        ));
    }
    let input = match input {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return Err(format!("the input of {name} is not a JSON object")),
    };
    Ok(ContentBlock::tool_use("toolu_placeholder", name, input))
}

/// The replaying model: each call answers with the next step. Shared by every conversation.
#[derive(Debug)]
pub struct ReplayClient {
    steps: Mutex<VecDeque<CreateResponse>>,
    scripted: usize,
    calls: AtomicUsize,
    /// Distinguishes this run's ids from an earlier run's (the process start, in hex).
    run: String,
}

impl ReplayClient {
    /// A client replaying `json` (the script's text).
    pub fn from_json(json: &str) -> Result<Self, ReplayError> {
        let steps = parse_script(json)?;
        let run = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        Ok(Self {
            scripted: steps.len(),
            steps: Mutex::new(steps.into()),
            calls: AtomicUsize::new(0),
            run: format!("{run:x}{:x}", std::process::id()),
        })
    }

    /// A client replaying the script file at `path`, checked whole now.
    pub fn from_file(path: &Path) -> Result<Self, ReplayError> {
        let read_error = |message: String| ReplayError::Read {
            path: path.display().to_string(),
            message,
        };
        let size = std::fs::metadata(path)
            .map_err(|e| read_error(e.to_string()))?
            .len();
        if size > SCRIPT_BYTES_MAX {
            return Err(read_error(format!(
                "it is {size} bytes; a script may have at most {SCRIPT_BYTES_MAX}"
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| read_error(e.to_string()))?;
        Self::from_json(&text)
    }

    /// How many steps the script has.
    pub fn steps(&self) -> usize {
        self.scripted
    }

    /// How many steps have not been played yet.
    pub fn remaining(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<CreateResponse>> {
        // Nothing can panic while the lock is held; keep the data usable regardless.
        self.steps
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl LlmClient for ReplayClient {
    fn provider_name(&self) -> &'static str {
        "steward.scripted"
    }

    async fn create(&self, _request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(mut response) = self.lock().pop_front() else {
            return Err(LlmError::ScriptExhausted {
                call,
                scripted: self.scripted,
            });
        };
        response.id = format!("msg_replay_{}_{call}", self.run);
        for (k, block) in response.content.iter_mut().enumerate() {
            if let ContentBlock::ToolUse(tool_use) = block {
                tool_use.id = format!("toolu_replay_{}_{call}_{k}", self.run);
            }
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Message, text_of, tool_uses};
    use serde_json::json;

    fn step_error(json: &str) -> (usize, String) {
        match parse_script(json) {
            Err(ReplayError::Step { step, problem }) => (step, problem),
            other => panic!("expected a step error, got {other:?}"),
        }
    }

    #[test]
    fn parses_every_kind_of_step() {
        let steps = parse_script(
            r#"[
                {"tool": "create_event", "input": {"name": "Picnic"}},
                {"tools": [{"tool": "list_events"}, {"tool": "get_event", "input": {"event_id": "e_1"}}]},
                {"text": "Done."}
            ]"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[0].stop_reason, Some(StopReason::ToolUse));
        let calls = tool_uses(&steps[0].content);
        assert_eq!(calls[0].name, "create_event");
        assert_eq!(calls[0].input, json!({"name": "Picnic"}));
        let calls = tool_uses(&steps[1].content);
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0].input,
            json!({}),
            "input defaults to an empty object"
        );
        assert_eq!(steps[2].stop_reason, Some(StopReason::EndTurn));
        assert_eq!(text_of(&steps[2].content), "Done.");
    }

    #[test]
    fn a_step_may_report_its_token_usage() {
        let steps = parse_script(
            r#"[
                {"text": "Hi.", "usage": {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 400}},
                {"text": "Bye."}
            ]"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(steps[0].usage.input_tokens, 12);
        assert_eq!(steps[0].usage.output_tokens, 3);
        assert_eq!(steps[0].usage.cache_read_input_tokens, 400);
        assert_eq!(steps[0].usage.cache_creation_input_tokens, 0);
        assert_eq!(steps[1].usage, Usage::default());
        let (step, problem) = step_error(r#"[{"text": "ok", "usage": {"input_tokens": -1}}]"#);
        assert_eq!(step, 1);
        assert!(problem.contains("\"usage\""), "{problem}");
    }

    #[test]
    fn problems_name_the_step() {
        assert!(matches!(
            parse_script("{\"text\": \"hi\"}"),
            Err(ReplayError::NotAnArray(_))
        ));
        assert_eq!(parse_script("[]"), Err(ReplayError::Empty));
        let (step, problem) = step_error(r#"[{"text": "ok"}, {"txt": "typo"}]"#);
        assert_eq!(step, 2);
        assert!(problem.contains("unknown field `txt`"), "{problem}");
        let (step, problem) = step_error(r#"[{"text": "ok", "tool": "x"}]"#);
        assert_eq!(step, 1);
        assert!(problem.contains("exactly one"), "{problem}");
        let (_, problem) = step_error(r#"[{"tool": "bad name"}]"#);
        assert!(problem.contains("\"bad name\""), "{problem}");
        let (_, problem) = step_error(r#"[{"tool": "x", "input": [1]}]"#);
        assert!(problem.contains("not a JSON object"), "{problem}");
        let (_, problem) = step_error(r#"[{"tools": []}]"#);
        assert!(problem.contains("empty"), "{problem}");
        let (_, problem) = step_error(r#"[{"tools": [{"tool": "a"}, {"tool": ""}]}]"#);
        assert!(problem.contains("tool call 2"), "{problem}");
        let (_, problem) = step_error(r#"[{"input": {}}]"#);
        assert!(problem.contains("needs a \"tool\""), "{problem}");
        let (_, problem) = step_error(r#"["hello"]"#);
        assert!(problem.contains("a step is an object"), "{problem}");
        let (_, problem) = step_error(r#"[{"text": "  "}]"#);
        assert!(problem.contains("empty"), "{problem}");
    }

    #[tokio::test]
    async fn replays_in_order_with_fresh_ids_then_runs_out() {
        let model = ReplayClient::from_json(
            r#"[{"tools": [{"tool": "a"}, {"tool": "b"}]}, {"tool": "a"}, {"text": "bye"}]"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(model.steps(), 3);
        let request = CreateRequest::new("any", 100, vec![Message::user_text("hi")]);
        let first = model
            .create(&request)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let second = model
            .create(&request)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut ids: Vec<String> = tool_uses(&first.content)
            .iter()
            .chain(tool_uses(&second.content).iter())
            .map(|t| t.id.clone())
            .collect();
        assert!(ids.iter().all(|id| id.starts_with("toolu_replay_")));
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 3, "every tool call has its own id");
        let third = model
            .create(&request)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text_of(&third.content), "bye");
        assert_eq!(model.remaining(), 0);
        assert_eq!(
            model.create(&request).await,
            Err(LlmError::ScriptExhausted {
                call: 4,
                scripted: 3
            })
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let Err(err) = ReplayClient::from_file(Path::new("/nonexistent/steward-script.json"))
        else {
            panic!("a missing file loads");
        };
        assert!(
            err.to_string().contains("/nonexistent/steward-script.json"),
            "{err}"
        );
    }
}
