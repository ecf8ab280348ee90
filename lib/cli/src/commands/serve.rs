//! `steward serve`: the whole product in one process on the embedded store — the web UI, the
//! web chat API, the public pages, the webhooks, MCP, `/healthz` and `/metrics` (loopback
//! only, see [`super::serve_metrics`]) on one address, with the durable in-process turn queue
//! and the agent worker behind them.
//!
//! Shutdown (Ctrl-C or SIGTERM): stop accepting requests, let in-flight requests and turns
//! finish for up to [`SHUTDOWN_GRACE`]; a turn still running then is cut off and, because its
//! message is still in the durable queue, runs again on the next start (data changes are
//! exactly once; its reply is at least once).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use steward_edge::config::{ENV_PUBLIC_URL, Settings};
use steward_edge::{health, request_log};
use steward_harness::retention::{self, ENV_RETENTION_DAYS};
use steward_mcp::{self as mcp, McpConfig};
use steward_store::{
    BLOB_RETENTION_DAYS, Clock, FolderBlobStore, InProcessQueue, QueueConfig, SqliteTable,
    SystemClock, Table, TurnQueue,
};
use steward_webapp::config as web;
use steward_webapp::{SignInMode, WebState, app};
use steward_webhook as webhooks;
use steward_worker::wiring;

use super::serve_metrics::{self, METRICS_PATH, PrometheusRecorder};
use crate::{Cli, db_path};

/// Where `steward serve` listens.
pub const ENV_ADDR: &str = "STEWARD_ADDR";

/// The default address: loopback only, so a laptop does not expose the development sign-in.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// How long shutdown waits for in-flight turns: long enough for a typical turn (a few model
/// calls); a longer one is redelivered from the durable queue on the next start.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How often expired rows (transcripts and audit rows past their retention, spent dedupe and
/// confirmation records) are deleted from the store file: what DynamoDB's TTL does on AWS.
/// Hourly is plenty; reads already treat expired rows as gone.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// Deletes expired rows now and then every [`SWEEP_EVERY`], for as long as the process runs.
fn sweep_periodically(table: SqliteTable, blobs: FolderBlobStore) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        loop {
            every.tick().await;
            match table.sweep_expired().await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "expired rows deleted"),
                Err(e) => {
                    tracing::warn!(error = %e, "deleting expired rows failed; trying again later")
                }
            }
            // Photos and PDFs expire like the S3 bucket's lifecycle rule expires them.
            match blobs.sweep_older_than(BLOB_MAX_AGE).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "expired media blobs deleted"),
                Err(e) => {
                    tracing::warn!(error = %e, "deleting expired media failed; trying again later")
                }
            }
        }
    });
}

/// How old a media blob gets before the sweep deletes it: [`BLOB_RETENTION_DAYS`].
const BLOB_MAX_AGE: Duration = Duration::from_secs(BLOB_RETENTION_DAYS * 24 * 60 * 60);

/// Runs the server until Ctrl-C or SIGTERM.
pub async fn serve(cli: &Cli) -> Result<()> {
    // Before anything can count: this process's metrics go to `/metrics`, not to stdout.
    let metrics = Arc::new(PrometheusRecorder::new());
    if !steward_harness::metrics::install(Arc::clone(&metrics) as _) {
        tracing::warn!("a metrics recorder was already installed; /metrics stays empty");
    }
    let env = Settings::from_process_env();
    let addr_text = env.get(ENV_ADDR).unwrap_or_else(|| DEFAULT_ADDR.to_owned());
    let addr: SocketAddr = addr_text.parse().with_context(|| {
        format!("{ENV_ADDR}={addr_text:?} is not an address like 127.0.0.1:8080")
    })?;

    let path = db_path(cli);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let sqlite = SqliteTable::open(&path)
        .with_context(|| format!("cannot open the store at {}", path.display()))?;
    let data_dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(
            || std::path::PathBuf::from("."),
            std::path::Path::to_path_buf,
        );
    let blobs = FolderBlobStore::in_data_dir(&data_dir)
        .with_context(|| format!("cannot open the media folder under {}", data_dir.display()))?;
    sweep_periodically(sqlite.clone(), blobs.clone());
    let table: Arc<dyn Table> = Arc::new(sqlite);

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    // Links in pages and messages point at this server unless a public URL (a tunnel) is set.
    let settings = env.with_default(ENV_PUBLIC_URL, format!("http://{bound}"));

    let retention = retention::install_setting(settings.get(ENV_RETENTION_DAYS).as_deref())?;
    let web_config = web::local_config(&settings)?;
    if matches!(web_config.sign_in, SignInMode::Development) && !bound.ip().is_loopback() {
        bail!(
            "the development sign-in (by name, no password) is only served on a loopback address; \
             bind {ENV_ADDR} to 127.0.0.1 or configure STEWARD_OIDC_ISSUER"
        );
    }
    let mcp_config = McpConfig::local_from_lookup(bound, settings.lookup())?;

    let sdk = super::model_sdk_config(&settings).await?;
    let domain = steward_events::domain(&web_config.events);
    let registry = Arc::clone(&domain.registry);
    let worker = wiring::turn_worker(
        &settings,
        &sdk,
        Arc::clone(&table),
        domain,
        steward_events::FIRST_REQUEST,
        Some(Arc::new(blobs)),
    )?;
    let queue = InProcessQueue::start(Arc::clone(&table), Arc::new(worker), QueueConfig::default())
        .await
        .context("cannot start the turn queue")?;
    let turn_queue: Arc<dyn TurnQueue> = Arc::new(queue.clone());

    let model_label = web_config.model_label.clone();
    let sign_in = match &web_config.sign_in {
        SignInMode::Development => "development sign-in by name",
        SignInMode::Oidc(_) => "OpenID Connect",
    };
    let web_state = WebState::new(
        Arc::clone(&table),
        Arc::clone(&clock),
        Arc::clone(&turn_queue),
        web_config,
    );
    let router = app::routes(web_state)
        .merge(webhooks::routes(webhooks::webhook_state(
            &settings,
            Arc::clone(&turn_queue),
        )?))
        .merge(mcp::routes(
            registry,
            table,
            clock,
            mcp_config.with_notices(Arc::clone(&turn_queue)),
        ))
        .merge(health::routes())
        .merge(serve_metrics::routes(metrics))
        .layer(request_log::layer());

    println!("Steward is running at http://{bound}/");
    println!("  store: {}", path.display());
    println!("  sign-in: {sign_in}");
    println!("  model: {model_label}");
    if model_label.starts_with("none") {
        println!("  (chat answers that no model is plugged in; set ANTHROPIC_API_KEY to chat)");
    }
    println!("  MCP: http://{bound}{}", mcp::MCP_PATH);
    println!(
        "  retention: {} days ({ENV_RETENTION_DAYS})",
        retention.days()
    );
    println!("  metrics: http://{bound}{METRICS_PATH} (answered on loopback only)");

    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await
    .context("the server stopped")?;
    eprintln!(
        "steward: stopping; waiting up to {}s for running turns",
        SHUTDOWN_GRACE.as_secs()
    );
    queue.shutdown(SHUTDOWN_GRACE).await;
    eprintln!("steward: stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
