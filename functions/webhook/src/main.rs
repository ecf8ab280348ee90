//! The webhook Lambda: verifies WhatsApp and Telegram webhooks, enqueues each message to the
//! SQS FIFO turn queue, answers 200 — no database, no model (see `steward_webhook`).
//!
//! Environment: `STEWARD_QUEUE_URL`; the secrets `WHATSAPP_APP_SECRET`,
//! `WHATSAPP_VERIFY_TOKEN`, `TELEGRAM_WEBHOOK_SECRET` (or their `*_PARAM` SSM names). Behind
//! an API Gateway REST API stage, set `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH=true` so routes
//! see `/webhooks/...` without the stage prefix.
//!
//! Before serving, the settings are checked (`steward_webhook::WEBHOOK_NEEDS`); a missing or
//! half-given one stops the start with one sentence naming it, exit status 78.

use std::sync::Arc;

use anyhow::Context;
use steward_edge::config::{self, ConfigError, ENV_QUEUE_URL, Settings};
use steward_edge::health;
use steward_edge::request_log;
use steward_edge::startup::or_refuse;
use steward_edge::telemetry::FlushAfter;
use steward_store::SqsQueue;
use steward_webhook::{self as webhooks, WEBHOOK_SECRETS, check_webhook_config};

/// This function's name in its refusal to start.
const FUNCTION: &str = "webhook";

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
    let settings = or_refuse(FUNCTION, Settings::load(&sdk, &WEBHOOK_SECRETS).await);
    or_refuse(FUNCTION, check_webhook_config(&settings));
    let queue = SqsQueue::new(
        aws_sdk_sqs::Client::new(&sdk),
        or_refuse(FUNCTION, settings.require(ENV_QUEUE_URL)),
    );
    let state = or_refuse(
        FUNCTION,
        webhooks::webhook_state(&settings, Arc::new(queue)),
    );
    let app = webhooks::routes(state).merge(health::routes());
    // Each request's span is the root of its message's trace (exported only when tracing is on).
    lambda_http::run(FlushAfter::new(app.layer(request_log::layer()), telemetry))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("the Lambda runtime stopped")
}
