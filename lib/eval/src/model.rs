//! The model side of a case: [`CaseScript`] plays a turn's scripted steps (placeholders
//! resolved against the store when each step is played, fresh tool-call ids per call), and
//! [`Recorder`] wraps whichever model answers — scripted or real — to record every tool call,
//! every tool result the harness sent back, the token usage and any error.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use serde_json::Value;
use steward_harness::UserId;
use steward_llm::{
    ContentBlock, CreateRequest, CreateResponse, LlmClient, LlmError, StopReason,
    ToolResultContent, Usage,
};
use steward_store::Table;

use crate::records::{read_records, resolve};
use crate::suite::ModelStep;

/// Locks a mutex, keeping the data of a thread that panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A turn's scripted responses, played in order.
pub struct CaseScript {
    table: Arc<dyn Table>,
    user: UserId,
    steps: Mutex<VecDeque<ModelStep>>,
    calls: AtomicU64,
}

impl CaseScript {
    /// An empty script over the case's store and organiser.
    pub fn new(table: Arc<dyn Table>, user: UserId) -> Self {
        Self {
            table,
            user,
            steps: Mutex::new(VecDeque::new()),
            calls: AtomicU64::new(0),
        }
    }

    /// Replaces the waiting steps with one turn's.
    pub fn load(&self, steps: &[ModelStep]) {
        *lock(&self.steps) = steps.iter().cloned().collect();
    }

    /// How many steps were not played.
    pub fn remaining(&self) -> usize {
        lock(&self.steps).len()
    }
}

#[async_trait]
impl LlmClient for CaseScript {
    async fn create(&self, _request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let Some(step) = lock(&self.steps).pop_front() else {
            let call = usize::try_from(n).unwrap_or(usize::MAX);
            return Err(LlmError::ScriptExhausted {
                call,
                scripted: call - 1,
            });
        };
        let mut response = match step {
            ModelStep::Text(text) => {
                CreateResponse::new(vec![ContentBlock::text(text)], StopReason::EndTurn)
            }
            ModelStep::Tools(calls) => {
                let records = read_records(self.table.as_ref(), &self.user)
                    .await
                    .map_err(|e| LlmError::MalformedResponse {
                        message: format!("the scripted step could not read the store: {e}"),
                    })?;
                let mut blocks = Vec::with_capacity(calls.len());
                for (i, call) in calls.iter().enumerate() {
                    let input = resolve(&call.input, &records).map_err(|e| {
                        LlmError::MalformedResponse {
                            message: format!("scripted {} call: {e}", call.tool),
                        }
                    })?;
                    blocks.push(ContentBlock::tool_use(
                        format!("toolu_eval_{n}_{i}"),
                        call.tool.clone(),
                        input,
                    ));
                }
                CreateResponse::new(blocks, StopReason::ToolUse)
            }
        };
        response.id = format!("msg_eval_{n}");
        Ok(response)
    }
}

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's id for it.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub input: Value,
    /// The result the harness sent back, when a later request carried it.
    pub result: Option<String>,
}

impl ToolCall {
    /// Whether the gate held it (its result says it was not executed).
    pub fn was_held(&self) -> bool {
        self.result
            .as_deref()
            .is_some_and(|r| r.starts_with("NOT EXECUTED"))
    }
}

/// Token usage summed over a case's model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tokens {
    /// Input tokens neither written to nor read from the cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
}

impl Tokens {
    fn add(&mut self, usage: &Usage) {
        self.input += usage.input_tokens;
        self.output += usage.output_tokens;
        self.cache_write += usage.cache_creation_input_tokens;
        self.cache_read += usage.cache_read_input_tokens;
    }

    /// All input tokens, cached or not.
    pub fn all_input(&self) -> u64 {
        self.input + self.cache_write + self.cache_read
    }

    /// The share of input tokens read from the cache (0 to 1), when there was any input.
    pub fn cache_read_share(&self) -> Option<f64> {
        let all = self.all_input();
        (all > 0).then(|| self.cache_read as f64 / all as f64)
    }
}

#[derive(Debug, Default)]
struct Log {
    calls: Vec<ToolCall>,
    model_calls: usize,
    tokens: Tokens,
    errors: Vec<String>,
}

/// Wraps the case's model and records what passes through it.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<dyn LlmClient>,
    log: Arc<Mutex<Log>>,
}

impl Recorder {
    /// Records calls to `inner`.
    pub fn new(inner: Arc<dyn LlmClient>) -> Self {
        Self {
            inner,
            log: Arc::default(),
        }
    }

    /// Every tool call so far, in order.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        lock(&self.log).calls.clone()
    }

    /// How many model calls were made.
    pub fn model_calls(&self) -> usize {
        lock(&self.log).model_calls
    }

    /// Usage so far.
    pub fn tokens(&self) -> Tokens {
        lock(&self.log).tokens
    }

    /// Every model error so far, in words.
    pub fn errors(&self) -> Vec<String> {
        lock(&self.log).errors.clone()
    }
}

#[async_trait]
impl LlmClient for Recorder {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        {
            let mut log = lock(&self.log);
            log.model_calls += 1;
            // The tool results of the previous round travel in the newest message.
            if let Some(last) = request.messages.last() {
                for block in &last.content {
                    if let ContentBlock::ToolResult(result) = block
                        && let Some(call) =
                            log.calls.iter_mut().find(|c| c.id == result.tool_use_id)
                    {
                        call.result = Some(result_text(&result.content));
                    }
                }
            }
        }
        let outcome = self.inner.create(request).await;
        let mut log = lock(&self.log);
        match &outcome {
            Ok(response) => {
                log.tokens.add(&response.usage);
                for block in &response.content {
                    if let ContentBlock::ToolUse(call) = block {
                        log.calls.push(ToolCall {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            input: call.input.clone(),
                            result: None,
                        });
                    }
                }
            }
            Err(e) => {
                let n = log.model_calls;
                log.errors.push(format!("model call {n}: {e}"));
            }
        }
        outcome
    }
}

/// The text of a tool result's content, whichever shape it has.
fn result_text(content: &Option<ToolResultContent>) -> String {
    match content {
        None => String::new(),
        Some(ToolResultContent::Text(s)) => s.clone(),
        Some(ToolResultContent::Blocks(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}
