//! The states of a paid call and of its payment, and the moves allowed between them. Stored as
//! their text (`calls.status`, `payments.status`), the same strings as ever. Every move is
//! decided and written by one owner, `crate::ledger`; the tables here are what it moves along,
//! and what `docs/architecture.md` ("State machines") publishes.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Where a paid call stands.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// Paid for, but the settlement's outcome is not known yet: must not run (issue 7).
    #[sea_orm(string_value = "settling")]
    Settling,
    /// The settlement was refused: nothing was bought, nothing may run, nothing is free.
    #[sea_orm(string_value = "unpaid")]
    Unpaid,
    /// Paid for; its job is due (or queued).
    #[sea_orm(string_value = "pending")]
    Pending,
    /// A run holds the call's lease and works on it.
    #[sea_orm(string_value = "running")]
    Running,
    #[sea_orm(string_value = "completed")]
    Completed,
    /// Paid for and failed: the identical retry runs it again for free.
    #[sea_orm(string_value = "failed")]
    Failed,
}

impl CallStatus {
    /// The state a new call is recorded in.
    pub const INITIAL: CallStatus = CallStatus::Settling;

    /// Calls whose idempotency scope another request may take once its window is over: finished
    /// with a result delivered, or proven unpaid. Never one whose payment is reserved or unknown
    /// (a second payment could be charged for one piece of work) nor a paid call that has not
    /// delivered (its identical retry is owed the result, or a free re-run).
    pub const FINISHED: [CallStatus; 2] = [CallStatus::Completed, CallStatus::Unpaid];

    pub const fn as_str(self) -> &'static str {
        match self {
            CallStatus::Settling => "settling",
            CallStatus::Unpaid => "unpaid",
            CallStatus::Pending => "pending",
            CallStatus::Running => "running",
            CallStatus::Completed => "completed",
            CallStatus::Failed => "failed",
        }
    }

    /// Whether a call at `self` may move to `to`. `running → running` is a takeover: another run
    /// takes the lease of one whose process died or whose lease lapsed.
    pub fn may_become(self, to: CallStatus) -> bool {
        use CallStatus::*;
        matches!(
            (self, to),
            (Settling, Pending | Running | Unpaid)
                | (Pending, Running | Completed | Failed)
                | (Running, Running | Completed | Failed)
                | (Failed, Pending | Completed)
        )
    }

    /// Every state from which `to` may be entered.
    pub fn sources(to: CallStatus) -> Vec<CallStatus> {
        use sea_orm::Iterable;
        CallStatus::iter().filter(|s| s.may_become(to)).collect()
    }

    /// No move leaves it.
    pub fn is_terminal(self) -> bool {
        use sea_orm::Iterable;
        !CallStatus::iter().any(|to| self.may_become(to))
    }
}

impl std::fmt::Display for CallStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a payment stands. A payment is `reserved` when its call is recorded, then ends in
/// exactly one of three outcomes of the settlement (issue 7): `settled` (or `unsettled` in
/// development, where no money moves), `refused`, or `unknown` until reconciliation proves one
/// of the other two.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum PaymentStatus {
    #[sea_orm(string_value = "reserved")]
    Reserved,
    #[sea_orm(string_value = "settled")]
    Settled,
    /// Development only: verified locally, nothing moved.
    #[sea_orm(string_value = "unsettled")]
    Unsettled,
    #[sea_orm(string_value = "refused")]
    Refused,
    /// Nothing was processed, through no fault of the payer's (the facilitator refused our
    /// credentials): the reservation is handed back, and the same authorization may pay again.
    #[sea_orm(string_value = "released")]
    Released,
    /// The transfer may or may not have happened; the reconciliation sweep finds out.
    #[sea_orm(string_value = "unknown")]
    Unknown,
    /// Settled (the call delivered), then its transfer left the chain: a reorg dropped it, or it
    /// never was mined. For an operator; the reorg watch keeps looking for it to come back.
    #[sea_orm(string_value = "reorged")]
    Reorged,
}

impl PaymentStatus {
    /// The state a new payment is recorded in.
    pub const INITIAL: PaymentStatus = PaymentStatus::Reserved;

    /// States in which the call was paid for, so its work may run (and re-run for free).
    pub const PAID: [PaymentStatus; 2] = [PaymentStatus::Settled, PaymentStatus::Unsettled];

    /// States whose settlement's outcome is still to be written.
    pub const OPEN: [PaymentStatus; 2] = [PaymentStatus::Reserved, PaymentStatus::Unknown];

    /// States the reorg watch reads until the transfer is final, and moves between.
    pub const WATCHED: [PaymentStatus; 2] = [PaymentStatus::Settled, PaymentStatus::Reorged];

    pub const fn as_str(self) -> &'static str {
        match self {
            PaymentStatus::Reserved => "reserved",
            PaymentStatus::Settled => "settled",
            PaymentStatus::Unsettled => "unsettled",
            PaymentStatus::Refused => "refused",
            PaymentStatus::Released => "released",
            PaymentStatus::Unknown => "unknown",
            PaymentStatus::Reorged => "reorged",
        }
    }

    /// Whether a payment at `self` may move to `to`. `released → reserved` is a new request
    /// taking over an authorization whose reservation was handed back; `unknown → unknown` is a
    /// reconciliation check that learned nothing. `settled → reorged → settled` is the reorg
    /// watch's alone: a delivered call's transfer left the chain, then came back.
    pub fn may_become(self, to: PaymentStatus) -> bool {
        use PaymentStatus::*;
        matches!(
            (self, to),
            (
                Reserved | Unknown,
                Settled | Unsettled | Refused | Released | Unknown
            ) | (Released, Reserved)
                | (Settled, Reorged)
                | (Reorged, Settled)
        )
    }

    /// Every state from which `to` may be entered.
    pub fn sources(to: PaymentStatus) -> Vec<PaymentStatus> {
        use sea_orm::Iterable;
        PaymentStatus::iter().filter(|s| s.may_become(to)).collect()
    }

    pub fn is_terminal(self) -> bool {
        use sea_orm::Iterable;
        !PaymentStatus::iter().any(|to| self.may_become(to))
    }
}

impl std::fmt::Display for PaymentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of paid work a call buys (`calls.kind`); each is one product of the gate.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    #[sea_orm(string_value = "coaching")]
    Coaching,
    #[sea_orm(string_value = "review_request")]
    ReviewRequest,
}

impl CallKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            CallKind::Coaching => "coaching",
            CallKind::ReviewRequest => "review_request",
        }
    }
}

impl std::fmt::Display for CallKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::Iterable;

    #[test]
    fn the_stored_text_is_todays() {
        let calls: Vec<_> = CallStatus::iter().map(|s| s.to_value()).collect();
        assert_eq!(
            calls,
            [
                "settling",
                "unpaid",
                "pending",
                "running",
                "completed",
                "failed"
            ]
        );
        let payments: Vec<_> = PaymentStatus::iter().map(|s| s.to_value()).collect();
        assert_eq!(
            payments,
            [
                "reserved",
                "settled",
                "unsettled",
                "refused",
                "released",
                "unknown",
                "reorged"
            ]
        );
        let kinds: Vec<_> = CallKind::iter().map(|k| k.to_value()).collect();
        assert_eq!(kinds, ["coaching", "review_request"]);
        for s in CallStatus::iter() {
            assert_eq!(s.to_value(), s.as_str());
            assert_eq!(serde_json::to_value(s).expect("json"), s.as_str());
        }
        for s in PaymentStatus::iter() {
            assert_eq!(s.to_value(), s.as_str());
            assert_eq!(serde_json::to_value(s).expect("json"), s.as_str());
        }
        for k in CallKind::iter() {
            assert_eq!(k.to_value(), k.as_str());
        }
    }

    #[test]
    fn only_completed_and_unpaid_calls_are_final() {
        let terminal: Vec<_> = CallStatus::iter().filter(|s| s.is_terminal()).collect();
        assert_eq!(terminal, [CallStatus::Unpaid, CallStatus::Completed]);
        assert!(terminal.iter().all(|s| CallStatus::FINISHED.contains(s)));
    }

    #[test]
    fn only_a_settled_payment_lets_a_call_run() {
        use CallStatus::*;
        assert_eq!(CallStatus::sources(Pending), [Settling, Failed]);
        assert_eq!(CallStatus::sources(Unpaid), [Settling]);
        assert!(!Settling.may_become(Completed) && !Settling.may_become(Failed));
        assert!(!Unpaid.may_become(Pending), "a refused call never runs");
        assert!(
            !Completed.may_become(Pending),
            "a delivered call is never re-run"
        );
    }

    #[test]
    fn a_payment_outcome_is_written_once() {
        use PaymentStatus::*;
        for end in [Unsettled, Refused] {
            assert!(end.is_terminal(), "{end}");
            assert_eq!(PaymentStatus::sources(end), PaymentStatus::OPEN);
        }
        assert_eq!(PaymentStatus::sources(Reserved), [Released]);
    }

    #[test]
    fn only_the_reorg_watch_moves_a_settled_payment() {
        use PaymentStatus::*;
        let leaving: Vec<_> = PaymentStatus::iter()
            .filter(|to| Settled.may_become(*to))
            .collect();
        assert_eq!(leaving, [Reorged]);
        assert_eq!(PaymentStatus::sources(Reorged), [Settled]);
        let back: Vec<_> = PaymentStatus::iter()
            .filter(|to| Reorged.may_become(*to))
            .collect();
        assert_eq!(back, [Settled]);
        assert_eq!(
            PaymentStatus::sources(Settled),
            [Reserved, Unknown, Reorged]
        );
        assert!(
            !Unsettled.may_become(Reorged),
            "nothing moved, nothing to drop"
        );
    }
}
