//! `steward-testkit`: test support several crates' tests share, kept once. A dev-dependency
//! only (the layering check refuses it as a normal dependency).
//!
//! * [`fake_api`]: a fake provider API on 127.0.0.1 that records every request and answers
//!   from a script (the channels' senders, the worker's spine).
//! * [`webhooks`]: provider webhook payloads and the test secrets that sign them.

pub mod fake_api;
pub mod webhooks;
