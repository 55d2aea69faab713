//! The process that holds a call's lease (issue 8): a run is taken over the moment its process
//! is gone (its liveness lock released, `grove_common::db::liveness`), not only when the time
//! lease lapses.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261124_000008_lease_process"
    }
}

#[derive(DeriveIden)]
enum Calls {
    Table,
    LeaseProcess,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table(Calls::Table)
                .add_column(big_integer_null(Calls::LeaseProcess))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table(Calls::Table)
                .drop_column(Calls::LeaseProcess)
                .to_owned(),
        )
        .await
    }
}
