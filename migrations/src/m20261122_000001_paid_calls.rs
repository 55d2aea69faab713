//! Paid calls: calls, payments, idempotency records, receipts, results and model calls.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261122_000001_paid_calls"
    }
}

#[derive(DeriveIden)]
enum Calls {
    Table,
    Id,
    Kind,
    Agent,
    Mode,
    Payer,
    RequestHash,
    Request,
    Status,
    Attempts,
    Runs,
    Error,
    ReceiptId,
    RequestId,
    CreatedAt,
    UpdatedAt,
    CompletedAt,
}

#[derive(DeriveIden)]
enum Results {
    Table,
    CallId,
    Body,
    InputTokens,
    OutputTokens,
    ModelCalls,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Payments {
    Table,
    Id,
    CallId,
    Payer,
    Nonce,
    Amount,
    Network,
    X402Version,
    Status,
    Transaction,
    Error,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum IdempotencyRecords {
    Table,
    Scope,
    CallId,
    RequestHash,
    ExpiresAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ModelCalls {
    Table,
    CallId,
    Run,
    Seq,
    Outcome,
    InputTokens,
    OutputTokens,
    HttpAttempts,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Receipts {
    Table,
    Id,
    CallId,
    Kind,
    CreatedAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Calls::Table)
                .if_not_exists()
                .col(uuid(Calls::Id).primary_key())
                .col(string(Calls::Kind))
                .col(string_null(Calls::Agent))
                .col(string_null(Calls::Mode))
                .col(string(Calls::Payer))
                .col(string(Calls::RequestHash))
                .col(json_binary(Calls::Request))
                .col(string(Calls::Status))
                .col(integer(Calls::Attempts).default(0))
                .col(integer(Calls::Runs).default(0))
                .col(text_null(Calls::Error))
                .col(string(Calls::ReceiptId).unique_key())
                .col(string(Calls::RequestId))
                .col(timestamp_with_time_zone(Calls::CreatedAt))
                .col(timestamp_with_time_zone(Calls::UpdatedAt))
                .col(timestamp_with_time_zone_null(Calls::CompletedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("calls_status_updated")
                .table(Calls::Table)
                .col(Calls::Status)
                .col(Calls::UpdatedAt)
                .if_not_exists()
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Results::Table)
                .if_not_exists()
                .col(uuid(Results::CallId).primary_key())
                .col(json_binary(Results::Body))
                .col(big_integer(Results::InputTokens))
                .col(big_integer(Results::OutputTokens))
                .col(integer(Results::ModelCalls))
                .col(timestamp_with_time_zone(Results::CreatedAt))
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Payments::Table)
                .if_not_exists()
                .col(uuid(Payments::Id).primary_key())
                .col(uuid(Payments::CallId))
                .col(string(Payments::Payer))
                .col(string(Payments::Nonce))
                .col(string(Payments::Amount))
                .col(string(Payments::Network))
                .col(integer(Payments::X402Version))
                .col(string(Payments::Status))
                .col(string_null(Payments::Transaction))
                .col(text_null(Payments::Error))
                .col(timestamp_with_time_zone(Payments::CreatedAt))
                .col(timestamp_with_time_zone(Payments::UpdatedAt))
                .to_owned(),
        )
        .await?;
        // One authorization pays for one request, ever.
        m.create_index(
            Index::create()
                .name("payments_payer_nonce")
                .table(Payments::Table)
                .col(Payments::Payer)
                .col(Payments::Nonce)
                .unique()
                .if_not_exists()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("payments_call")
                .table(Payments::Table)
                .col(Payments::CallId)
                .if_not_exists()
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(IdempotencyRecords::Table)
                .if_not_exists()
                .col(string(IdempotencyRecords::Scope).primary_key())
                .col(uuid(IdempotencyRecords::CallId))
                .col(string(IdempotencyRecords::RequestHash))
                .col(timestamp_with_time_zone(IdempotencyRecords::ExpiresAt))
                .col(timestamp_with_time_zone(IdempotencyRecords::CreatedAt))
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(ModelCalls::Table)
                .if_not_exists()
                .col(uuid(ModelCalls::CallId))
                .col(integer(ModelCalls::Run))
                .col(integer(ModelCalls::Seq))
                .col(json_binary(ModelCalls::Outcome))
                .col(big_integer(ModelCalls::InputTokens))
                .col(big_integer(ModelCalls::OutputTokens))
                .col(integer(ModelCalls::HttpAttempts))
                .col(timestamp_with_time_zone(ModelCalls::CreatedAt))
                .primary_key(
                    Index::create()
                        .col(ModelCalls::CallId)
                        .col(ModelCalls::Run)
                        .col(ModelCalls::Seq),
                )
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Receipts::Table)
                .if_not_exists()
                .col(string(Receipts::Id).primary_key())
                .col(uuid(Receipts::CallId))
                .col(string(Receipts::Kind))
                .col(timestamp_with_time_zone(Receipts::CreatedAt))
                .col(timestamp_with_time_zone(Receipts::ExpiresAt))
                .to_owned(),
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            Receipts::Table.into_iden(),
            ModelCalls::Table.into_iden(),
            IdempotencyRecords::Table.into_iden(),
            Payments::Table.into_iden(),
            Results::Table.into_iden(),
            Calls::Table.into_iden(),
        ] {
            m.drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}
