//! The settler key's next transaction nonce, shared by every `api` replica that settles with it
//! (issue 25 item 6): a send holds the key's row locked from picking a nonce until the node has
//! answered, so two replicas never sign the same nonce. `next_nonce` is NULL when the chain must
//! be asked (after a send whose fate is unknown).

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261127_000022_settler_nonces"
    }
}

#[derive(DeriveIden)]
enum SettlerNonces {
    Table,
    Settler,
    NextNonce,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(SettlerNonces::Table)
                .if_not_exists()
                .col(string(SettlerNonces::Settler).primary_key())
                .col(big_integer_null(SettlerNonces::NextNonce))
                .col(timestamp_with_time_zone(SettlerNonces::UpdatedAt))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(SettlerNonces::Table).to_owned())
            .await
    }
}
