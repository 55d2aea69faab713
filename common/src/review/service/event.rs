//! What can happen to a review request, as data: the events its owner is told ([`ReviewEvent`])
//! and the names its log records them under ([`EventKind`]).

use crate::{
    jobs::ReviewStep,
    review::{MessageStatus, ReviewStatus},
};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Something that happened to one request, parsed by whoever saw it (a job, a webhook, a route).
#[derive(Clone, Debug, PartialEq)]
pub enum ReviewEvent {
    /// The first message's time has come (its job, or the sweeper). On a send whose outcome is
    /// unconfirmed it means: find out again.
    SendDue,
    /// The reminder's time has come; on an unconfirmed reminder, find out again.
    FollowUpDue,
    /// The message could not be rendered (its stored template no longer renders): no send.
    CannotRender { kind: MessageKind },
    /// The provider answered a send with its message id.
    ProviderAccepted {
        message: Uuid,
        provider_id: String,
        status: MessageStatus,
    },
    /// The provider answered a send and certainly did not take it.
    ProviderRefused { message: Uuid, refusal: Refusal },
    /// The send's answer was lost or says nothing (a timeout, a 5xx): the text may have gone.
    OutcomeUnknown { message: Uuid, code: Option<i32> },
    /// The provider said what became of a message: a status callback, or a lookup that found it.
    Reported(Report),
    /// A lookup of the messages sent to the recipient found none with this message's text.
    NothingListed { message: Uuid },
    /// An inbound HELP, or a reply that is neither a keyword nor a revocation.
    Replied { help: bool, text: String },
    /// The tracked link was opened.
    Clicked,
    /// The caller cancelled.
    Cancelled,
    /// 24 h at `sent` without a delivery report: go on as if delivered then.
    DeliveryReportOverdue,
}

/// Which message of a request, and the stops of the road its send passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    Initial,
    FollowUp,
}

impl MessageKind {
    /// As stored in `review_messages.kind`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MessageKind::Initial => crate::db::reviews::message_kind::INITIAL,
            MessageKind::FollowUp => crate::db::reviews::message_kind::FOLLOW_UP,
        }
    }

    pub fn parse(kind: &str) -> Self {
        if kind == crate::db::reviews::message_kind::FOLLOW_UP {
            MessageKind::FollowUp
        } else {
            MessageKind::Initial
        }
    }

    /// The job that sends this message.
    pub const fn step(self) -> ReviewStep {
        match self {
            MessageKind::Initial => ReviewStep::Send,
            MessageKind::FollowUp => ReviewStep::FollowUp,
        }
    }

    /// Where a request waits while this message is being sent.
    pub const fn pending(self) -> ReviewStatus {
        match self {
            MessageKind::Initial => ReviewStatus::Sending,
            MessageKind::FollowUp => ReviewStatus::FollowUpScheduled,
        }
    }

    /// Where it goes when the provider took the message.
    pub const fn sent(self) -> ReviewStatus {
        match self {
            MessageKind::Initial => ReviewStatus::Sent,
            MessageKind::FollowUp => ReviewStatus::FollowUpSent,
        }
    }

    /// Where it waits while the service finds out whether the message went.
    pub const fn unconfirmed(self) -> ReviewStatus {
        match self {
            MessageKind::Initial => ReviewStatus::Unconfirmed,
            MessageKind::FollowUp => ReviewStatus::FollowUpUnconfirmed,
        }
    }

    /// Where it ends when the message did not go: a first message that never went fails the
    /// request; a reminder that never went leaves it complete.
    pub const fn not_sent(self) -> ReviewStatus {
        match self {
            MessageKind::Initial => ReviewStatus::Failed,
            MessageKind::FollowUp => ReviewStatus::Completed,
        }
    }
}

/// How a provider refused a send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 21610: the recipient texted STOP to this sender.
    OptedOut { code: i32 },
    /// For good: the number cannot receive, or the request is wrong. A real failure.
    Rejected { code: Option<i32> },
    /// Unreachable or refusing for now (connection refused, 429, 20503) before taking anything:
    /// tried again later while the request's send window is open.
    Unavailable { code: Option<i32> },
}

/// One report of a message's status, from the provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub message: Uuid,
    pub provider_id: String,
    pub status: MessageStatus,
    pub error_code: Option<i32>,
    pub source: ReportSource,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportSource {
    /// A signed status callback.
    Callback,
    /// Our lookup of the messages sent to the recipient.
    Lookup,
    /// The send's own answer, arriving after its outcome was given up for unknown.
    Answer,
}

/// Why a phone is suppressed; stored as the suppression's reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptOutReason {
    StopKeyword,
    PlainWords,
    /// Twilio error 21610, at send time or in a report.
    Provider,
}

impl OptOutReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            OptOutReason::StopKeyword => "stop_keyword",
            OptOutReason::PlainWords => "plain_words_opt_out",
            OptOutReason::Provider => "provider_21610",
        }
    }
}

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
