//! The state of one turn's walk through the model loop. Its methods live beside the step they
//! run (`model_run`, `memo`, `tool_round`); the struct sits in this leaf so those modules depend
//! on it and not on each other in a circle.

use std::sync::Arc;

use steward_llm::LlmClient;

use super::{Agent, TurnInput};
use crate::attachments::Attachment;
use crate::conversation::Conversation;
use crate::ids::ActionId;
use crate::transcript::{PendingRow, PlacedRow, ReadRow};

/// One turn's walk through the model loop.
pub(super) struct ModelRun<'a> {
    pub(super) agent: &'a Agent,
    pub(super) model: Arc<dyn LlmClient>,
    pub(super) input: &'a TurnInput,
    pub(super) outbox: &'a dyn super::Outbox,
    pub(super) turn: u64,
    pub(super) conv: Conversation,
    /// The turn's request id: every tool call of the turn is one undo unit.
    pub(super) action: ActionId,
    /// The account as read at the start of the turn (for the context block), if there is one.
    pub(super) account: Option<crate::profile::Profile>,
    /// The user's monthly budget (their own limits in place of the default).
    pub(super) budget: crate::budget::Budget,
    /// Rows sent to the model so far, in order.
    pub(super) history: Vec<PlacedRow>,
    /// Rows of this turn after the user row, from an earlier attempt, by step.
    pub(super) this_turn: Vec<PlacedRow>,
    /// The person's row while it waits to be stored with the turn's first response (one
    /// commit for both); `None` once stored, or when an earlier attempt stored it.
    pub(super) pending_user: Option<PendingRow>,
    /// The rows this attempt stored (or found stored by a racing copy), in order, for the
    /// history cache once the walk is done.
    pub(super) written: Vec<ReadRow>,
    /// Whether this attempt already compacted because the model said the prompt was too
    /// long: it retries once, never again.
    pub(super) compacted_for_length: bool,
    /// The message's photo or file to fetch before the user row is written, if any.
    pub(super) attachment: Option<&'a Attachment>,
    /// The line put before the reply when the attachment could not be read (the caption went
    /// on without it).
    pub(super) media_notice: Option<&'static str>,
    /// The turn's counts, read once at its end ([`crate::metrics`]).
    pub(super) tally: &'a crate::metrics::TurnTally,
}
