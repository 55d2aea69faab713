//! A review request's states and the one-way road between them (CONTRACT 9). Every change of a
//! request's state, wherever it happens (the paid call, the send and follow-up jobs, the
//! sweeper, the delivery and inbound webhooks, a cancel, a click), is decided and written by
//! one owner, `review_service`; the road here is what it moves along (the few named moves off
//! it are listed there and in `docs/review-requests.md`).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Where a review request stands. Stored as its text (`status` column), shown as it to callers.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// Paid for and recorded; the first message is due at `send_at`.
    #[sea_orm(string_value = "scheduled")]
    Scheduled,
    /// Due outside the recipient's sending window: moved to the window's opening.
    #[sea_orm(string_value = "deferred_quiet_hours")]
    #[serde(rename = "deferred_quiet_hours")]
    Deferred,
    /// A run is sending the first message (its message row says whether the provider was called).
    #[sea_orm(string_value = "sending")]
    Sending,
    /// The first message's send may or may not have reached the provider (its answer was lost,
    /// or its run died inside the call): never shown as a failure. The service asks the
    /// provider and moves on to `sent`/`delivered`, or to `failed` once it is sure nothing went.
    #[sea_orm(string_value = "unconfirmed")]
    Unconfirmed,
    #[sea_orm(string_value = "sent")]
    Sent,
    #[sea_orm(string_value = "delivered")]
    Delivered,
    #[sea_orm(string_value = "follow_up_scheduled")]
    FollowUpScheduled,
    /// As `unconfirmed`, for the reminder.
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
}

use ReviewStatus::*;

impl ReviewStatus {
    /// The state a paid request is recorded in.
    pub const INITIAL: ReviewStatus = Scheduled;

    /// The road's stops in order. A terminal state lies past all of them.
    const ROAD: [ReviewStatus; 9] = [
        Scheduled,
        Deferred,
        Sending,
        Unconfirmed,
        Sent,
        Delivered,
        FollowUpScheduled,
        FollowUpUnconfirmed,
        FollowUpSent,
    ];

    /// States a request never leaves (but for the one recovery in `review_service`: a first
    /// send whose outcome was unknown, found or reported sent after all).
    pub const TERMINAL: [ReviewStatus; 4] = [Completed, OptedOut, Failed, Cancelled];

    pub const fn as_str(self) -> &'static str {
        match self {
            Scheduled => "scheduled",
            Deferred => "deferred_quiet_hours",
            Sending => "sending",
            Unconfirmed => "unconfirmed",
            Sent => "sent",
            Delivered => "delivered",
            FollowUpScheduled => "follow_up_scheduled",
            FollowUpUnconfirmed => "follow_up_unconfirmed",
            FollowUpSent => "follow_up_sent",
            Completed => "completed",
            OptedOut => "opted_out",
            Failed => "failed",
            Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        Self::TERMINAL.contains(&self)
    }

    fn rank(self) -> usize {
        Self::ROAD
            .iter()
            .position(|s| *s == self)
            .unwrap_or(usize::MAX)
    }

    /// Whether a request at `self` may move to `to`: only forward, from a state that is not
    /// terminal. A deferred send may be deferred again; nothing else repeats or goes back.
    pub fn may_become(self, to: ReviewStatus) -> bool {
        !self.is_terminal() && (self.rank() < to.rank() || (self == Deferred && to == Deferred))
    }

    /// Every state from which `to` may be entered.
    pub fn sources(to: ReviewStatus) -> Vec<ReviewStatus> {
        Self::ROAD
            .into_iter()
            .filter(|from| from.may_become(to))
            .collect()
    }

    /// The first message has not been attempted yet: it is due, or waits for its window.
    pub fn awaits_first_send(self) -> bool {
        matches!(self, Scheduled | Deferred)
    }

    /// A click completes a request from here (no reminder after it). A click on an unconfirmed
    /// send is the proof that it arrived.
    pub fn completes_on_click(self) -> bool {
        matches!(
            self,
            Unconfirmed | Sent | Delivered | FollowUpScheduled | FollowUpUnconfirmed
        )
    }

    /// A send whose outcome the service is still finding out (first message or reminder).
    pub fn is_unconfirmed(self) -> bool {
        matches!(self, Unconfirmed | FollowUpUnconfirmed)
    }
}

impl std::fmt::Display for ReviewStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::Iterable;

    #[test]
    fn the_road_only_goes_forward() {
        assert!(Scheduled.may_become(Sending));
        assert!(Sending.may_become(Sent));
        assert!(Sending.may_become(Unconfirmed));
        assert!(Unconfirmed.may_become(Sent) && Unconfirmed.may_become(Delivered));
        assert!(
            !Sent.may_become(Unconfirmed),
            "a known send never becomes unknown"
        );
        assert!(FollowUpScheduled.may_become(FollowUpUnconfirmed));
        assert!(FollowUpUnconfirmed.may_become(FollowUpSent));
        assert!(Sent.may_become(Delivered));
        assert!(Delivered.may_become(FollowUpScheduled));
        assert!(FollowUpScheduled.may_become(FollowUpSent));
        assert!(!Sent.may_become(Sending), "no way back");
        assert!(!Delivered.may_become(Sent), "a late report changes nothing");
        assert!(!Sent.may_become(Sent), "a duplicate changes nothing");
        assert!(
            Deferred.may_become(Deferred),
            "a deferral may be deferred again"
        );
    }

    #[test]
    fn every_open_state_may_end_and_no_end_may_move() {
        for from in ReviewStatus::iter().filter(|s| !s.is_terminal()) {
            for end in ReviewStatus::TERMINAL {
                assert!(from.may_become(end), "{from} -> {end}");
            }
        }
        for end in ReviewStatus::TERMINAL {
            for to in ReviewStatus::iter() {
                assert!(!end.may_become(to), "{end} -> {to}");
            }
        }
    }

    #[test]
    fn sources_are_exactly_the_states_that_may_move_there() {
        assert_eq!(ReviewStatus::sources(Scheduled), vec![]);
        assert_eq!(ReviewStatus::sources(Deferred), vec![Scheduled, Deferred]);
        assert_eq!(
            ReviewStatus::sources(Cancelled),
            ReviewStatus::ROAD.to_vec()
        );
    }

    #[test]
    fn the_stored_text_is_the_text_callers_see() {
        for s in ReviewStatus::iter() {
            assert_eq!(serde_json::to_value(s).expect("json"), s.as_str());
            assert_eq!(s.to_value(), s.as_str());
        }
        assert_eq!(Deferred.as_str(), "deferred_quiet_hours");
    }
}
