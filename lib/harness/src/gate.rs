//! The one confirmation gate, in front of the registry for every surface (chat, MCP, the web
//! UI). A call is decided by its capability's own declaration ([`ToolDef::decide`]); a held
//! call runs only after the PERSON confirms, in a way the model or the MCP client cannot fake:
//!
//! * [`Surface::Chat`] — by a later message of theirs: a confirmation filed on one turn opens
//!   only on a later turn, so "call, get refused, call again" within one turn is refused again.
//! * [`Surface::Mcp`] — out of band: the call answers "NOT EXECUTED" and files a pending
//!   request the person approves or declines on the web UI's Approvals page
//!   ([`approve`], [`decline`]) or with the buttons in their linked chat
//!   ([`crate::approval_chat`], [`approve_request`]); the client's next identical call then
//!   runs once. Nothing the client sends can approve. A client that can elicit (2026-07-28)
//!   asks the person in-protocol instead; the MCP surface verifies the sealed request state of
//!   their answer and calls [`approve_request`] for exactly that request.
//! * [`Surface::Web`] — the person's own signed-in, CSRF-checked re-post of the form after a
//!   confirmation page ([`check`] with `confirmed: true`).
//!
//! One record for all of them, at `USER#u / CONFIRM#<id>`: owner (the partition), capability,
//! the hash of the validated input (canonical JSON), surface, description, state and a 1-hour
//! expiry. The id hashes the surface's scope (conversation, token, web), the capability and
//! the input, so a confirmation for "cancel A" cannot cancel B, one client's approval is not
//! another's, and another user's record cannot even be named. A record confirms only the
//! description the person was shown: when the declaration now describes the call differently,
//! the call is held again with the new description.
//!
//! Spending a confirmation is a version-checked write placed in the SAME transaction as the
//! capability's own writes (see [`crate::Ctx::with_confirmation`]), so two racing calls
//! cannot both pass, and a crash can neither lose a confirmation nor act without spending it.
//! Unknown capabilities and arguments that fail to parse are refused; a decision that fails
//! holds the call.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use steward_store::{Item, Query, StoreError, Table, WriteOp};

use crate::ctx::Ctx;
use crate::error::ServiceError;
use crate::ids::{ConversationKey, TokenId, UserId};
use crate::keys;
use crate::limits::{CONFIRMATION_TTL_SECS, PENDING_APPROVALS_MAX};
use crate::outcome::{ToolErrorKind, ToolOutcome};
use crate::registry::{Registry, UnknownTool};
use crate::telemetry::{self, ToolCallOutcome};
use crate::tool::{Decision, ToolDef};

/// Where a call comes from, with what counts as the person's confirmation there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Surface {
    /// A chat conversation, on turn `turn`: confirmed by a later message of the person.
    Chat {
        /// The conversation.
        conversation: ConversationKey,
        /// The turn the call is made on.
        turn: u64,
    },
    /// An MCP client: confirmed out of band by the person (Approvals page, or a verified
    /// in-protocol answer).
    Mcp {
        /// The token the client authenticated with (`None`: the local test user).
        token: Option<TokenId>,
        /// The token's label, shown to the person ("Claude desktop").
        client: String,
    },
    /// The web UI: confirmed by the person re-posting the form from the confirmation page.
    Web {
        /// Whether this post is that re-post (`confirm=yes`).
        confirmed: bool,
    },
}

impl Surface {
    /// The kind, as stored.
    pub fn kind(&self) -> SurfaceKind {
        match self {
            Surface::Chat { .. } => SurfaceKind::Chat,
            Surface::Mcp { .. } => SurfaceKind::Mcp,
            Surface::Web { .. } => SurfaceKind::Web,
        }
    }

    /// What a confirmation is bound to besides user, capability and input.
    fn scope(&self) -> String {
        match self {
            Surface::Chat { conversation, .. } => format!("chat:{conversation}"),
            Surface::Mcp { token: Some(t), .. } => format!("mcp:{t}"),
            Surface::Mcp { token: None, .. } => "mcp:local".to_owned(),
            Surface::Web { .. } => "web".to_owned(),
        }
    }
}

/// The surface a confirmation record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SurfaceKind {
    /// A chat conversation.
    Chat,
    /// An MCP client.
    Mcp,
    /// The web UI.
    Web,
}

/// Where a confirmation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmState {
    /// Waiting for the person.
    Pending,
    /// The person approved it out of band; the next identical call runs once.
    Approved,
    /// The person declined it; identical calls are refused until it expires.
    Declined,
    /// A confirmed call ran and spent it.
    Spent,
}

/// One confirmation record (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    /// Its id: the hash of scope, capability and input.
    pub id: String,
    /// The person it belongs to.
    pub owner: UserId,
    /// The capability (tool name).
    pub capability: String,
    /// SHA-256 of the capability and the canonical JSON of its validated input.
    pub input_hash: String,
    /// The validated input, for the person to see exactly what was asked.
    pub input: Value,
    /// The surface that asked.
    pub surface: SurfaceKind,
    /// The MCP client's label, when an MCP client asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// What the person confirms, built from the database by the capability's declaration.
    pub description: String,
    /// The chat turn it was filed on (chat only); it opens on a later turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_turn: Option<u64>,
    /// When it was filed (epoch ms); it lapses [`CONFIRMATION_TTL_SECS`] later.
    pub created_ms: i64,
    /// Where it stands.
    pub state: ConfirmState,
    /// When the person approved or declined it (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_ms: Option<i64>,
}

impl Confirmation {
    /// Whether it is still within its hour at `now_ms`.
    pub fn is_live(&self, now_ms: i64) -> bool {
        now_ms < self.created_ms + CONFIRMATION_TTL_SECS * 1000
    }

    /// When it lapses, epoch ms.
    pub fn expires_ms(&self) -> i64 {
        self.created_ms + CONFIRMATION_TTL_SECS * 1000
    }
}

/// What the gate decided for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum GateDecision {
    /// Not held: run it.
    Pass,
    /// Confirmed by the person: run it, spending the confirmation with this write in the
    /// call's own transaction.
    Confirmed {
        /// The version-checked write that marks the confirmation spent.
        consume: WriteOp,
    },
    /// Held: nothing runs.
    Held {
        /// The plain sentence for the caller, starting with "NOT EXECUTED".
        message: String,
        /// The record that holds it.
        confirmation: Box<Confirmation>,
    },
}

/// What a call through the gate came to.
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    /// The call ran (or was refused by the registry or the declaration): its outcome.
    Ran(ToolOutcome),
    /// The call is held; nothing ran.
    Held {
        /// The plain sentence for the caller, starting with "NOT EXECUTED".
        message: String,
        /// The record that holds it.
        confirmation: Box<Confirmation>,
    },
}

impl GateOutcome {
    /// The text a model or client reads, and whether it is an error.
    pub fn to_model_text(&self) -> (String, bool) {
        match self {
            GateOutcome::Ran(outcome) => (outcome.to_model_text(), !outcome.is_ok()),
            GateOutcome::Held { message, .. } => (message.clone(), true),
        }
    }
}

/// Why the person's approval or decline could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// No such request of this person, or its hour is over.
    #[error(
        "That request has expired or does not exist; nothing was approved. Ask the client to try again."
    )]
    Gone,
    /// It was already approved, declined or used.
    #[error("That request was already {0}; nothing changed.")]
    AlreadyDecided(&'static str),
    /// Only MCP requests are approved out of band (chat is confirmed in chat, the web on its page).
    #[error("That request is confirmed where it was asked, not here.")]
    WrongSurface,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
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

/// SHA-256 of `tool`, a newline, and the canonical JSON of `args`: the input hash.
pub fn call_hash(tool: &str, args: &Value) -> String {
    let mut h = Sha256::new();
    h.update(tool.as_bytes());
    h.update(b"\n");
    h.update(canonical_json(args).as_bytes());
    hex::encode(h.finalize())
}

/// The record id of a call on `surface`: the input hash bound to the surface's scope.
pub fn confirmation_id(surface: &Surface, tool: &str, args: &Value) -> String {
    let mut h = Sha256::new();
    h.update(surface.scope().as_bytes());
    h.update(b"\n");
    h.update(call_hash(tool, args).as_bytes());
    hex::encode(h.finalize())
}

/// The refusal a held chat call returns to the model: the instructions travel inside the
/// result, the most reliable place for them.
pub fn held_message(description: &str) -> String {
    format!(
        "NOT EXECUTED. This needs the user's confirmation first: {description}. Ask them to confirm in one short line. If they clearly say yes in their next message, call this same tool again with identical arguments."
    )
}

/// The refusal a held MCP call returns, by the state of its record.
fn mcp_message(description: &str, state: ConfirmState) -> String {
    match state {
        ConfirmState::Declined => format!(
            "NOT EXECUTED. The account holder declined this: {description}. It will not run; do not retry it. Ask them what they want instead."
        ),
        _ => format!(
            "NOT EXECUTED. This needs the account holder's approval first: {description}. Nothing you send can approve it: they approve or decline it on the Approvals page of the Steward web app, or with the buttons sent to their linked chat, within an hour. Tell them so; once they approve, call this tool again with identical arguments and it runs once."
        ),
    }
}

/// The refusal of a held web action (the page shows the description itself).
fn web_message(description: &str) -> String {
    format!("NOT EXECUTED. Please confirm on this page: {description}.")
}

/// Decides a call of `tool` with validated `args` by `user` on `surface` at `now_ms`, given
/// the declaration's `description` (None: not held). Files or updates the confirmation
/// record when the call is held.
pub async fn check(
    table: &dyn Table,
    user: &UserId,
    surface: &Surface,
    now_ms: i64,
    tool: &str,
    args: &Value,
    description: Option<String>,
) -> Result<GateDecision, StoreError> {
    let Some(description) = description else {
        return Ok(GateDecision::Pass);
    };
    let id = confirmation_id(surface, tool, args);
    let pk = keys::user_pk(user);
    let sk = keys::confirm_sk(&id);
    let existing = table.get(&pk, &sk).await?;
    let parsed = existing
        .as_ref()
        .map(|item| {
            item.parse::<Confirmation>()
                .map_err(|e| StoreError::Backend(format!("corrupt confirmation {sk}: {e}")))
        })
        .transpose()?;
    // A record stands while it is within its hour, unspent, and still describes what this
    // call would do: the person confirms the words they saw, so when the database now says
    // something else (an undo whose newest request changed, a new count of people), the old
    // confirmation does not carry over. A declined record keeps refusing identical calls.
    let live = parsed.as_ref().filter(|c| {
        c.is_live(now_ms)
            && c.state != ConfirmState::Spent
            && (c.state == ConfirmState::Declined || c.description == description)
    });

    // Confirmed by the person on this surface's terms?
    if let (Some(c), Some(item)) = (live, existing.as_ref()) {
        let confirmed = match surface {
            Surface::Chat { turn, .. } => {
                c.state == ConfirmState::Pending && c.created_turn.is_some_and(|t| t < *turn)
            }
            Surface::Mcp { .. } => c.state == ConfirmState::Approved,
            Surface::Web { confirmed } => *confirmed && c.state == ConfirmState::Pending,
        };
        if confirmed {
            let spent = Confirmation {
                state: ConfirmState::Spent,
                ..c.clone()
            };
            let next = Item::from_value(&pk, &sk, &spent)
                .map_err(|e| StoreError::Backend(e.to_string()))?
                .with_version(item.version + 1)
                .with_ttl(expiry_secs(c.created_ms));
            return Ok(GateDecision::Confirmed {
                consume: WriteOp::put_if_version(next, item.version),
            });
        }
    }

    let record = match live {
        // Still waiting (or declined): the same record stands.
        Some(c) => c.clone(),
        None => {
            // Nothing usable: file a fresh request (replacing a spent or lapsed one).
            let record = Confirmation {
                id: id.clone(),
                owner: user.clone(),
                capability: tool.to_owned(),
                input_hash: call_hash(tool, args),
                input: args.clone(),
                surface: surface.kind(),
                client: match surface {
                    Surface::Mcp { client, .. } => Some(client.clone()),
                    _ => None,
                },
                description: description.clone(),
                created_turn: match surface {
                    Surface::Chat { turn, .. } => Some(*turn),
                    _ => None,
                },
                created_ms: now_ms,
                state: ConfirmState::Pending,
                decided_ms: None,
            };
            let item = Item::from_value(&pk, &sk, &record)
                .map_err(|e| StoreError::Backend(e.to_string()))?
                .with_ttl(expiry_secs(now_ms));
            let op = match &existing {
                Some(old) => {
                    WriteOp::put_if_version(item.with_version(old.version + 1), old.version)
                }
                None => WriteOp::put_if_absent(item),
            };
            match table.write(vec![op]).await {
                // A racing call filed it first: the same refusal stands.
                Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
                Err(e) => return Err(e),
            }
            record
        }
    };
    let message = match surface {
        Surface::Chat { .. } => held_message(&record.description),
        Surface::Mcp { .. } => mcp_message(&record.description, record.state),
        Surface::Web { .. } => web_message(&record.description),
    };
    Ok(GateDecision::Held {
        message,
        confirmation: Box::new(record),
    })
}

/// Runs the capability `name` for `ctx` from `surface` through the gate: unknown names are an
/// `Err`; invalid arguments and arguments the declaration refuses come back as readable
/// errors; a held call files its confirmation and runs nothing; a confirmed call runs with the
/// confirmation spent in its own transaction. A call whose effect already committed (a resumed
/// chat turn) is answered from its stored result by the registry.
pub async fn run(
    registry: &Registry,
    ctx: Ctx,
    surface: &Surface,
    name: &str,
    args: Value,
) -> Result<Result<GateOutcome, StoreError>, UnknownTool> {
    Ok(run_noting(registry, ctx, surface, name, args)
        .await?
        .map(|(outcome, _)| outcome))
}

/// How one call went through the gate: what a turn's record keeps beside the call's result
/// ([`crate::transcript::ToolNote`]), since the result text alone cannot tell a confirmed call
/// from one that needed no confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Passage {
    /// It ran without needing a confirmation (its outcome may still be an error).
    Ran,
    /// It ran on the person's confirmation, which it spent.
    Confirmed,
    /// It already committed on an earlier attempt; the stored result was returned.
    Replayed,
    /// Held for the person's confirmation; nothing ran.
    Held,
    /// Refused before running: invalid arguments, or the declaration refused it.
    Refused,
}

/// [`run`], also saying how the call went through the gate.
pub async fn run_noting(
    registry: &Registry,
    ctx: Ctx,
    surface: &Surface,
    name: &str,
    args: Value,
) -> Result<Result<(GateOutcome, Passage), StoreError>, UnknownTool> {
    let tool = registry.get(name).ok_or_else(|| UnknownTool {
        name: name.to_owned(),
    })?;
    let args = match tool.validate(args) {
        Ok(args) => args,
        Err(msg) => {
            telemetry::record_tool_outcome(ToolCallOutcome::Refused);
            return Ok(Ok((
                GateOutcome::Ran(ToolOutcome::error(ToolErrorKind::InvalidArguments, msg)),
                Passage::Refused,
            )));
        }
    };
    let noted = run_validated(registry, ctx, surface, name, args).await;
    if let Ok((_, passage)) = &noted {
        telemetry::record_tool_outcome(ToolCallOutcome::from(*passage));
    }
    Ok(noted)
}

impl From<Passage> for ToolCallOutcome {
    fn from(passage: Passage) -> Self {
        match passage {
            // A replay returns what already ran: to a trace it ran.
            Passage::Ran | Passage::Replayed => Self::Ran,
            Passage::Confirmed => Self::Confirmed,
            Passage::Held => Self::Held,
            Passage::Refused => Self::Refused,
        }
    }
}

async fn run_validated(
    registry: &Registry,
    ctx: Ctx,
    surface: &Surface,
    name: &str,
    args: Value,
) -> Result<(GateOutcome, Passage), StoreError> {
    let Some(tool) = registry.get(name) else {
        return Ok((
            GateOutcome::Ran(ToolOutcome::error(
                ToolErrorKind::InvalidArguments,
                UnknownTool {
                    name: name.to_owned(),
                }
                .to_string(),
            )),
            Passage::Refused,
        ));
    };
    // `args` were validated by `run_noting`: the registry runs them without validating again.
    let call = |ctx: Ctx, args: Value| registry.call_validated(ctx, tool, name, args);
    // A call that already committed (a crash after its transaction) is replayed by the
    // registry from its stored effect; the gate must not see its spent confirmation.
    if let Some(effect) = ctx.effect()
        && crate::effect::stored_effect(ctx.table().as_ref(), effect)
            .await
            .map_err(service_to_store)?
            .is_some()
    {
        return Ok((GateOutcome::Ran(call(ctx, args).await), Passage::Replayed));
    }
    let ctx = ctx.with_effect_absent();
    Ok(match admit(tool, &ctx, surface, name, &args).await? {
        Admission::Run { ctx, consume } => {
            let table = ctx.table().clone();
            let outcome = call(*ctx, args).await;
            let passage = if consume.is_some() {
                Passage::Confirmed
            } else {
                Passage::Ran
            };
            if let Some(consume) = consume
                && outcome.is_ok()
            {
                // A handler that wrote nothing did not carry the consume: spend it now.
                spend(table.as_ref(), consume).await?;
            }
            (GateOutcome::Ran(outcome), passage)
        }
        Admission::Refused { message } => (
            GateOutcome::Ran(ToolOutcome::error(ToolErrorKind::InvalidArguments, message)),
            Passage::Refused,
        ),
        Admission::Held {
            message,
            confirmation,
        } => (
            GateOutcome::Held {
                message,
                confirmation,
            },
            Passage::Held,
        ),
    })
}

/// What the gate lets happen to one call with validated arguments.
#[derive(Debug)]
pub enum Admission {
    /// Run it, with this context: it carries the spend of the person's confirmation when one
    /// was used (`consume`), so the capability's own transaction spends it. A capability that
    /// wrote nothing did not carry it: the caller spends `consume` after a successful run
    /// ([`spend`]).
    Run {
        /// The context to run the call with.
        ctx: Box<Ctx>,
        /// The confirmation's spend, when the call was confirmed.
        consume: Option<WriteOp>,
    },
    /// The declaration refuses the call: this sentence says why; nothing ran.
    Refused {
        /// The declaration's reason.
        message: String,
    },
    /// Held for the person's confirmation; nothing ran.
    Held {
        /// The plain sentence for the caller, starting with "NOT EXECUTED".
        message: String,
        /// The record that holds it.
        confirmation: Box<Confirmation>,
    },
}

/// The one admission rule every surface goes through, for a call of `tool` (named `name`)
/// with validated `args`: the capability's declaration decides (run, hold with a description,
/// or refuse), then [`check`] holds, passes, or opens a confirmation on `surface`'s terms. The
/// chat and MCP (through [`run`]) and the web forms call this and nothing else before running
/// a capability, so a rule added here holds for all three.
pub async fn admit(
    tool: &ToolDef,
    ctx: &Ctx,
    surface: &Surface,
    name: &str,
    args: &Value,
) -> Result<Admission, StoreError> {
    let description = match tool.decide(ctx, args).await {
        Decision::Run => None,
        Decision::Hold { description } => Some(description),
        Decision::Refuse { message } => return Ok(Admission::Refused { message }),
    };
    let decision = check(
        ctx.table().as_ref(),
        ctx.user(),
        surface,
        ctx.now_millis(),
        name,
        args,
        description,
    )
    .await?;
    Ok(match decision {
        GateDecision::Pass => Admission::Run {
            ctx: Box::new(ctx.clone()),
            consume: None,
        },
        GateDecision::Confirmed { consume } => Admission::Run {
            ctx: Box::new(ctx.clone().with_confirmation(consume.clone())),
            consume: Some(consume),
        },
        GateDecision::Held {
            message,
            confirmation,
        } => {
            tracing::info!(
                user = %ctx.user(),
                tool = name,
                surface = ?surface.kind(),
                confirmation = %confirmation.id,
                "call held for confirmation"
            );
            Admission::Held {
                message,
                confirmation,
            }
        }
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

/// The person's live MCP requests (pending, approved or declined), newest first: what the
/// Approvals page lists.
pub async fn list_requests(
    table: &dyn Table,
    user: &UserId,
    now_ms: i64,
) -> Result<Vec<Confirmation>, StoreError> {
    let query = Query::prefix(keys::user_pk(user), keys::CONFIRM_SK_PREFIX);
    let items = table.query_all(&query, PENDING_APPROVALS_MAX).await?;
    let mut out: Vec<Confirmation> = items
        .iter()
        .filter_map(|i| i.parse::<Confirmation>().ok())
        .filter(|c| {
            c.surface == SurfaceKind::Mcp && c.is_live(now_ms) && c.state != ConfirmState::Spent
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.created_ms));
    Ok(out)
}

/// The person `user` approves their pending MCP request `id`: the client's next identical call
/// runs once. Call it only from a surface where the person (not a client or a model) acts: the
/// web UI's Approvals page, a button in their linked chat, or an in-protocol elicitation answer
/// whose sealed request state the surface has verified (HMAC bound to this user, this id and its
/// expiry) — the seal proves the person answered, this call records it.
pub async fn approve(
    table: &dyn Table,
    user: &UserId,
    id: &str,
    now_ms: i64,
) -> Result<Confirmation, ApprovalError> {
    settle(table, user, id, now_ms, ConfirmState::Approved).await
}

/// The person `user` declines their pending MCP request `id`: identical calls are refused until
/// it lapses. Same callers as [`approve`].
pub async fn decline(
    table: &dyn Table,
    user: &UserId,
    id: &str,
    now_ms: i64,
) -> Result<Confirmation, ApprovalError> {
    settle(table, user, id, now_ms, ConfirmState::Declined).await
}

/// The person `user` approves the one request `id` filed at `created_ms` — the request they
/// were shown, not a later one for the same call. For surfaces that hand the person a
/// specific request (an in-protocol elicitation whose sealed state names it, a button in
/// their linked chat): a replayed answer to a request that ran, lapsed or was filed anew finds
/// no such request ([`ApprovalError::Gone`]) or a used one, and approves nothing.
pub async fn approve_request(
    table: &dyn Table,
    user: &UserId,
    id: &str,
    created_ms: i64,
    now_ms: i64,
) -> Result<Confirmation, ApprovalError> {
    settle_filed(
        table,
        user,
        id,
        Some(created_ms),
        now_ms,
        ConfirmState::Approved,
    )
    .await
}

/// The person `user` declines the one request `id` filed at `created_ms` (see
/// [`approve_request`]).
pub async fn decline_request(
    table: &dyn Table,
    user: &UserId,
    id: &str,
    created_ms: i64,
    now_ms: i64,
) -> Result<Confirmation, ApprovalError> {
    settle_filed(
        table,
        user,
        id,
        Some(created_ms),
        now_ms,
        ConfirmState::Declined,
    )
    .await
}

/// The live MCP request `id` of `user` as it stands (any state), or `None` when there is no
/// such record or its hour is over.
pub async fn get_request(
    table: &dyn Table,
    user: &UserId,
    id: &str,
    now_ms: i64,
) -> Result<Option<Confirmation>, StoreError> {
    if !is_record_id(id) {
        return Ok(None);
    }
    let Some(item) = table
        .get(&keys::user_pk(user), &keys::confirm_sk(id))
        .await?
    else {
        return Ok(None);
    };
    let c: Confirmation = item
        .parse()
        .map_err(|e| StoreError::Backend(format!("corrupt confirmation {id}: {e}")))?;
    Ok(Some(c).filter(|c| c.is_live(now_ms) && c.surface == SurfaceKind::Mcp))
}

fn is_record_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

async fn settle(
    table: &dyn Table,
    user: &UserId,
    id: &str,
    now_ms: i64,
    to: ConfirmState,
) -> Result<Confirmation, ApprovalError> {
    settle_filed(table, user, id, None, now_ms, to).await
}

async fn settle_filed(
    table: &dyn Table,
    user: &UserId,
    id: &str,
    created_ms: Option<i64>,
    now_ms: i64,
    to: ConfirmState,
) -> Result<Confirmation, ApprovalError> {
    if !is_record_id(id) {
        return Err(ApprovalError::Gone);
    }
    let pk = keys::user_pk(user);
    let sk = keys::confirm_sk(id);
    let Some(item) = table.get(&pk, &sk).await? else {
        return Err(ApprovalError::Gone);
    };
    let c: Confirmation = item
        .parse()
        .map_err(|e| StoreError::Backend(format!("corrupt confirmation {sk}: {e}")))?;
    // A lapsed request, or (when the caller names one) a later request for the same call.
    if !c.is_live(now_ms) || created_ms.is_some_and(|t| t != c.created_ms) {
        return Err(ApprovalError::Gone);
    }
    if c.surface != SurfaceKind::Mcp {
        return Err(ApprovalError::WrongSurface);
    }
    match c.state {
        ConfirmState::Pending => {}
        ConfirmState::Approved if to == ConfirmState::Approved => return Ok(c),
        ConfirmState::Declined if to == ConfirmState::Declined => return Ok(c),
        ConfirmState::Approved => return Err(ApprovalError::AlreadyDecided("approved")),
        ConfirmState::Declined => return Err(ApprovalError::AlreadyDecided("declined")),
        ConfirmState::Spent => return Err(ApprovalError::AlreadyDecided("used")),
    }
    let next = Confirmation {
        state: to,
        decided_ms: Some(now_ms),
        ..c.clone()
    };
    let put = Item::from_value(&pk, &sk, &next)
        .map_err(|e| StoreError::Backend(e.to_string()))?
        .with_version(item.version + 1)
        .with_ttl(expiry_secs(c.created_ms));
    match table
        .write(vec![WriteOp::put_if_version(put, item.version)])
        .await
    {
        Ok(()) => Ok(next),
        // Someone (a second tab, a double click) settled it first: report what stands.
        Err(StoreError::ConditionFailed { .. }) => Err(ApprovalError::AlreadyDecided("handled")),
        Err(e) => Err(e.into()),
    }
}

fn expiry_secs(created_ms: i64) -> i64 {
    created_ms.div_euclid(1000) + CONFIRMATION_TTL_SECS
}

fn service_to_store(e: ServiceError) -> StoreError {
    match e {
        ServiceError::Store(s) => s,
        other => StoreError::Backend(other.to_string()),
    }
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

    #[test]
    fn a_confirmation_is_bound_to_its_surface() {
        let args = json!({"event_id": "e1"});
        let web = confirmation_id(&Surface::Web { confirmed: false }, "cancel_event", &args);
        let mcp = confirmation_id(
            &Surface::Mcp {
                token: None,
                client: "x".into(),
            },
            "cancel_event",
            &args,
        );
        assert_ne!(web, mcp);
        assert_eq!(
            web,
            confirmation_id(&Surface::Web { confirmed: true }, "cancel_event", &args),
            "the confirming re-post finds the record its first post filed"
        );
    }
}
