//! A run's two writes in shared statements on PostgreSQL (issue 31), as the api's claims and
//! settled outcomes are (`claim_batch`, `outcome_batch`): the start that takes the call's lease
//! (`call::start_attempt`) and the result that completes it (`call::complete`). Ten thousand
//! calls in flight are ten thousand starts and ten thousand results, each a round trip, a
//! wake-up of a server process and a commit; those that queue now share one statement, the
//! single write's for every member, each member's rows found by its call's id.
//!
//! Each member gets the single write's answer: the call it started (or nothing, and the start
//! reads why as it would alone), and whether its result was stored, was already there, or
//! could not be (the run no longer holds the lease). A second member for one call is written
//! alone after the batch (one statement cannot update one row twice); an unreachable database
//! is each member's (`batch::same_kind`): each is sent again through the blip, as a single
//! write is (`outage::knowing`), and reads what its own write did. A batch of one is the single
//! statement; SQLite's writes stay their callers' own (`db::write::group`).

use super::call::{self, Start, Stored};
use super::from;
use super::pg::{self, Completing, Finished};
use super::status::CallStatus;
use crate::clock;
use crate::db::{
    batch::{self, Batched},
    calls::{Finisher, LEASE, Runner},
    entities::{call as row, result},
    write,
};
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbErr, FromQueryResult};
use serde::Serialize;
use std::sync::{Arc, LazyLock, atomic::AtomicU64};
use uuid::Uuid;

/// A run's start, as written.
pub(super) struct Starting {
    call_id: Uuid,
    runner: Runner,
    now: DateTime<Utc>,
}

/// Runs' starts and results on one database: batched on PostgreSQL.
#[derive(Clone)]
pub struct Runs {
    starts: Batched<Starting, Vec<row::Model>>,
    results: Batched<Arc<Completing>, Finished>,
}

impl Runs {
    /// `max_batch` writes of a kind in a statement at most (`DATABASE_WRITE_BATCH`; 1: each
    /// alone).
    pub fn new(db: DatabaseConnection, max_batch: usize) -> Self {
        Self {
            starts: Batched::new(db.clone(), max_batch, run_starts),
            results: Batched::new(db, max_batch, run_results),
        }
    }

    pub fn db(&self) -> &DatabaseConnection {
        self.starts.db()
    }

    /// How many starts and results so far were answered by a statement they shared.
    pub fn shared(&self) -> (u64, u64) {
        (self.starts.shared(), self.results.shared())
    }

    /// `ledger::start_attempt`, its update in the next batch.
    pub async fn start_attempt(&self, id: Uuid, runner: Runner) -> Result<Start, DbErr> {
        let now = clock::wall();
        call::take(self.db(), id, runner, || async move {
            let starting = Starting {
                call_id: id,
                runner,
                now,
            };
            match self.starts.submit(starting).await {
                Ok(started) => started,
                Err(s) => start_alone(self.db(), s).await,
            }
        })
        .await
    }

    /// `ledger::complete`, its statement in the next batch.
    pub async fn complete(
        &self,
        call_id: Uuid,
        by: Finisher,
        stored: Stored,
    ) -> Result<Option<result::Model>, DbErr> {
        let write = |c: Arc<Completing>| async move {
            match self.results.submit(c).await {
                Ok(finished) => finished,
                Err(c) => pg::complete(self.db(), &c).await,
            }
        };
        call::complete_with(self.db(), call_id, by, stored, write).await
    }
}

async fn start_alone(db: &DatabaseConnection, s: Starting) -> Result<Vec<row::Model>, DbErr> {
    write::update_calls(db, call::start_update(s.call_id, s.runner, s.now)).await
}

async fn run_starts(
    db: DatabaseConnection,
    shared: Arc<AtomicU64>,
    rows: Vec<Starting>,
) -> Vec<Result<Vec<row::Model>, DbErr>> {
    let together = batch::first_of_each(&rows, |s| s.call_id);
    let members = |rows: &[&Starting]| {
        batch::json(rows, |s| {
            serde_json::json!({
                "call_id": s.call_id,
                "owner": s.runner.run.to_string(),
                "process": s.runner.process,
                "now": batch::at(s.now),
                "until": batch::at(s.now + LEASE),
            })
        })
    };
    let many = |members, n| {
        batch::query(&db, START_SQL.as_str(), members, n, |r| {
            let started: Option<Uuid> = r.try_get("", "id")?;
            Ok(Some(match started {
                Some(_) => vec![row::Model::from_query_result(r, "")?],
                None => Vec::new(),
            }))
        })
    };
    let alone = |s| start_alone(&db, s);
    batch::write("starts", rows, &together, members, many, alone, &shared).await
}

/// `call::start_update` for many members: the lease for each member's run on its call, if the
/// call is pending or its time lease lapsed. Every member answers a row: the call as started,
/// or nulls.
static START_SQL: LazyLock<String> = LazyLock::new(|| {
    let [pending, running] = from::START;
    format!(
        r#"WITH b AS (
    SELECT * FROM json_to_recordset($1::json) AS b("i" int, "call_id" uuid, "owner" text,
        "process" bigint, "now" timestamptz, "until" timestamptz)),
u AS (
    UPDATE "calls" SET "status" = '{running_now}', "attempts" = "calls"."attempts" + 1,
        "updated_at" = b."now", "lease_until" = b."until", "lease_owner" = b."owner",
        "lease_process" = b."process"
    FROM b WHERE "calls"."id" = b."call_id"
        AND "calls"."id" = ANY (ARRAY(SELECT "call_id" FROM b))
        AND ("calls"."status" = '{pending}' OR ("calls"."status" = '{running}'
            AND ("calls"."lease_until" IS NULL OR "calls"."lease_until" < b."now")))
    RETURNING "calls".*)
SELECT b."i", u.* FROM b LEFT JOIN u ON u."id" = b."call_id""#,
        running_now = CallStatus::Running,
    )
});

/// One member of a batch of results, as `json_to_recordset` reads it.
#[derive(Serialize)]
struct ResultMember<'a> {
    i: usize,
    call_id: Uuid,
    /// The run that must still hold the lease; none for an unleased finisher.
    owner: Option<String>,
    now: String,
    body: &'a serde_json::Value,
    input_tokens: i64,
    output_tokens: i64,
    model_calls: i32,
    answer: bool,
    run: i32,
    seq: i32,
    outcome: Option<&'a serde_json::Value>,
    answer_input: i64,
    answer_output: i64,
    http_attempts: i32,
}

/// The members as one JSON array, the bodies written once, where they are (not copied into a
/// `serde_json::Value` first: a result is the largest thing a paid call writes).
fn result_members(rows: &[&Arc<Completing>]) -> String {
    let members: Vec<ResultMember<'_>> = rows
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let a = c.answer.as_ref();
            ResultMember {
                i,
                call_id: c.stored.call_id,
                owner: match c.by {
                    Finisher::Run(owner) => Some(owner.to_string()),
                    Finisher::Unleased => None,
                },
                now: batch::at(c.now),
                body: &c.stored.body,
                input_tokens: c.stored.input_tokens,
                output_tokens: c.stored.output_tokens,
                model_calls: c.stored.model_calls,
                answer: a.is_some(),
                run: a.map_or(0, |a| a.run),
                seq: a.map_or(0, |a| a.seq),
                outcome: a.map(|a| &a.outcome),
                answer_input: a.map_or(0, |a| a.tokens.0),
                answer_output: a.map_or(0, |a| a.tokens.1),
                http_attempts: a.map_or(0, |a| a.http_attempts),
            }
        })
        .collect();
    serde_json::to_string(&members).unwrap_or_else(|_| "[]".into())
}

async fn run_results(
    db: DatabaseConnection,
    shared: Arc<AtomicU64>,
    rows: Vec<Arc<Completing>>,
) -> Vec<Result<Finished, DbErr>> {
    let together = batch::first_of_each(&rows, |c| c.stored.call_id);
    let many = |members, n| {
        batch::query(&db, RESULT_SQL.as_str(), members, n, |r| {
            let (finished, stored): (i64, i64) =
                (r.try_get("", "finished")?, r.try_get("", "stored")?);
            Ok(Some(pg::finished_as(finished, stored)))
        })
    };
    let alone = |c: Arc<Completing>| {
        let db = &db;
        async move { pg::complete(db, &c).await }
    };
    let write = batch::write(
        "results",
        rows,
        &together,
        result_members,
        many,
        alone,
        &shared,
    );
    write.await
}

/// `pg::complete` for many members: each call completed if its finisher may (the run that
/// holds its lease, or an unleased finisher from `from::COMPLETE_UNLEASED`), its result stored
/// unless one exists, and the model answer it came from.
static RESULT_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        r#"WITH b AS (
    SELECT * FROM json_to_recordset($1::json) AS b("i" int, "call_id" uuid, "owner" text,
        "now" timestamptz, "body" json, "input_tokens" bigint, "output_tokens" bigint,
        "model_calls" int, "answer" bool, "run" int, "seq" int, "outcome" json,
        "answer_input" bigint, "answer_output" bigint, "http_attempts" int)),
c AS (
    UPDATE "calls" SET "status" = '{completed}', "error" = NULL, "updated_at" = b."now",
        "completed_at" = b."now"
    FROM b WHERE "calls"."id" = b."call_id"
        AND "calls"."id" = ANY (ARRAY(SELECT "call_id" FROM b))
        AND CASE WHEN b."owner" IS NULL THEN "calls"."status" IN ({unleased})
            ELSE "calls"."status" = '{running}' AND "calls"."lease_owner" = b."owner" END
    RETURNING "calls"."id"),
r AS (
    INSERT INTO "results" ("call_id", "body", "input_tokens", "output_tokens", "model_calls", "created_at")
    SELECT b."call_id", b."body", b."input_tokens", b."output_tokens", b."model_calls", b."now"
    FROM b JOIN c ON c."id" = b."call_id"
    ON CONFLICT ("call_id") DO NOTHING RETURNING "call_id"),
m AS (
    INSERT INTO "model_calls" ("call_id", "run", "seq", "outcome", "input_tokens", "output_tokens", "http_attempts", "created_at")
    SELECT b."call_id", b."run", b."seq", b."outcome", b."answer_input", b."answer_output",
        b."http_attempts", b."now"
    FROM b JOIN c ON c."id" = b."call_id" WHERE b."answer"
    ON CONFLICT ("call_id", "run", "seq") DO NOTHING)
SELECT b."i", (SELECT count(*) FROM c WHERE c."id" = b."call_id") AS "finished",
    (SELECT count(*) FROM r WHERE r."call_id" = b."call_id") AS "stored"
FROM b"#,
        completed = CallStatus::Completed,
        running = CallStatus::Running,
        unleased = pg::literals(&from::COMPLETE_UNLEASED),
    )
});
