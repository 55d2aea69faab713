//! The transaction that may carry a settlement whose outcome is unknown (issue 7): its hash, and
//! for one we sent ourselves its signed bytes, so reconciliation follows it (re-broadcasting the
//! same bytes) instead of sending a duplicate on every pass.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261124_000007_sent_transaction"
    }
}

#[derive(DeriveIden)]
enum Payments {
    Table,
    SentTx,
    SentTxRaw,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one thing at a time.
        for mut column in [
            string_null(Payments::SentTx),
            text_null(Payments::SentTxRaw),
        ] {
            m.alter_table(
                Table::alter()
                    .table(Payments::Table)
                    .add_column(&mut column)
                    .to_owned(),
            )
            .await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in [Payments::SentTxRaw, Payments::SentTx] {
            m.alter_table(
                Table::alter()
                    .table(Payments::Table)
                    .drop_column(column)
                    .to_owned(),
            )
            .await?;
        }
        Ok(())
    }
}
