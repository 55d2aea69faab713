//! Twilio webhooks seen (issue 10): an inbound message by its `MessageSid`, a status callback by
//! sid and status. A replayed request, however validly signed, changes nothing the second time.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261123_000006_webhook_receipts"
    }
}

#[derive(DeriveIden)]
enum WebhookReceipts {
    Table,
    Key,
    ReceivedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(WebhookReceipts::Table)
                .if_not_exists()
                .col(string(WebhookReceipts::Key).primary_key())
                .col(timestamp_with_time_zone(WebhookReceipts::ReceivedAt))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(WebhookReceipts::Table).to_owned())
            .await
    }
}
