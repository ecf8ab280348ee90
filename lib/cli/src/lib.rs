//! The `steward` command line: `steward serve` and the operator commands that work on the same
//! store (also while `serve` runs on it). Each command prints its one result on stdout, so
//! scripts can use it; diagnostics go to stderr.

mod commands;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use steward_harness::budget::{self, Limit};
use steward_harness::usage;

pub use commands::run;

/// Default store file for `steward serve` and the operator commands.
pub const DEFAULT_DB: &str = "./data/steward.db";

/// Steward: a chat assistant that does real work for event organisers.
#[derive(Debug, Parser)]
#[command(name = "steward", version, about)]
pub struct Cli {
    /// The SQLite store (created with its folder when missing).
    #[arg(long, env = "STEWARD_DB", default_value = DEFAULT_DB, global = true)]
    pub db: PathBuf,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Everything in one process on the embedded store: the web UI and chat, the public pages,
    /// the webhooks and MCP on STEWARD_ADDR (default 127.0.0.1:8080).
    Serve,
    /// Accounts.
    #[command(subcommand)]
    User(UserCommand),
    /// MCP access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// A live eight-message conversation against the configured model on a throwaway store,
    /// printing every reply and tool call: run it after changing the prompt, tools or model.
    /// With --deployed URL: checks that a deployed stack answers (health, sign-in page, MCP
    /// refusing strangers, webhooks refusing wrong secrets) and exits non-zero on a failure.
    Smoke {
        /// The deployed stack's base URL (the `ApiUrl` output, or your domain).
        #[arg(long, value_name = "URL")]
        deployed: Option<String>,
    },
    /// Runs an eval suite (a TOML file of cases, see the README): each case on a throwaway
    /// store, judged on what happened — records, tool calls, held and confirmed actions, undo,
    /// replies. Prints a table (or JSON); exits non-zero when any case fails.
    Eval {
        /// The suite file.
        suite: PathBuf,
        /// Run against the configured model instead of the cases' scripted steps.
        #[arg(long)]
        real: bool,
        /// Run against this model id of the configured provider (implies --real).
        #[arg(long)]
        model: Option<String>,
        /// Run each case this many times and report a pass rate.
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-drives a stored conversation's messages (e.g. `web:<user id>`) with the current
    /// prompt, tools and configured model on a throwaway fork of the records it used, and
    /// prints the first divergence from the original: another tool, other arguments, another
    /// effect, or a held action that now runs (or the reverse). The store is not written.
    Replay {
        /// The conversation key.
        conversation: String,
        /// The model id of the configured provider (default: STEWARD_MODEL).
        #[arg(long)]
        model: Option<String>,
    },
    /// Prints each user's usage of a month, one line per user: model calls, tokens, the share
    /// of input read from the prompt cache, the estimated cost and what is left of the budget.
    Usage {
        /// Only this user (default: every user with usage that month).
        user_id: Option<String>,
        /// The month, YYYY-MM (default: this month, UTC).
        #[arg(long, value_name = "YYYY-MM", value_parser = parse_month)]
        month: Option<String>,
    },
    /// Shows what the turns of a stored conversation (e.g. `web:<user id>`, `tg:<chat id>`)
    /// did: the context block sent, each model call (stop reason, tokens with cache reads and
    /// writes, latency, model id), each tool call (arguments, result, ran/held/confirmed/
    /// refused, effect id) and the reply as the channel got it. Newest 50 turns, or one.
    Turns {
        /// The conversation key.
        conversation: String,
        /// Only this turn (from 1).
        #[arg(long, value_name = "N")]
        turn: Option<u64>,
        /// Print the inspection as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Prints a stored conversation (e.g. `web:<user id>`, `tg:<chat id>`) as an eval suite
    /// case: the person's messages, the model's steps, what ran and was held; names, e-mail
    /// addresses and phone numbers replaced with placeholders.
    ExportCase {
        /// The conversation key.
        conversation: String,
        /// The case's name (default: "exported <conversation>").
        #[arg(long)]
        name: Option<String>,
    },
}

/// `steward user …`
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Creates an account; prints the new user id.
    Create {
        /// The person's name.
        #[arg(long)]
        name: String,
        /// Their IANA time zone, e.g. Europe/Berlin (default UTC).
        #[arg(long)]
        timezone: Option<String>,
    },
    /// Issues a fresh one-time linking code (30 minutes); prints it.
    LinkCode {
        /// The user id.
        user_id: String,
    },
    /// Pauses an account: it can read but not change anything, and chat answers without the
    /// model.
    Pause {
        /// The user id.
        user_id: String,
    },
    /// Resumes a paused account.
    Resume {
        /// The user id.
        user_id: String,
    },
    /// Sets a user's own monthly budget in place of the default (STEWARD_BUDGET_USD,
    /// STEWARD_BUDGET_TOKENS); a limit not given keeps what was set before. `unlimited` lifts
    /// that limit for the user. Prints the budget that now applies.
    #[command(group(clap::ArgGroup::new("limit").required(true).multiple(true).args(["usd", "tokens", "clear"])))]
    Budget {
        /// The user id.
        user_id: String,
        /// US dollars a month, e.g. 20 or 7.50, or `unlimited`.
        #[arg(long, value_name = "DOLLARS", value_parser = parse_usd_limit)]
        usd: Option<Limit>,
        /// Tokens a month (input, cached input and output), or `unlimited`.
        #[arg(long, value_name = "N", value_parser = parse_tokens_limit)]
        tokens: Option<Limit>,
        /// Removes the user's own budget: the default applies again.
        #[arg(long, conflicts_with_all = ["usd", "tokens"])]
        clear: bool,
    },
    /// Unlinks a phone (or any channel identity) from an account: it can no longer act for the
    /// account, and its chat starts afresh. Prints what was unlinked.
    Unlink {
        /// The user id.
        user_id: String,
        /// The channel: `wa` (WhatsApp) or `tg` (Telegram), or another identity channel.
        channel: String,
        /// The id on that channel: the WhatsApp number, the Telegram user id.
        external_id: String,
    },
}

/// `--usd`: dollars, or `unlimited`.
fn parse_usd_limit(text: &str) -> Result<Limit, String> {
    if text.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(Limit::Unlimited);
    }
    budget::parse_usd(text)
        .map(Limit::Cap)
        .map_err(|e| e.to_string())
}

/// `--tokens`: a whole number, or `unlimited`.
fn parse_tokens_limit(text: &str) -> Result<Limit, String> {
    if text.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(Limit::Unlimited);
    }
    budget::parse_tokens(text)
        .map(Limit::Cap)
        .map_err(|e| e.to_string())
}

/// `--month`: `YYYY-MM`.
fn parse_month(text: &str) -> Result<String, String> {
    if usage::is_month(text) {
        Ok(text.to_owned())
    } else {
        Err(format!("{text:?} is not a month like 2026-01"))
    }
}

/// `steward token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Creates an MCP access token for a user; prints the token (shown only this once).
    Create {
        /// The user id.
        user_id: String,
        /// A label to recognise it by.
        #[arg(long)]
        label: Option<String>,
    },
    /// Lists a user's tokens (id, label, created, last used, revoked), one per line.
    List {
        /// The user id.
        user_id: String,
    },
    /// Revokes a token by its id (from `token list`).
    Revoke {
        /// The token id.
        token_id: String,
    },
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info` for Steward, `warn` otherwise), and
/// exports spans when an OTLP endpoint is set — the same set-up as the Lambdas
/// (`steward_edge::telemetry`). Keep the handle and shut it down on exit.
pub fn init_tracing() -> anyhow::Result<steward_edge::telemetry::Telemetry> {
    steward_edge::telemetry::init(
        steward_edge::telemetry::LogFormat::Terminal,
        "warn,steward=info",
        "steward",
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Where a command's store lives.
pub fn db_path(cli: &Cli) -> PathBuf {
    cli.db.clone()
}
