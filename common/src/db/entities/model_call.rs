//! Every model answer, stored the moment it arrives, keyed by (call, run, sequence number). A job
//! that runs again after a crash replays these instead of calling (and paying for) the model.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "model_calls")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub call_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub run: i32,
    #[sea_orm(primary_key, auto_increment = false)]
    pub seq: i32,
    /// `{"ok": <model json>}` or `{"error": "<kind>", "message": ...}`.
    pub outcome: Json,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// HTTP attempts the provider client made (retries included).
    pub http_attempts: i32,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
