//! One capability, defined once: [`ToolDef`] = name, model-facing description, typed input
//! with a `schemars` JSON Schema, an async handler and its confirmation declaration. The
//! model's tool list, the MCP tool list (and its hints), argument validation and what the
//! confirmation gate holds are all derived from it (see [`crate::Registry`], [`crate::gate`]).
//!
//! The declaration is mandatory and typed: [`ToolDef::new`] returns an [`UndecidedTool`],
//! and only [`UndecidedTool::read_only`], [`UndecidedTool::never_held`] or
//! [`UndecidedTool::held_when`] turn it into a [`ToolDef`] a registry accepts. A capability
//! without a decision does not compile:
//!
//! ```compile_fail
//! use steward_harness::{Ctx, Registry, ToolDef, ToolResult};
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Input { id: String }
//! let undecided = ToolDef::new::<Input, _, _>("wipe", "Wipes.", |_c: Ctx, _i: Input| async {
//!     Ok(ToolResult::new("gone"))
//! })
//! .unwrap();
//! let mut registry = Registry::new();
//! registry.add(undecided).unwrap(); // no confirmation declared: not a ToolDef
//! ```
//!
//! The same definition with a decision compiles:
//!
//! ```
//! use steward_harness::{Ctx, Registry, ToolDef, ToolResult};
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Input { id: String }
//! let decided = ToolDef::new::<Input, _, _>("wipe", "Wipes.", |_c: Ctx, _i: Input| async {
//!     Ok(ToolResult::new("gone"))
//! })
//! .unwrap()
//! .held_when(|_c: Ctx, i: Input| async move { Ok(Some(format!("Wipe {}", i.id))) });
//! let mut registry = Registry::new();
//! registry.add(decided).unwrap();
//! ```

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::arg_schema::{ArgSchema, Problem};
use crate::ctx::Ctx;
use crate::error::ServiceError;

/// Longest validation message kept per offending field, in characters; the schema error can
/// quote the whole offending value.
const FIELD_PROBLEM_CHARS_MAX: usize = 200;

/// Argument names that would let a caller choose whose data a tool touches.
const USER_FIELDS: [&str; 4] = ["user", "user_id", "userId", "userid"];

/// What a tool returns on success, written for the model: a one- or two-sentence summary it
/// can relay, optional structured data with stable ids, an optional URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// One or two plain sentences: what happened, and what to do next if anything.
    pub summary: String,
    /// Structured details (ids, names, counts) when the model needs them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// A link worth giving the user (a public page, a deep link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl ToolResult {
    /// A result with just a summary.
    pub fn new(summary: impl Into<String>) -> Self {
        Self {
            summary: summary.into(),
            data: None,
            url: None,
        }
    }

    /// The same result with structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The same result with a URL.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }
}

/// Why a tool definition or registry could not be built (a programming error, found at start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolDefError {
    /// Tool names must be `[a-zA-Z0-9_-]`, 1 to 64 characters (the model APIs' rule).
    #[error("tool name {0:?} must be 1 to 64 letters, digits, '_' or '-'")]
    InvalidName(String),
    /// The input type's schema is not a JSON object schema.
    #[error("the input of tool {0:?} must be a struct (a JSON object schema)")]
    InputNotObject(String),
    /// The generated schema could not be compiled for validation.
    #[error("the input schema of tool {name:?} does not compile: {problem}")]
    Schema {
        /// The tool.
        name: String,
        /// What the validator said.
        problem: String,
    },
    /// The input declares a user field. Identity comes from authentication through the
    /// [`Ctx`], never from arguments, so no tool may even ask for one.
    #[error(
        "the input of tool {name:?} has a field {field:?}; identity comes from the Ctx, never from arguments"
    )]
    UserField {
        /// The tool.
        name: String,
        /// The offending property.
        field: String,
    },
    /// Two tools with the same name in one registry.
    #[error("tool {0:?} is registered twice")]
    Duplicate(String),
}

/// How a type-erased handler failed.
#[derive(Debug)]
pub(crate) enum HandlerError {
    /// The arguments passed the schema but did not deserialize into the input type.
    Arguments(String),
    /// The service said no (or broke).
    Service(ServiceError),
}

type Handler =
    Arc<dyn Fn(Ctx, Value) -> BoxFuture<'static, Result<ToolResult, HandlerError>> + Send + Sync>;

type Decider = Arc<
    dyn Fn(Ctx, Value) -> BoxFuture<'static, Result<Option<String>, HandlerError>> + Send + Sync,
>;

/// What a capability declares about confirmation, as the registry, MCP's hints and the
/// held-capabilities table see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfirmKind {
    /// Changes nothing; never held (MCP `readOnlyHint`).
    ReadOnly,
    /// Writes, but nothing that needs the person's confirmation.
    NeverHeld,
    /// Held whenever its decision describes the call (MCP `destructiveHint`).
    HeldWhen,
}

/// The declaration itself, with the decision function for [`ConfirmKind::HeldWhen`].
#[derive(Clone)]
enum Declaration {
    ReadOnly,
    NeverHeld,
    HeldWhen(Decider),
}

impl Declaration {
    fn kind(&self) -> ConfirmKind {
        match self {
            Declaration::ReadOnly => ConfirmKind::ReadOnly,
            Declaration::NeverHeld => ConfirmKind::NeverHeld,
            Declaration::HeldWhen(_) => ConfirmKind::HeldWhen,
        }
    }
}

/// What a capability's declaration says about one call with validated arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It may run at once.
    Run,
    /// It runs only after the person confirms; `description` (built from the database) says
    /// what they confirm.
    Hold {
        /// "Cancel "Summer Meetup" (42 registrations)".
        description: String,
    },
    /// The arguments do not make a call of this capability; nothing runs.
    Refuse {
        /// "Invalid arguments: …".
        message: String,
    },
}

/// One tool: see the [module docs](self).
#[derive(Clone)]
pub struct ToolDef {
    name: String,
    description: String,
    input_schema: Value,
    validator: Arc<ArgSchema>,
    declaration: Declaration,
    idempotent: bool,
    focuses: bool,
    handler: Handler,
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .field("confirmation", &self.declaration.kind())
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

/// A tool whose confirmation is not declared yet: no registry takes it. Exactly one of
/// [`read_only`](Self::read_only), [`never_held`](Self::never_held) or
/// [`held_when`](Self::held_when) makes it a [`ToolDef`].
pub struct UndecidedTool<I> {
    tool: ToolDef,
    input: PhantomData<fn() -> I>,
}

impl<I> std::fmt::Debug for UndecidedTool<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UndecidedTool")
            .field("name", &self.tool.name)
            .finish_non_exhaustive()
    }
}

impl<I> UndecidedTool<I>
where
    I: DeserializeOwned + Send + 'static,
{
    /// The tool changes nothing: it works on a paused account, skips the effect bookkeeping
    /// and is never held.
    pub fn read_only(mut self) -> ToolDef {
        self.tool.declaration = Declaration::ReadOnly;
        self.tool
    }

    /// The tool writes, but no call of it needs the person's confirmation.
    pub fn never_held(mut self) -> ToolDef {
        self.tool.declaration = Declaration::NeverHeld;
        self.tool
    }

    /// The tool is held for the person's confirmation whenever `decide` returns a description
    /// (built from the database, never from the caller's words) for the typed input; `None`
    /// lets the call run. A decision that fails holds the call (and is logged).
    pub fn held_when<D, DFut>(mut self, decide: D) -> ToolDef
    where
        D: Fn(Ctx, I) -> DFut + Send + Sync + 'static,
        DFut: Future<Output = Result<Option<String>, ServiceError>> + Send + 'static,
    {
        let decide = Arc::new(decide);
        let erased: Decider = Arc::new(move |ctx: Ctx, args: Value| {
            let decide = Arc::clone(&decide);
            async move {
                let input: I = serde_json::from_value(args)
                    .map_err(|e| HandlerError::Arguments(e.to_string()))?;
                decide(ctx, input).await.map_err(HandlerError::Service)
            }
            .boxed()
        });
        self.tool.declaration = Declaration::HeldWhen(erased);
        self.tool
    }
}

impl ToolDef {
    /// Defines a tool whose input is `I` (its JSON Schema is generated here, once) and whose
    /// handler is `handler`; the confirmation is declared next, on the [`UndecidedTool`]. The
    /// input type must not have a user field: identity comes from the [`Ctx`], and unknown
    /// argument fields are dropped before deserializing.
    // Type-state: `new` deliberately returns the undecided tool, so a definition without a
    // confirmation declaration cannot reach a registry.
    #[allow(clippy::new_ret_no_self)]
    pub fn new<I, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Result<UndecidedTool<I>, ToolDefError>
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Ctx, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ServiceError>> + Send + 'static,
    {
        let name = name.into();
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(ToolDefError::InvalidName(name));
        }
        let input_schema = model_schema(schemars::schema_for!(I).to_value());
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(ToolDefError::InputNotObject(name));
        }
        if let Some(props) = input_schema.get("properties").and_then(Value::as_object)
            && let Some(field) = USER_FIELDS.iter().find(|f| props.contains_key(**f))
        {
            return Err(ToolDefError::UserField {
                name,
                field: (*field).to_owned(),
            });
        }
        let validator =
            ArgSchema::compile(&input_schema).map_err(|problem| ToolDefError::Schema {
                name: name.clone(),
                problem,
            })?;
        let handler = Arc::new(handler);
        let erased: Handler = Arc::new(move |ctx: Ctx, args: Value| {
            let handler = Arc::clone(&handler);
            async move {
                let input: I = serde_json::from_value(args)
                    .map_err(|e| HandlerError::Arguments(e.to_string()))?;
                handler(ctx, input).await.map_err(HandlerError::Service)
            }
            .boxed()
        });
        let tool = Self {
            name,
            description: description.into(),
            input_schema,
            validator: Arc::new(validator),
            // Replaced by the declaration; an UndecidedTool never reaches a registry.
            declaration: Declaration::NeverHeld,
            idempotent: false,
            focuses: false,
            handler: erased,
        };
        Ok(UndecidedTool {
            tool,
            input: PhantomData,
        })
    }

    /// Marks the tool as idempotent: calling it again with the same arguments changes nothing
    /// more (MCP `idempotentHint`).
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// Marks the tool as one that creates (or opens) a record: after it succeeds, the chat
    /// runtime makes the result's `data.id` the conversation's active record.
    pub fn focuses(mut self) -> Self {
        self.focuses = true;
        self
    }

    /// The same capability described differently for the model: for trying a new wording (an
    /// eval, a replay of a stored conversation) without defining the tool again. The schema,
    /// the confirmation declaration and the handler stay as they are.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Whether a successful call makes its result's `data.id` the active record.
    pub fn is_focusing(&self) -> bool {
        self.focuses
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description written for the model.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The input's JSON Schema as sent to the model and MCP clients.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// Whether the tool only reads.
    pub fn is_read_only(&self) -> bool {
        self.declaration.kind() == ConfirmKind::ReadOnly
    }

    /// What the tool declares about confirmation.
    pub fn confirmation(&self) -> ConfirmKind {
        self.declaration.kind()
    }

    /// Asks the declaration about one call with already validated `args`. Arguments that do
    /// not deserialize into the input type are refused (never "not risky"); a decision that
    /// fails holds the call, with a description that says so, and is logged.
    pub async fn decide(&self, ctx: &Ctx, args: &Value) -> Decision {
        let Declaration::HeldWhen(decide) = &self.declaration else {
            return Decision::Run;
        };
        match decide(ctx.clone(), args.clone()).await {
            Ok(None) => Decision::Run,
            Ok(Some(description)) => Decision::Hold { description },
            Err(HandlerError::Arguments(msg)) => Decision::Refuse {
                message: format!("Invalid arguments: {msg}"),
            },
            Err(HandlerError::Service(e)) => {
                tracing::error!(
                    tool = %self.name,
                    user = %ctx.user(),
                    action = %ctx.action(),
                    error = %e,
                    "confirmation decision failed; holding the call"
                );
                Decision::Hold {
                    description: format!(
                        "run {} (Steward could not check what it would change, so it asks first)",
                        self.name
                    ),
                }
            }
        }
    }

    /// Whether the tool is idempotent.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// Checks `args` against the schema and drops unknown top-level fields. `Err` names every
    /// offending field: "Invalid arguments: name: …; capacity: …".
    pub fn validate(&self, args: Value) -> Result<Value, String> {
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let problems: Vec<String> = self
            .validator
            .problems(&args)
            .into_iter()
            .map(describe_problem)
            .collect();
        if !problems.is_empty() {
            return Err(format!("Invalid arguments: {}", problems.join("; ")));
        }
        Ok(self.drop_unknown_fields(args))
    }

    /// Keeps only the properties the schema declares, so a model-invented field (a `user_id`)
    /// can never reach the handler, whatever the input type's serde attributes say.
    fn drop_unknown_fields(&self, args: Value) -> Value {
        let Some(known) = self
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            return args;
        };
        if self.input_schema.get("additionalProperties").is_some() {
            // A map-like input declares its extra keys as data; keep them.
            return args;
        }
        match args {
            Value::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .filter(|(k, _)| known.contains_key(k))
                    .collect(),
            ),
            other => other,
        }
    }

    /// Runs the handler on already validated arguments.
    pub(crate) fn run(
        &self,
        ctx: Ctx,
        args: Value,
    ) -> BoxFuture<'static, Result<ToolResult, HandlerError>> {
        (self.handler)(ctx, args)
    }
}

/// The schema as the model and MCP get it: no `$schema`/`title` noise, and no
/// `additionalProperties: false` anywhere, because unknown fields are dropped, not refused.
fn model_schema(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    strip_closed_objects(&mut schema);
    schema
}

fn strip_closed_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("additionalProperties") == Some(&Value::Bool(false)) {
                map.remove("additionalProperties");
            }
            map.values_mut().for_each(strip_closed_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_closed_objects),
        _ => {}
    }
}

/// "field: problem" for one schema violation, with a dotted path (`sessions.0.title`).
fn describe_problem(Problem { path, message }: Problem) -> String {
    let field = if path.is_empty() {
        "(arguments)".to_owned()
    } else {
        path.join(".")
    };
    let problem = if message.chars().count() > FIELD_PROBLEM_CHARS_MAX {
        let cut: String = message.chars().take(FIELD_PROBLEM_CHARS_MAX).collect();
        format!("{cut}…")
    } else {
        message
    };
    format!("{field}: {problem}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        /// The title.
        title: String,
        /// How many.
        count: u32,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn tool() -> ToolDef {
        ToolDef::new::<Input, _, _>("make", "Makes things.", |_ctx, input: Input| async move {
            Ok(ToolResult::new(input.title))
        })
        .unwrap()
        .never_held()
    }

    #[test]
    fn schema_is_an_open_object_without_noise() {
        let t = tool();
        let schema = t.input_schema();
        assert_eq!(schema["type"], "object");
        assert!(schema.get("$schema").is_none());
        assert!(schema.get("title").is_none());
        assert!(schema.get("additionalProperties").is_none());
        assert!(schema["properties"]["title"].is_object());
    }

    #[test]
    fn every_offending_field_is_named() {
        let err = tool()
            .validate(serde_json::json!({"count": "three", "tags": [1]}))
            .unwrap_err();
        assert!(err.starts_with("Invalid arguments: "), "{err}");
        assert!(err.contains("title: required but missing"), "{err}");
        assert!(err.contains("count: "), "{err}");
        assert!(err.contains("tags.0: "), "{err}");
    }

    #[test]
    fn unknown_fields_are_dropped() {
        let args = tool()
            .validate(serde_json::json!({"title": "a", "count": 1, "user_id": "someone-else"}))
            .unwrap();
        assert!(args.get("user_id").is_none());
        assert_eq!(args["title"], "a");
    }

    #[test]
    fn null_arguments_mean_an_empty_object() {
        let err = tool().validate(Value::Null).unwrap_err();
        assert!(err.contains("title: required but missing"), "{err}");
    }

    #[test]
    fn inputs_with_a_user_field_are_refused() {
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Sneaky {
            user_id: String,
        }
        let r = ToolDef::new::<Sneaky, _, _>("sneaky", "d", |_c, _i: Sneaky| async {
            Ok(ToolResult::new("x"))
        });
        assert!(matches!(r, Err(ToolDefError::UserField { ref field, .. }) if field == "user_id"));
    }

    #[test]
    fn bad_names_are_refused() {
        let r = ToolDef::new::<Input, _, _>("has space", "d", |_c, _i: Input| async {
            Ok(ToolResult::new("x"))
        });
        assert!(matches!(r, Err(ToolDefError::InvalidName(_))));
    }
}
