//! `steward`: the local server and the operator commands. Wiring only; the work is in the
//! libraries.

use clap::Parser;

fn main() -> std::process::ExitCode {
    // One runtime thread unless STEWARD_WORKER_THREADS says otherwise (`steward_edge::runtime`).
    match steward_edge::runtime::build() {
        Ok(runtime) => runtime.block_on(steward_main()),
        Err(e) => {
            eprintln!("steward: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn steward_main() -> std::process::ExitCode {
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
