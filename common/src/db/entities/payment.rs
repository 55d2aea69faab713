//! One x402 authorization, reserved by `(payer, nonce)` so that it can pay for one request only.

use crate::ledger::status::PaymentStatus;
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
    pub status: PaymentStatus,
    pub transaction: Option<String>,
    pub error: Option<String>,
    /// The exact `/settle` body, kept so reconciliation re-posts the identical payload.
    pub settle_request: Option<Json>,
    /// The authorization's `validBefore` (unix seconds): unused after it, it never will be.
    pub valid_before: Option<i64>,
    /// Reconciliation checks made so far.
    pub checks: i32,
    /// When the reconciliation sweep looks at an unknown payment next (also its lease).
    pub next_check_at: Option<DateTimeUtc>,
    /// While the outcome is unknown: a transaction that may carry it (a facilitator named it, or
    /// we sent it), which reconciliation follows.
    pub sent_tx: Option<String>,
    /// That transaction's signed bytes (0x-hex) when we sent it ourselves.
    pub sent_tx_raw: Option<String>,
    /// When a settled payment's transfer was seen at the `safe` block: the reorg watch stops.
    pub final_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
