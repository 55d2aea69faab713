//! The delivered result of a call, exactly as first returned (receipt included).

use sea_orm::entity::prelude::*;

/// Serializable so that a worker can hand a committed result to the waiting API process with
/// its completion message (`crate::completion`), which then need not read it back.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize, serde::Deserialize)]
#[sea_orm(table_name = "results")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub call_id: Uuid,
    pub body: Json,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Model calls made for this result, over every attempt.
    pub model_calls: i32,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
