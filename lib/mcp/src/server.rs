//! The MCP server proper: an rmcp [`ServerHandler`] over the tool [`Registry`]. `tools/list` is
//! the registry in its order with its annotations (`destructiveHint` from each capability's
//! confirmation declaration); `tools/call` runs the capability through the harness gate
//! ([`gate::run`], surface [`Surface::Mcp`]) for the authenticated caller, as [`Actor::Mcp`],
//! under a fresh action id. A held call files a confirmation request and runs nothing:
//! * a client that can elicit (2026-07-28 with the `elicitation` capability) gets an
//!   `InputRequiredResult` asking the person to accept or decline, with a sealed request state
//!   ([`super::elicitation`]); its retry with the person's answer approves exactly that request
//!   and runs the call once, or declines it;
//! * any other client gets "NOT EXECUTED" with the description; the person approves or declines
//!   on the web UI's Approvals page or with the buttons sent to their linked chat, and the
//!   client's next identical call runs once.
//!
//! Either way the person's linked chats are told (a queued [`approval_chat`] notice).

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use steward_harness::gate::{
    self, ApprovalError, ConfirmState, Confirmation, GateOutcome, Surface,
};
use steward_harness::{
    Actor, Ctx, McpTool, Registry, ToolErrorKind, ToolOutcome, approval_chat, tokens,
};
use steward_store::{Clock, Table, TurnQueue};

use super::auth::{Caller, RateKey};
use super::elicitation::{self, Answer, CONFIRM_INPUT, StateKey};
#[cfg(feature = "conformance")]
use super::fixtures;

/// The name the server gives in `initialize` and `server/discover`.
pub const SERVER_NAME: &str = "steward";

/// How long a client may reuse a `tools/list` answer: the list changes only with a deploy,
/// and a client that re-lists every five minutes picks a new one up soon enough.
pub const TOOLS_LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// What the server tells clients about itself, once per connection.
const INSTRUCTIONS: &str = "Steward manages the events of the account this token belongs to. \
Ids (e_…) come from list tools and earlier results. Changes can be undone with the undo tool. \
Tools marked destructive are held when a call would delete an event or change what other people \
see on a published event, and nothing runs until the account holder confirms. If your client \
supports elicitation (protocol 2026-07-28), the call asks them directly: show the question, and \
send their answer back with the requestState unchanged; if they accept, the call runs exactly \
once. Otherwise the call returns a result starting with NOT EXECUTED that says what would \
happen; the account holder approves or declines it on the Approvals page of the Steward web app \
or with the buttons sent to their linked chat, within an hour; nothing you send can approve it. \
Tell them, and after they approve, repeat the identical call once: it then runs exactly once.";

/// The tool list, built once: the registry's tools (and, in local tests only, the
/// conformance fixtures).
#[derive(Debug)]
struct Catalog {
    tools: Vec<Tool>,
}

/// The MCP handler over a registry. Cheap to clone: rmcp builds one per request (stateless).
#[derive(Debug, Clone)]
pub struct ToolServer {
    registry: Arc<Registry>,
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    catalog: Arc<Catalog>,
    fixtures: bool,
    state_key: Option<StateKey>,
    notices: Option<Arc<dyn TurnQueue>>,
}

impl ToolServer {
    /// A handler running `registry`'s tools on `table`, configured by `config`: the
    /// conformance suite's fixture tools (local tests only — [`super::McpConfig`] enforces it),
    /// the request-state key (in-protocol confirmation) and the queue of chat notices.
    pub fn new(
        registry: Arc<Registry>,
        table: Arc<dyn Table>,
        clock: Arc<dyn Clock>,
        config: &super::McpConfig,
    ) -> Self {
        let fixtures = config.conformance_fixtures();
        #[cfg_attr(not(feature = "conformance"), allow(unused_mut))]
        let mut tools: Vec<Tool> = registry.mcp_tools().into_iter().map(to_mcp_tool).collect();
        #[cfg(feature = "conformance")]
        if fixtures {
            tools.extend(fixtures::tools());
        }
        Self {
            registry,
            table,
            clock,
            catalog: Arc::new(Catalog { tools }),
            fixtures,
            state_key: config.state_key().cloned(),
            notices: config.notices().cloned(),
        }
    }

    fn ctx(&self, caller: &Caller) -> Ctx {
        Ctx::new(
            Arc::clone(&self.table),
            Arc::clone(&self.clock),
            caller.user.clone(),
            Actor::Mcp,
        )
    }

    /// Runs `request` for `caller`; `elicit`: the client can be asked in-protocol.
    async fn run_tool(
        &self,
        caller: &Caller,
        request: CallToolRequestParams,
        elicit: bool,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let surface = self.surface(caller).await;
        let key = self.state_key.as_ref().filter(|_| elicit);
        if let Some(state) = request.request_state.as_deref() {
            let Some(key) = self.state_key.as_ref() else {
                return Err(ErrorData::invalid_params(
                    elicitation::StateRefusal::NotThisCall.message(),
                    None,
                ));
            };
            return self
                .answered(caller, &surface, key, &request, args, state)
                .await;
        }
        let outcome = self.through_gate(caller, &surface, name, args).await?;
        Ok(match outcome {
            GateOutcome::Ran(o) => call_result(&o).into(),
            GateOutcome::Held {
                message,
                confirmation,
            } => {
                self.notify(&confirmation).await;
                match key {
                    Some(key) if confirmation.state == ConfirmState::Pending => {
                        elicitation::ask(key, &caller.user, &confirmation).into()
                    }
                    _ => held_result(&message).into(),
                }
            }
        })
    }

    /// One call through the gate, logged; a store failure becomes the generic internal error.
    async fn through_gate(
        &self,
        caller: &Caller,
        surface: &Surface,
        name: &str,
        args: Value,
    ) -> Result<GateOutcome, ErrorData> {
        let ctx = self.ctx(caller);
        let action = ctx.action();
        match gate::run(&self.registry, ctx, surface, name, args).await {
            Ok(Ok(outcome)) => {
                tracing::info!(
                    user = %caller.user,
                    tool = name,
                    %action,
                    ok = matches!(&outcome, GateOutcome::Ran(o) if o.is_ok()),
                    held = matches!(outcome, GateOutcome::Held { .. }),
                    "MCP tool call"
                );
                Ok(outcome)
            }
            Ok(Err(store)) => {
                tracing::error!(user = %caller.user, tool = name, %action, error = %store, "MCP call: the gate's store failed");
                Ok(GateOutcome::Ran(ToolOutcome::internal(action)))
            }
            Err(unknown) => Err(ErrorData::invalid_params(unknown.to_string(), None)),
        }
    }

    /// The retry of a held call carrying the sealed `state` and (normally) the person's
    /// answer: verified against this very call, then settled on the one confirmation record.
    async fn answered(
        &self,
        caller: &Caller,
        surface: &Surface,
        key: &StateKey,
        request: &CallToolRequestParams,
        args: Value,
        state: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let Some(tool) = self.registry.get(name) else {
            return Err(ErrorData::invalid_params(
                steward_harness::UnknownTool {
                    name: name.to_owned(),
                }
                .to_string(),
                None,
            ));
        };
        let args = match tool.validate(args) {
            Ok(args) => args,
            Err(msg) => {
                return Ok(
                    call_result(&ToolOutcome::error(ToolErrorKind::InvalidArguments, msg)).into(),
                );
            }
        };
        let now_ms = self.clock.now_millis();
        let record_id = gate::confirmation_id(surface, name, &args);
        let input_hash = gate::call_hash(name, &args);
        let sealed = match elicitation::open_request(
            key,
            state,
            &caller.user,
            name,
            &input_hash,
            &record_id,
            now_ms,
        ) {
            Ok(sealed) => sealed,
            Err(refusal @ elicitation::StateRefusal::NotThisCall) => {
                tracing::warn!(user = %caller.user, tool = name, "MCP: a request state that does not open for this call was refused");
                return Err(ErrorData::invalid_params(refusal.message(), None));
            }
            Err(refusal) => return Ok(held_result(refusal.message()).into()),
        };
        let table = self.table.as_ref();
        let settled = match elicitation::answer(request.input_responses.as_ref(), CONFIRM_INPUT) {
            Some(Answer::Accept) => {
                gate::approve_request(table, &caller.user, &sealed.id, sealed.filed_ms, now_ms)
                    .await
            }
            Some(Answer::Decline) => {
                gate::decline_request(table, &caller.user, &sealed.id, sealed.filed_ms, now_ms)
                    .await
            }
            Some(Answer::Cancel) => {
                return Ok(held_result(DISMISSED).into());
            }
            None => {
                // No usable answer under our key: ask again, for the same request.
                return Ok(
                    match gate::get_request(table, &caller.user, &sealed.id, now_ms).await {
                        Ok(Some(c))
                            if c.created_ms == sealed.filed_ms
                                && c.state == ConfirmState::Pending =>
                        {
                            elicitation::ask(key, &caller.user, &c).into()
                        }
                        Ok(_) => held_result(GONE).into(),
                        Err(e) => {
                            tracing::error!(error = %e, "MCP: reading a confirmation failed");
                            call_result(&ToolOutcome::internal(self.ctx(caller).action())).into()
                        }
                    },
                );
            }
        };
        match settled {
            Ok(c) if c.state == ConfirmState::Declined => Ok(held_result(&format!(
                "NOT EXECUTED. The account holder declined this: {}. It will not run; do not retry it. Ask them what they want instead.",
                c.description
            ))
            .into()),
            Ok(_) => {
                let outcome = self.through_gate(caller, surface, name, args).await?;
                Ok(match outcome {
                    GateOutcome::Ran(o) => call_result(&o),
                    GateOutcome::Held { message, .. } => held_result(&message),
                }
                .into())
            }
            Err(ApprovalError::Gone | ApprovalError::WrongSurface) => Ok(held_result(GONE).into()),
            Err(ApprovalError::AlreadyDecided(how)) => Ok(held_result(&format!(
                "NOT EXECUTED. That confirmation request was already {how}; this answer changes nothing and nothing ran. Call the tool again without requestState to ask anew."
            ))
            .into()),
            Err(ApprovalError::Store(e)) => {
                tracing::error!(error = %e, "MCP: recording the person's answer failed");
                Ok(call_result(&ToolOutcome::internal(self.ctx(caller).action())).into())
            }
        }
    }

    /// Queues the notice of a pending request for the person's linked chats (once per
    /// request: the queue dedupes, the worker sends at most once). A queue failure only costs
    /// the chat message; it is logged.
    async fn notify(&self, request: &Confirmation) {
        let Some(queue) = &self.notices else { return };
        if request.state != ConfirmState::Pending {
            return;
        }
        if let Err(e) = approval_chat::enqueue(queue.as_ref(), request).await {
            tracing::warn!(error = %e, confirmation = %request.id, "MCP: the chat notice of a held call was not queued");
        }
    }

    /// The caller as a gate surface: its token (and the token's label, shown to the person on
    /// the Approvals page).
    async fn surface(&self, caller: &Caller) -> Surface {
        match &caller.key {
            RateKey::Token(id) => {
                let client = match tokens::get_token(self.table.as_ref(), id).await {
                    Ok(record) => record.label,
                    Err(e) => {
                        tracing::warn!(error = %e, "MCP: token label unavailable");
                        tokens::DEFAULT_TOKEN_LABEL.to_owned()
                    }
                };
                Surface::Mcp {
                    token: Some(id.clone()),
                    client,
                }
            }
            RateKey::DevUser(_) => Surface::Mcp {
                token: None,
                client: "local test client".to_owned(),
            },
        }
    }
}

/// The answer to a state whose request lapsed, ran or was filed anew.
const GONE: &str = "NOT EXECUTED. That confirmation request has expired or was already used, so this answer approves nothing and nothing ran. Call the tool again without requestState to ask the account holder anew.";

/// The answer when the person dismissed the question.
const DISMISSED: &str = "NOT EXECUTED. The account holder dismissed the question without answering; nothing ran. Ask them before trying again.";

/// The registry's description of a tool, as rmcp's [`Tool`].
fn to_mcp_tool(tool: McpTool) -> Tool {
    let schema: JsonObject = match tool.input_schema {
        Value::Object(map) => map,
        // A schema is always an object; anything else would be a registry bug. Accept anything.
        _ => JsonObject::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    let hints = tool.annotations;
    let annotations = ToolAnnotations::new()
        .read_only(hints.read_only_hint)
        .destructive(hints.destructive_hint)
        .idempotent(hints.idempotent_hint)
        .open_world(hints.open_world_hint);
    Tool::new(tool.name, tool.description, Arc::new(schema)).with_annotations(annotations)
}

/// A registry outcome as an MCP result: one text item with the outcome's JSON in its MCP
/// wording (capped like the model's), the same JSON as `structuredContent`, and `isError` when the call failed.
fn call_result(outcome: &ToolOutcome) -> CallToolResult {
    let text = outcome.to_mcp_text();
    let structured = serde_json::from_str::<Value>(&text).ok();
    let content = vec![ContentBlock::text(text)];
    let mut result = if outcome.is_ok() {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    result.structured_content = structured;
    result
}

/// A held call as an MCP result: the plain sentence (starting "NOT EXECUTED") as text, the
/// same as `structuredContent` (`{"ok": false, "held": true, "error": …}`), and `isError`, so no
/// client mistakes it for a success.
fn held_result(message: &str) -> CallToolResult {
    let structured = serde_json::json!({"ok": false, "held": true, "error": message});
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.to_owned())]);
    result.structured_content = Some(structured);
    result
}

/// The authenticated caller the HTTP layer attached to this request.
fn caller(context: &RequestContext<RoleServer>) -> Result<&Caller, ErrorData> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .ok_or_else(|| {
            tracing::error!("MCP: a tool call reached the handler without a caller");
            ErrorData::internal_error("internal error", None)
        })
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.catalog.tools.clone())
            .with_ttl_ms(TOOLS_LIST_TTL_MS)
            .with_cache_scope(CacheScope::Private))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalog.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&context)?.clone();
        #[cfg(feature = "conformance")]
        if self.fixtures
            && let Some(result) = fixtures::call(&request, &context, self.state_key.as_ref()).await
        {
            return result;
        }
        let elicit = elicitation::client_can_elicit(
            context.protocol_version().as_ref(),
            context.client_capabilities().as_ref(),
        );
        self.run_tool(&caller, request, elicit).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // Steward serves no prompts; only the conformance fixture answers here, locally.
        #[cfg(feature = "conformance")]
        let fixture = self
            .fixtures
            .then(|| fixtures::prompt(&request, &context))
            .flatten();
        #[cfg(not(feature = "conformance"))]
        let fixture: Option<GetPromptResponse> = {
            let _ = (&context, self.fixtures);
            None
        };
        match fixture {
            Some(response) => Ok(response),
            None => Err(ErrorData::invalid_params(
                format!("no prompt named {:?}", request.name),
                None,
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;
    use steward_harness::registry::McpAnnotations;
    use steward_harness::{ToolErrorKind, ToolResult};

    use super::*;

    #[test]
    fn tools_keep_schema_and_hints() {
        let tool = to_mcp_tool(McpTool {
            name: "cancel_event".into(),
            description: "Cancel.".into(),
            input_schema: json!({"type": "object", "properties": {"event_id": {"type": "string"}}}),
            annotations: McpAnnotations {
                read_only_hint: false,
                destructive_hint: true,
                idempotent_hint: true,
                open_world_hint: false,
            },
        });
        let v = serde_json::to_value(&tool).unwrap();
        assert_eq!(v["inputSchema"]["properties"]["event_id"]["type"], "string");
        assert_eq!(
            v["annotations"],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false})
        );
    }

    #[test]
    fn outcomes_become_text_and_structured_content() {
        let ok = call_result(&ToolOutcome::Ok(
            ToolResult::new("Done.").with_data(json!({"id": "e_1"})),
        ));
        let v = serde_json::to_value(&ok).unwrap();
        assert_eq!(v["isError"], false);
        assert_eq!(v["structuredContent"]["data"]["id"], "e_1");
        let text = v["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            v["structuredContent"]
        );

        let err = call_result(&ToolOutcome::error(
            ToolErrorKind::NotFound,
            "Event e_9 was not found.",
        ));
        let v = serde_json::to_value(&err).unwrap();
        assert_eq!(v["isError"], true);
        assert_eq!(v["structuredContent"]["error"], "Event e_9 was not found.");
    }
}
