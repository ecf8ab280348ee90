//! What each command does: open the store, call the service function, print one result.

mod deployed_smoke;
mod eval;
mod operator;
mod serve;
mod serve_metrics;
mod smoke;
mod turns;

use anyhow::Result;
use steward_edge::config::Settings;
use steward_worker::model::{self, ModelProvider};

use crate::{Cli, Command};

/// The AWS configuration behind a command's model client. Only Bedrock needs one: loaded from
/// the environment (region and credentials, an operator's profile, SSO sign-in or credential
/// process included) on Steward's HTTP client. Any other provider gets an empty one, since
/// loading it would probe for credentials.
async fn model_sdk_config(settings: &Settings) -> Result<aws_config::SdkConfig> {
    Ok(match model::provider(settings)? {
        ModelProvider::Bedrock => {
            aws_config::defaults(aws_config::BehaviorVersion::latest())
                .http_client(steward_net::sdk_http_client())
                .load()
                .await
        }
        _ => aws_config::SdkConfig::builder().build(),
    })
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> Result<()> {
    match &cli.command {
        Command::User(cmd) => operator::user(&cli, cmd).await,
        Command::Token(cmd) => operator::token(&cli, cmd).await,
        Command::Usage { user_id, month } => {
            operator::usage(&cli, user_id.as_deref(), month.as_deref()).await
        }
        Command::Smoke { deployed: None } => smoke::smoke().await,
        Command::Smoke {
            deployed: Some(url),
        } => deployed_smoke::smoke_deployed(url).await,
        Command::Serve => serve::serve(&cli).await,
        Command::Eval {
            suite,
            real,
            model,
            repeat,
            json,
        } => eval::eval(suite, *real, model.as_deref(), *repeat, *json).await,
        Command::Replay {
            conversation,
            model,
        } => eval::replay(&cli, conversation, model.as_deref()).await,
        Command::Turns {
            conversation,
            turn,
            json,
        } => turns::turns(&cli, conversation, *turn, *json).await,
        Command::ExportCase { conversation, name } => {
            eval::export_case(&cli, conversation, name.as_deref()).await
        }
    }
}
