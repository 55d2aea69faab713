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
    batch::{self, Batcher, Run},
    outage,
};
use futures::future::join_all;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement, Value};
use std::{
    collections::HashSet,
    sync::{
        Arc, LazyLock,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
};

/// Batches run at once: one writing while the next gathers, and a second so that a commit's
/// flush does not stop every claim.
const IN_FLIGHT: usize = 2;

/// Claims on one database: batched on PostgreSQL, written by the caller on SQLite.
#[derive(Clone)]
pub struct Claims {
    db: DatabaseConnection,
    batch: Option<Batcher<Row, Result<Written, DbErr>>>,
    /// Claims answered by a statement they shared with another.
    shared: Arc<AtomicU64>,
}

impl Claims {
    /// `max_batch` claims in a statement at most (`DATABASE_WRITE_BATCH`; 1: each alone). Its
    /// cost grows with them; the round trip does not.
    pub fn new(db: DatabaseConnection, max_batch: usize) -> Self {
        let shared = Arc::new(AtomicU64::new(0));
        let batch = (db.get_database_backend() == DbBackend::Postgres).then(|| {
            let (on, counted) = (db.clone(), Arc::clone(&shared));
            let run: Run<Row, Result<Written, DbErr>> =
                Arc::new(move |rows| Box::pin(run(on.clone(), Arc::clone(&counted), rows)));
            Batcher::new(max_batch, IN_FLIGHT, run)
        });
        Self { db, batch, shared }
    }

    /// How many claims so far were answered by a statement they shared with another.
    pub fn shared(&self) -> u64 {
        self.shared.load(Relaxed)
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// One claim's writes, in the next batch (PostgreSQL only).
    pub(super) async fn write(&self, row: Row) -> Result<Written, DbErr> {
        match &self.batch {
            Some(batch) => batch.submit(row).await.unwrap_or_else(|_| {
                Err(DbErr::Custom(
                    "a batch of claims ended without an answer".into(),
                ))
            }),
            None => claim_pg::write(&self.db, row).await,
        }
    }
}

async fn run(
    db: DatabaseConnection,
    shared: Arc<AtomicU64>,
    rows: Vec<Row>,
) -> Vec<Result<Written, DbErr>> {
    if rows.len() == 1 {
        let row = rows.into_iter().next().expect("one");
        return vec![claim_pg::write(&db, row).await];
    }
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
    let sharing: Vec<&Row> = rows
        .iter()
        .zip(&together)
        .filter(|(_, t)| **t)
        .map(|(r, _)| r)
        .collect();
    let mut answers: Vec<Option<Result<Written, DbErr>>> = match sharing.len() {
        0 | 1 => rows.iter().map(|_| None).collect(),
        _ => match write_many(&db, &sharing).await {
            Ok(found) => {
                shared.fetch_add(found.iter().flatten().count() as u64, Relaxed);
                let mut found = found.into_iter();
                together
                    .iter()
                    .map(|t| {
                        if *t {
                            found.next().flatten().map(Ok)
                        } else {
                            None
                        }
                    })
                    .collect()
            }
            Err(e) if outage::is_unreachable(&e) => {
                tracing::warn!(error = %e, claims = sharing.len(), "a batch of claims met an unreachable database");
                together
                    .iter()
                    .map(|t| t.then(|| Err(batch::same_kind(&e, "claims"))))
                    .collect()
            }
            Err(e) => {
                // The race `GR001` stands for, or a failure of the batch's own: each alone.
                tracing::info!(error = %e, claims = sharing.len(), "a batch of claims was undone; claiming each alone");
                rows.iter().map(|_| None).collect()
            }
        },
    };
    let alone = rows
        .into_iter()
        .zip(answers.iter())
        .filter(|(_, a)| a.is_none())
        .map(|(row, _)| claim_pg::write(&db, row));
    let mut alone = join_all(alone).await.into_iter();
    answers
        .iter_mut()
        .map(|a| match a.take() {
            Some(answer) => answer,
            None => alone
                .next()
                .expect("one answer for each claim written alone"),
        })
        .collect()
}

/// A value's text as bound (an enum's stored name), or null.
fn text(v: impl Into<Value>) -> Option<String> {
    match v.into() {
        Value::String(s) => s,
        _ => None,
    }
}

/// The members as one JSON array for `json_to_recordset`, each with its place in the batch.
fn members(rows: &[&Row]) -> String {
    let members: Vec<serde_json::Value> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            serde_json::json!({
                "i": i,
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
        .collect();
    serde_json::Value::Array(members).to_string()
}

/// For each member, in order: what its writes found, or None for a member left out because its
/// authorization is held (it is claimed alone).
async fn write_many(db: &DatabaseConnection, rows: &[&Row]) -> Result<Vec<Option<Written>>, DbErr> {
    let found = db
        .query_all_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            SQL.as_str(),
            [Value::from(members(rows))],
        ))
        .await?;
    let mut answers: Vec<Option<Written>> = rows.iter().map(|_| None).collect();
    for row in found {
        let i: i32 = row.try_get("", "i")?;
        let (free, scope, paid): (bool, bool, bool) = (
            row.try_get("", "free")?,
            row.try_get("", "scope")?,
            row.try_get("", "paid")?,
        );
        let slot = answers
            .get_mut(usize::try_from(i).unwrap_or(usize::MAX))
            .ok_or_else(|| DbErr::Custom(format!("a batch of claims answered for member {i}")))?;
        *slot = match (free, scope, paid) {
            (false, _, _) => None,
            (true, false, _) => Some(Written::ScopeHeld),
            (true, true, true) => Some(Written::Claimed),
            // The statement raises rather than answer this; claimed alone if it ever did.
            (true, true, false) => None,
        };
    }
    Ok(answers)
}

/// The claim's statement (`claim_pg`) for many members: `b` the members, `f` those whose
/// authorization no live reservation holds; then the scope, the payment, the call and its
/// receipt as there, each part joined to its member by the call's id.
static SQL: LazyLock<String> = LazyLock::new(|| {
    let finished = CallStatus::FINISHED.map(|s| format!("'{s}'")).join(", ");
    format!(
        r#"WITH b AS (
    SELECT * FROM json_to_recordset($1::json) AS b("i" int, "scope" text, "call_id" uuid,
        "request_hash" text, "window_end" timestamptz, "window_start" timestamptz,
        "payment_id" uuid, "payer" text, "nonce" text, "amount" text, "network" text,
        "x402_version" int, "settle_request" text, "valid_before" bigint, "now" timestamptz,
        "kind" text, "agent" text, "mode" text, "request" text, "receipt_id" text,
        "request_id" text, "expires_at" timestamptz)),
f AS (
    SELECT b.* FROM b WHERE NOT EXISTS (SELECT 1 FROM "payments" q
        WHERE q."payer" = b."payer" AND q."nonce" = b."nonce" AND q."status" <> '{released}')),
s AS (
    INSERT INTO "idempotency_records" ("scope", "call_id", "request_hash", "expires_at", "created_at")
    SELECT "scope", "call_id", "request_hash", "window_end", "window_start" FROM f
    ON CONFLICT ("scope") DO UPDATE SET "call_id" = EXCLUDED."call_id",
        "request_hash" = EXCLUDED."request_hash", "expires_at" = EXCLUDED."expires_at",
        "created_at" = EXCLUDED."created_at"
    WHERE "idempotency_records"."expires_at" <= EXCLUDED."created_at"
        AND EXISTS (SELECT 1 FROM "calls" WHERE "calls"."id" = "idempotency_records"."call_id"
        AND "calls"."status" IN ({finished}))
    RETURNING "call_id"),
p AS (
    INSERT INTO "payments" ("id", "call_id", "payer", "nonce", "amount", "network", "x402_version",
        "status", "settle_request", "valid_before", "checks", "created_at", "updated_at")
    SELECT f."payment_id", f."call_id", f."payer", f."nonce", f."amount", f."network",
        f."x402_version", '{reserved}', f."settle_request"::json, f."valid_before", 0, f."now",
        f."now"
    FROM f JOIN s ON s."call_id" = f."call_id"
    ON CONFLICT ("payer", "nonce") DO UPDATE SET "call_id" = EXCLUDED."call_id",
        "amount" = EXCLUDED."amount", "network" = EXCLUDED."network",
        "x402_version" = EXCLUDED."x402_version", "status" = EXCLUDED."status",
        "transaction" = NULL, "error" = NULL, "settle_request" = EXCLUDED."settle_request",
        "valid_before" = EXCLUDED."valid_before", "checks" = 0, "next_check_at" = NULL,
        "sent_tx" = NULL, "sent_tx_raw" = NULL, "updated_at" = EXCLUDED."updated_at"
    WHERE "payments"."status" = '{released}'
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
        released = PaymentStatus::Released,
        reserved = PaymentStatus::INITIAL,
        settling = CallStatus::INITIAL,
        refused = claim_pg::REFUSED_NONCE_USED,
    )
});
