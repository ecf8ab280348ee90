//! Steward's HTTP surface: axum routers shared by the Lambda functions (`lambda_http::run`)
//! and the local server (`axum::serve`). Each feature is a small module with its own state and
//! `routes()`; the binaries compose what they serve.

pub mod agent_batch;
pub mod config;
pub mod health;
pub mod mcp;
pub mod secrets;
pub mod webhooks;
