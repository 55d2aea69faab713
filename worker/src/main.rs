//! The `worker` binary: read configuration, set up logging, run jobs until SIGTERM.

use grove_common::{config::Config, shutdown, telemetry};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let settings = match grove_worker::settings::WorkerSettings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let _telemetry = telemetry::init(&config, "grove-worker");
    match grove_worker::run(&config, &settings, shutdown::signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "worker failed");
            ExitCode::FAILURE
        }
    }
}
