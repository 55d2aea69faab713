//! Every operator action (issue 28): who (the name of the operator's token), what, on what, when,
//! and the state before and after, as JSON. Rows are only ever inserted.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261127_000023_admin_audit"
    }
}

#[derive(DeriveIden)]
enum AdminAudit {
    Table,
    Id,
    Operator,
    Action,
    Subject,
    Reason,
    Before,
    After,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(AdminAudit::Table)
                .if_not_exists()
                .col(uuid(AdminAudit::Id).primary_key())
                .col(string(AdminAudit::Operator))
                .col(string(AdminAudit::Action))
                .col(string(AdminAudit::Subject))
                .col(text_null(AdminAudit::Reason))
                .col(json_null(AdminAudit::Before))
                .col(json_null(AdminAudit::After))
                .col(timestamp_with_time_zone(AdminAudit::CreatedAt))
                .to_owned(),
        )
        .await?;
        // The console and `grove-admin audit` read the newest first; lookups by subject too.
        m.create_index(
            Index::create()
                .name("admin_audit_created_at")
                .table(AdminAudit::Table)
                .col(AdminAudit::CreatedAt)
                .if_not_exists()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("admin_audit_subject")
                .table(AdminAudit::Table)
                .col(AdminAudit::Subject)
                .if_not_exists()
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(AdminAudit::Table).to_owned())
            .await
    }
}
