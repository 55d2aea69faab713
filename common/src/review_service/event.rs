//! What can happen to a review request, as data: the events its owner is told ([`ReviewEvent`])
//! and the names its log records them under ([`EventKind`]).

pub use crate::review::event_kind::EventKind;
use crate::{
    jobs::ReviewStep,
    review::{MessageStatus, ReviewStatus},
};
use sea_orm::entity::prelude::Uuid;
use serde::Serialize;

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
    /// An operator recorded it (the customer phoned, wrote, asked in person: the customer's
    /// word counts from any channel); the audit table says who and why.
    Operator,
}

impl OptOutReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            OptOutReason::StopKeyword => "stop_keyword",
            OptOutReason::PlainWords => "plain_words_opt_out",
            OptOutReason::Provider => "provider_21610",
            OptOutReason::Operator => "operator",
        }
    }
}
