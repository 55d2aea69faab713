//! The last review request sold for a phone: what a cooldown is measured from.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "phone_marks")]
pub struct Model {
    /// E.164.
    #[sea_orm(primary_key, auto_increment = false)]
    pub phone: String,
    /// The call that took the mark (it gives it back if its settlement is refused).
    pub call_id: Uuid,
    pub last_at: DateTimeUtc,
    /// The mark before this one, restored when the sale does not happen.
    pub previous_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
