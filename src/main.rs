//! The `api` binary: read configuration, set up logging, serve until SIGTERM or Ctrl-C.

use grove_common::{config::Config, shutdown, telemetry};
use std::process::ExitCode;

/// mimalloc instead of glibc malloc: a paid call allocates many small short-lived buffers
/// (bodies, JSON values, SQL parameters) across threads, where glibc spent ~15 % of its CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let _telemetry = telemetry::init(&config, "grove-api");
    let app = match grove::build(config).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!(error = %e, "could not start");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(addr = %app.local_addr(), "listening");
    match app.run_until(shutdown::signal()).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(error = %e, "server failed");
            ExitCode::FAILURE
        }
    }
}
