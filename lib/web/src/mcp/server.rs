//! The MCP server proper: an rmcp [`ServerHandler`] over the tool [`Registry`]. `tools/list` is
//! the registry in its order with its annotations (`destructiveHint` from each capability's
//! confirmation declaration); `tools/call` runs the capability through the harness gate
//! ([`gate::run`], surface [`Surface::Mcp`]) for the authenticated caller, as [`Actor::Mcp`],
//! under a fresh action id. A held call answers "NOT EXECUTED" with the description and files a
//! request the person approves or declines on the web UI's Approvals page; nothing the client
//! sends can approve it.

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use steward_harness::gate::{self, GateOutcome, Surface};
use steward_harness::{Actor, Ctx, McpTool, Registry, ToolOutcome, tokens};
use steward_store::{Clock, Table};

use super::auth::{Caller, RateKey};
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
see on a published event: the call returns a result starting with NOT EXECUTED that says what \
would happen, and nothing runs. Only the account holder can approve it, on the Approvals page of \
the Steward web app (within an hour); nothing you send can approve it. Tell them, and after they \
approve, repeat the identical call once: it then runs exactly once.";

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
}

impl ToolServer {
    /// A handler running `registry`'s tools on `table`; with `fixtures`, also the
    /// conformance suite's fixture tools (local tests only — [`super::McpConfig`] enforces it).
    pub fn new(
        registry: Arc<Registry>,
        table: Arc<dyn Table>,
        clock: Arc<dyn Clock>,
        fixtures: bool,
    ) -> Self {
        let mut tools: Vec<Tool> = registry.mcp_tools().into_iter().map(to_mcp_tool).collect();
        if fixtures {
            tools.extend(fixtures::tools());
        }
        Self {
            registry,
            table,
            clock,
            catalog: Arc::new(Catalog { tools }),
            fixtures,
        }
    }

    async fn run_tool(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let ctx = Ctx::new(
            Arc::clone(&self.table),
            Arc::clone(&self.clock),
            caller.user.clone(),
            Actor::Mcp,
        );
        let action = ctx.action();
        let args = Value::Object(arguments.unwrap_or_default());
        let surface = self.surface(caller).await;
        match gate::run(&self.registry, ctx, &surface, name, args).await {
            Ok(Ok(outcome)) => {
                tracing::info!(
                    user = %caller.user,
                    tool = name,
                    %action,
                    ok = matches!(&outcome, GateOutcome::Ran(o) if o.is_ok()),
                    held = matches!(outcome, GateOutcome::Held { .. }),
                    "MCP tool call"
                );
                Ok(match &outcome {
                    GateOutcome::Ran(o) => call_result(o),
                    GateOutcome::Held { message, .. } => held_result(message),
                })
            }
            Ok(Err(store)) => {
                tracing::error!(user = %caller.user, tool = name, %action, error = %store, "MCP call: the gate's store failed");
                Ok(call_result(&ToolOutcome::internal(action)))
            }
            Err(unknown) => Err(ErrorData::invalid_params(unknown.to_string(), None)),
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
        if self.fixtures
            && let Some(result) = fixtures::call(&request.name, &context).await
        {
            return result;
        }
        self.run_tool(&caller, &request.name, request.arguments)
            .await
            .map(CallToolResponse::from)
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
