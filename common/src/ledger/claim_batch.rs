//! Many claims in one statement on PostgreSQL (issue 31). Ten thousand paid calls arriving at
//! once each wanted one of the api's pooled connections for its claim, and on a slow machine the
//! last waited out the pool's ten seconds and were answered 503; each claim was also a round
//! trip, a wake-up of a server process and a commit of its own. Claims that queue now share one
//! statement (`db::batch::Batcher`): the same four inserts as `claim_pg`, for every member at
//! once, each member's parts joined by its own call id.
//!
//! A batch keeps the single claim's answers exactly, or hands a member to the single statement:
//! - a member whose authorization is held by a live reservation (a repeat of a paid call, or a
//!   used authorization) is left out of the batch's writes and claimed alone, where the scope
//!   and the refusal are decided as they always were;
//! - a member whose scope or authorization another member of the same batch also names is
//!   claimed alone (one statement cannot insert two rows for one key);
//! - a member that took its scope but found its authorization taken in the meantime (a race
//!   the check above could not see) makes the statement raise `GR001`, undoing every write of
//!   the batch, and each member is claimed alone;
//! - a lost connection is each member's lost connection: every member gets an error of the
//!   same kind (`outage::answer_lost` or not), so each rides it out and reads whose scope it
//!   found as a single claim does (`claim::claim`).
//!
//! A batch of one is the single statement, so an idle service runs exactly what it ran before.

use super::claim_pg::{self, Row, Written};
use super::status::{CallStatus, PaymentStatus};
use crate::db::{
    batch::{self, Batched},
    outage,
};
use sea_orm::{DatabaseConnection, DbErr, Value};
use std::{
    collections::HashSet,
    sync::{Arc, LazyLock, atomic::AtomicU64},
};

/// Claims on one database: batched on PostgreSQL, written by the caller on SQLite.
#[derive(Clone)]
pub struct Claims(Batched<Row, Written>);

impl Claims {
    /// `max_batch` claims in a statement at most (`DATABASE_WRITE_BATCH`; 1: each alone).
    pub fn new(db: DatabaseConnection, max_batch: usize) -> Self {
        Self(Batched::new(db, max_batch, run))
    }

    /// How many claims so far were answered by a statement they shared with another.
    pub fn shared(&self) -> u64 {
        self.0.shared()
    }

    /// How long the oldest claims waiting for a batch has waited.
    pub fn waited(&self) -> std::time::Duration {
        self.0.waited()
    }

    pub fn db(&self) -> &DatabaseConnection {
        self.0.db()
    }

    /// The statement a batch of claims runs, its members the JSON array bound as `$1` (for a
    /// test of the plan PostgreSQL makes of it).
    pub fn batch_statement() -> &'static str {
        SQL.as_str()
    }

    /// What the claim's writes found, and whether an earlier attempt may have written them: an
    /// attempt whose answer was lost (the connection failed under the statement) may have
    /// committed, so the same writes, with the same ids, are sent again through the blip.
    /// Finding the scope held then may mean finding this claim's own record (`claim::claim`
    /// reads whose).
    pub(super) async fn write_knowing(&self, row: &Row) -> Result<(Written, bool), DbErr> {
        outage::knowing("a claim", claim_pg::RIDE_OUT, || self.write(row.clone())).await
    }

    /// One claim's writes, in the next batch (PostgreSQL only).
    async fn write(&self, row: Row) -> Result<Written, DbErr> {
        match self.0.submit(row).await {
            Ok(written) => written,
            Err(row) => claim_pg::write(self.db(), row).await,
        }
    }
}

async fn run(
    db: DatabaseConnection,
    shared: Arc<AtomicU64>,
    rows: Vec<Row>,
) -> Vec<Result<Written, DbErr>> {
    // The first member naming a scope or an authorization goes in the batch; a later one alone.
    let (mut scopes, mut payments) = (HashSet::new(), HashSet::new());
    let together: Vec<bool> = rows
        .iter()
        .map(|r| {
            let scope = scopes.insert(r.scope.as_str());
            let payment = payments.insert((r.payer.as_str(), r.nonce.as_str()));
            scope && payment
        })
        .collect();
    batch::write(
        "claims",
        rows,
        &together,
        members,
        |members, n| write_many(&db, members, n),
        |row| claim_pg::write(&db, row),
        &shared,
    )
    .await
}

/// A value's text as bound (an enum's stored name), or null.
fn text(v: impl Into<Value>) -> Option<String> {
    match v.into() {
        Value::String(s) => s,
        _ => None,
    }
}

/// The members as one JSON array for `json_to_recordset`.
fn members(rows: &[&Row]) -> String {
    batch::json(rows, |r| {
        serde_json::json!({
            "scope": r.scope,
            "call_id": r.call_id,
            "request_hash": r.request_hash,
            "window_end": batch::at(r.window_end),
            "window_start": batch::at(r.window_start),
            "payment_id": r.payment_id,
            "payer": r.payer,
            "nonce": r.nonce,
            "amount": r.amount,
            "network": r.network,
            "x402_version": r.x402_version,
            "settle_request": r.settle_request,
            "valid_before": r.valid_before,
            "now": batch::at(r.now),
            "kind": text(r.kind),
            "agent": text(r.agent),
            "mode": text(r.mode),
            "request": r.request,
            "receipt_id": r.receipt_id,
            "request_id": r.request_id,
            "expires_at": batch::at(crate::receipt::expires_at(r.now)),
        })
    })
}

/// For each member (`members`, in order): what its writes found, or None for a member left out
/// because its authorization is held (it is claimed alone).
async fn write_many(
    db: &DatabaseConnection,
    members: String,
    n: usize,
) -> Result<Vec<Option<Written>>, DbErr> {
    batch::query(db, SQL.as_str(), members, n, |row| {
        let (free, scope, paid): (bool, bool, bool) = (
            row.try_get("", "free")?,
            row.try_get("", "scope")?,
            row.try_get("", "paid")?,
        );
        Ok(match (free, scope, paid) {
            (false, _, _) => None,
            (true, false, _) => Some(Written::ScopeHeld),
            (true, true, true) => Some(Written::Claimed),
            // The statement raises rather than answer this; claimed alone if it ever did.
            (true, true, false) => None,
        })
    })
    .await
}

/// The claim's statement (`claim_pg`) for many members: `b` the members, `f` those whose
/// authorization no live reservation holds; then the scope, the payment, the call and its
/// receipt as there, each part joined to its member by the call's id. `f`'s check is a
/// subquery with a `LIMIT`, which the planner runs per member on the `(payer, nonce)` index: as
/// `NOT EXISTS` it became a hash anti-join over a scan of every payment, once per batch
/// (`pg_stat_user_tables`: 457,938 rows read by 276 scans in one `--bin paid` run).
static SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        r#"WITH b AS (
    SELECT * FROM json_to_recordset($1::json) AS b("i" int, "scope" text, "call_id" uuid,
        "request_hash" text, "window_end" timestamptz, "window_start" timestamptz,
        "payment_id" uuid, "payer" text, "nonce" text, "amount" text, "network" text,
        "x402_version" int, "settle_request" text, "valid_before" bigint, "now" timestamptz,
        "kind" text, "agent" text, "mode" text, "request" text, "receipt_id" text,
        "request_id" text, "expires_at" timestamptz)),
f AS (
    SELECT b.* FROM b WHERE (SELECT 1 FROM "payments" q
        WHERE q."payer" = b."payer" AND q."nonce" = b."nonce" AND q."status" <> '{released}'
        LIMIT 1) IS NULL),
s AS (
    INSERT INTO "idempotency_records" ("scope", "call_id", "request_hash", "expires_at", "created_at")
    SELECT "scope", "call_id", "request_hash", "window_end", "window_start" FROM f
    {scope_taken_over}
    RETURNING "call_id"),
p AS (
    INSERT INTO "payments" ("id", "call_id", "payer", "nonce", "amount", "network", "x402_version",
        "status", "settle_request", "valid_before", "checks", "created_at", "updated_at")
    SELECT f."payment_id", f."call_id", f."payer", f."nonce", f."amount", f."network",
        f."x402_version", '{reserved}', f."settle_request"::json, f."valid_before", 0, f."now",
        f."now"
    FROM f JOIN s ON s."call_id" = f."call_id"
    {payment_taken_over}
    RETURNING "call_id"),
c AS (
    INSERT INTO "calls" ("id", "kind", "agent", "mode", "payer", "request_hash", "request",
        "status", "attempts", "runs", "receipt_id", "request_id", "created_at", "updated_at")
    SELECT f."call_id", f."kind", f."agent", f."mode", f."payer", f."request_hash",
        f."request"::jsonb, '{settling}', 0, 0, f."receipt_id", f."request_id", f."now", f."now"
    FROM f JOIN p ON p."call_id" = f."call_id"),
r AS (
    INSERT INTO "receipts" ("id", "call_id", "kind", "created_at", "expires_at")
    SELECT f."receipt_id", f."call_id", f."kind", f."now", f."expires_at"
    FROM f JOIN p ON p."call_id" = f."call_id")
SELECT b."i",
    EXISTS (SELECT 1 FROM f WHERE f."call_id" = b."call_id") AS "free",
    EXISTS (SELECT 1 FROM s WHERE s."call_id" = b."call_id") AS "scope",
    EXISTS (SELECT 1 FROM p WHERE p."call_id" = b."call_id") AS "paid",
    CASE WHEN EXISTS (SELECT 1 FROM s WHERE NOT EXISTS (SELECT 1 FROM p WHERE p."call_id" = s."call_id"))
        THEN "grove_claim_refused"('{refused}') ELSE 0 END AS "refused"
FROM b"#,
        scope_taken_over = claim_pg::scope_taken_over(r#"EXCLUDED."created_at""#),
        payment_taken_over = claim_pg::payment_taken_over(),
        released = PaymentStatus::Released,
        reserved = PaymentStatus::INITIAL,
        settling = CallStatus::INITIAL,
        refused = claim_pg::REFUSED_NONCE_USED,
    )
});
