//! Paid calls' settled outcomes in one statement on PostgreSQL (issue 31), as their claims are
//! (`claim_batch`): outcomes that queue share the next statement, the same two updates as
//! `pg::settled` for every member, each joined to its member by the call's id. A lone outcome
//! runs `pg::settled` itself.
//!
//! Each member gets the single write's answer: whether it moved its call (its payment was still
//! reserved or unknown, and the call waited for its settlement). A second outcome for a call
//! already in the batch is written alone after it; a failure of the batch's own has each member
//! written alone; an unreachable database is each member's (`batch::same_kind`), so the paid
//! request rides it out and reads what its write did, as it would alone
//! (`record_paid_outcome` in the api).
//!
//! Only the settled outcome of a paid request goes here: it is one per paid call. Refusals,
//! unknown outcomes and operators' decisions keep their transactions (`settlement::record`).

use super::{
    from,
    settlement::{self, Left, Recorded, Settlement},
    status::PaymentStatus,
};
use crate::db::{
    batch::{self, Batcher, Run},
    calls::Runner,
    outage,
};
use chrono::{DateTime, Utc};
use futures::future::join_all;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement, Value};
use std::{
    collections::HashSet,
    sync::{
        Arc, LazyLock,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
};
use uuid::Uuid;

/// Batches written at once (as `claim_batch`'s).
const IN_FLIGHT: usize = 2;

/// A settled outcome, as written.
pub(super) struct Settled {
    call_id: Uuid,
    payment: PaymentStatus,
    transaction: Option<String>,
    now: DateTime<Utc>,
}

/// Settlements' outcomes on one database: settled ones batched on PostgreSQL.
#[derive(Clone)]
pub struct Outcomes {
    db: DatabaseConnection,
    batch: Option<Batcher<Settled, Result<bool, DbErr>>>,
    /// Outcomes answered by a statement they shared with another.
    shared: Arc<AtomicU64>,
}

impl Outcomes {
    /// `max_batch` outcomes in a statement at most (`DATABASE_WRITE_BATCH`; 1: each alone).
    pub fn new(db: DatabaseConnection, max_batch: usize) -> Self {
        let shared = Arc::new(AtomicU64::new(0));
        let batch = (db.get_database_backend() == DbBackend::Postgres).then(|| {
            let (on, counted) = (db.clone(), Arc::clone(&shared));
            let run: Run<Settled, Result<bool, DbErr>> =
                Arc::new(move |rows| Box::pin(run(on.clone(), Arc::clone(&counted), rows)));
            Batcher::new(max_batch, IN_FLIGHT, run)
        });
        Self { db, batch, shared }
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// How many outcomes so far were answered by a statement they shared with another.
    pub fn shared(&self) -> u64 {
        self.shared.load(Relaxed)
    }

    /// `settlement::record`, a settled outcome on PostgreSQL in the next batch.
    pub async fn record(
        &self,
        call_id: Uuid,
        outcome: &Settlement,
        now: DateTime<Utc>,
        start: Option<Runner>,
    ) -> Result<Recorded, DbErr> {
        let (Some(batch), Settlement::Settled { .. }, Some(left)) =
            (&self.batch, outcome, Left::of(outcome))
        else {
            return settlement::record(&self.db, call_id, outcome, now, start).await;
        };
        let settled = Settled {
            call_id,
            payment: left.payment,
            transaction: left.transaction,
            now,
        };
        let moved = batch.submit(settled).await.unwrap_or_else(|_| {
            Err(DbErr::Custom(
                "a batch of outcomes ended without an answer".into(),
            ))
        })?;
        Ok(Recorded {
            moved,
            started: None,
        })
    }
}

async fn alone(db: &DatabaseConnection, s: Settled) -> Result<bool, DbErr> {
    super::pg::settled(db, s.call_id, s.payment, s.transaction, s.now).await
}

async fn run(
    db: DatabaseConnection,
    shared: Arc<AtomicU64>,
    rows: Vec<Settled>,
) -> Vec<Result<bool, DbErr>> {
    if rows.len() == 1 {
        let row = rows.into_iter().next().expect("one");
        return vec![alone(&db, row).await];
    }
    // The first outcome for a call goes in the batch; a later one alone, after it.
    let mut calls = HashSet::new();
    let together: Vec<bool> = rows.iter().map(|r| calls.insert(r.call_id)).collect();
    let sharing: Vec<&Settled> = rows
        .iter()
        .zip(&together)
        .filter(|(_, t)| **t)
        .map(|(r, _)| r)
        .collect();
    let mut answers: Vec<Option<Result<bool, DbErr>>> = match sharing.len() {
        0 | 1 => rows.iter().map(|_| None).collect(),
        _ => match write_many(&db, &sharing).await {
            Ok(moved) => {
                shared.fetch_add(moved.len() as u64, Relaxed);
                let mut moved = moved.into_iter();
                together
                    .iter()
                    .map(|t| t.then(|| Ok(moved.next().unwrap_or(false))))
                    .collect()
            }
            Err(e) if outage::is_unreachable(&e) => {
                tracing::warn!(error = %e, outcomes = sharing.len(), "a batch of outcomes met an unreachable database");
                together
                    .iter()
                    .map(|t| t.then(|| Err(batch::same_kind(&e, "outcomes"))))
                    .collect()
            }
            Err(e) => {
                tracing::info!(error = %e, outcomes = sharing.len(), "a batch of outcomes failed; writing each alone");
                rows.iter().map(|_| None).collect()
            }
        },
    };
    let alone_ones = rows
        .into_iter()
        .zip(answers.iter())
        .filter(|(_, a)| a.is_none())
        .map(|(row, _)| alone(&db, row));
    let mut written = join_all(alone_ones).await.into_iter();
    answers
        .iter_mut()
        .map(|a| match a.take() {
            Some(answer) => answer,
            None => written
                .next()
                .expect("one answer for each outcome written alone"),
        })
        .collect()
}

/// Whether each member, in order, moved its call.
async fn write_many(db: &DatabaseConnection, rows: &[&Settled]) -> Result<Vec<bool>, DbErr> {
    let members: Vec<serde_json::Value> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            serde_json::json!({
                "i": i,
                "call_id": r.call_id,
                "status": r.payment.to_string(),
                "transaction": r.transaction,
                "now": batch::at(r.now),
            })
        })
        .collect();
    let found = db
        .query_all_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            SQL.as_str(),
            [Value::from(serde_json::Value::Array(members).to_string())],
        ))
        .await?;
    let mut moved = vec![false; rows.len()];
    for row in found {
        let i: i32 = row.try_get("", "i")?;
        let (paid, call): (i64, i64) = (row.try_get("", "paid")?, row.try_get("", "moved")?);
        let slot = moved
            .get_mut(usize::try_from(i).unwrap_or(usize::MAX))
            .ok_or_else(|| DbErr::Custom(format!("a batch of outcomes answered for member {i}")))?;
        *slot = paid == 1 && call == 1;
    }
    Ok(moved)
}

/// `pg::settled` for many members. The calls and payments are found by their keys
/// (`= ANY (ARRAY(...))`), not by a join the planner might make a scan of every row.
static SQL: LazyLock<String> = LazyLock::new(|| {
    let quoted = |states: Vec<String>| {
        states
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        r#"WITH b AS (
    SELECT * FROM json_to_recordset($1::json) AS b("i" int, "call_id" uuid, "status" text,
        "transaction" text, "now" timestamptz)),
p AS (
    UPDATE "payments" SET "updated_at" = b."now", "status" = b."status",
        "transaction" = b."transaction", "error" = NULL, "next_check_at" = NULL
    FROM b WHERE "payments"."call_id" = b."call_id"
        AND "payments"."call_id" = ANY (ARRAY(SELECT "call_id" FROM b))
        AND "payments"."status" IN ({open})
    RETURNING "payments"."call_id"),
c AS (
    UPDATE "calls" SET "status" = '{pending}', "error" = NULL, "updated_at" = b."now"
    FROM b WHERE "calls"."id" = b."call_id"
        AND "calls"."id" = ANY (ARRAY(SELECT "call_id" FROM b))
        AND "calls"."status" IN ({settling})
        AND (SELECT count(*) FROM p WHERE p."call_id" = b."call_id") = 1
    RETURNING "calls"."id")
SELECT b."i", (SELECT count(*) FROM p WHERE p."call_id" = b."call_id") AS "paid",
    (SELECT count(*) FROM c WHERE c."id" = b."call_id") AS "moved"
FROM b"#,
        open = quoted(PaymentStatus::OPEN.iter().map(|s| s.to_string()).collect()),
        pending = super::status::CallStatus::Pending,
        settling = quoted(from::SETTLED.iter().map(|s| s.to_string()).collect()),
    )
});
