//! Cross-module tests of the events domain: service functions, tools, tenant isolation, undo,
//! effects, paused accounts, the confirmation declarations, the context block, the tool lists,
//! and chat turns over the domain with a scripted model. Storage
//! tests run on SQLite always and on DynamoDB when the emulator is configured.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

mod attendees;
mod context;
mod effects;
mod events;
mod gate_matrix;
mod holds;
mod isolation;
mod paused;
mod public;
mod rooms_sessions;
mod schedule;
mod tool_lists;
mod turns;
mod undo;
