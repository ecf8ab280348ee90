//! `steward-worker`: the queue consumer. It takes inbound messages off the turn queue and runs
//! each through the harness's conversation layer and turn, then sends the reply.
//!
//! * [`agent_batch`]: SQS FIFO batches (the agent Lambda) — one group at a time and in order,
//!   `batchItemFailures`, retries within the delivery, the visibility heartbeat — and
//!   [`agent_batch::TurnWorker`], which is also the in-process queue's handler (`steward serve`).
//! * [`model`]: the model client from settings (the only crate that builds one).
//! * [`needs`]: what the agent function needs to start, checked at init.
//! * [`wiring`]: the senders, the links and the turn worker over a domain the caller wires.
//!
//! Architecture invariant: the worker never builds the domain; the binary passes
//! `steward_events::domain(..)` in, so the worker knows the harness and not the events.

pub mod agent_batch;
pub mod model;
pub mod needs;
pub mod wiring;
