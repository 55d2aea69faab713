//! One SMS of a review request (`initial` or `follow_up`). The row exists before the provider is
//! called, so a re-run job finds it and never sends the same message twice.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "review_messages")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub request_id: String,
    pub kind: String,
    pub provider: String,
    pub provider_id: Option<String>,
    /// `attempting` (row written, provider not yet answered), then the provider's statuses.
    pub status: crate::review::MessageStatus,
    /// `[{"status", "at", "error_code"?}]`, oldest first.
    pub status_history: Json,
    pub body: String,
    pub encoding: String,
    pub segments: i32,
    pub error_code: Option<i32>,
    pub attempted_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
