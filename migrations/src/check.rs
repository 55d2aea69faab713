//! The doctor's database probe: the database `DATABASE_URL` names answers, and its schema is one
//! this build knows (pending migrations are applied at start-up and by `migrate`; a migration this
//! build does not know means the database was migrated by a newer release).

use crate::{DbErr, Migrator, MigratorTrait};
use grove_common::{
    config::Config,
    db,
    doctor::{Check, bounded},
};
use std::collections::HashSet;

const NAME: &str = "database";

pub async fn database(config: &Config) -> Check {
    let fix = "start the database or correct DATABASE_URL (postgres://… or sqlite://…)";
    let kind = if db::url(config).starts_with("sqlite:") {
        "SQLite"
    } else {
        "PostgreSQL"
    };
    bounded(NAME, fix, async {
        let conn = match db::connect(config).await {
            Ok(conn) => conn,
            // sqlx's text can quote the URL with its password: name the kind of failure only.
            Err(e) => return Check::fail(NAME, format!("cannot connect to {kind} ({})", what(&e)), fix),
        };
        let known: HashSet<String> = Migrator::migrations()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        let applied = match Migrator::get_applied_migrations(&conn).await {
            Ok(applied) => applied,
            Err(e) => return Check::fail(NAME, format!("cannot read the schema version ({})", what(&e)), fix),
        };
        let unknown: Vec<String> = applied
            .iter()
            .map(|m| m.name().to_owned())
            .filter(|name| !known.contains(name))
            .collect();
        if !unknown.is_empty() {
            return Check::fail(
                NAME,
                format!("the database has migrations this build does not know ({})", unknown.join(", ")),
                "run the release that applied them, or a newer one",
            );
        }
        let pending = known.len().saturating_sub(applied.len());
        Check::pass(
            NAME,
            if pending == 0 {
                format!("{kind} answers; schema up to date")
            } else {
                format!("{kind} answers; {pending} migration(s) pending, applied at start-up or by `migrate`")
            },
        )
    })
    .await
}

/// A database error without its text, which may quote the connection URL.
fn what(e: &DbErr) -> &'static str {
    match e {
        DbErr::Conn(_) => "connection refused or failed",
        DbErr::ConnectionAcquire(_) => "no connection available",
        DbErr::Exec(_) | DbErr::Query(_) => "a statement failed",
        _ => "database error",
    }
}
