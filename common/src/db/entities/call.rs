//! A paid call: what was asked, by whom, and where its work stands.

use crate::catalog::ids::{CoachId, ModeId};
use crate::ledger::status::{CallKind, CallStatus};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "calls")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub kind: CallKind,
    /// The coach and mode of a coaching call (none for a review request).
    pub agent: Option<CoachId>,
    pub mode: Option<ModeId>,
    /// Lowercase 0x address recovered from the payment.
    pub payer: String,
    /// sha256 of the path and the canonical body: what "the same request" means.
    pub request_hash: String,
    pub request: Json,
    pub status: CallStatus,
    /// How many times a job started on this call (at-least-once delivery shows up here).
    pub attempts: i32,
    /// Free re-runs after a failure start a new run (model answers are kept per run).
    pub runs: i32,
    pub error: Option<String>,
    #[sea_orm(unique)]
    pub receipt_id: String,
    pub request_id: String,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub completed_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
