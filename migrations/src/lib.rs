//! Grove's database schema, one migration per change. The same migrations run unchanged on
//! SQLite and PostgreSQL, at start-up of every process and as the `migrate` command, one process
//! at a time (`lock`).

pub use sea_orm_migration::prelude::*;

pub mod check;
pub mod lock;

mod m20261122_000001_paid_calls;
mod m20261122_000002_review_requests;
mod m20261123_000003_settlement;
mod m20261123_000004_call_lease;
mod m20261123_000005_phone_marks;
mod m20261123_000006_webhook_receipts;
mod m20261124_000007_sent_transaction;
mod m20261124_000008_lease_process;
mod m20261125_000009_json_as_written;
mod m20261125_000010_claim_refusal;
mod m20261127_000011_payments_in_flight;
mod m20261127_000020_provider_gates;
mod m20261127_000021_settled_watch;
mod m20261127_000022_settler_nonces;
mod m20261127_000023_admin_audit;
mod m20261206_000024_documents_in_row;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_paid_calls::Migration),
            Box::new(m20261122_000002_review_requests::Migration),
            Box::new(m20261123_000003_settlement::Migration),
            Box::new(m20261123_000004_call_lease::Migration),
            Box::new(m20261123_000005_phone_marks::Migration),
            Box::new(m20261123_000006_webhook_receipts::Migration),
            Box::new(m20261124_000007_sent_transaction::Migration),
            Box::new(m20261124_000008_lease_process::Migration),
            Box::new(m20261125_000009_json_as_written::Migration),
            Box::new(m20261125_000010_claim_refusal::Migration),
            Box::new(m20261127_000011_payments_in_flight::Migration),
            Box::new(m20261127_000020_provider_gates::Migration),
            Box::new(m20261127_000021_settled_watch::Migration),
            Box::new(m20261127_000022_settler_nonces::Migration),
            Box::new(m20261127_000023_admin_audit::Migration),
            Box::new(m20261206_000024_documents_in_row::Migration),
        ]
    }
}

/// Applies every pending migration, holding the migration lock (`lock`): any number of
/// processes may call it at once on the same database; one migrates, the others wait for it and
/// find nothing left to do.
pub async fn run(db: &sea_orm_migration::sea_orm::DatabaseConnection) -> Result<(), DbErr> {
    let lock = lock::MigrationLock::take(db).await?;
    let applied = Migrator::up(db, None).await;
    lock.release().await;
    applied
}
