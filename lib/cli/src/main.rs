//! `steward`: the local server and the operator commands. Wiring only; the work is in the
//! libraries.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let telemetry = match steward::init_tracing() {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("steward: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let code = match steward::run(steward::Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("steward: {e:#}");
            std::process::ExitCode::FAILURE
        }
    };
    telemetry.shutdown().await;
    code
}
