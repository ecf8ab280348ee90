//! The seams a domain plugs into besides its tools: the risk policy the confirmation gate asks
//! and the per-turn context block. The harness defines them; a domain crate implements them.

use async_trait::async_trait;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::ServiceError;
use crate::ids::ChannelName;

/// Decides whether a tool call needs the user's confirmation first.
#[async_trait]
pub trait RiskPolicy: Send + Sync {
    /// `Some(description)` when the call is risky, where the description is built from the
    /// database (e.g. `Cancel "Spring fair" (14 registrations)`), never from the model's
    /// words; `None` when it may run at once. `args` are the validated, cleaned arguments.
    async fn describe_risk(
        &self,
        ctx: &Ctx,
        tool: &str,
        args: &Value,
    ) -> Result<Option<String>, ServiceError>;
}

/// A policy under which nothing is risky (tests, domains without destructive tools).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRisk;

#[async_trait]
impl RiskPolicy for NoRisk {
    async fn describe_risk(
        &self,
        _ctx: &Ctx,
        _tool: &str,
        _args: &Value,
    ) -> Result<Option<String>, ServiceError> {
        Ok(None)
    }
}

/// Produces the body of the per-turn `<context>` block: the facts that change from turn to
/// turn (current time in the user's zone, their name and channel, their records, the record
/// the conversation is about), so the frozen prompt prefix never has to.
#[async_trait]
pub trait ContextSource: Send + Sync {
    /// The context text for one turn of `ctx`'s user on `channel`; `active_record` is the id
    /// of the record the conversation is currently about, if any.
    async fn context(
        &self,
        ctx: &Ctx,
        channel: &ChannelName,
        active_record: Option<&str>,
    ) -> Result<String, ServiceError>;
}
