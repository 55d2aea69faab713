//! The ledger of paid work: the one owner of a call's and a payment's state (`calls.status`,
//! `payments.status`). `status` has the states and the moves allowed between them; every move
//! is decided and written here, one function per event, each guarded by the states it may move
//! from in its UPDATE's WHERE, so that of racing writers one moves and the others are told they
//! did not (`false`, `None`, `Start::Idle`). Everything else (the gate, reconciliation,
//! recovery, the free re-run, the worker's runs) hands the ledger an event and acts on what it
//! returns. A test here (`tests::nothing_but_the_ledger_writes_a_call_or_payment_status`) checks
//! that no other module writes those columns.
//!
//! - `claim`: a new call (`settling`) and its payment's reservation (`reserved`, or taking over
//!   a `released` one), with its idempotency scope and receipt, in one transaction.
//! - `settlement`: a settlement's outcome onto the payment and its call; reservations left
//!   without one, handed to reconciliation.
//! - `call`: a run's start and takeover, completion, failure, and the free re-run.
//! - `reorg`: the reorg watch's moves of a settled payment (`settled ↔ reorged`) and its end.
//! - `pg`: those writes on PostgreSQL as one statement each (issue 12); `claim_batch`,
//!   `outcome_batch` and `run_batch`: many of them in one statement when they queue (issue 31).

mod call;
mod claim;
mod claim_batch;
mod claim_pg;
pub mod from;
mod outcome_batch;
mod pg;
mod reorg;
mod run_batch;
mod settlement;
pub mod status;

pub use call::{
    Start, Stored, complete, fail, reopen_failed, start_attempt, start_settled, take_over,
};
pub use claim::{Claim, NewCall, NewPayment, Scope, claim};
pub use claim_batch::Claims;
pub use from as call_from;
pub use outcome_batch::Outcomes;
pub use reorg::{TransferStanding, WATCHED_FROM, Watched, record_standing};
pub use run_batch::Runs;
pub use settlement::{
    Left, OUTCOME_FROM, Recorded, SETTLEMENT_FAILED, SETTLEMENT_UNAVAILABLE, Settlement, record,
    record_audited, reservations_unknown,
};
pub use status::{CallKind, CallStatus, PaymentStatus};

#[cfg(test)]
mod tests {
    /// What writes a call's or a payment's status, read with all whitespace taken out: a
    /// `col_expr` of the status column, a raw `UPDATE`/`INSERT` of either table, or a new row.
    const STATUS_WRITES: [&str; 12] = [
        "col_expr(call::Column::Status",
        "col_expr(payment::Column::Status",
        r#"UPDATE"calls""#,
        r#"UPDATE"payments""#,
        r#"UPDATEcalls"#,
        r#"UPDATEpayments"#,
        r#"INSERTINTO"calls""#,
        r#"INSERTINTO"payments""#,
        "call::Entity::insert",
        "payment::Entity::insert",
        "call::ActiveModel{",
        "payment::ActiveModel{",
    ];

    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    fn writes(path: &std::path::Path) -> Vec<&'static str> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let flat: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        // `call::…` as a path of its own, not the end of `model_call::…`.
        let found = |w: &str| {
            flat.match_indices(w).any(|(at, _)| {
                !flat[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        };
        STATUS_WRITES.into_iter().filter(|w| found(w)).collect()
    }

    /// One owner: only the ledger writes `calls.status` and `payments.status` (and creates the
    /// rows that carry them); everything else asks it.
    #[test]
    fn nothing_but_the_ledger_writes_a_call_or_payment_status() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for krate in ["src", "api/src", "common/src", "worker/src"] {
            rust_files(&root.join(krate), &mut files);
        }
        assert!(files.len() > 100, "found only {} files", files.len());
        let ledger = root.join("common/src/ledger");
        let (inside, outside): (Vec<_>, Vec<_>) =
            files.iter().partition(|p| p.starts_with(&ledger));
        let others: Vec<String> = outside
            .iter()
            .filter(|p| !writes(p).is_empty())
            .map(|p| format!("{}: {:?}", p.display(), writes(p)))
            .collect();
        assert!(
            others.is_empty(),
            "status written outside the ledger: {others:?}"
        );
        // The check sees the writes where they are: every kind of write the ledger does.
        let own: Vec<&str> = inside.iter().flat_map(|p| writes(p)).collect();
        for expected in [
            "col_expr(call::Column::Status",
            "col_expr(payment::Column::Status",
            r#"UPDATE"calls""#,
            r#"INSERTINTO"calls""#,
            r#"INSERTINTO"payments""#,
        ] {
            assert!(
                own.contains(&expected),
                "{expected} not found in the ledger"
            );
        }
    }
}
