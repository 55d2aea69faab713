//! Idempotency records: a scope (keyed or derived from the body) that points at the call which
//! answers every repeat inside the window.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "idempotency_records")]
pub struct Model {
    /// `key:{payer}:{Idempotency-Key}` or `body:{sha256}`; keyed and keyless never collide.
    #[sea_orm(primary_key, auto_increment = false)]
    pub scope: String,
    pub call_id: Uuid,
    pub request_hash: String,
    pub expires_at: DateTimeUtc,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
