//! The seam a domain plugs into besides its tools (whose definitions carry their own
//! confirmation declarations): the per-turn context block. The harness defines it; a domain
//! crate implements it.

use async_trait::async_trait;

use crate::ctx::Ctx;
use crate::error::ServiceError;
use crate::ids::ChannelName;
use crate::profile::Profile;

/// Produces the body of the per-turn `<context>` block: the facts that change from turn to
/// turn (current time in the user's zone, their name and channel, their records, the record
/// the conversation is about), so the frozen prompt prefix never has to.
#[async_trait]
pub trait ContextSource: Send + Sync {
    /// The context text for one turn of `ctx`'s user on `channel`; `active_record` is the id
    /// of the record the conversation is currently about, if any. `account` is the user's
    /// account as the turn read it at its start (a source that needs it reads it only when
    /// `None`).
    async fn context(
        &self,
        ctx: &Ctx,
        account: Option<&Profile>,
        channel: &ChannelName,
        active_record: Option<&str>,
    ) -> Result<String, ServiceError>;
}
