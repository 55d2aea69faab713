//! Where one SMS of a review request stands: our own three words (`attempting`, `unknown`,
//! `not_sent`) and the provider's statuses, in the one order they may move (CONTRACT 9: statuses
//! only move forward; the one way back, `not_sent` claimed for another try, is the service's).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// A message's status. Stored as its text (`review_messages.status` and the history entries),
/// the same words as before it was a type, and shown as it to callers.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// The row is written and the provider is being called (the at-most-once key of the SMS).
    #[sea_orm(string_value = "attempting")]
    Attempting,
    #[sea_orm(string_value = "accepted")]
    Accepted,
    #[sea_orm(string_value = "scheduled")]
    Scheduled,
    #[sea_orm(string_value = "queued")]
    Queued,
    #[sea_orm(string_value = "sending")]
    Sending,
    #[sea_orm(string_value = "sent")]
    Sent,
    #[sea_orm(string_value = "delivered")]
    Delivered,
    #[sea_orm(string_value = "undelivered")]
    Undelivered,
    #[sea_orm(string_value = "failed")]
    Failed,
    #[sea_orm(string_value = "canceled")]
    Canceled,
    /// The run that sent it died inside the provider call, or the provider's answer was lost:
    /// it may or may not have gone out.
    #[sea_orm(string_value = "unknown")]
    Unknown,
    /// The provider certainly did not take it (unreachable, refusing for now): the next try
    /// claims this row back to `attempting`, so the row stays the message's at-most-once key.
    #[sea_orm(string_value = "not_sent")]
    NotSent,
    #[sea_orm(string_value = "read")]
    Read,
}

use MessageStatus::*;

impl MessageStatus {
    /// Every status, for the one place that reads a word back.
    const ALL: [MessageStatus; 13] = [
        Attempting,
        Accepted,
        Scheduled,
        Queued,
        Sending,
        Sent,
        Delivered,
        Undelivered,
        Failed,
        Canceled,
        Unknown,
        NotSent,
        Read,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Attempting => "attempting",
            Accepted => "accepted",
            Scheduled => "scheduled",
            Queued => "queued",
            Sending => "sending",
            Sent => "sent",
            Delivered => "delivered",
            Undelivered => "undelivered",
            Failed => "failed",
            Canceled => "canceled",
            Unknown => "unknown",
            NotSent => "not_sent",
            Read => "read",
        }
    }

    /// A status word as the provider (or our store) spells it; `None` for a word we do not
    /// track (Twilio's inbound `receiving`/`received`, or one it adds later).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// A status word a provider reported: one of ours (`attempting`, `unknown`, `not_sent`)
    /// never is.
    pub fn reported(s: &str) -> Option<Self> {
        Self::parse(s).filter(|m| !matches!(m, Attempting | Unknown | NotSent))
    }

    /// The provider has the message (whatever became of it since).
    pub const fn provider_took_it(self) -> bool {
        !matches!(self, Attempting | Unknown | NotSent)
    }

    /// The message's stage: handed to the provider, on its way, sent, an outcome, read. Statuses
    /// of one stage are alternatives, not steps (`delivered` after `failed` is no progress).
    pub const fn stage(self) -> u8 {
        match self {
            Attempting => 0,
            Accepted | Scheduled | Queued => 1,
            Sending => 2,
            Sent => 3,
            Delivered | Undelivered | Failed | Canceled | Unknown | NotSent => 4,
            Read => 5,
        }
    }

    /// Whether a message at `self` takes `to`. Anything but a repeat goes while the provider has
    /// not identified the message (no sid yet: a report may overtake the send's own answer);
    /// after that, only a later stage.
    pub fn may_become(self, to: MessageStatus, provider_known: bool) -> bool {
        self != to && (!provider_known || to.stage() > self.stage())
    }
}

impl std::fmt::Display for MessageStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::Iterable;

    #[test]
    fn statuses_move_forward_once_the_provider_knows_the_message() {
        assert!(Attempting.may_become(Queued, true));
        assert!(Queued.may_become(Sent, true));
        assert!(Sent.may_become(Delivered, true));
        assert!(Delivered.may_become(Read, true));
        assert!(
            !Delivered.may_become(Sent, true),
            "a late report changes nothing"
        );
        assert!(!Delivered.may_become(Failed, true), "one outcome only");
        assert!(
            !Unknown.may_become(Unknown, false),
            "a repeat records nothing"
        );
        assert!(!Sent.may_become(Sent, true));
        // Before the provider's sid is stored, its report may overtake the send's answer.
        assert!(Sent.may_become(Queued, false));
        assert!(Unknown.may_become(Delivered, false));
    }

    #[test]
    fn the_stored_text_is_the_text_callers_see_and_reads_back() {
        assert_eq!(MessageStatus::iter().count(), MessageStatus::ALL.len());
        for s in MessageStatus::iter() {
            assert_eq!(serde_json::to_value(s).expect("json"), s.as_str());
            assert_eq!(s.to_value(), s.as_str());
            assert_eq!(MessageStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(MessageStatus::parse("received"), None);
        assert_eq!(MessageStatus::reported("delivered"), Some(Delivered));
        assert_eq!(MessageStatus::reported("unknown"), None);
        assert_eq!(MessageStatus::reported("not_sent"), None);
    }
}
