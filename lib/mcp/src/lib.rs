//! `POST /mcp`: the tool registry over MCP Streamable HTTP, for external AI clients.
//!
//! Stateless: no session, no server-initiated stream; every request is answered on its own
//! with a JSON body, so any Lambda instance can serve any request. Built on the official Rust
//! SDK (`rmcp`), which serves both protocol generations on one endpoint: clients that start with
//! `initialize` (2025-11-25 and older) and clients of the stateless 2026-07-28 protocol, which
//! send their version and capabilities in each request's `_meta` (and `server/discover`).
//!
//! Each request passes, in order:
//! 1. [`hosts`]: `Host`/`Origin` on the allow-list, else 403 (DNS-rebinding protection);
//! 2. [`auth`]: a live bearer token, else 401 with `WWW-Authenticate: Bearer`;
//! 3. [`rate_limit`]: the token's budget, else 429 with `Retry-After`;
//! 4. [`server`]: the MCP handler, which runs each tool through the harness gate and
//!    [`Registry::call`] as `Actor::Mcp` for the token's user with a fresh action id — so the
//!    tenant gate, paused accounts, audit and undo hold exactly as for the chat agent; a held
//!    call is confirmed in-protocol ([`elicitation`]) or out of band.
//!
//! [`needs`] lists what the MCP function needs to start (checked at init).
//!
//! How to connect a client is in `README.md` beside this file.

mod auth;
mod config;
mod elicitation;
#[cfg(feature = "conformance")]
mod fixtures;
mod hosts;
pub mod needs;
mod rate_limit;
mod reply;
mod server;

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use steward_harness::Registry;
use steward_store::{Clock, Table};

pub use auth::{Caller, RateKey};
pub use config::{
    ENV_MCP_ALLOWED_HOSTS, ENV_MCP_CALLS_PER_MINUTE, ENV_MCP_CONFORMANCE_FIXTURES,
    ENV_MCP_INSECURE_DEV_USER, LOOPBACK_HOSTS, MCP_CALLS_PER_MINUTE_DEFAULT, McpConfig,
    McpConfigError,
};
pub use elicitation::{ENV_MCP_STATE_KEY, StateKey, StateKeyError};
pub use reply::HTTP_REFUSAL_CODE;
pub use server::{SERVER_NAME, TOOLS_LIST_TTL_MS, ToolServer};
pub use steward_edge::hosts::HostPattern;

/// Where the endpoint is mounted (defined in `steward-edge`, so pages can link to it).
pub use steward_edge::paths::MCP_PATH;

/// Largest request body accepted, in bytes: a tool call's arguments are small; this bounds
/// what one request can make the server buffer and parse.
pub const MCP_BODY_BYTES_MAX: usize = 1024 * 1024;

/// What the HTTP layers share.
#[derive(Debug)]
struct Shared {
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    config: McpConfig,
    limiter: steward_edge::rate_limit::RateLimiter<auth::RateKey>,
}

/// The `/mcp` route serving `registry`'s tools on `table`, configured by `config`. Merge it
/// into the app (`axum::serve` locally, `lambda_http::run` on Lambda).
pub fn routes<S>(
    registry: Arc<Registry>,
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    config: McpConfig,
) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let handler = ToolServer::new(registry, Arc::clone(&table), Arc::clone(&clock), &config);
    let transport = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MCP_BODY_BYTES_MAX)
        // The `hosts` guard checks Host and Origin (with `*.domain` patterns) before
        // authentication; rmcp's own loopback-only default would refuse the API Gateway domain.
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        transport,
    );
    let shared = Arc::new(Shared {
        limiter: steward_edge::rate_limit::RateLimiter::new(config.calls_per_minute()),
        table,
        clock,
        config,
    });
    // Layers run outermost first: hosts, then auth, then the rate limit.
    Router::new()
        .route_service(MCP_PATH, service)
        .route_layer(from_fn_with_state(Arc::clone(&shared), rate_limit::limit))
        .route_layer(from_fn_with_state(Arc::clone(&shared), auth::authenticate))
        .route_layer(from_fn_with_state(shared, hosts::guard))
}
