//! `steward-edge`: what every HTTP surface of Steward shares where requests come in, and nothing
//! that knows about conversations, tools, models or storage adapters.
//!
//! * [`config`]: [`config::Settings`] (the environment with its SSM secrets resolved, see
//!   [`secrets`]), [`config::ConfigError`] and [`config::init_tracing`];
//!   [`request_log`]: request spans without query strings; [`startup`]: each function's list
//!   of needed settings, checked at init, and the one-sentence refusal to start.
//! * [`security`]: the security headers on every response; [`hosts`]: the one Host/Origin
//!   allow-list (the web app and `/mcp`) and the "straight from loopback" test.
//! * [`rate_limit`]: token buckets per caller; [`client_address`]: where a request came from.
//! * [`health`]: `GET /healthz`; [`paths`]: paths one surface links to on another.
//! * [`telemetry`]: the one tracing set-up (log lines, and OpenTelemetry export when an OTLP
//!   endpoint is set), the flush before a Lambda invocation returns, and the W3C trace context
//!   a queued message carries.
//! * [`inbound`]: the one encoding of an inbound message on the turn queue (webhooks and the
//!   web chat API enqueue with it, the worker reads it).
//!
//! Architecture invariant: this crate links no database adapter, no model client, no HTML
//! templating and no MCP library; the webhook function is built from it and the channels alone.

pub mod client_address;
pub mod config;
pub mod health;
pub mod hosts;
pub mod inbound;
pub mod paths;
pub mod rate_limit;
pub mod request_log;
pub mod runtime;
pub mod secrets;
pub mod security;
pub mod startup;
pub mod telemetry;
