//! Cross-module tests of the channel layer: provider fixtures in the documented shapes,
//! signed in the test; the senders against a fake provider API on loopback; property tests
//! that nothing from outside can panic the parsers or verifiers; the media fetchers against
//! a fake Graph API and Bot API that serve files and inject failures.

#![allow(clippy::unwrap_used, missing_docs)]

mod fuzz;
mod media_fetch_telegram;
mod media_fetch_whatsapp;
mod resume;
mod telegram_inbound;
mod telegram_send;
mod typing;
mod whatsapp_inbound;
mod whatsapp_send;

/// A fixture file's bytes, from `tests/fixtures/<path>`.
pub fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}
