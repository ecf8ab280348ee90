//! The agent Lambda: consumes SQS FIFO batches of inbound messages, one conversation at a time
//! and in order, and runs each turn with the events domain (see `steward_worker::agent_batch`).
//!
//! Environment: `STEWARD_TABLE`, `STEWARD_QUEUE_URL` (the turn queue, whose records' visibility
//! the agent keeps and shortens on failure), `STEWARD_PUBLIC_URL`, the model (`STEWARD_MODEL_PROVIDER`,
//! `STEWARD_MODEL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`) and the senders
//! (`WHATSAPP_ACCESS_TOKEN`, `WHATSAPP_PHONE_NUMBER_ID`, `TELEGRAM_BOT_TOKEN`, …); secrets may be
//! given as `*_PARAM` SSM names. The event source mapping must enable `ReportBatchItemFailures`.
//!
//! `STEWARD_RETENTION_DAYS` (default 400) is how long the rows it writes are kept.
//! Before serving, the settings are checked (`steward_worker::needs::AGENT_NEEDS`); a missing
//! or incoherent one stops the start with one sentence naming it, exit status 78.

use std::convert::Infallible;
use std::sync::Arc;

use anyhow::Context;
use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, service_fn};
use steward_edge::config::ConfigError;
use steward_edge::config::{self, ENV_PUBLIC_URL, ENV_QUEUE_URL, ENV_TABLE, Settings};
use steward_edge::startup::or_refuse;
use steward_events::EventsConfig;
use steward_harness::retention::{self, ENV_RETENTION_DAYS};
use steward_store::{DynamoTable, SqsQueue};
use steward_worker::agent_batch::lambda_deadline;
use steward_worker::model::AGENT_SECRETS;
use steward_worker::needs::check_agent_config;
use steward_worker::wiring;

/// This function's name in its refusal to start.
const FUNCTION: &str = "agent";

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
    let settings = or_refuse(FUNCTION, Settings::load(&sdk, &AGENT_SECRETS).await);
    or_refuse(FUNCTION, check_agent_config(&settings));
    or_refuse(
        FUNCTION,
        retention::install_setting(settings.get(ENV_RETENTION_DAYS).as_deref())
            .map_err(ConfigError::unusable),
    );
    let table = DynamoTable::new(
        aws_sdk_dynamodb::Client::new(&sdk),
        or_refuse(FUNCTION, settings.require(ENV_TABLE)),
    );
    let events =
        EventsConfig::with_public_base_url(settings.get(ENV_PUBLIC_URL).unwrap_or_default());
    let domain = steward_events::domain(&events);
    let queue = SqsQueue::new(
        aws_sdk_sqs::Client::new(&sdk),
        or_refuse(FUNCTION, settings.require(ENV_QUEUE_URL)),
    );
    let worker = or_refuse(
        FUNCTION,
        wiring::turn_worker(
            &settings,
            &sdk,
            Arc::new(table),
            domain,
            steward_events::FIRST_REQUEST,
            Some(or_refuse(FUNCTION, wiring::s3_blob_store(&settings, &sdk))),
        ),
    );
    let worker = Arc::new(worker.with_visibility(Arc::new(queue)));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = Arc::clone(&worker);
        let telemetry = telemetry.clone();
        let deadline = lambda_deadline(event.context.deadline);
        async move {
            let failures = worker.handle_batch(event.payload, Some(deadline)).await;
            telemetry.flush().await;
            Ok::<_, Infallible>(failures)
        }
    }))
    .await
    .map_err(|e| anyhow::anyhow!("{e}"))
    .context("the Lambda runtime stopped")
}
