//! Settled payments are watched until their transfer is final (issue 25).
//!
//! A transfer counts as settled at `SETTLEMENT_CONFIRMATIONS` deep, before Base's `safe` block
//! reaches it, so a reorg can still drop a delivered call's transfer. Reconciliation re-reads each
//! settled payment's transaction until it is at the `safe` block (`final_at` set) or marks it
//! `reorged` for an operator. The watch reads only settled payments not yet final, through a
//! partial index, so the rows it skips cost nothing (issue 12's lesson).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261127_000021_settled_watch"
    }
}

#[derive(DeriveIden)]
enum Payments {
    Table,
    FinalAt,
}

const INDEX: &str = r#"CREATE INDEX IF NOT EXISTS "payments_settled_unfinal" ON "payments" ("created_at") WHERE "status" IN ('settled', 'reorged') AND "final_at" IS NULL"#;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table(Payments::Table)
                .add_column(
                    ColumnDef::new(Payments::FinalAt)
                        .timestamp_with_time_zone()
                        .null(),
                )
                .to_owned(),
        )
        .await?;
        m.get_connection().execute_unprepared(INDEX).await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.get_connection()
            .execute_unprepared(r#"DROP INDEX IF EXISTS "payments_settled_unfinal""#)
            .await?;
        m.alter_table(
            Table::alter()
                .table(Payments::Table)
                .drop_column(Payments::FinalAt)
                .to_owned(),
        )
        .await
    }
}
