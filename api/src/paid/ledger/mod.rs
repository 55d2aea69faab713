//! The gate's side of the ledger (`grove_common::ledger`, the one writer of calls' and
//! payments' states): a settlement's outcome as the ledger records it (`outcome`), the claim of a
//! new call under its idempotency scope, and the reads the gate makes of payments.

mod outcome;
mod settler_nonce;

pub use grove_common::ledger::{
    Claim, NewCall, NewPayment, Watched, record_standing, reopen_failed,
};
pub use outcome::{
    AuditRow, PaidRecord, record_outcome, record_outcome_audited, record_paid_outcome,
};
pub use settler_nonce::SharedNonces;

use super::idempotency::Scope;
use chrono::{DateTime, Utc};
use grove_common::{
    db::entities::{idempotency, payment},
    ledger::{self, PaymentStatus},
};
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};
use uuid::Uuid;

/// Claims `scope` for a new call paid by `pay`, or reports who already holds it
/// (`ledger::claim`). `window_start` is the clock's service reading, which measures the
/// idempotency windows (tests move it); the records themselves carry `now`, its wall reading.
pub async fn claim(
    claims: &ledger::Claims,
    scope: &Scope,
    call: NewCall,
    pay: NewPayment,
    window_start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Claim, DbErr> {
    let scope = ledger::Scope {
        key: &scope.key,
        window: scope.window,
    };
    ledger::claim(claims, scope, call, pay, window_start, now).await
}

pub async fn payment_for(
    db: &DatabaseConnection,
    call_id: Uuid,
) -> Result<Option<payment::Model>, DbErr> {
    payment::Entity::find()
        .filter(payment::Column::CallId.eq(call_id))
        .one(db)
        .await
}

/// Whether a request is a repeat: its authorization is already reserved (a payment retry), or its
/// idempotency scope is held by a call inside its window (a paid repeat, perhaps re-signed).
pub async fn is_known(
    db: &DatabaseConnection,
    payer: &str,
    nonce: &str,
    scope: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let reserved = payment::Entity::find()
        .filter(payment::Column::Payer.eq(payer))
        .filter(payment::Column::Nonce.eq(nonce))
        .one(db)
        .await?
        .is_some();
    if reserved {
        return Ok(true);
    }
    Ok(idempotency::Entity::find_by_id(scope.to_owned())
        .filter(idempotency::Column::ExpiresAt.gt(now))
        .one(db)
        .await?
        .is_some())
}

/// The reason a used authorization's settlement was refused, if it was: a repeat that arrives
/// after the refusal released the scope gets the 402 the original got, not `payment_already_used`.
pub async fn refusal_of(
    db: &DatabaseConnection,
    payer: &str,
    nonce: &str,
) -> Result<Option<String>, DbErr> {
    Ok(payment::Entity::find()
        .filter(payment::Column::Payer.eq(payer))
        .filter(payment::Column::Nonce.eq(nonce))
        .filter(payment::Column::Status.eq(PaymentStatus::Refused))
        .one(db)
        .await?
        .map(|p| p.error.unwrap_or_else(|| "settlement_refused".into())))
}
