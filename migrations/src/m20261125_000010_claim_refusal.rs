//! On PostgreSQL, the function with which the claim's one statement refuses itself (issue 12).
//!
//! The claim takes an idempotency scope, then the payment's authorization, in one `WITH` chain.
//! When the scope is free but the authorization was used already, the scope must not stay
//! taken: a transaction around the statement rolled it back, at the cost of two more round
//! trips (BEGIN, COMMIT) on every paid call. Raising an error from the statement itself undoes
//! all of its writes the same way, in one round trip. The error's SQLSTATE (`GR001`) is ours, so
//! the claim tells this refusal apart from any failure.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261125_000010_claim_refusal"
    }
}

/// Raises SQLSTATE `GR001` with `reason` as its message; declared to return a count so that it
/// can stand in a statement's select list.
const CREATE: &str = r#"CREATE OR REPLACE FUNCTION "grove_claim_refused"(reason text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'GR001', MESSAGE = reason;
END $$"#;

const DROP: &str = r#"DROP FUNCTION IF EXISTS "grove_claim_refused"(text)"#;

async fn run(m: &SchemaManager<'_>, sql: &str) -> Result<(), DbErr> {
    let db = m.get_connection();
    if db.get_database_backend() == DbBackend::Postgres {
        db.execute_unprepared(sql).await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        run(m, CREATE).await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        run(m, DROP).await
    }
}
