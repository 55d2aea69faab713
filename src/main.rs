//! The `api` binary: read configuration, set up logging, serve until SIGTERM or Ctrl-C; or, as
//! `api check`, probe every dependency the configuration names and exit.

use clap::{Parser, Subcommand};
use grove_common::{config::Config, shutdown, telemetry};
use std::process::ExitCode;

/// mimalloc instead of glibc malloc: a paid call allocates many small short-lived buffers
/// (bodies, JSON values, SQL parameters) across threads, where glibc spent ~15 % of its CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Grove's HTTP API: paid coaching calls and review requests for AI agents, paid with x402.
/// Configuration comes from the environment (see .env.example). Without REDIS_URL the jobs run
/// in this process; with it, in separate `worker` processes.
#[derive(Parser)]
#[command(name = "api", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (what `api` does without a command).
    Serve,
    /// Read the configuration as start-up does, probe every dependency it names (database,
    /// Redis, facilitator, chain RPC, and the model and Twilio when this process runs the jobs),
    /// print one line per check, and exit non-zero if any failed.
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
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(config).await,
        Command::Check => {
            let report = grove::check(&config).await;
            print!("{}", report.render());
            if report.failed() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}

async fn serve(config: Config) -> ExitCode {
    let _telemetry = telemetry::init(&config, "grove-api");
    let app = match grove::build(config).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!(error = %e, "could not start");
            return ExitCode::FAILURE;
        }
    };
    // `admin`: the admin listener (metrics, admin API, console), or "off".
    let admin = app
        .admin_addr()
        .map_or_else(|| "off".to_owned(), |a| a.to_string());
    tracing::info!(addr = %app.local_addr(), %admin, "listening");
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
