//! The `worker` binary: read configuration, set up logging, run jobs until SIGTERM; or, as
//! `worker check`, probe every dependency the configuration names and exit.

use clap::{Parser, Subcommand};
use grove_common::{config::Config, doctor::Report, shutdown, telemetry};
use std::process::ExitCode;

/// mimalloc instead of glibc malloc: a paid call allocates many small short-lived buffers
/// (bodies, JSON values, SQL parameters) across threads, where glibc spent ~15 % of its CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Grove's job worker: runs coaching calls (the model) and review requests (Twilio) from the
/// shared Redis queue (REDIS_URL). Configuration comes from the environment (see .env.example).
#[derive(Parser)]
#[command(name = "worker", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run jobs (what `worker` does without a command).
    Run,
    /// Read the configuration as start-up does, probe every dependency it names (database,
    /// Redis, the model, Twilio), print one line per check, and exit non-zero if any failed.
    Check,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
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
    if let Some(Command::Check) = cli.command {
        let mut report = Report::default();
        report.extend(grove_worker::doctor::checks(&config).await);
        print!("{}", report.render());
        return if report.failed() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let _telemetry = telemetry::init(&config, "grove-worker");
    match grove_worker::run(&config, &settings, shutdown::signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "worker failed");
            ExitCode::FAILURE
        }
    }
}
