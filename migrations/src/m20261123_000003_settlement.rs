//! Settlement outcomes that are not known at once (issue 7): a payment keeps the exact settle
//! request it was offered, so reconciliation can re-post the identical payload; when its
//! authorization expires (proof that an unused one never will be used); and how often and when
//! next it is checked.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261123_000003_settlement"
    }
}

#[derive(DeriveIden)]
enum Payments {
    Table,
    Status,
    SettleRequest,
    ValidBefore,
    Checks,
    NextCheckAt,
}

#[derive(DeriveIden)]
enum IdempotencyRecords {
    Table,
    CallId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one thing at a time.
        for column in [
            json_null(Payments::SettleRequest),
            big_integer_null(Payments::ValidBefore),
            integer(Payments::Checks).default(0).to_owned(),
            timestamp_with_time_zone_null(Payments::NextCheckAt),
        ] {
            let mut column = column;
            m.alter_table(
                Table::alter()
                    .table(Payments::Table)
                    .add_column(&mut column)
                    .to_owned(),
            )
            .await?;
        }
        // The reconciliation sweep's query: unknown payments whose next check is due.
        m.create_index(
            Index::create()
                .name("payments_status_next_check")
                .table(Payments::Table)
                .col(Payments::Status)
                .col(Payments::NextCheckAt)
                .to_owned(),
        )
        .await?;
        // A refused or disproved settlement releases its call's scope by call id.
        m.create_index(
            Index::create()
                .name("idempotency_records_call")
                .table(IdempotencyRecords::Table)
                .col(IdempotencyRecords::CallId)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_index(
            Index::drop()
                .name("idempotency_records_call")
                .table(IdempotencyRecords::Table)
                .to_owned(),
        )
        .await?;
        m.drop_index(
            Index::drop()
                .name("payments_status_next_check")
                .table(Payments::Table)
                .to_owned(),
        )
        .await?;
        for column in [
            Payments::NextCheckAt,
            Payments::Checks,
            Payments::ValidBefore,
            Payments::SettleRequest,
        ] {
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
