//! Claiming a new paid call: the idempotency scope, the payment's reservation, the call and its
//! receipt, in one transaction, or who already holds the scope or the authorization.

use super::{
    claim_batch::Claims,
    claim_pg::{self, Written},
    status::{CallKind, CallStatus, PaymentStatus},
};
use crate::{
    catalog::{CoachId, ModeId},
    db::{
        entities::{call, idempotency},
        outage,
        write::{Done, Exec, Inserted},
    },
    receipt as receipts,
};
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbBackend, DbErr, EntityTrait, Statement, Value};
use std::time::Duration;
use uuid::Uuid;

/// A new paid call, before it is written.
pub struct NewCall {
    pub kind: CallKind,
    pub agent: Option<CoachId>,
    pub mode: Option<ModeId>,
    pub payer: String,
    pub request_hash: String,
    pub request: serde_json::Value,
    pub request_id: String,
}

/// The authorization that pays for it.
pub struct NewPayment {
    pub nonce: String,
    pub amount: String,
    pub network: String,
    pub x402_version: i32,
    /// The exact `/settle` body as JSON text, so reconciliation can re-post the identical
    /// payload. Text, not a `serde_json::Value`: it is written as text either way, and a tree
    /// of the payment's JSON was a deep copy per paid call for nothing.
    pub settle_request: String,
    /// The authorization's `validBefore`, unix seconds.
    pub valid_before: i64,
}

/// The idempotency scope a new call claims: its key, and how long it answers for the call.
pub struct Scope<'a> {
    pub key: &'a str,
    pub window: Duration,
}

pub enum Claim {
    /// This request owns the scope: its call is recorded and its payment reserved.
    New(Box<call::Model>),
    /// An earlier request owns the scope (replay, wait, or refuse a different body).
    Existing { call_id: Uuid, request_hash: String },
    /// The authorization already paid for another request.
    NonceUsed,
    /// The scope was held when this claim wrote, and its holder was gone when it read (a
    /// refusal released the scope in between): nothing was written, and claiming again decides
    /// (a repeat of the refused payment then finds its authorization used and gets the refusal).
    Vacated,
}

/// The record holding `scope`, expired or not: a scope whose call has not finished is held past
/// its window (see `claim`).
async fn holder(db: &DatabaseConnection, scope: &str) -> Result<Option<idempotency::Model>, DbErr> {
    idempotency::Entity::find_by_id(scope.to_owned())
        .one(db)
        .await
}

fn existing(record: idempotency::Model) -> Claim {
    Claim::Existing {
        call_id: record.call_id,
        request_hash: record.request_hash,
    }
}

/// Claims `scope` for a new call paid by `pay`, or reports who already holds it, in one
/// transaction: the scope, the payment reservation, the call and its receipt. `window_start` is
/// the clock's service reading, which measures the idempotency windows (tests move it); the
/// records themselves carry `now`, its wall reading.
pub async fn claim(
    claims: &Claims,
    scope: Scope<'_>,
    call: NewCall,
    pay: NewPayment,
    window_start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Claim, DbErr> {
    // No read first: the insert below finds a live holder itself (one statement fewer on every
    // new call, issue 12), and a repeat reads the holder after it.
    let call_id = Uuid::now_v7();
    let receipt_id = receipts::new_id();
    let window = chrono::Duration::from_std(scope.window).unwrap_or(chrono::Duration::hours(24));
    let scope = scope.key;
    let model = call::Model {
        id: call_id,
        kind: call.kind,
        agent: call.agent,
        mode: call.mode,
        payer: call.payer,
        request_hash: call.request_hash,
        request: call.request,
        // Nothing may run until the settlement's outcome is known.
        status: CallStatus::INITIAL,
        attempts: 0,
        runs: 0,
        error: None,
        receipt_id: receipt_id.clone(),
        request_id: call.request_id,
        created_at: now,
        updated_at: now,
        completed_at: None,
    };
    let db = claims.db();
    let written = if db.get_database_backend() == DbBackend::Postgres {
        let row = claim_pg::Row {
            scope: scope.to_owned(),
            call_id,
            request_hash: model.request_hash.clone(),
            window_start,
            window_end: window_start + window,
            payment_id: Uuid::now_v7(),
            payer: model.payer.clone(),
            nonce: pay.nonce,
            amount: pay.amount,
            network: pay.network,
            x402_version: pay.x402_version,
            settle_request: pay.settle_request,
            valid_before: pay.valid_before,
            now,
            kind: model.kind,
            agent: model.agent,
            mode: model.mode,
            request: model.request.to_string(),
            receipt_id: receipt_id.clone(),
            request_id: model.request_id.clone(),
        };
        claims.write_knowing(&row).await?
    } else {
        // On the caller's thread: no answer travels back over a connection to be lost.
        let writes = writes(scope, &model, pay, window_start, window, now);
        (
            crate::transaction!(db, async move |e| write(e, writes).await)?,
            false,
        )
    };
    let (written, maybe_written_before) = written;
    match written {
        Written::Claimed => Ok(Claim::New(Box::new(model))),
        Written::NonceUsed => Ok(Claim::NonceUsed),
        // A live record, or one whose call has not finished, holds the scope: wait for, replay or
        // refuse against its call.
        Written::ScopeHeld => {
            // The claim may be ours: learning whose it is must outlast the blip too.
            let held = outage::read_knowing(
                maybe_written_before,
                "a claim's holder",
                claim_pg::RIDE_OUT,
                || holder(db, scope),
            )
            .await?;
            Ok(match held {
                // An earlier attempt of this claim wrote it, and its answer was lost.
                Some(record) if record.call_id == call_id => Claim::New(Box::new(model)),
                Some(record) => existing(record),
                None => Claim::Vacated,
            })
        }
    }
}

/// The claim's four inserts on SQLite, written by hand: building them with sea-query (the
/// scope's conditional upsert above all) was a tenth of the claim's CPU (issue 12). The same
/// writes as `claim_pg`, as four statements in one transaction (`write`).
struct Sql {
    scope: String,
    payment: String,
    call: &'static str,
    receipt: &'static str,
}

static SQL: std::sync::LazyLock<Sql> = std::sync::LazyLock::new(|| {
    let finished = CallStatus::FINISHED.map(|s| format!("'{s}'")).join(", ");
    Sql {
        // An expired record of a finished call answers nothing any more, so the insert takes
        // its place in the same statement (no separate delete on the paid path); the call's
        // state is checked in that statement too, so a window cannot lapse under a call whose
        // settlement is still being reconciled. The check looks up that one call by its key: an
        // `IN (SELECT … WHERE status IN …)` was planned as a hash of every finished call, built
        // whenever a window lapsed (13 ms with 50,000 calls on PostgreSQL, growing with them).
        scope: format!(
            r#"INSERT INTO "idempotency_records" ("scope", "call_id", "request_hash", "expires_at", "created_at")
VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT ("scope") DO UPDATE SET "call_id" = "excluded"."call_id",
    "request_hash" = "excluded"."request_hash", "expires_at" = "excluded"."expires_at",
    "created_at" = "excluded"."created_at"
WHERE "idempotency_records"."expires_at" <= ?5
    AND EXISTS (SELECT 1 FROM "calls" WHERE "calls"."id" = "idempotency_records"."call_id"
        AND "calls"."status" IN ({finished}))"#
        ),
        // A reservation that was released (nothing processed, not the payer's fault) is taken
        // over by this call; any other holder of the authorization makes it used.
        payment: format!(
            r#"INSERT INTO "payments" ("id", "call_id", "payer", "nonce", "amount", "network",
    "x402_version", "status", "transaction", "error", "settle_request", "valid_before", "checks",
    "next_check_at", "sent_tx", "sent_tx_raw", "created_at", "updated_at")
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '{reserved}', NULL, NULL, ?8, ?9, 0, NULL, NULL, NULL, ?10, ?10)
ON CONFLICT ("payer", "nonce") DO UPDATE SET "call_id" = "excluded"."call_id",
    "amount" = "excluded"."amount", "network" = "excluded"."network",
    "x402_version" = "excluded"."x402_version", "status" = "excluded"."status",
    "transaction" = NULL, "error" = NULL, "settle_request" = "excluded"."settle_request",
    "valid_before" = "excluded"."valid_before", "checks" = 0, "next_check_at" = NULL,
    "sent_tx" = NULL, "sent_tx_raw" = NULL, "updated_at" = "excluded"."updated_at"
WHERE "payments"."status" = '{released}'"#,
            reserved = PaymentStatus::INITIAL,
            released = PaymentStatus::Released,
        ),
        call: r#"INSERT INTO "calls" ("id", "kind", "agent", "mode", "payer", "request_hash",
    "request", "status", "attempts", "runs", "error", "receipt_id", "request_id", "created_at",
    "updated_at", "completed_at")
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"#,
        receipt: r#"INSERT INTO "receipts" ("id", "call_id", "kind", "created_at", "expires_at")
VALUES (?1, ?2, ?3, ?4, ?5)"#,
    }
});

/// The claim's four inserts for a transaction body (`write`), bound.
fn writes(
    scope: &str,
    model: &call::Model,
    pay: NewPayment,
    window_start: DateTime<Utc>,
    window: chrono::Duration,
    now: DateTime<Utc>,
) -> Writes {
    let sql = &*SQL;
    let stmt = |sql: &str, values: Vec<Value>| {
        Statement::from_sql_and_values(DbBackend::Sqlite, sql, values)
    };
    let m = model.clone();
    Writes {
        scope: stmt(
            &sql.scope,
            vec![
                scope.to_owned().into(),
                m.id.into(),
                m.request_hash.clone().into(),
                (window_start + window).into(),
                window_start.into(),
            ],
        ),
        payment: stmt(
            &sql.payment,
            vec![
                Uuid::now_v7().into(),
                m.id.into(),
                m.payer.clone().into(),
                pay.nonce.into(),
                pay.amount.into(),
                pay.network.into(),
                pay.x402_version.into(),
                Some(pay.settle_request).into(),
                Some(pay.valid_before).into(),
                now.into(),
            ],
        ),
        receipt: stmt(
            sql.receipt,
            vec![
                m.receipt_id.clone().into(),
                m.id.into(),
                m.kind.as_str().into(),
                now.into(),
                receipts::expires_at(now).into(),
            ],
        ),
        call: stmt(
            sql.call,
            vec![
                m.id.into(),
                m.kind.into(),
                m.agent.into(),
                m.mode.into(),
                m.payer.into(),
                m.request_hash.into(),
                m.request.into(),
                m.status.into(),
                m.attempts.into(),
                m.runs.into(),
                m.error.into(),
                m.receipt_id.into(),
                m.request_id.into(),
                m.created_at.into(),
                m.updated_at.into(),
                m.completed_at.into(),
            ],
        ),
    }
}

/// A claim's four inserts, bound before its transaction starts.
struct Writes {
    scope: Statement,
    payment: Statement,
    call: Statement,
    receipt: Statement,
}

/// The claim's transaction: the scope first, so that of two concurrent identical requests the
/// loser stops there rather than on the shared nonce; then the payment's reservation; then the
/// call and its receipt.
async fn write(e: &impl Exec, w: Writes) -> Result<Done<Written>, DbErr> {
    match e.insert_statement(w.scope).await? {
        Inserted::Rows(0) => return Ok(Done::Rollback(Written::ScopeHeld)),
        Inserted::Rows(_) => {}
        Inserted::Duplicate => return Err(DbErr::Custom("the scope's insert met a key".into())),
    }
    match e.insert_statement(w.payment).await? {
        Inserted::Rows(1) => {}
        Inserted::Rows(_) | Inserted::Duplicate => return Ok(Done::Rollback(Written::NonceUsed)),
    }
    for insert in [w.call, w.receipt] {
        if let Inserted::Duplicate = e.insert_statement(insert).await? {
            return Err(DbErr::Custom("a new call's id was taken".into()));
        }
    }
    Ok(Done::Commit(Written::Claimed))
}
