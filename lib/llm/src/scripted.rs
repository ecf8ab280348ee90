//! A model for tests: plays back a script of responses and errors, and records every request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use serde_json::Value;

use crate::client::LlmClient;
use crate::error::LlmError;
use crate::wire::{ContentBlock, CreateRequest, CreateResponse, StopReason};

/// A scripted model: each call takes the next outcome from a queue and records the request.
///
/// Cheap to clone and every clone shares the same script and record, so a test keeps one
/// handle while the harness owns another. When the script runs out a call fails with
/// [`LlmError::ScriptExhausted`] ("the scripted model was called more times than scripted").
///
/// ```
/// use steward_llm::{ScriptedClient, LlmClient, CreateRequest, Message, text_of};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedClient::new().text("Hello!");
/// let request = CreateRequest::new("any", 100, vec![Message::user_text("hi")]);
/// let response = model.create(&request).await.unwrap();
/// assert_eq!(text_of(&response.content), "Hello!");
/// assert_eq!(model.requests(), vec![request]);
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScriptedClient {
    state: Arc<Mutex<Script>>,
}

#[derive(Debug, Default)]
struct Script {
    outcomes: VecDeque<Result<CreateResponse, LlmError>>,
    scripted: usize,
    requests: Vec<CreateRequest>,
    bodies: Vec<Vec<u8>>,
}

impl ScriptedClient {
    /// An empty script: any call fails until outcomes are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an outcome (a response or an error) to the script; usable through any clone.
    pub fn push(&self, outcome: Result<CreateResponse, LlmError>) {
        let mut script = self.lock();
        script.outcomes.push_back(outcome);
        script.scripted += 1;
    }

    /// Then: this response.
    pub fn respond(self, response: CreateResponse) -> Self {
        self.push(Ok(response));
        self
    }

    /// Then: a final answer of one text block (`end_turn`).
    pub fn text(self, text: impl Into<String>) -> Self {
        self.blocks(vec![ContentBlock::text(text)], StopReason::EndTurn)
    }

    /// Then: one tool call (`tool_use`).
    pub fn tool_use(self, id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        self.blocks(
            vec![ContentBlock::tool_use(id, name, input)],
            StopReason::ToolUse,
        )
    }

    /// Then: a response of several blocks with the given stop reason.
    pub fn blocks(self, content: Vec<ContentBlock>, stop_reason: StopReason) -> Self {
        let call = self.lock().scripted + 1;
        let mut response = CreateResponse::new(content, stop_reason);
        // Distinct, predictable ids make stored transcripts easy to read in failing tests.
        response.id = format!("msg_scripted_{call}");
        self.respond(response)
    }

    /// Then: this error.
    pub fn error(self, error: LlmError) -> Self {
        self.push(Err(error));
        self
    }

    /// Every request received so far, in order (including one that found the script empty).
    pub fn requests(&self) -> Vec<CreateRequest> {
        self.lock().requests.clone()
    }

    /// The exact JSON bytes of every request received so far, in order: what an HTTP client
    /// would have sent as the body.
    pub fn request_bodies(&self) -> Vec<Vec<u8>> {
        self.lock().bodies.clone()
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.lock().requests.len()
    }

    /// How many scripted outcomes are still waiting.
    pub fn remaining(&self) -> usize {
        self.lock().outcomes.len()
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        // A test that panicked while holding the lock has already failed; keep the data usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl LlmClient for ScriptedClient {
    fn provider_name(&self) -> &'static str {
        "steward.scripted"
    }

    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        // Refused like the real clients do, without using up an outcome.
        request.ensure_media_resolved()?;
        let body = serde_json::to_vec(request).map_err(|error| LlmError::InvalidRequest {
            message: format!("could not encode the request: {error}"),
            kind: crate::error::InvalidKind::Other,
        })?;
        let mut script = self.lock();
        script.requests.push(request.clone());
        script.bodies.push(body);
        let call = script.requests.len();
        let scripted = script.scripted;
        script
            .outcomes
            .pop_front()
            .unwrap_or(Err(LlmError::ScriptExhausted { call, scripted }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Message, text_of, tool_uses};
    use serde_json::json;

    fn request(text: &str) -> CreateRequest {
        CreateRequest::new("scripted", 100, vec![Message::user_text(text)])
    }

    #[tokio::test]
    async fn plays_the_script_in_order_and_records_every_request() {
        let model = ScriptedClient::new()
            .tool_use("toolu_1", "create_event", json!({"name": "Picnic"}))
            .blocks(
                vec![
                    ContentBlock::thinking("hmm", "sig"),
                    ContentBlock::text("Done."),
                ],
                StopReason::EndTurn,
            )
            .error(LlmError::Overloaded);
        let harness_handle = model.clone();

        let first = harness_handle.create(&request("one")).await.expect("first");
        assert_eq!(first.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(tool_uses(&first.content)[0].name, "create_event");
        assert_eq!(first.id, "msg_scripted_1");

        let second = harness_handle
            .create(&request("two"))
            .await
            .expect("second");
        assert_eq!(text_of(&second.content), "Done.");
        assert_eq!(second.content.len(), 2);

        assert_eq!(
            harness_handle.create(&request("three")).await,
            Err(LlmError::Overloaded)
        );

        assert_eq!(model.calls(), 3);
        assert_eq!(model.remaining(), 0);
        assert_eq!(
            model.requests(),
            vec![request("one"), request("two"), request("three")]
        );
        let bodies = model.request_bodies();
        assert_eq!(bodies.len(), 3);
        assert_eq!(
            bodies[0],
            serde_json::to_vec(&request("one")).expect("json")
        );
    }

    #[tokio::test]
    async fn says_clearly_when_called_more_times_than_scripted() {
        let model = ScriptedClient::new().text("only once");
        model.create(&request("one")).await.expect("scripted call");
        let error = model
            .create(&request("two"))
            .await
            .expect_err("script is empty");
        assert_eq!(
            error,
            LlmError::ScriptExhausted {
                call: 2,
                scripted: 1
            }
        );
        assert!(
            error
                .to_string()
                .contains("the scripted model was called more times than scripted")
        );
        assert_eq!(model.calls(), 2, "the unscripted request is still recorded");
    }

    #[tokio::test]
    async fn outcomes_can_be_added_through_any_clone() {
        let model = ScriptedClient::new();
        let other = model.clone();
        other.push(Ok(CreateResponse::new(
            vec![ContentBlock::text("late")],
            StopReason::EndTurn,
        )));
        let response = model.create(&request("x")).await.expect("pushed outcome");
        assert_eq!(text_of(&response.content), "late");
    }
}
