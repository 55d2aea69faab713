//! One outside provider's health gate (`grove_common::health`): closed, or open with the time
//! of its next probe. Written only by `health::store`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_gates")]
pub struct Model {
    /// `model:<LLM_MODEL>` or `sms:twilio` (`health::ProviderId`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub provider: String,
    /// `closed` or `open` (`health::store::state`); an open gate whose probe is out is shown
    /// as half-open.
    pub state: String,
    /// How many times it opened: a process that sees this change starts its window afresh.
    pub opens: i64,
    pub opened_at: Option<DateTimeUtc>,
    pub closed_at: Option<DateTimeUtc>,
    /// While open: when the next probe is due.
    pub retry_at: Option<DateTimeUtc>,
    /// Probes that failed since it opened (their backoff doubles).
    pub probes_failed: i32,
    /// The process running the probe, and until when its lease holds.
    pub probe_by: Option<Uuid>,
    pub probe_until: Option<DateTimeUtc>,
    /// Why it opened, or why the last probe failed (a provider's message, never a request).
    pub reason: Option<String>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
