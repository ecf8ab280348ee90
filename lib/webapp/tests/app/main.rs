//! The web app's routes over `tower::ServiceExt::oneshot` on an in-memory store: sign-in,
//! CSRF, the UI pages, the chat API and the public pages. One file per area.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

mod account;
mod approvals;
mod auth;
mod chat;
mod events_ui;
mod forms_gate;
mod oidc;
mod public;
mod turns;
mod usage;
