//! The spine in one process — webhook → in-process queue → worker → fake provider API — and the
//! agent function's SQS batches.

#![allow(clippy::unwrap_used, missing_docs)]

mod agent_batch;
mod approval_chat;
mod dead_letter;
mod end_to_end;
mod support;
