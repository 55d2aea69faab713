//! A tracked review request: one customer, one business, one consent, at most two messages.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "review_requests")]
pub struct Model {
    /// `rr_` + 128 random bits: unguessable, so the id itself grants access to its status.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(unique)]
    pub call_id: Uuid,
    pub payer: String,
    /// E.164; never logged, shown masked.
    pub phone: String,
    pub first_name: String,
    pub business_name: String,
    pub review_url: String,
    /// IANA zone of the recipient (the customer's, else the business's).
    pub zone: String,
    pub recipient_state: Option<String>,
    pub consent_id: Uuid,
    pub template: Option<String>,
    pub follow_up_enabled: bool,
    pub follow_up_after_hours: i32,
    pub status: crate::review::ReviewStatus,
    /// When the first message is due (the requested `send_at`, moved by quiet hours).
    pub send_at: DateTimeUtc,
    pub follow_up_due_at: Option<DateTimeUtc>,
    #[sea_orm(unique)]
    pub link_token: String,
    pub clicked_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
