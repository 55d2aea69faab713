//! The health gate of each outside provider (issue 30): whether it is closed (calls are sold) or
//! open (a product needing it answers `503` before any price), shared by every process through
//! this table, so an api knows what the workers saw. One row per provider (`model:<LLM_MODEL>`,
//! `sms:twilio`); `grove_common::health::store` owns every transition.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261127_000020_provider_gates"
    }
}

#[derive(DeriveIden)]
enum ProviderGates {
    Table,
    Provider,
    State,
    Opens,
    OpenedAt,
    ClosedAt,
    RetryAt,
    ProbesFailed,
    ProbeBy,
    ProbeUntil,
    Reason,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(ProviderGates::Table)
                .if_not_exists()
                .col(string(ProviderGates::Provider).primary_key())
                .col(string(ProviderGates::State))
                .col(big_integer(ProviderGates::Opens).default(0))
                .col(timestamp_with_time_zone_null(ProviderGates::OpenedAt))
                .col(timestamp_with_time_zone_null(ProviderGates::ClosedAt))
                .col(timestamp_with_time_zone_null(ProviderGates::RetryAt))
                .col(integer(ProviderGates::ProbesFailed).default(0))
                .col(uuid_null(ProviderGates::ProbeBy))
                .col(timestamp_with_time_zone_null(ProviderGates::ProbeUntil))
                .col(text_null(ProviderGates::Reason))
                .col(timestamp_with_time_zone(ProviderGates::UpdatedAt))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(ProviderGates::Table).to_owned())
            .await
    }
}
