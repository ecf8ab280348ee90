//! Replay finds a seeded divergence: with one tool's description changed, a model that picks
//! its tool by reading the tool list calls another tool — and replay names the turn and call.
//! With nothing changed it finds none.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use steward_eval::replay::replay;
use steward_eval::{ModelChoice, Outcome, run_case_keeping_store};
use steward_events::{DOMAIN_PROMPT, EventsConfig, EventsContext, registry};
use steward_harness::{ConversationKey, Domain, ModelSettings, Registry};
use steward_llm::{ContentBlock, CreateRequest, CreateResponse, LlmClient, LlmError, StopReason};

use crate::support::parse;

/// A model that reads the request: after tool results it answers (offering buttons when an
/// action was held); for a new message it finds the event id in the context block and calls
/// `publish_event` when asked to publish, otherwise `get_event` — unless `get_event`'s
/// description says it is retired, when it calls `list_sessions` instead.
struct ToolListReader;

fn event_id_in(text: &str) -> Option<String> {
    let at = text.find("e_")?;
    let id: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (id.len() == 28).then_some(id)
}

#[async_trait]
impl LlmClient for ToolListReader {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let last = request.messages.last().expect("a message");
        let mut text = String::new();
        let mut held = false;
        let mut results = false;
        for block in &last.content {
            match block {
                ContentBlock::Text(t) => text.push_str(&t.text),
                ContentBlock::ToolResult(r) => {
                    results = true;
                    held |= format!("{:?}", r.content).contains("NOT EXECUTED");
                }
                _ => {}
            }
        }
        if results {
            let answer = if held {
                "Publish Spring Open? <buttons>Yes, publish | No</buttons>"
            } else {
                "Done."
            };
            return Ok(CreateResponse::new(
                vec![ContentBlock::text(answer)],
                StopReason::EndTurn,
            ));
        }
        let event = event_id_in(&text).unwrap_or_default();
        let retired = request
            .tools
            .iter()
            .any(|t| t.name == "get_event" && t.description.contains("RETIRED"));
        let said = text
            .rsplit("<user_message>")
            .next()
            .unwrap_or_default()
            .to_lowercase();
        let tool = if said.contains("publish") {
            "publish_event"
        } else if retired {
            "list_sessions"
        } else {
            "get_event"
        };
        Ok(CreateResponse::new(
            vec![ContentBlock::tool_use(
                format!("toolu_reader_{}", request.messages.len()),
                tool,
                json!({ "event_id": event }),
            )],
            StopReason::ToolUse,
        ))
    }
}

fn domain(retire_get_event: bool) -> Domain {
    let base = registry(&EventsConfig::default());
    let mut tools = Registry::new();
    for tool in base.tools() {
        let tool = if retire_get_event && tool.name() == "get_event" {
            tool.clone().with_description(
                "RETIRED: do not call this any more; list the event's sessions with list_sessions instead. Kept only so old transcripts still read.",
            )
        } else {
            tool.clone()
        };
        tools.add(tool).unwrap();
    }
    Domain {
        product: "Steward".into(),
        prompt: DOMAIN_PROMPT.into(),
        registry: Arc::new(tools),
        context: Arc::new(EventsContext),
    }
}

const CONVERSATION: &str = r#"
[[case]]
name = "the original conversation"
setup = [{ tool = "create_event", input = { name = "Spring Open", dates = ["2026-12-12"] } }]

[[case.turn]]
say = "What's on Spring Open?"

[[case.turn]]
say = "Publish it."

[[case.turn]]
press = "Yes, publish"

[[case.expect]]
confirmed = "publish_event"

[[case.expect]]
ran = "get_event"
times = 0

[[case.expect]]
tool_called = "get_event"
"#;

fn reader() -> ModelChoice {
    ModelChoice::Real {
        client: Arc::new(ToolListReader),
        settings: ModelSettings::new("tool-list-reader"),
    }
}

#[tokio::test]
async fn a_changed_tool_description_is_found_as_the_first_divergence() {
    let suite = parse(CONVERSATION).unwrap_or_else(|e| panic!("{e}"));
    let (run, kept) = run_case_keeping_store(
        &suite.cases[0],
        suite.now_ms,
        &reader(),
        &EventsConfig::default(),
    )
    .await;
    assert_eq!(run.outcome, Outcome::Passed);
    let kept = kept.unwrap();
    let key = ConversationKey::web(&kept.user).to_string();

    // Nothing changed: the replay goes the same way, held and confirmed alike.
    let same = replay(kept.table.as_ref(), &key, &reader(), domain(false))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(same.turns, 3);
    assert_eq!(same.divergence, None);

    // get_event's description now says to use list_sessions: the model follows it.
    let changed = replay(kept.table.as_ref(), &key, &reader(), domain(true))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        changed.divergence.as_deref(),
        Some(
            r#"turn 1, call 1: the model called list_sessions {"event_id":"{{event:Spring Open}}"} instead of get_event {"event_id":"{{event:Spring Open}}"}"#
        )
    );
}
