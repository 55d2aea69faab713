//! PostgreSQL: the write transactions of every paid call as one statement each.
//!
//! On PostgreSQL each statement is a round trip, and a transaction adds two (BEGIN, COMMIT): the
//! result's transaction took five, the settlement's outcome four, of about sixteen a paid call.
//! One statement whose parts are chained through `WITH` is atomic the same way (every part runs
//! once, to completion, or the whole fails), so these take one each (issue 12). SQLite runs the
//! same writes as transactions on the caller's thread (`crate::db::write`), where a statement
//! costs no round trip.

use super::from;
use super::status::{CallStatus, PaymentStatus};
use crate::db::{calls::Finisher, entities::result};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement, Value};
use uuid::Uuid;

/// One model answer to store with the result (`db::calls::ModelCallRecord`, as bound).
pub(super) struct Answer {
    pub run: i32,
    pub seq: i32,
    pub outcome: serde_json::Value,
    pub tokens: (i64, i64),
    pub http_attempts: i32,
}

/// What `complete`'s transaction did.
pub(super) enum Finished {
    /// `by` may not complete the call: nothing was written.
    NotHolder,
    /// This run's result is the call's.
    Stored,
    /// The call already had a result.
    Existing,
}

/// States as SQL string literals, for a guard written into a statement.
pub(super) fn literals(states: &[CallStatus]) -> String {
    let quoted: Vec<String> = states.iter().map(|s| format!("'{s}'")).collect();
    quoted.join(", ")
}

/// `super::call::complete`'s transaction: completes the call if `by` may, stores `stored` unless a
/// result exists, and the answer it came from.
/// A result to store on PostgreSQL, by whom, with the model answer it came from.
pub(super) struct Completing {
    pub(super) by: Finisher,
    pub(super) stored: result::Model,
    pub(super) answer: Option<Answer>,
    pub(super) now: DateTime<Utc>,
}

pub(super) async fn complete(db: &DatabaseConnection, c: &Completing) -> Result<Finished, DbErr> {
    let (by, stored, answer, now) = (c.by, &c.stored, c.answer.as_ref(), c.now);
    let guard = match by {
        Finisher::Run(_) => format!(
            r#" AND "status" = '{}' AND "lease_owner" = $14"#,
            CallStatus::Running
        ),
        Finisher::Unleased => format!(
            r#" AND $14::varchar IS NULL AND "status" IN ({})"#,
            literals(&from::COMPLETE_UNLEASED)
        ),
    };
    let sql = format!(
        r#"WITH c AS (
    UPDATE "calls" SET "status" = '{completed}', "error" = NULL, "updated_at" = $2, "completed_at" = $2
    WHERE "id" = $1{guard} RETURNING "id"),
r AS (
    INSERT INTO "results" ("call_id", "body", "input_tokens", "output_tokens", "model_calls", "created_at")
    SELECT "id", $3::json, $4, $5, $6, $2 FROM c
    ON CONFLICT ("call_id") DO NOTHING RETURNING "call_id"),
m AS (
    INSERT INTO "model_calls" ("call_id", "run", "seq", "outcome", "input_tokens", "output_tokens", "http_attempts", "created_at")
    SELECT "id", $7, $8, $9::json, $10, $11, $12, $2 FROM c WHERE $13
    ON CONFLICT ("call_id", "run", "seq") DO NOTHING)
SELECT (SELECT count(*) FROM c) AS "finished", (SELECT count(*) FROM r) AS "stored""#,
        completed = CallStatus::Completed,
    );
    let owner = match by {
        Finisher::Run(owner) => Some(owner.to_string()),
        Finisher::Unleased => None,
    };
    let has_answer = answer.is_some();
    let none = Answer {
        run: 0,
        seq: 0,
        outcome: serde_json::Value::Null,
        tokens: (0, 0),
        http_attempts: 0,
    };
    let a = answer.unwrap_or(&none);
    // The JSON goes as text, written once here: bound as values, each would be deep-copied on
    // the way to the driver, then written there (issue 12).
    let values: [Value; 14] = [
        stored.call_id.into(),
        now.into(),
        stored.body.to_string().into(),
        stored.input_tokens.into(),
        stored.output_tokens.into(),
        stored.model_calls.into(),
        a.run.into(),
        a.seq.into(),
        a.outcome.to_string().into(),
        a.tokens.0.into(),
        a.tokens.1.into(),
        a.http_attempts.into(),
        has_answer.into(),
        owner.into(),
    ];
    let (finished, inserted) = counts(db, sql, values, "finished", "stored").await?;
    Ok(finished_as(finished, inserted))
}

/// What `complete`'s statement did, from the calls it completed and the results it inserted.
pub(super) fn finished_as(finished: i64, inserted: i64) -> Finished {
    match (finished, inserted) {
        (0, _) => Finished::NotHolder,
        (_, 1) => Finished::Stored,
        _ => Finished::Existing,
    }
}

/// A settled payment (`settled`: its status, `transaction` if it named one) and its call,
/// `settling → pending`, only if the payment was still reserved or unknown. True if the call
/// moved.
pub(super) async fn settled(
    db: &DatabaseConnection,
    call_id: Uuid,
    settled: PaymentStatus,
    transaction: Option<String>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let sql = format!(
        r#"WITH p AS (
    UPDATE "payments" SET "updated_at" = $2, "status" = $3, "transaction" = $4, "error" = NULL, "next_check_at" = NULL
    WHERE "call_id" = $1 AND "status" IN ($5, $6) RETURNING "call_id"),
c AS (
    UPDATE "calls" SET "status" = '{pending}', "error" = NULL, "updated_at" = $2
    WHERE "id" = $1 AND "status" IN ({settling}) AND (SELECT count(*) FROM p) = 1 RETURNING "id")
SELECT (SELECT count(*) FROM p) AS "paid", (SELECT count(*) FROM c) AS "moved""#,
        pending = CallStatus::Pending,
        settling = literals(&from::SETTLED),
    );
    let values: [Value; 6] = [
        call_id.into(),
        now.into(),
        settled.into(),
        transaction.into(),
        PaymentStatus::OPEN[0].into(),
        PaymentStatus::OPEN[1].into(),
    ];
    let (paid, moved) = counts(db, sql, values, "paid", "moved").await?;
    Ok(paid == 1 && moved == 1)
}

async fn counts<const N: usize>(
    db: &DatabaseConnection,
    sql: String,
    values: [Value; N],
    first: &str,
    second: &str,
) -> Result<(i64, i64), DbErr> {
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            sql,
            values,
        ))
        .await?
        .ok_or_else(|| DbErr::Custom("a counting statement returned no row".into()))?;
    Ok((row.try_get("", first)?, row.try_get("", second)?))
}
