//! The MCP Lambda: the events tool registry over MCP Streamable HTTP at `/mcp` — stateless,
//! JSON responses, bearer tokens (see `steward_mcp`).
//!
//! Environment: `STEWARD_TABLE`, `STEWARD_MCP_ALLOWED_HOSTS` (the API Gateway or custom
//! domain, e.g. `*.execute-api.eu-west-1.amazonaws.com`), optionally
//! `STEWARD_MCP_CALLS_PER_MINUTE` and `STEWARD_PUBLIC_URL`. Behind an API Gateway stage other
//! than `$default`, set `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH=true` (read by `lambda_http` on
//! each request) so the route sees `/mcp` without the stage prefix. `STEWARD_QUEUE_URL` (the
//! turn queue) carries held calls' notices to the agent, which sends them to the person's
//! linked chats; the secret `STEWARD_MCP_STATE_KEY` (`_PARAM`: an SSM SecureString) seals
//! in-protocol confirmation states. The test-only `STEWARD_MCP_INSECURE_DEV_USER` is never
//! read here.
//!
//! `STEWARD_RETENTION_DAYS` (default 400) is how long the rows it writes are kept.
//! Before serving, the settings are checked (`steward_mcp::needs::MCP_NEEDS`); a missing or
//! unusable one stops the start with one sentence naming it, exit status 78.

use std::sync::Arc;

use anyhow::Context;
use steward_edge::config::ConfigError;
use steward_edge::config::{self, ENV_PUBLIC_URL, ENV_QUEUE_URL, ENV_TABLE, Settings};
use steward_edge::request_log;
use steward_edge::startup::or_refuse;
use steward_edge::telemetry::FlushAfter;
use steward_events::EventsConfig;
use steward_harness::retention::{self, ENV_RETENTION_DAYS};
use steward_mcp::needs::check_mcp_config;
use steward_mcp::{self as mcp, ENV_MCP_STATE_KEY, McpConfig};

/// This function's name in its refusal to start.
const FUNCTION: &str = "mcp";
use steward_store::{DynamoTable, SqsQueue, SystemClock};

fn main() -> anyhow::Result<()> {
    // One runtime thread unless STEWARD_WORKER_THREADS says otherwise (`steward_edge::runtime`).
    or_refuse(FUNCTION, steward_edge::runtime::build()).block_on(serve())
}

async fn serve() -> anyhow::Result<()> {
    // Log lines, and span export when an OTLP endpoint is set (flushed before each
    // invocation returns).
    let telemetry = or_refuse(FUNCTION, config::init_tracing(FUNCTION));
    // The region, credentials and endpoint Lambda gives the function, and explicit timeouts on
    // every AWS call (`steward_store::aws`).
    let sdk = or_refuse(
        FUNCTION,
        steward_store::aws::lambda_sdk_config().map_err(ConfigError::unusable),
    );
    let settings = or_refuse(FUNCTION, Settings::load(&sdk, &[ENV_MCP_STATE_KEY]).await);
    or_refuse(FUNCTION, check_mcp_config(&settings));
    or_refuse(
        FUNCTION,
        retention::install_setting(settings.get(ENV_RETENTION_DAYS).as_deref())
            .map_err(ConfigError::unusable),
    );
    let mut mcp_config = or_refuse(
        FUNCTION,
        McpConfig::from_lookup(settings.lookup()).map_err(|e| ConfigError::Unusable(e.to_string())),
    );
    match settings.get(ENV_QUEUE_URL) {
        Some(url) => {
            let queue = SqsQueue::new(aws_sdk_sqs::Client::new(&sdk), url);
            mcp_config = mcp_config.with_notices(Arc::new(queue));
        }
        None => tracing::warn!(
            "{ENV_QUEUE_URL} is not set: held MCP calls are not announced in linked chats"
        ),
    }
    let table = DynamoTable::new(
        aws_sdk_dynamodb::Client::new(&sdk),
        or_refuse(FUNCTION, settings.require(ENV_TABLE)),
    );
    let events =
        EventsConfig::with_public_base_url(settings.get(ENV_PUBLIC_URL).unwrap_or_default());
    let registry = Arc::new(steward_events::registry(&events));
    let app = mcp::routes(registry, Arc::new(table), Arc::new(SystemClock), mcp_config);
    lambda_http::run(FlushAfter::new(app.layer(request_log::layer()), telemetry))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("the Lambda runtime stopped")
}
