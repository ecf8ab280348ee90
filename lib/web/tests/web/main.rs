//! `steward-web` integration tests: the webhook routes, the whole spine end to end in one
//! process, and the agent function's SQS batches.

#![allow(clippy::unwrap_used, missing_docs)]

mod agent_batch;
mod approval_chat;
mod end_to_end;
mod fake_api;
mod routes;
mod support;
