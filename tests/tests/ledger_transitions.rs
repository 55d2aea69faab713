//! The ledger's tables of moves, against a real database (SQLite, or PostgreSQL with
//! `GROVE_TEST_DB=postgres`): from every state, each event moves a call or a payment exactly
//! when the table allows it, and a refused event writes nothing (the guard is in the UPDATE's
//! WHERE, so a racing writer is refused the same way).

use chrono::{Duration, Utc};
use grove_common::{
    db::{
        calls::{self, Finisher, Runner},
        entities::{call, payment, result},
    },
    ledger::{
        self, CallStatus, PaymentStatus, Settlement, Start, TransferStanding, Watched, call_from,
    },
};
use grove_tests::{TestDb, db::insert_call};
use sea_orm::{ActiveValue::Set, DatabaseConnection, EntityTrait, Iterable};
use serde_json::json;
use uuid::Uuid;

async fn call_row(db: &DatabaseConnection, id: Uuid) -> call::Model {
    calls::load(db, id).await.expect("load").expect("the call")
}

async fn payment_row(db: &DatabaseConnection, call_id: Uuid) -> payment::Model {
    use sea_orm::{ColumnTrait, QueryFilter};
    payment::Entity::find()
        .filter(payment::Column::CallId.eq(call_id))
        .one(db)
        .await
        .expect("load")
        .expect("the payment")
}

/// A payment for `call_id` in `status`, last touched an hour ago.
async fn insert_payment(db: &DatabaseConnection, call_id: Uuid, status: PaymentStatus) {
    let then = Utc::now() - Duration::hours(1);
    let row = payment::ActiveModel {
        id: Set(Uuid::now_v7()),
        call_id: Set(call_id),
        payer: Set("0x00000000000000000000000000000000000000aa".into()),
        nonce: Set(format!("0x{}", Uuid::now_v7().simple())),
        amount: Set("10000".into()),
        network: Set("eip155:8453".into()),
        x402_version: Set(2),
        status: Set(status),
        transaction: Set(None),
        error: Set(None),
        settle_request: Set(None),
        valid_before: Set(None),
        checks: Set(0),
        next_check_at: Set(None),
        sent_tx: Set(None),
        sent_tx_raw: Set(None),
        final_at: Set(None),
        created_at: Set(then),
        updated_at: Set(then),
    };
    payment::Entity::insert(row)
        .exec(db)
        .await
        .expect("payment");
}

/// A settlement's two outcomes that move a call: where each leaves it, and from where.
fn outcomes() -> [(Settlement, CallStatus, &'static [CallStatus]); 2] {
    [
        (settled(), CallStatus::Pending, &call_from::SETTLED[..]),
        (refused(), CallStatus::Unpaid, &call_from::UNPAID[..]),
    ]
}

/// A call in `from` with a reserved payment, and the call as inserted.
async fn reserved_call(db: &DatabaseConnection, from: CallStatus) -> (Uuid, call::Model) {
    let id = insert_call(db, from).await;
    insert_payment(db, id, PaymentStatus::Reserved).await;
    (id, call_row(db, id).await)
}

fn runner() -> Runner {
    Runner {
        run: Uuid::now_v7(),
        process: 1,
    }
}

fn settled() -> Settlement {
    Settlement::Settled {
        transaction: Some("0xabc".into()),
        local: false,
    }
}

fn refused() -> Settlement {
    Settlement::Refused {
        reason: "insufficient_funds".into(),
        operator_fault: false,
    }
}

/// Asserts the call moved to `to` when `allowed`, else is exactly as it was.
async fn moved_or_untouched(
    db: &DatabaseConnection,
    before: &call::Model,
    allowed: bool,
    moved: bool,
    to: CallStatus,
    event: &str,
) {
    let from = before.status;
    let after = call_row(db, before.id).await;
    assert_eq!(moved, allowed, "{event} from {from}");
    if allowed {
        assert_eq!(after.status, to, "{event} from {from}");
    } else {
        assert_eq!(&after, before, "{event} from {from} wrote nothing");
    }
}

#[tokio::test]
async fn each_call_event_moves_exactly_the_states_its_table_allows() {
    let (_test_db, db) = TestDb::migrated().await;
    for from in CallStatus::iter() {
        // A run's start (a `running` call with no lease counts as lapsed).
        let id = insert_call(&db, from).await;
        let before = call_row(&db, id).await;
        let started = matches!(
            ledger::start_attempt(&db, id, runner())
                .await
                .expect("start"),
            Start::Started(_)
        );
        let allowed = call_from::START.contains(&from);
        moved_or_untouched(&db, &before, allowed, started, CallStatus::Running, "start").await;

        // A failure, stored by something that holds no lease.
        let id = insert_call(&db, from).await;
        let before = call_row(&db, id).await;
        let failed = ledger::fail(&db, id, Finisher::Unleased, "broke")
            .await
            .expect("fail");
        let allowed = call_from::FAIL.contains(&from);
        moved_or_untouched(&db, &before, allowed, failed, CallStatus::Failed, "fail").await;

        // A completion: a refused one stores no result either.
        let id = insert_call(&db, from).await;
        let before = call_row(&db, id).await;
        let stored = ledger::complete(
            &db,
            id,
            Finisher::Unleased,
            json!({"ok": 1}),
            (0, 0),
            0,
            None,
        )
        .await
        .expect("complete");
        // A repeat of a completion (`COMPLETE_AGAIN`) moves nothing but is answered too.
        let allowed = call_from::COMPLETE_UNLEASED.contains(&from);
        moved_or_untouched(
            &db,
            &before,
            allowed,
            stored.is_some(),
            CallStatus::Completed,
            "complete",
        )
        .await;
        let result = result::Entity::find_by_id(id)
            .one(&db)
            .await
            .expect("result");
        assert_eq!(
            result.is_some(),
            allowed,
            "complete from {from}: its result"
        );

        // The free re-run of a paid failure.
        let id = insert_call(&db, from).await;
        insert_payment(&db, id, PaymentStatus::Settled).await;
        let before = call_row(&db, id).await;
        let reopened = ledger::reopen_failed(&db, id, Utc::now())
            .await
            .expect("reopen");
        let allowed = call_from::REOPEN.contains(&from);
        moved_or_untouched(
            &db,
            &before,
            allowed,
            reopened,
            CallStatus::Pending,
            "reopen",
        )
        .await;

        // A settlement's outcome, settled and refused, onto a reserved payment.
        for (outcome, to, allowed_from) in outcomes() {
            let (id, before) = reserved_call(&db, from).await;
            let recorded = ledger::record(&db, id, &outcome, Utc::now(), None)
                .await
                .expect("record");
            let allowed = allowed_from.contains(&from);
            moved_or_untouched(&db, &before, allowed, recorded.moved, to, "settlement").await;
        }
    }
}

#[tokio::test]
async fn a_settlement_with_a_run_starts_only_a_settling_call() {
    let (_test_db, db) = TestDb::migrated().await;
    for from in CallStatus::iter() {
        let id = insert_call(&db, from).await;
        insert_payment(&db, id, PaymentStatus::Reserved).await;
        let before = call_row(&db, id).await;
        let recorded = ledger::record(&db, id, &settled(), Utc::now(), Some(runner()))
            .await
            .expect("record");
        let allowed = call_from::START_SETTLED.contains(&from);
        // PostgreSQL records the outcome in one statement and leaves the start to the worker.
        let to = if recorded.started.is_some() {
            CallStatus::Running
        } else {
            CallStatus::Pending
        };
        moved_or_untouched(
            &db,
            &before,
            allowed,
            recorded.moved,
            to,
            "settled with a run",
        )
        .await;
    }
}

/// An operator's decision and its audit row are one write: from every call state, the audit row
/// is there exactly when the outcome moved the call, and a refused outcome leaves neither. The
/// row's `after` is built from what the ledger says its write left (`ledger::Left`), and that
/// is what the payment and the call hold.
#[tokio::test]
async fn an_audited_outcome_writes_its_audit_row_exactly_when_it_moves_the_call() {
    use grove_common::db::entities::{admin_audit, payment};
    use sea_orm::{ColumnTrait, QueryFilter};
    let (_test_db, db) = TestDb::migrated().await;
    for from in CallStatus::iter() {
        for (outcome, to, allowed_from) in outcomes() {
            let (id, before) = reserved_call(&db, from).await;
            let audit = |left: &ledger::Left| admin_audit::ActiveModel {
                id: Set(Uuid::now_v7()),
                operator: Set("ops".into()),
                action: Set("payment.resolve".into()),
                subject: Set(id.to_string()),
                reason: Set(Some("seen on the explorer".into())),
                before: Set(None),
                after: Set(Some(serde_json::json!({
                    "status": left.payment.to_string(),
                    "transaction": left.transaction,
                    "error": left.error,
                    "call_status": left.call.to_string(),
                }))),
                created_at: Set(Utc::now()),
            };
            let recorded = ledger::record_audited(&db, id, &outcome, Utc::now(), audit)
                .await
                .expect("record");
            let allowed = allowed_from.contains(&from);
            moved_or_untouched(&db, &before, allowed, recorded.moved, to, "audited").await;
            let audited = admin_audit::Entity::find()
                .filter(admin_audit::Column::Subject.eq(id.to_string()))
                .all(&db)
                .await
                .expect("audit rows");
            assert_eq!(
                audited.len(),
                usize::from(recorded.moved),
                "from {from}: {outcome:?}"
            );
            let Some(row) = audited.first() else {
                continue;
            };
            let paid = payment::Entity::find()
                .filter(payment::Column::CallId.eq(id))
                .one(&db)
                .await
                .expect("payment")
                .expect("a payment");
            let call = calls::load(&db, id).await.expect("call").expect("a call");
            let held = serde_json::json!({
                "status": paid.status.to_string(),
                "transaction": paid.transaction,
                "error": paid.error,
                "call_status": call.status.to_string(),
            });
            assert_eq!(row.after.as_ref(), Some(&held), "from {from}: {outcome:?}");
        }
    }
}

#[tokio::test]
async fn a_payment_takes_one_outcome_from_reserved_or_unknown_only() {
    let (_test_db, db) = TestDb::migrated().await;
    for from in PaymentStatus::iter() {
        for (outcome, to) in [
            (settled(), PaymentStatus::Settled),
            (refused(), PaymentStatus::Refused),
            (
                Settlement::Refused {
                    reason: "facilitator_unauthorized".into(),
                    operator_fault: true,
                },
                PaymentStatus::Released,
            ),
            (
                Settlement::Unknown {
                    reason: "timeout".into(),
                    sent: None,
                },
                PaymentStatus::Unknown,
            ),
        ] {
            let id = insert_call(&db, CallStatus::Settling).await;
            insert_payment(&db, id, from).await;
            let before = payment_row(&db, id).await;
            ledger::record(&db, id, &outcome, Utc::now(), None)
                .await
                .expect("record");
            let after = payment_row(&db, id).await;
            let allowed = ledger::OUTCOME_FROM.contains(&from);
            // The table's one other way into `settled` is the reorg watch's (`reorged`).
            let by_table = from.may_become(to) && from != PaymentStatus::Reorged;
            assert_eq!(allowed, by_table, "the table: {from} -> {to}");
            if allowed {
                assert_eq!(after.status, to, "{from} -> {to}");
            } else {
                assert_eq!(after, before, "{from} -> {to} wrote nothing");
                assert_eq!(
                    call_row(&db, id).await.status,
                    CallStatus::Settling,
                    "{from} -> {to}: nor moved the call"
                );
            }
        }
    }
}

#[tokio::test]
async fn only_a_stale_reservation_is_handed_to_reconciliation() {
    let (_test_db, db) = TestDb::migrated().await;
    let mut ids = Vec::new();
    for from in PaymentStatus::iter() {
        let id = insert_call(&db, CallStatus::Settling).await;
        insert_payment(&db, id, from).await;
        ids.push((from, id, payment_row(&db, id).await));
    }
    let now = Utc::now();
    let moved = ledger::reservations_unknown(&db, now - Duration::minutes(1), now)
        .await
        .expect("sweep");
    assert_eq!(moved, 1);
    for (from, id, before) in ids {
        let after = payment_row(&db, id).await;
        if from == PaymentStatus::Reserved {
            assert_eq!(after.status, PaymentStatus::Unknown);
            assert!(from.may_become(PaymentStatus::Unknown));
        } else {
            assert_eq!(after, before, "{from} untouched");
        }
    }
    // A fresh reservation waits for its own gate's outcome.
    let id = insert_call(&db, CallStatus::Settling).await;
    insert_payment(&db, id, PaymentStatus::Reserved).await;
    let cutoff = Utc::now() - Duration::hours(2);
    assert_eq!(
        ledger::reservations_unknown(&db, cutoff, Utc::now())
            .await
            .expect("sweep"),
        0
    );
}

#[tokio::test]
async fn only_the_reorg_watch_moves_a_settled_payment_and_only_between_settled_and_reorged() {
    let (_test_db, db) = TestDb::migrated().await;
    let gone = TransferStanding::Gone {
        reason: "transaction not found".into(),
    };
    for from in PaymentStatus::iter() {
        for (standing, to) in [
            (gone.clone(), PaymentStatus::Reorged),
            (TransferStanding::Final, PaymentStatus::Settled),
        ] {
            let id = insert_call(&db, CallStatus::Completed).await;
            insert_payment(&db, id, from).await;
            let before = payment_row(&db, id).await;
            let now = Utc::now();
            let watched = ledger::record_standing(&db, &before, &standing, now, now)
                .await
                .expect("watch");
            let after = payment_row(&db, id).await;
            let watched_from = ledger::WATCHED_FROM.contains(&from);
            if watched_from && from.may_become(to) {
                assert_eq!(after.status, to, "{standing:?} from {from}");
                assert_ne!(watched, Watched::Lost, "{standing:?} from {from}");
            } else if watched_from {
                // Watched, and no move: gone again (already surfaced), or final where it was.
                assert_eq!(after.status, from, "{standing:?} from {from}");
            } else {
                assert_eq!(watched, Watched::Lost, "{standing:?} from {from}");
                assert_eq!(after, before, "{standing:?} from {from} wrote nothing");
            }
        }
    }
    // A write from a stale read is refused: the watch read it settled, it is reorged now.
    let id = insert_call(&db, CallStatus::Completed).await;
    insert_payment(&db, id, PaymentStatus::Settled).await;
    let read = payment_row(&db, id).await;
    let now = Utc::now();
    let first = ledger::record_standing(&db, &read, &gone, now, now)
        .await
        .expect("watch");
    assert_eq!(first, Watched::Reorged);
    let again = ledger::record_standing(&db, &read, &gone, now, now)
        .await
        .expect("watch");
    assert_eq!(again, Watched::Lost);
    assert_eq!(payment_row(&db, id).await.status, PaymentStatus::Reorged);
}
