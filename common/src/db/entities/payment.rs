//! One x402 authorization, reserved by `(payer, nonce)` so that it can pay for one request only.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payments")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub call_id: Uuid,
    #[sea_orm(unique_key = "payer_nonce")]
    pub payer: String,
    #[sea_orm(unique_key = "payer_nonce")]
    pub nonce: String,
    /// Atomic USDC units, decimal string.
    pub amount: String,
    pub network: String,
    pub x402_version: i32,
    /// `reserved`, `settled`, `unsettled` (development: verified locally only) or `failed`.
    pub status: String,
    pub transaction: Option<String>,
    pub error: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
