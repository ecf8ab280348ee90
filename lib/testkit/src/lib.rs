//! `steward-testkit`: test support several crates' tests share, kept once. A dev-dependency
//! only (the layering check refuses it as a normal dependency).
//!
//! * [`fake_api`]: a fake provider API on 127.0.0.1 that records every request and answers
//!   from a script (the channels' senders, the worker's spine).
//! * [`fake_media`]: a fake WhatsApp and Telegram media API serving files and injecting
//!   failures; [`media`]: tiny media files built in code.
//! * [`webhooks`]: provider webhook payloads and the test secrets that sign them.
//! * [`queue`]: a turn queue that records what routes enqueue.
//! * [`samples`]: the sample Lambda events of `events/`.
//! * [`startup`]: a function binary started with only the settings a test names.

pub mod fake_api;
pub mod fake_media;
pub mod media;
pub mod queue;
pub mod samples;
pub mod startup;
pub mod webhooks;
