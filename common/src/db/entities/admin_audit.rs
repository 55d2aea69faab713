//! The audit of operator actions, append-only: who (the operator token's name), what, on what,
//! why, when, and the state before and after.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "admin_audit")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// The name of the token the operator presented (`ADMIN_TOKENS`).
    pub operator: String,
    /// `payment.resolve`, `opt_out.add`, `opt_out.remove`.
    pub action: String,
    /// What was acted on: a payment id, a phone number.
    pub subject: String,
    /// The operator's own words, when the action asks for them.
    pub reason: Option<String>,
    pub before: Option<Json>,
    pub after: Option<Json>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
