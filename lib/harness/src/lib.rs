//! The reusable agent harness. It never names anything of the domain: a domain plugs in
//! through the tool [`Registry`] (each [`ToolDef`] declares which calls the confirmation
//! [`gate`] holds) and a [`ContextSource`].
//!
//! Modules, each named after what it owns:
//! * [`ids`]: identifier newtypes that check their text ([`UserId`], [`ActionId`],
//!   [`LinkCode`], …).
//! * [`keys`]: every key the harness owns, and [`RecordKey`] for the domain's.
//! * [`ctx`]: [`Ctx`], who acts, as what, under which action id.
//! * [`error`]: [`ServiceError`], expected failures with readable messages.
//! * [`audit`]: [`Audited`], the one audited transaction every mutation uses.
//! * [`effect`]: stored results of tool calls, so a call never acts twice.
//! * [`undo`]: revert the newest undoable request as a whole, last in first out.
//! * [`profile`]: the account record and the "may this account write" check under every commit.
//! * [`accounts`], [`identity`], [`linking`], [`tokens`]: account operations, channel
//!   identities, one-time linking codes, MCP access tokens.
//! * [`tool`], [`outcome`], [`registry`]: [`ToolDef`], [`ToolOutcome`], [`Registry`];
//!   [`arg_schema`]: a tool's input schema compiled once and every call's arguments held to it.
//! * [`domain`]: the traits a domain implements.
//! * [`conversation`]: the conversation record and the claim that starts every turn.
//! * [`transcript`]: the two transcripts (what the model saw, what the person saw).
//! * [`prompt`]: the frozen prefix (system prompt + tool list) and [`PROMPT_VERSION`].
//! * [`turn`]: the [`Agent`] and its turn loop; [`gate`]: the confirmation gate;
//!   [`compaction`]: new segments instead of edits; [`chat_tools`]: conversation-only tools;
//!   [`shaping`]: replies fitted to the channel; [`usage`]: token accounting;
//!   [`attachments`]: photos and PDFs fetched, kept in the blob store and resolved for the model.
//! * [`inbound`]: the conversation layer before the model ([`handle_inbound`]); [`outbox`]:
//!   [`ChannelOutbox`], a turn's replies over a channel sender.
//! * [`display_text`]: invisible formatting characters refused in text others see;
//!   [`link_attempts`]: wrong linking codes counted per sender and overall.
//! * [`untrusted`]: [`Untrusted`], text strangers typed, fenced and escaped for the model.
//! * [`sent_parts`]: the delivered parts of a reply, so a retried send never repeats them.
//! * [`metrics`]: metric log lines for the failures that do not fail an invocation.
//! * [`limits`]: every limit, named with its unit; [`retention`]: how long transcripts,
//!   audit rows and usage are kept (`STEWARD_RETENTION_DAYS`).

pub mod accounts;
pub mod approval_chat;
pub mod arg_schema;
pub mod attachments;
pub mod audit;
pub mod budget;
pub mod chat_tools;
pub mod compaction;
pub mod conversation;
pub mod ctx;
pub mod dead_letter;
pub mod display_text;
pub mod domain;
pub mod effect;
pub mod error;
pub mod gate;
pub mod history_cache;
pub mod identity;
pub mod ids;
pub mod inbound;
pub mod inspection;
pub mod keys;
pub mod limits;
pub mod link_attempts;
pub mod linking;
pub mod metrics;
pub mod outbox;
pub mod outcome;
pub mod profile;
pub mod prompt;
pub mod registry;
pub mod retention;
pub mod sent_parts;
pub mod shaping;
pub mod telemetry;
pub mod tokens;
pub mod tool;
pub mod transcript;
pub mod turn;
pub mod undo;
pub mod untrusted;
pub mod usage;

pub use accounts::{AccountStatus, Profile, TimeZoneName};
pub use attachments::{Attachment, MediaPorts};
pub use audit::{Audited, audited};
pub use ctx::{Actor, Ctx};
pub use domain::ContextSource;
pub use error::ServiceError;
pub use gate::{GateOutcome, Surface};
pub use ids::{
    ActionId, ChannelIdentity, ChannelName, CommitId, ConversationKey, EffectKey, ExternalId,
    LinkCode, TokenId, ToolUseId, UserId,
};
pub use inbound::{InboundOutcome, Links, handle_inbound};
pub use keys::RecordKey;
pub use limits::TOOL_RESULT_CHARS_MAX;
pub use outbox::ChannelOutbox;
pub use outcome::{ToolError, ToolErrorKind, ToolOutcome};
pub use prompt::{FrozenPrefix, PROMPT_VERSION};
pub use registry::{McpTool, ModelTool, Registry, UnknownTool};
pub use shaping::{ShapedReply, shape_reply};
pub use tool::{ConfirmKind, Decision, ToolDef, ToolDefError, ToolResult, UndecidedTool};
pub use turn::{
    Agent, Domain, ModelSettings, Outbox, TurnError, TurnInput, TurnLimits, TurnOutcome,
};
pub use undo::{UndoSummary, prepare_undo, undo_last};
pub use untrusted::Untrusted;
