//! The tool registry: every tool, in one fixed order, and the one way to run them.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde::Serialize;
use serde_json::Value;

use crate::accounts;
use crate::ctx::Ctx;
use crate::effect;
use crate::error::ServiceError;
use crate::outcome::{ToolErrorKind, ToolOutcome};
use crate::tool::{ConfirmKind, HandlerError, ToolDef, ToolDefError, ToolResult};

/// A tool as the model's API wants it (`tools: [{name, description, input_schema}]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTool {
    /// The tool's name.
    pub name: String,
    /// The description written for the model.
    pub description: String,
    /// The input's JSON Schema.
    pub input_schema: Value,
}

/// MCP tool annotations (hints for the client; the server enforces its own rules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    /// The tool changes nothing.
    pub read_only_hint: bool,
    /// The tool may destroy or publish something: its declaration holds some calls for the
    /// person's confirmation. Always sent, since MCP assumes `true` for a write tool that
    /// omits it.
    pub destructive_hint: bool,
    /// Repeating the call with the same arguments changes nothing more.
    pub idempotent_hint: bool,
    /// The tool only touches this service's own data.
    pub open_world_hint: bool,
}

/// A tool as MCP `tools/list` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// The tool's name.
    pub name: String,
    /// The description written for the model.
    pub description: String,
    /// The input's JSON Schema.
    pub input_schema: Value,
    /// The behaviour hints.
    pub annotations: McpAnnotations,
}

/// A call named a tool the registry does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown tool {name:?}. Use one of the tools in your tool list.")]
pub struct UnknownTool {
    /// The name that was asked for.
    pub name: String,
}

/// Every tool of the product, in the order they were added (the order the model and MCP see).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: Vec<ToolDef>,
    by_name: HashMap<String, usize>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool at the end; refuses a second tool with the same name.
    pub fn add(&mut self, tool: ToolDef) -> Result<(), ToolDefError> {
        if self.by_name.contains_key(tool.name()) {
            return Err(ToolDefError::Duplicate(tool.name().to_owned()));
        }
        self.by_name
            .insert(tool.name().to_owned(), self.tools.len());
        self.tools.push(tool);
        Ok(())
    }

    /// The registry with `tool` added at the end (builder form of [`Registry::add`]).
    pub fn with(mut self, tool: ToolDef) -> Result<Self, ToolDefError> {
        self.add(tool)?;
        Ok(self)
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&ToolDef> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// Every tool, in order.
    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The model's tool list, in order.
    pub fn model_tools(&self) -> Vec<ModelTool> {
        self.tools
            .iter()
            .map(|t| ModelTool {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.input_schema().clone(),
            })
            .collect()
    }

    /// The MCP `tools/list` entries, in order.
    pub fn mcp_tools(&self) -> Vec<McpTool> {
        self.tools
            .iter()
            .map(|t| McpTool {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.input_schema().clone(),
                annotations: McpAnnotations {
                    read_only_hint: t.is_read_only(),
                    destructive_hint: t.confirmation() == ConfirmKind::HeldWhen,
                    idempotent_hint: t.is_read_only() || t.is_idempotent(),
                    open_world_hint: false,
                },
            })
            .collect()
    }

    /// Checks `args` for tool `name` without running it: the cleaned arguments, or the
    /// "Invalid arguments: …" outcome naming each offending field.
    pub fn validate(
        &self,
        name: &str,
        args: Value,
    ) -> Result<Result<Value, ToolOutcome>, UnknownTool> {
        let tool = self.get(name).ok_or_else(|| UnknownTool {
            name: name.to_owned(),
        })?;
        Ok(tool
            .validate(args)
            .map_err(|msg| ToolOutcome::error(ToolErrorKind::InvalidArguments, msg)))
    }

    /// Runs tool `name` for `ctx`:
    /// 1. arguments that do not fit the schema → `Invalid arguments: …` naming every field;
    ///    unknown fields are dropped;
    /// 2. a write tool whose call (`ctx`'s effect key) already committed → the stored result,
    ///    without running again;
    /// 3. a write tool on a paused (or missing) account → refused with the readable reason;
    /// 4. the handler: its result, or its [`ServiceError`]'s message; a store error, an
    ///    internal error or a panic → a generic "internal error (reference `<action id>`)", with
    ///    the detail logged under the action id.
    ///
    /// Only an unknown tool name is an `Err`.
    pub async fn call(
        &self,
        ctx: Ctx,
        name: &str,
        args: Value,
    ) -> Result<ToolOutcome, UnknownTool> {
        let tool = self.get(name).ok_or_else(|| UnknownTool {
            name: name.to_owned(),
        })?;
        let args = match tool.validate(args) {
            Ok(args) => args,
            Err(msg) => return Ok(ToolOutcome::error(ToolErrorKind::InvalidArguments, msg)),
        };
        Ok(self.call_validated(ctx, tool, name, args).await)
    }

    /// [`Registry::call`] from step 2 on, for arguments `tool.validate` already accepted (the
    /// gate validates before it decides, and its answer is what runs).
    pub(crate) async fn call_validated(
        &self,
        ctx: Ctx,
        tool: &ToolDef,
        name: &str,
        args: Value,
    ) -> ToolOutcome {
        let ctx = if tool.is_read_only() {
            ctx
        } else {
            match self.pre_write_checks(&ctx).await {
                Ok(Ok(version)) => ctx.with_writable_account(version),
                Ok(Err(replayed)) => return replayed,
                Err(e) => return service_failure(&ctx, name, &e),
            }
        };
        let run = AssertUnwindSafe(tool.run(ctx.clone(), args))
            .catch_unwind()
            .await;
        match run {
            Ok(Ok(result)) => ToolOutcome::Ok(result),
            Ok(Err(HandlerError::Arguments(msg))) => ToolOutcome::error(
                ToolErrorKind::InvalidArguments,
                format!("Invalid arguments: {msg}"),
            ),
            Ok(Err(HandlerError::Service(e))) => {
                // Two copies of one call racing: the loser's own checks fail after the winner
                // committed ("a room named Aula already exists"). Both must answer with the
                // winner's stored result.
                if !tool.is_read_only()
                    && e.is_expected()
                    && let Ok(Some(replayed)) = self.stored_outcome(&ctx).await
                {
                    return replayed;
                }
                service_failure(&ctx, name, &e)
            }
            Err(panic) => {
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_owned());
                tracing::error!(
                    action = %ctx.action(),
                    user = %ctx.user(),
                    tool = name,
                    panic = %detail,
                    "tool handler panicked"
                );
                ToolOutcome::internal(ctx.action())
            }
        }
    }

    /// For a write tool: the stored outcome when this call already committed (not looked up
    /// again when the gate just found none), else checks that the account may write and gives
    /// the account's version it saw (the commit's condition).
    async fn pre_write_checks(&self, ctx: &Ctx) -> Result<Result<u64, ToolOutcome>, ServiceError> {
        if !ctx.effect_known_absent()
            && let Some(replayed) = self.stored_outcome(ctx).await?
        {
            return Ok(Err(replayed));
        }
        let account = accounts::ensure_can_write(ctx.table().as_ref(), ctx.user()).await?;
        Ok(Ok(account.version))
    }

    /// The stored outcome of this call (its effect key), if it already committed.
    async fn stored_outcome(&self, ctx: &Ctx) -> Result<Option<ToolOutcome>, ServiceError> {
        let Some(key) = ctx.effect() else {
            return Ok(None);
        };
        let Some(stored) = effect::stored_effect(ctx.table().as_ref(), key).await? else {
            return Ok(None);
        };
        let result = serde_json::from_value::<ToolResult>(stored.result).unwrap_or_else(|_| {
            ToolResult::new(format!(
                "This call was already carried out (action {}); nothing was done again.",
                stored.action
            ))
        });
        Ok(Some(ToolOutcome::Ok(result)))
    }
}

/// The outcome for a service error: readable when expected, generic (and logged) when not.
fn service_failure(ctx: &Ctx, tool: &str, error: &ServiceError) -> ToolOutcome {
    if !error.is_expected() {
        tracing::error!(
            action = %ctx.action(),
            user = %ctx.user(),
            tool,
            error = %error,
            "tool call failed with an internal error"
        );
    }
    ToolOutcome::from_service_error(error, ctx.action())
}
