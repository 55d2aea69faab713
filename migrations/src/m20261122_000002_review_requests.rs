//! Review requests: the tracked request, its messages (with status history), its event log,
//! the consent it relied on, the phone suppression list, and link clicks.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261122_000002_review_requests"
    }
}

#[derive(DeriveIden)]
enum ReviewRequests {
    Table,
    Id,
    CallId,
    Payer,
    Phone,
    FirstName,
    BusinessName,
    ReviewUrl,
    Zone,
    RecipientState,
    ConsentId,
    Template,
    FollowUpEnabled,
    FollowUpAfterHours,
    Status,
    SendAt,
    FollowUpDueAt,
    LinkToken,
    ClickedAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ReviewMessages {
    Table,
    Id,
    RequestId,
    Kind,
    Provider,
    ProviderId,
    Status,
    StatusHistory,
    Body,
    Encoding,
    Segments,
    ErrorCode,
    AttemptedAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ReviewEvents {
    Table,
    Id,
    RequestId,
    Kind,
    Detail,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Consents {
    Table,
    Id,
    Phone,
    BusinessName,
    Method,
    CapturedAt,
    Source,
    DisclosureText,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Suppressions {
    Table,
    Phone,
    Active,
    Reason,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum LinkClicks {
    Table,
    Id,
    RequestId,
    ClickedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(ReviewRequests::Table)
                .if_not_exists()
                .col(string(ReviewRequests::Id).primary_key())
                .col(uuid(ReviewRequests::CallId).unique_key())
                .col(string(ReviewRequests::Payer))
                .col(string(ReviewRequests::Phone))
                .col(string(ReviewRequests::FirstName))
                .col(string(ReviewRequests::BusinessName))
                .col(string(ReviewRequests::ReviewUrl))
                .col(string(ReviewRequests::Zone))
                .col(string_null(ReviewRequests::RecipientState))
                .col(uuid(ReviewRequests::ConsentId))
                .col(text_null(ReviewRequests::Template))
                .col(boolean(ReviewRequests::FollowUpEnabled))
                .col(integer(ReviewRequests::FollowUpAfterHours))
                .col(string(ReviewRequests::Status))
                .col(timestamp_with_time_zone(ReviewRequests::SendAt))
                .col(timestamp_with_time_zone_null(ReviewRequests::FollowUpDueAt))
                .col(string(ReviewRequests::LinkToken).unique_key())
                .col(timestamp_with_time_zone_null(ReviewRequests::ClickedAt))
                .col(timestamp_with_time_zone(ReviewRequests::CreatedAt))
                .col(timestamp_with_time_zone(ReviewRequests::UpdatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("review_requests_phone_created")
                .table(ReviewRequests::Table)
                .col(ReviewRequests::Phone)
                .col(ReviewRequests::CreatedAt)
                .if_not_exists()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("review_requests_status")
                .table(ReviewRequests::Table)
                .col(ReviewRequests::Status)
                .if_not_exists()
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(ReviewMessages::Table)
                .if_not_exists()
                .col(uuid(ReviewMessages::Id).primary_key())
                .col(string(ReviewMessages::RequestId))
                .col(string(ReviewMessages::Kind))
                .col(string(ReviewMessages::Provider))
                .col(string_null(ReviewMessages::ProviderId))
                .col(string(ReviewMessages::Status))
                .col(json_binary(ReviewMessages::StatusHistory))
                .col(text(ReviewMessages::Body))
                .col(string(ReviewMessages::Encoding))
                .col(integer(ReviewMessages::Segments))
                .col(integer_null(ReviewMessages::ErrorCode))
                .col(timestamp_with_time_zone_null(ReviewMessages::AttemptedAt))
                .col(timestamp_with_time_zone(ReviewMessages::CreatedAt))
                .col(timestamp_with_time_zone(ReviewMessages::UpdatedAt))
                .to_owned(),
        )
        .await?;
        // One initial message and one follow-up per request, ever: the row is the send's key.
        m.create_index(
            Index::create()
                .name("review_messages_request_kind")
                .table(ReviewMessages::Table)
                .col(ReviewMessages::RequestId)
                .col(ReviewMessages::Kind)
                .unique()
                .if_not_exists()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("review_messages_provider_id")
                .table(ReviewMessages::Table)
                .col(ReviewMessages::ProviderId)
                .if_not_exists()
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(ReviewEvents::Table)
                .if_not_exists()
                .col(uuid(ReviewEvents::Id).primary_key())
                .col(string(ReviewEvents::RequestId))
                .col(string(ReviewEvents::Kind))
                .col(json_binary(ReviewEvents::Detail))
                .col(timestamp_with_time_zone(ReviewEvents::CreatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("review_events_request")
                .table(ReviewEvents::Table)
                .col(ReviewEvents::RequestId)
                .if_not_exists()
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Consents::Table)
                .if_not_exists()
                .col(uuid(Consents::Id).primary_key())
                .col(string(Consents::Phone))
                .col(string(Consents::BusinessName))
                .col(string(Consents::Method))
                .col(timestamp_with_time_zone(Consents::CapturedAt))
                .col(text(Consents::Source))
                .col(text_null(Consents::DisclosureText))
                .col(timestamp_with_time_zone(Consents::CreatedAt))
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Suppressions::Table)
                .if_not_exists()
                .col(string(Suppressions::Phone).primary_key())
                .col(boolean(Suppressions::Active))
                .col(string(Suppressions::Reason))
                .col(timestamp_with_time_zone(Suppressions::UpdatedAt))
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(LinkClicks::Table)
                .if_not_exists()
                .col(uuid(LinkClicks::Id).primary_key())
                .col(string(LinkClicks::RequestId))
                .col(timestamp_with_time_zone(LinkClicks::ClickedAt))
                .to_owned(),
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            LinkClicks::Table.into_iden(),
            Suppressions::Table.into_iden(),
            Consents::Table.into_iden(),
            ReviewEvents::Table.into_iden(),
            ReviewMessages::Table.into_iden(),
            ReviewRequests::Table.into_iden(),
        ] {
            m.drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}
