//! A lease on a running call (issue 8): `pending → running` takes it in one statement, the run
//! renews it while the model call is open, and only a run whose lease lapsed (its worker died)
//! can be taken over. A duplicate delivery while the lease is live does nothing.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261123_000004_call_lease"
    }
}

#[derive(DeriveIden)]
enum Calls {
    Table,
    LeaseUntil,
    LeaseOwner,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one thing at a time.
        for column in [
            timestamp_with_time_zone_null(Calls::LeaseUntil),
            string_null(Calls::LeaseOwner),
        ] {
            let mut column = column;
            m.alter_table(
                Table::alter()
                    .table(Calls::Table)
                    .add_column(&mut column)
                    .to_owned(),
            )
            .await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in [Calls::LeaseOwner, Calls::LeaseUntil] {
            m.alter_table(
                Table::alter()
                    .table(Calls::Table)
                    .drop_column(column)
                    .to_owned(),
            )
            .await?;
        }
        Ok(())
    }
}
