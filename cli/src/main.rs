//! `grove-admin`: what an operator does, from a terminal, against any deployment's admin API
//! (`ADMIN_URL`, e.g. through `kubectl port-forward svc/grove-api-admin 9090`). Every command is
//! one HTTP request; the answer is printed as JSON on stdout, a refusal on stderr with exit
//! status 1. The server audits every action under the token's name.

mod client;

use clap::{Parser, Subcommand};
use client::{Client, Failure};
use serde_json::{Value, json};
use std::process::ExitCode;

/// Operate a Grove deployment through its admin API: payments needing attention and their
/// resolution, lookups, opt-outs, revenue, the audit.
#[derive(Parser)]
#[command(name = "grove-admin", version)]
struct Cli {
    /// The admin listener's base URL (the api's ADMIN_ADDR).
    #[arg(
        long,
        env = "ADMIN_URL",
        default_value = "http://127.0.0.1:9090",
        global = true
    )]
    url: String,
    /// Your operator token, one of the server's ADMIN_TOKENS; the audit records its name.
    /// Prefer the environment variable: a flag shows in the process list.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true, global = true)]
    token: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the operator your token names (a check of URL and token).
    Whoami,
    /// Payments whose settlement outcome is unknown, and their resolution.
    #[command(subcommand)]
    Payments(Payments),
    /// Look up a paid call by its id: status, payment, result, review request.
    Call {
        /// The call's id (a UUID).
        id: String,
    },
    /// Look up a receipt (even an expired one) with its call and payment.
    Receipt {
        /// The receipt's id (32 hex characters).
        id: String,
    },
    /// Look up a review request with its messages and events.
    Review {
        /// The request's id (rr_...).
        id: String,
    },
    /// Opt a phone number out of review requests, lift an opt-out, or list recent changes.
    #[command(subcommand, name = "opt-outs")]
    OptOuts(OptOuts),
    /// Revenue and counts by day and mode.
    Report {
        /// How many days back, today included (1-366).
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
    /// The latest operator actions, newest first.
    Audit {
        /// How many entries (1-500).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

#[derive(Subcommand)]
enum Payments {
    /// List the payments needing attention (unknown outcome: being reconciled, or set aside).
    List,
    /// Resolve one: settled (with the transaction that moved the money) or unsettled. With a
    /// chain configured on the server, the chain must agree, or nothing changes.
    Resolve {
        /// The payment's id (a UUID, from `payments list`).
        id: String,
        /// It settled, in this transaction (0x and 64 hex digits).
        #[arg(
            long,
            value_name = "TX_HASH",
            required_unless_present = "unsettled",
            conflicts_with = "unsettled"
        )]
        settled: Option<String>,
        /// It did not and never will settle.
        #[arg(long)]
        unsettled: bool,
        /// How you know (kept in the audit).
        #[arg(long)]
        reason: String,
    },
}

#[derive(Subcommand)]
enum OptOuts {
    /// Opt a number out: the next review request to it is refused before any payment, and its
    /// open requests end.
    Add {
        /// The number in E.164 (+1...).
        phone: String,
        /// How the customer asked (kept in the audit).
        #[arg(long)]
        reason: String,
    },
    /// Lift a number's opt-out (the customer asked to hear from businesses again).
    Remove {
        /// The number in E.164 (+1...).
        phone: String,
        /// How the customer asked (kept in the audit).
        #[arg(long)]
        reason: String,
    },
    /// The latest changes to the opt-out list.
    List {
        /// How many entries (1-500).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(token) = cli.token.as_deref().filter(|t| !t.is_empty()) else {
        eprintln!("grove-admin: no operator token: set ADMIN_TOKEN (or pass --token)");
        return ExitCode::from(2);
    };
    let client = match Client::new(&cli.url, token) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("grove-admin: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&client, cli.command).await {
        Ok(answer) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&answer).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(Failure::Refused { status, body }) => {
            eprintln!(
                "grove-admin: the server answered {status}:\n{}",
                serde_json::to_string_pretty(&body).unwrap_or_default()
            );
            ExitCode::FAILURE
        }
        Err(Failure::Unreachable(e)) => {
            eprintln!("grove-admin: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(c: &Client, command: Command) -> Result<Value, Failure> {
    match command {
        Command::Whoami => c.get("/admin/v1/whoami").await,
        Command::Payments(Payments::List) => c.get("/admin/v1/payments").await,
        Command::Payments(Payments::Resolve {
            id,
            settled,
            unsettled: _,
            reason,
        }) => {
            let body = match settled {
                Some(tx) => json!({"outcome": "settled", "transaction": tx, "reason": reason}),
                None => json!({"outcome": "unsettled", "reason": reason}),
            };
            c.post(
                &format!("/admin/v1/payments/{}/resolve", segment(&id)),
                &body,
            )
            .await
        }
        Command::Call { id } => c.get(&format!("/admin/v1/calls/{}", segment(&id))).await,
        Command::Receipt { id } => c.get(&format!("/admin/v1/receipts/{}", segment(&id))).await,
        Command::Review { id } => {
            c.get(&format!("/admin/v1/review-requests/{}", segment(&id)))
                .await
        }
        Command::OptOuts(OptOuts::Add { phone, reason }) => {
            c.post(
                "/admin/v1/opt-outs",
                &json!({"phone": phone, "reason": reason}),
            )
            .await
        }
        Command::OptOuts(OptOuts::Remove { phone, reason }) => {
            c.post(
                "/admin/v1/opt-outs/remove",
                &json!({"phone": phone, "reason": reason}),
            )
            .await
        }
        Command::OptOuts(OptOuts::List { limit }) => {
            c.get(&format!("/admin/v1/opt-outs?limit={limit}")).await
        }
        Command::Report { days } => c.get(&format!("/admin/v1/report?days={days}")).await,
        Command::Audit { limit } => c.get(&format!("/admin/v1/audit?limit={limit}")).await,
    }
}

/// An id as one path segment: anything but letters, digits, `-` and `_` is percent-encoded, so
/// an id can never reach another route.
fn segment(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn ids_stay_one_path_segment() {
        assert_eq!(segment("rr_abc-1"), "rr_abc-1");
        assert_eq!(segment("../whoami"), "%2E%2E%2Fwhoami");
    }
}
