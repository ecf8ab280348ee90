//! Steward's HTTP surface: axum routers shared by the Lambda functions (`lambda_http::run`)
//! and the local server (`axum::serve`). Each feature is a small module with its own state and
//! `routes()`; the binaries compose what they serve.
//!
//! * [`app`]: the web app (UI, chat API, public pages) over [`app::WebState`];
//!   [`auth`]: sign-in, sessions, CSRF; [`ui`]: the signed-in pages; [`chat_api`]: the web chat
//!   API; [`public`]: the public event pages; [`security`]: response headers;
//!   [`rate_limit`]: per-caller budgets; [`hosts`]: the Host/Origin allow-list.
//! * [`webhooks`]: WhatsApp and Telegram; [`mcp`]: the MCP server; [`health`]: `/healthz`.
//! * [`agent_batch`]: the turn worker; [`config`], [`secrets`]: settings and wiring;
//!   [`request_log`]: request tracing without query strings.

pub mod agent_batch;
pub mod app;
pub mod auth;
pub mod chat_api;
pub mod config;
pub mod health;
pub mod hosts;
pub mod mcp;
pub mod public;
pub mod rate_limit;
pub mod request_log;
pub mod secrets;
pub mod security;
pub mod ui;
pub mod webhooks;
