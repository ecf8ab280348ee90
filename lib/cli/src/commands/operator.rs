//! Operator commands on the store (`steward user …`, `steward token …`). They work while
//! `steward serve` runs on the same file: SQLite in WAL mode lets both processes share it.

use std::sync::Arc;

use anyhow::{Context, Result};
use steward_edge::config::Settings;
use steward_harness::budget::{self, Budget, BudgetOverride};
use steward_harness::{
    ChannelIdentity, TokenId, UserId, accounts, identity, linking, tokens, usage as usage_rec,
};
use steward_llm::pricing::format_usd;
use steward_store::{Clock, SqliteTable, SystemClock, Table};

use crate::{Cli, TokenCommand, UserCommand, db_path};

fn open(cli: &Cli) -> Result<(Arc<dyn Table>, Arc<dyn Clock>)> {
    let path = db_path(cli);
    let table = SqliteTable::open(&path)
        .with_context(|| format!("cannot open the store at {}", path.display()))?;
    Ok((Arc::new(table), Arc::new(SystemClock)))
}

fn user_id(text: &str) -> Result<UserId> {
    UserId::parse(text).map_err(|e| anyhow::anyhow!("{text:?} is not a user id: {}", e.problem))
}

/// `steward user …`
pub async fn user(cli: &Cli, cmd: &UserCommand) -> Result<()> {
    let (table, clock) = open(cli)?;
    match cmd {
        UserCommand::Create { name, timezone } => {
            let profile =
                accounts::create_account(table.as_ref(), clock.as_ref(), name, timezone.as_deref())
                    .await?;
            println!("{}", profile.user);
        }
        UserCommand::LinkCode { user_id: id } => {
            let issued = linking::issue_code(table.as_ref(), clock.as_ref(), &user_id(id)?).await?;
            println!("{}", issued.code);
        }
        UserCommand::Pause { user_id: id } => {
            let p = accounts::pause(table.as_ref(), &user_id(id)?).await?;
            // A paused account's web sessions end too.
            steward_webapp::session::end_all(table.as_ref(), &p.user).await?;
            // stdout keeps its one result (scripts read it); the side effect goes to stderr.
            eprintln!("{}: signed out of the web everywhere", p.user);
            println!("{} paused", p.user);
        }
        UserCommand::Resume { user_id: id } => {
            let p = accounts::resume(table.as_ref(), &user_id(id)?).await?;
            println!("{} active", p.user);
        }
        UserCommand::Budget {
            user_id: id,
            usd,
            tokens,
            clear,
        } => {
            let user = user_id(id)?;
            // The account must exist: a typo must not file a budget for nobody.
            accounts::get_profile(table.as_ref(), &user).await?;
            let default = default_budget()?;
            if *clear {
                budget::clear_override(table.as_ref(), &user).await?;
            } else {
                let own = BudgetOverride {
                    tokens: *tokens,
                    usd_micros: *usd,
                };
                budget::set_override(table.as_ref(), &user, own).await?;
            }
            let now = budget::effective(table.as_ref(), &user, default).await?;
            println!("{user} budget: {}", describe(now));
        }
        UserCommand::Unlink {
            user_id: id,
            channel,
            external_id,
        } => {
            let user = user_id(id)?;
            let ident = ChannelIdentity::parse(channel, external_id).map_err(|e| {
                anyhow::anyhow!(
                    "{channel} {external_id:?} is not a channel identity: {}",
                    e.problem
                )
            })?;
            identity::unbind(table.as_ref(), &ident, &user).await?;
            println!("{ident} unlinked from {user}");
        }
    }
    Ok(())
}

/// The default budget from this process's settings (the same variables `steward serve` reads).
fn default_budget() -> Result<Budget> {
    let env = Settings::from_process_env();
    Budget::from_settings(
        env.get(budget::ENV_BUDGET_USD).as_deref(),
        env.get(budget::ENV_BUDGET_TOKENS).as_deref(),
    )
    .map_err(|e| anyhow::anyhow!(e))
}

/// "$20.00 and 2000000 tokens a month", or "none".
fn describe(b: Budget) -> String {
    let mut parts = Vec::new();
    if let Some(m) = b.usd_micros {
        parts.push(format_usd(m));
    }
    if let Some(t) = b.tokens {
        parts.push(format!("{t} tokens"));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        format!("{} a month", parts.join(" and "))
    }
}

/// `steward usage [USER_ID] [--month YYYY-MM]`: one tab-separated line per user.
pub async fn usage(cli: &Cli, id: Option<&str>, month: Option<&str>) -> Result<()> {
    let (table, clock) = open(cli)?;
    let default = default_budget()?;
    let month = month
        .map(str::to_owned)
        .unwrap_or_else(|| usage_rec::month_of(clock.now_millis()));
    let users = match id {
        Some(id) => {
            let user = user_id(id)?;
            accounts::get_profile(table.as_ref(), &user).await?;
            vec![user]
        }
        None => usage_rec::users_of_month(table.as_ref(), &month).await?,
    };
    if users.is_empty() {
        eprintln!("no usage in {month}");
    }
    for user in users {
        let used = usage_rec::get(table.as_ref(), &user, &month).await?;
        let budget = budget::effective(table.as_ref(), &user, default).await?;
        let unpriced = if used.unpriced_calls > 0 {
            format!(" (+{} calls unpriced)", used.unpriced_calls)
        } else {
            String::new()
        };
        println!(
            "{user}\t{month}\tcalls={}\ttokens={}\tcache_read={}\tcost={}{unpriced}\tbudget={}",
            used.calls,
            used.total_tokens(),
            used.cache_read_percent()
                .map_or_else(|| "-".into(), |p| format!("{p}%")),
            format_usd(used.cost_micros),
            budget.left(&used),
        );
    }
    Ok(())
}

/// `steward token …`
pub async fn token(cli: &Cli, cmd: &TokenCommand) -> Result<()> {
    let (table, clock) = open(cli)?;
    match cmd {
        TokenCommand::Create { user_id: id, label } => {
            let new = tokens::create_token(
                table.as_ref(),
                clock.as_ref(),
                &user_id(id)?,
                label.as_deref(),
            )
            .await?;
            println!("{}", new.token.expose());
        }
        TokenCommand::List { user_id: id } => {
            for t in tokens::list_tokens(table.as_ref(), &user_id(id)?).await? {
                println!(
                    "{}\t{}\tcreated={}\tlast_used={}\t{}",
                    t.id,
                    t.label,
                    iso(t.created_ms),
                    t.last_used_ms.map_or_else(|| "never".into(), iso),
                    if t.revoked { "revoked" } else { "active" }
                );
            }
        }
        TokenCommand::Revoke { token_id } => {
            let id = TokenId::parse(token_id)
                .map_err(|e| anyhow::anyhow!("{token_id:?} is not a token id: {}", e.problem))?;
            let t = tokens::revoke_token(table.as_ref(), clock.as_ref(), &id).await?;
            println!("{} revoked", t.id);
        }
    }
    Ok(())
}

fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(
        |_| ms.to_string(),
        |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    )
}
