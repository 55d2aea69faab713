//! The last sale of a review request per phone (issue 10): the cooldown a request asks for
//! (`min_days_since_last_request`) is checked and taken in one statement against this row, so of
//! concurrent requests to one phone inside a cooldown exactly one is sold.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261123_000005_phone_marks"
    }
}

#[derive(DeriveIden)]
enum PhoneMarks {
    Table,
    Phone,
    CallId,
    LastAt,
    PreviousAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(PhoneMarks::Table)
                .if_not_exists()
                .col(string(PhoneMarks::Phone).primary_key())
                .col(uuid(PhoneMarks::CallId))
                .col(timestamp_with_time_zone(PhoneMarks::LastAt))
                .col(timestamp_with_time_zone_null(PhoneMarks::PreviousAt))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(PhoneMarks::Table).to_owned())
            .await
    }
}
