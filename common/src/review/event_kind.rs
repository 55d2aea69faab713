//! The names of the entries in a review request's log (`review_events.kind`): a state the
//! request entered, or something that happened without a change of state. A type, so that no
//! writer can log a name the readers do not know; stored as the texts the log always used.

use crate::review::ReviewStatus;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// The name of an entry in a request's log: a state it entered, or something that happened
/// without a change of state. Stored as its text; the texts are those the log always used.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    #[sea_orm(string_value = "scheduled")]
    Scheduled,
    #[sea_orm(string_value = "deferred_quiet_hours")]
    #[serde(rename = "deferred_quiet_hours")]
    Deferred,
    #[sea_orm(string_value = "sending")]
    Sending,
    #[sea_orm(string_value = "unconfirmed")]
    Unconfirmed,
    #[sea_orm(string_value = "sent")]
    Sent,
    #[sea_orm(string_value = "delivered")]
    Delivered,
    #[sea_orm(string_value = "follow_up_scheduled")]
    FollowUpScheduled,
    #[sea_orm(string_value = "follow_up_unconfirmed")]
    FollowUpUnconfirmed,
    #[sea_orm(string_value = "follow_up_sent")]
    FollowUpSent,
    #[sea_orm(string_value = "completed")]
    Completed,
    #[sea_orm(string_value = "opted_out")]
    OptedOut,
    #[sea_orm(string_value = "failed")]
    Failed,
    #[sea_orm(string_value = "cancelled")]
    Cancelled,
    /// The reminder is due outside the recipient's window and waits for it.
    #[sea_orm(string_value = "follow_up_deferred_quiet_hours")]
    #[serde(rename = "follow_up_deferred_quiet_hours")]
    FollowUpDeferred,
    /// The provider could not take the first message: it is tried again at `retry_at`.
    #[sea_orm(string_value = "send_postponed")]
    SendPostponed,
    /// The same, for the reminder.
    #[sea_orm(string_value = "follow_up_postponed")]
    FollowUpPostponed,
    /// The provider reported (or a lookup found) a message whose send's outcome was unknown.
    #[sea_orm(string_value = "provider_reported_after_unknown")]
    ProviderReportedAfterUnknown,
    /// A send whose outcome was unknown turned out to have gone: the request resumes.
    #[sea_orm(string_value = "send_outcome_recovered")]
    SendOutcomeRecovered,
    #[sea_orm(string_value = "clicked")]
    Clicked,
    #[sea_orm(string_value = "help_requested")]
    HelpRequested,
    #[sea_orm(string_value = "reply_received")]
    ReplyReceived,
}

impl From<ReviewStatus> for EventKind {
    fn from(status: ReviewStatus) -> Self {
        match status {
            ReviewStatus::Scheduled => EventKind::Scheduled,
            ReviewStatus::Deferred => EventKind::Deferred,
            ReviewStatus::Sending => EventKind::Sending,
            ReviewStatus::Unconfirmed => EventKind::Unconfirmed,
            ReviewStatus::Sent => EventKind::Sent,
            ReviewStatus::Delivered => EventKind::Delivered,
            ReviewStatus::FollowUpScheduled => EventKind::FollowUpScheduled,
            ReviewStatus::FollowUpUnconfirmed => EventKind::FollowUpUnconfirmed,
            ReviewStatus::FollowUpSent => EventKind::FollowUpSent,
            ReviewStatus::Completed => EventKind::Completed,
            ReviewStatus::OptedOut => EventKind::OptedOut,
            ReviewStatus::Failed => EventKind::Failed,
            ReviewStatus::Cancelled => EventKind::Cancelled,
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::Iterable;

    #[test]
    fn a_state_entered_is_logged_under_the_state_s_own_text() {
        for s in ReviewStatus::iter() {
            assert_eq!(EventKind::from(s).to_value(), s.as_str());
        }
    }

    #[test]
    fn the_stored_text_is_the_text_callers_see() {
        for k in EventKind::iter() {
            assert_eq!(serde_json::to_value(k).expect("json"), k.to_value());
        }
        assert_eq!(
            EventKind::FollowUpDeferred.to_value(),
            "follow_up_deferred_quiet_hours"
        );
    }
}
