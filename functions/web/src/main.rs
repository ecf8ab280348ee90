//! The web Lambda: the signed-in web UI, the web chat API and the public event pages (see
//! `steward_webapp`). Web chat messages are enqueued to the SQS FIFO turn queue like any
//! channel's; the agent Lambda answers them.
//!
//! Environment: `STEWARD_TABLE`, `STEWARD_QUEUE_URL`, `STEWARD_PUBLIC_URL`, the OpenID Connect
//! issuer and client (`STEWARD_OIDC_ISSUER`, `STEWARD_OIDC_CLIENT_ID`, optionally
//! `STEWARD_OIDC_CLIENT_SECRET` or `STEWARD_OIDC_CLIENT_SECRET_PARAM`), optionally
//! `STEWARD_WHATSAPP_NUMBER` and `STEWARD_TELEGRAM_BOT` for the linking page's links. The
//! development sign-in by name never exists here.
//!
//! `STEWARD_RETENTION_DAYS` (default 400) is how long the rows it writes are kept.
//! Before serving, the settings are checked (`steward_webapp::needs::WEB_NEEDS`); a missing or
//! unusable one stops the start with one sentence naming it, exit status 78.

use std::sync::Arc;

use anyhow::Context;
use steward_edge::config::ConfigError;
use steward_edge::config::{self, ENV_QUEUE_URL, ENV_TABLE, Settings};
use steward_edge::request_log;
use steward_edge::startup::or_refuse;
use steward_edge::telemetry::FlushAfter;
use steward_harness::retention::{self, ENV_RETENTION_DAYS};
use steward_store::{DynamoTable, SqsQueue, SystemClock};
use steward_webapp::config as web;
use steward_webapp::needs::check_web_config;
use steward_webapp::{WebState, app};

/// This function's name in its refusal to start.
const FUNCTION: &str = "web";

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
    let settings = or_refuse(FUNCTION, Settings::load(&sdk, &web::WEB_SECRETS).await);
    or_refuse(FUNCTION, check_web_config(&settings));
    or_refuse(
        FUNCTION,
        retention::install_setting(settings.get(ENV_RETENTION_DAYS).as_deref())
            .map_err(ConfigError::unusable),
    );
    let table = DynamoTable::new(
        aws_sdk_dynamodb::Client::new(&sdk),
        or_refuse(FUNCTION, settings.require(ENV_TABLE)),
    );
    let queue = SqsQueue::new(
        aws_sdk_sqs::Client::new(&sdk),
        or_refuse(FUNCTION, settings.require(ENV_QUEUE_URL)),
    );
    let web_config = or_refuse(FUNCTION, web::deployed_config(&settings));
    let state = WebState::new(
        Arc::new(table),
        Arc::new(SystemClock),
        Arc::new(queue),
        web_config,
    );
    lambda_http::run(FlushAfter::new(
        app::routes(state).layer(request_log::layer()),
        telemetry,
    ))
    .await
    .map_err(|e| anyhow::anyhow!("{e}"))
    .context("the Lambda runtime stopped")
}
