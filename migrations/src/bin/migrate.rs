//! `migrate`: applies every pending migration to `DATABASE_URL` (the Procfile's release step).

use clap::Parser;
use grove_common::{config::Config, db};
use std::process::ExitCode;

/// Applies every pending migration to DATABASE_URL (the embedded SQLite file when unset), then
/// exits. Safe to run before every deploy: applied migrations are skipped.
#[derive(Parser)]
#[command(name = "migrate", version)]
struct Cli {}

#[tokio::main]
async fn main() -> ExitCode {
    Cli::parse();
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let result = async {
        let conn = db::connect(&config).await?;
        grove_migrations::run(&conn).await
    }
    .await;
    match result {
        Ok(()) => {
            println!("migrations applied");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("migration failed: {e}");
            ExitCode::FAILURE
        }
    }
}
