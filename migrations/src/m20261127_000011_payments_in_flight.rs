//! The payments still in flight are indexed by themselves, not every payment by its status
//! (issue 12).
//!
//! `payments_status_next_check` indexed every payment by `(status, next_check_at)` for the
//! reconciliation sweep, which only ever asks for reservations left without an outcome and for
//! unknown payments whose next check is due. Every settled call's outcome (`call_id = $1 AND
//! status IN ('reserved', 'unknown')`) was planned on PostgreSQL as a BitmapAnd of the call's
//! index and that one, and the status half walked every index entry a payment ever had while
//! reserved: an update of `status` leaves its old entry behind until a vacuum, so the statement
//! grew with the traffic (3,471 entries and 1.2 ms per settled call after six thousand paid
//! calls, `auto_explain`; a fifth of PostgreSQL's time per paid call in the benchmark).
//!
//! Two partial indexes take its place: reservations by age, unknown payments by their next
//! check. A settled or refused payment is in neither, so most status changes leave no entry
//! behind, and the outcome's statement, whose status list implies neither predicate, reads the
//! call's index alone. SQLite runs the same statements.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261127_000011_payments_in_flight"
    }
}

const UP: [&str; 3] = [
    r#"CREATE INDEX IF NOT EXISTS "payments_reserved_since" ON "payments" ("updated_at") WHERE "status" = 'reserved'"#,
    r#"CREATE INDEX IF NOT EXISTS "payments_unknown_due" ON "payments" ("next_check_at") WHERE "status" = 'unknown'"#,
    r#"DROP INDEX IF EXISTS "payments_status_next_check""#,
];

const DOWN: [&str; 3] = [
    r#"CREATE INDEX IF NOT EXISTS "payments_status_next_check" ON "payments" ("status", "next_check_at")"#,
    r#"DROP INDEX IF EXISTS "payments_unknown_due""#,
    r#"DROP INDEX IF EXISTS "payments_reserved_since""#,
];

async fn run(m: &SchemaManager<'_>, statements: &[&str]) -> Result<(), DbErr> {
    let db = m.get_connection();
    for sql in statements {
        db.execute_unprepared(sql).await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        run(m, &UP).await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        run(m, &DOWN).await
    }
}
