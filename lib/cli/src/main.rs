//! `steward`: the local server and the operator commands. Wiring only; the work is in the
//! libraries.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    steward::init_tracing();
    match steward::run(steward::Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("steward: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
