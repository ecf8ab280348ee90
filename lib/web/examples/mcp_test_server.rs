//! A local MCP server for the conformance suite and the Python client check: the `/mcp` router
//! with Steward's events tools on an in-memory SQLite table, bound to loopback.
//!
//! ```text
//! cargo run -p steward-web --example mcp_test_server -- [127.0.0.1:PORT]
//! ```
//!
//! Prints `url=<mcp url>` and `token=<bearer token for user "dev">` on stdout, then serves until
//! killed. `STEWARD_MCP_INSECURE_DEV_USER` and `STEWARD_MCP_CONFORMANCE_FIXTURES` are honoured
//! as by `steward serve` (loopback only); the dev user's account is created when set.
#![allow(clippy::unwrap_used, missing_docs)]

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use steward_harness::{UserId, accounts, tokens};
use steward_store::{SqliteTable, SystemClock, Table};
use steward_web::mcp::{self, McpConfig};

/// The account the printed token belongs to.
const TOKEN_USER: &str = "dev";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned())
        .parse()?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let config = McpConfig::local_from_lookup(bound, |name| std::env::var(name).ok())?;

    let clock = Arc::new(SystemClock);
    let table: Arc<dyn Table> = Arc::new(SqliteTable::in_memory_with_clock(clock.clone())?);
    let mut users = vec![UserId::parse(TOKEN_USER)?];
    users.extend(config.insecure_dev_user().cloned());
    users.dedup();
    for user in &users {
        accounts::create_account_with_id(table.as_ref(), clock.as_ref(), user.clone(), "Dev", None)
            .await?;
    }
    let token = tokens::create_token(table.as_ref(), clock.as_ref(), &users[0], None).await?;

    let registry = Arc::new(steward_events::tools::registry(
        &steward_events::EventsConfig::default(),
    ));
    let app: axum::Router =
        mcp::routes(registry, table, clock, config).merge(steward_web::health::routes());
    let mut out = std::io::stdout().lock();
    writeln!(out, "url=http://{bound}{}", mcp::MCP_PATH)?;
    writeln!(out, "token={}", token.token)?;
    out.flush()?;
    drop(out);
    axum::serve(listener, app).await?;
    Ok(())
}
