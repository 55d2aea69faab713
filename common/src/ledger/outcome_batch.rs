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
    batch::{self, Batched},
    calls::Runner,
};
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbErr};
use std::sync::{Arc, LazyLock, atomic::AtomicU64};
use uuid::Uuid;

/// A settled outcome, as written.
pub(super) struct Settled {
    call_id: Uuid,
    payment: PaymentStatus,
    transaction: Option<String>,
    now: DateTime<Utc>,
}

/// Settlements' outcomes on one database: settled ones batched on PostgreSQL.
#[derive(Clone)]
pub struct Outcomes(Batched<Settled, bool>);

impl Outcomes {
    /// `max_batch` outcomes in a statement at most (`DATABASE_WRITE_BATCH`; 1: each alone).
    pub fn new(db: DatabaseConnection, max_batch: usize) -> Self {
        Self(Batched::new(db, max_batch, run))
    }

    pub fn db(&self) -> &DatabaseConnection {
        self.0.db()
    }

    /// How many outcomes so far were answered by a statement they shared with another.
    pub fn shared(&self) -> u64 {
        self.0.shared()
    }

    /// How long the oldest outcomes waiting for a batch has waited.
    pub fn waited(&self) -> std::time::Duration {
        self.0.waited()
    }

    /// `settlement::record`, a settled outcome on PostgreSQL in the next batch.
    pub async fn record(
        &self,
        call_id: Uuid,
        outcome: &Settlement,
        now: DateTime<Utc>,
        start: Option<Runner>,
    ) -> Result<Recorded, DbErr> {
        let (Settlement::Settled { .. }, Some(left)) = (outcome, Left::of(outcome)) else {
            return settlement::record(self.db(), call_id, outcome, now, start).await;
        };
        let settled = Settled {
            call_id,
            payment: left.payment,
            transaction: left.transaction,
            now,
        };
        let moved = match self.0.submit(settled).await {
            Ok(moved) => moved?,
            Err(_) => return settlement::record(self.db(), call_id, outcome, now, start).await,
        };
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
    // The first outcome for a call goes in the batch; a later one alone, after it.
    let together = batch::first_of_each(&rows, |r| r.call_id);
    batch::write(
        "outcomes",
        rows,
        &together,
        members,
        |members, n| write_many(&db, members, n),
        |row| alone(&db, row),
        &shared,
    )
    .await
}

/// The members as one JSON array for `json_to_recordset`.
fn members(rows: &[&Settled]) -> String {
    batch::json(rows, |r| {
        serde_json::json!({
            "call_id": r.call_id,
            "status": r.payment.to_string(),
            "transaction": r.transaction,
            "now": batch::at(r.now),
        })
    })
}

/// Whether each member (`members`, in order) moved its call.
async fn write_many(
    db: &DatabaseConnection,
    members: String,
    n: usize,
) -> Result<Vec<Option<bool>>, DbErr> {
    batch::query(db, SQL.as_str(), members, n, |row| {
        let (paid, call): (i64, i64) = (row.try_get("", "paid")?, row.try_get("", "moved")?);
        Ok(Some(paid == 1 && call == 1))
    })
    .await
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
