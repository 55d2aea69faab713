//! The claim on PostgreSQL: its four inserts as one `WITH`-chained statement, one round trip
//! instead of six (issue 12). A claim that took the scope but found the authorization used must
//! not keep the scope: the statement then raises our own error (`grove_claim_refused`, SQLSTATE
//! `GR001`), which undoes all its writes as a rollback would, without the two round trips of a
//! transaction around it. The same writes as `claim::write`, which SQLite runs on the caller's
//! thread.

use super::status::{CallKind, CallStatus, PaymentStatus};
use crate::{
    catalog::{CoachId, ModeId},
    receipt as receipts,
};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, RuntimeErr, Statement, Value,
};

/// Everything the claim writes, as bound. The JSON goes as text, written once: bound as values,
/// each would be deep-copied on the way to the driver, then written there (issue 12).
#[derive(Clone)]
pub(super) struct Row {
    pub scope: String,
    pub call_id: uuid::Uuid,
    pub request_hash: String,
    pub window_start: chrono::DateTime<chrono::Utc>,
    pub window_end: chrono::DateTime<chrono::Utc>,
    pub payment_id: uuid::Uuid,
    pub payer: String,
    pub nonce: String,
    pub amount: String,
    pub network: String,
    pub x402_version: i32,
    pub settle_request: String,
    pub valid_before: i64,
    pub now: chrono::DateTime<chrono::Utc>,
    pub kind: CallKind,
    pub agent: Option<CoachId>,
    pub mode: Option<ModeId>,
    pub request: String,
    pub receipt_id: String,
    pub request_id: String,
}

/// The scope (taken over from an expired record of a finished call, in the same statement),
/// then the payment's reservation (taken over from a released one), then the call and its
/// receipt; each part runs only if the one before it wrote its row.
static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(sql);

fn sql() -> String {
    format!(
        r#"WITH s AS (
    INSERT INTO "idempotency_records" ("scope", "call_id", "request_hash", "expires_at", "created_at")
    VALUES ($1, $2, $3, $4, $5)
    {scope_taken_over}
    RETURNING "scope"),
p AS (
    INSERT INTO "payments" ("id", "call_id", "payer", "nonce", "amount", "network", "x402_version",
        "status", "settle_request", "valid_before", "checks", "created_at", "updated_at")
    SELECT $6, $2, $7, $8, $9, $10, $11, '{reserved}', $12::json, $13, 0, $14, $14 FROM s
    {payment_taken_over}
    RETURNING "id"),
c AS (
    INSERT INTO "calls" ("id", "kind", "agent", "mode", "payer", "request_hash", "request",
        "status", "attempts", "runs", "receipt_id", "request_id", "created_at", "updated_at")
    SELECT $2, $15, $16, $17, $7, $3, $18::jsonb, '{settling}', 0, 0, $19, $20, $14, $14 FROM p),
r AS (
    INSERT INTO "receipts" ("id", "call_id", "kind", "created_at", "expires_at")
    SELECT $19, $2, $15, $14, $21 FROM p)
SELECT (SELECT count(*) FROM s) AS "scope", (SELECT count(*) FROM p) AS "paid",
    CASE WHEN (SELECT count(*) FROM s) = 1 AND (SELECT count(*) FROM p) = 0
        THEN "grove_claim_refused"('{refused}') ELSE 0 END AS "refused""#,
        scope_taken_over = scope_taken_over("$5"),
        payment_taken_over = payment_taken_over(),
        reserved = PaymentStatus::INITIAL,
        settling = CallStatus::INITIAL,
        refused = REFUSED_NONCE_USED,
    )
}

/// The scope's insert taking the place of an expired record of a finished call (`window_start`:
/// the new record's window start as the statement names it); a live record keeps the scope.
pub(super) fn scope_taken_over(window_start: &str) -> String {
    let finished = CallStatus::FINISHED.map(|s| format!("'{s}'")).join(", ");
    format!(
        r#"ON CONFLICT ("scope") DO UPDATE SET "call_id" = EXCLUDED."call_id",
        "request_hash" = EXCLUDED."request_hash", "expires_at" = EXCLUDED."expires_at",
        "created_at" = EXCLUDED."created_at"
    WHERE "idempotency_records"."expires_at" <= {window_start}
        AND EXISTS (SELECT 1 FROM "calls" WHERE "calls"."id" = "idempotency_records"."call_id"
        AND "calls"."status" IN ({finished}))"#
    )
}

/// The payment's insert taking over a released reservation of the same authorization; any
/// other holder makes it used.
pub(super) fn payment_taken_over() -> String {
    format!(
        r#"ON CONFLICT ("payer", "nonce") DO UPDATE SET "call_id" = EXCLUDED."call_id",
        "amount" = EXCLUDED."amount", "network" = EXCLUDED."network",
        "x402_version" = EXCLUDED."x402_version", "status" = EXCLUDED."status",
        "transaction" = NULL, "error" = NULL, "settle_request" = EXCLUDED."settle_request",
        "valid_before" = EXCLUDED."valid_before", "checks" = 0, "next_check_at" = NULL,
        "sent_tx" = NULL, "sent_tx_raw" = NULL, "updated_at" = EXCLUDED."updated_at"
    WHERE "payments"."status" = '{released}'"#,
        released = PaymentStatus::Released,
    )
}

/// What a claim's writes found (`write`, and `claim::write` on SQLite).
pub(super) enum Written {
    Claimed,
    ScopeHeld,
    NonceUsed,
}

/// The SQLSTATE of `grove_claim_refused` (migration `m20261125_000010_claim_refusal`).
const REFUSED: &str = "GR001";
/// Written into the statement as an SQL string literal: no quotes.
pub(super) const REFUSED_NONCE_USED: &str = "nonce_used";

/// Whether `e` is the claim refusing itself (`REFUSED`), not a failure.
fn refused(e: &DbErr) -> bool {
    let (DbErr::Query(RuntimeErr::SqlxError(err)) | DbErr::Exec(RuntimeErr::SqlxError(err))) = e
    else {
        return false;
    };
    err.as_database_error()
        .and_then(|db| db.code())
        .is_some_and(|code| code == REFUSED)
}

/// How long a claim whose answer was lost is written again while the database is unreachable.
/// No money has moved yet, so an outage is soon answered 503 as before (the minute a settled
/// outcome rides out would hold every request, and a worker may exit meanwhile); a few seconds
/// carry a claim through a dropped connection or a quick failover.
pub(super) const RIDE_OUT: std::time::Duration = std::time::Duration::from_secs(3);

/// One claim's statement (a batch of one, or a member claimed alone: `claim_batch`).
pub(super) async fn write(db: &DatabaseConnection, row: Row) -> Result<Written, DbErr> {
    let values: [Value; 21] = [
        row.scope.into(),
        row.call_id.into(),
        row.request_hash.into(),
        row.window_end.into(),
        row.window_start.into(),
        row.payment_id.into(),
        row.payer.into(),
        row.nonce.into(),
        row.amount.into(),
        row.network.into(),
        row.x402_version.into(),
        row.settle_request.into(),
        row.valid_before.into(),
        row.now.into(),
        row.kind.into(),
        row.agent.into(),
        row.mode.into(),
        row.request.into(),
        row.receipt_id.into(),
        row.request_id.into(),
        receipts::expires_at(row.now).into(),
    ];
    let counted = match db
        .query_one_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            SQL.as_str(),
            values,
        ))
        .await
    {
        Err(e) if refused(&e) => return Ok(Written::NonceUsed),
        counted => counted?.ok_or_else(|| DbErr::Custom("the claim returned no row".into()))?,
    };
    let (scope, paid): (i64, i64) = (counted.try_get("", "scope")?, counted.try_get("", "paid")?);
    Ok(match (scope, paid) {
        (0, _) => Written::ScopeHeld,
        // Refused above: a statement that took the scope without the payment raises.
        (_, 0) => Written::NonceUsed,
        _ => Written::Claimed,
    })
}
