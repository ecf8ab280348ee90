//! `steward eval SUITE` runs an eval suite (see `steward_eval`) and prints its report — a
//! table, or JSON with `--json`. Fails (non-zero exit) when any case failed. Scripted steps by
//! default; `--real` or `--model ID` runs every case against the configured model instead.
//! `steward export-case CONVERSATION` prints a stored conversation as a suite case;
//! `steward replay CONVERSATION` re-drives it and prints the first divergence.

use std::path::Path;

use steward_store::SqliteTable;

use anyhow::{Context, Result, bail};
use steward_edge::config::Settings;
use steward_eval::{ModelChoice, Report, parse_suite, run_suite, tool_names};
use steward_events::EventsConfig;
use steward_worker::model::model_client;

/// The model settings with `STEWARD_MODEL` replaced by `model` when one is given.
fn settings_with_model(model: Option<&str>) -> Settings {
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    if let Some(id) = model {
        env.retain(|(k, _)| k != "STEWARD_MODEL");
        env.push(("STEWARD_MODEL".to_owned(), id.to_owned()));
    }
    Settings::from_pairs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// The configured real model (`model` overrides `STEWARD_MODEL`).
pub async fn real_model(model: Option<&str>) -> Result<ModelChoice> {
    let settings = settings_with_model(model);
    let sdk = super::model_sdk_config(&settings).await?;
    let (client, settings) = model_client(&settings, &sdk).context("the model configuration")?;
    let Some(client) = client else {
        bail!(
            "no model is configured: set ANTHROPIC_API_KEY, or STEWARD_MODEL_PROVIDER=bedrock with AWS credentials, or STEWARD_MODEL_PROVIDER=openai with STEWARD_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL)"
        );
    };
    Ok(ModelChoice::Real { client, settings })
}

/// Runs `steward eval`.
pub async fn eval(
    suite_path: &Path,
    real: bool,
    model: Option<&str>,
    repeat: u32,
    json: bool,
) -> Result<()> {
    if repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let text = std::fs::read_to_string(suite_path)
        .with_context(|| format!("cannot read the suite {}", suite_path.display()))?;
    let events = EventsConfig::default();
    let suite = parse_suite(&text, &tool_names(&events))
        .map_err(|e| anyhow::anyhow!("{}: {e}", suite_path.display()))?;
    let choice = if real || model.is_some() {
        real_model(model).await?
    } else {
        ModelChoice::Scripted
    };
    eprintln!(
        "eval: {} case(s) × {repeat} with model {}",
        suite.cases.len(),
        choice.model_id()
    );
    let results = run_suite(&suite, &choice, repeat, &events).await;
    let report = Report::new(choice.model_id(), repeat, &results);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    let failed = report.cases.iter().filter(|c| c.result == "fail").count();
    if failed > 0 {
        bail!("{failed} case(s) failed");
    }
    Ok(())
}

/// The existing store `--db` names (never created here: these commands only read).
fn open_existing(cli: &crate::Cli) -> Result<SqliteTable> {
    let path = crate::db_path(cli);
    if !path.exists() {
        bail!("there is no store at {}", path.display());
    }
    SqliteTable::open(&path).with_context(|| format!("cannot open the store at {}", path.display()))
}

/// Runs `steward replay`: the first divergence (or that there is none) on stdout; a
/// divergence fails the command, so a script can act on it.
pub async fn replay(cli: &crate::Cli, conversation: &str, model: Option<&str>) -> Result<()> {
    let table = open_existing(cli)?;
    let choice = real_model(model).await?;
    let domain = steward_events::domain(&EventsConfig::default());
    eprintln!("replay: {conversation} with model {}", choice.model_id());
    let report = steward_eval::replay::replay(&table, conversation, &choice, domain).await?;
    for id in &report.unresolved_ids {
        eprintln!("replay: {id} names no record any more; calls using it will differ");
    }
    match &report.divergence {
        None => println!(
            "no divergence: all {} turn(s) made the same tool calls with the same arguments and effects",
            report.turns
        ),
        Some(what) => {
            println!("first divergence: {what}");
            bail!("the replay diverged from the original");
        }
    }
    Ok(())
}

/// Runs `steward export-case`: the case on stdout, warnings on stderr.
pub async fn export_case(cli: &crate::Cli, conversation: &str, name: Option<&str>) -> Result<()> {
    let table = open_existing(cli)?;
    let name = name
        .map(str::to_owned)
        .unwrap_or_else(|| format!("exported {conversation}"));
    let exported = steward_eval::export::export_case(&table, conversation, &name).await?;
    for id in &exported.unresolved_ids {
        eprintln!(
            "export-case: {id} names no record any more; left as it is (the case will likely fail on it)"
        );
    }
    print!("{}", exported.suite);
    Ok(())
}
