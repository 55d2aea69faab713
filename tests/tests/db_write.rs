//! Write transactions in one piece (`grove_common::db::write`, issue 12): on a SQLite file they
//! run through rusqlite on a connection of their own beside sqlx's, on in-memory SQLite on sqlx's
//! locked handle, elsewhere on a sea-orm transaction. What they write
//! must be stored exactly as sea-orm stores it, a body's error or rollback must leave nothing,
//! and the connection must come back out of any transaction, even after a panic.

use chrono::{TimeZone, Utc};
use grove_common::{
    catalog::CoachId,
    db::{
        entities::{call, payment},
        write::{Done, Exec, Inserted},
    },
    ledger::{CallKind, CallStatus, PaymentStatus},
    transaction,
};
use grove_tests::TestDb;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, Statement};
use serde_json::json;
use uuid::Uuid;

/// A call row with every kind of value the paid path writes: UUIDs, text, JSON with nesting,
/// unicode and floats, integers, times with and without sub-second digits, nulls.
fn a_call(id: Uuid, receipt: &str) -> call::Model {
    call::Model {
        id,
        kind: CallKind::Coaching,
        agent: Some(CoachId::Mary),
        mode: None,
        payer: "0xAbC0000000000000000000000000000000000001".into(),
        request_hash: "h".repeat(64),
        request: json!({"messages": [{"role": "user", "content": "Grüße \"quoted\" ☕"}], "n": 1.5, "z": null}),
        status: CallStatus::Settling,
        attempts: 3,
        runs: -1,
        error: None,
        receipt_id: receipt.into(),
        request_id: "req_1".into(),
        created_at: Utc.with_ymd_and_hms(2026, 11, 25, 4, 5, 6).unwrap(),
        updated_at: Utc::now(),
        completed_at: Some(Utc.timestamp_opt(1_764_000_000, 123_000_000).unwrap()),
    }
}

fn a_payment(id: Uuid, call_id: Uuid, nonce: &str) -> payment::Model {
    payment::Model {
        id,
        call_id,
        payer: "0xabc".into(),
        nonce: nonce.into(),
        amount: "180000".into(),
        network: "eip155:8453".into(),
        x402_version: 2,
        status: PaymentStatus::Reserved,
        transaction: None,
        error: Some("x".into()),
        settle_request: Some(json!({"a": [1, 2, {"b": true}]})),
        valid_before: Some(i64::MAX),
        checks: 0,
        next_check_at: None,
        sent_tx: None,
        sent_tx_raw: None,
        final_at: None,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

/// Each named column of the row, as the database stores it (SQLite's `quote` shows the storage
/// class too: text, blob or integer).
async fn stored(db: &DatabaseConnection, table: &str, id: Uuid, columns: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = match db.get_database_backend() {
        DbBackend::Sqlite => columns.iter().map(|c| format!("quote(\"{c}\")")).collect(),
        _ => columns.iter().map(|c| format!("\"{c}\"::text")).collect(),
    };
    let (sql, id_value) = match db.get_database_backend() {
        DbBackend::Sqlite => ("?", sea_orm::Value::from(id)),
        _ => ("$1", sea_orm::Value::from(id)),
    };
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            db.get_database_backend(),
            format!(
                "SELECT {} FROM \"{table}\" WHERE id = {sql}",
                quoted
                    .iter()
                    .enumerate()
                    .map(|(i, q)| format!("{q} AS c{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            [id_value],
        ))
        .await
        .expect("read")
        .expect("row");
    (0..columns.len())
        .map(|i| {
            row.try_get::<Option<String>>("", &format!("c{i}"))
                .expect("column")
                .unwrap_or_else(|| "NULL".into())
        })
        .collect()
}

/// Every column but the id and the receipt (unique per row).
const CALL_COLUMNS: [&str; 14] = [
    "kind",
    "agent",
    "mode",
    "payer",
    "request_hash",
    "request",
    "status",
    "attempts",
    "runs",
    "error",
    "request_id",
    "created_at",
    "updated_at",
    "completed_at",
];

#[tokio::test]
async fn a_row_written_in_one_piece_is_stored_as_sea_orm_stores_it() {
    let (_t, db) = TestDb::migrated().await;
    let (ours, theirs) = (Uuid::now_v7(), Uuid::now_v7());
    let mine = a_call(ours, "r");
    let mut other = a_call(theirs, "r2");
    other.updated_at = mine.updated_at;
    call::Entity::insert(call::ActiveModel::from(other.clone()))
        .exec_without_returning(&db)
        .await
        .expect("sea-orm insert");
    let insert = call::Entity::insert(call::ActiveModel::from(mine.clone()));
    let pay = payment::Entity::insert(payment::ActiveModel::from(a_payment(
        Uuid::now_v7(),
        ours,
        "n1",
    )));
    let rows = transaction!(&db, async move |e| {
        let a = e.exec(&insert).await?;
        let b = e.exec(&pay).await?;
        Ok(Done::Commit(a + b))
    })
    .expect("transaction");
    assert_eq!(rows, 2);

    // Read back through sea-orm: the same model as the row sea-orm wrote.
    let read = |id| {
        let db = db.clone();
        async move {
            call::Entity::find_by_id(id)
                .one(&db)
                .await
                .expect("read")
                .expect("row")
        }
    };
    let (mut ours_read, theirs_read) = (read(ours).await, read(theirs).await);
    assert_eq!(ours_read.request, mine.request);
    ours_read.id = theirs;
    ours_read.receipt_id = other.receipt_id.clone();
    assert_eq!(ours_read, theirs_read);
    // Stored alike, byte for byte, column by column.
    let a = stored(&db, "calls", ours, &CALL_COLUMNS).await;
    let b = stored(&db, "calls", theirs, &CALL_COLUMNS).await;
    assert_eq!(a, b);
    // UUIDs too: a lookup by id through sea-orm finds the row we wrote.
    let paid = payment::Entity::find().all(&db).await.expect("payments");
    assert_eq!(paid.len(), 1);
    assert_eq!(paid[0].call_id, ours);
    assert_eq!(
        paid[0].settle_request,
        Some(json!({"a": [1, 2, {"b": true}]}))
    );
    assert_eq!(paid[0].valid_before, Some(i64::MAX));
}

async fn calls(db: &DatabaseConnection) -> usize {
    call::Entity::find().all(db).await.expect("calls").len()
}

#[tokio::test]
async fn a_body_that_fails_or_rolls_back_leaves_nothing() {
    let (t, db) = TestDb::migrated().await;
    let insert = call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "r")));
    let failed: Result<(), DbErr> = transaction!(&db, async move |e| {
        e.exec(&insert).await?;
        Err(DbErr::Custom("the body gave up".into()))
    });
    assert!(failed.is_err());
    assert_eq!(calls(&db).await, 0, "an error rolls back what was written");

    let insert = call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "r")));
    let answered = transaction!(&db, async move |e| {
        e.exec(&insert).await?;
        Ok(Done::Rollback("kept nothing"))
    })
    .expect("rolled back");
    assert_eq!(answered, "kept nothing");
    assert_eq!(calls(&db).await, 0, "a rollback keeps nothing");

    // And the connection is usable and outside any transaction: this write is committed.
    call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "r")))
        .exec_without_returning(&db)
        .await
        .expect("insert after");
    let second = grove_common::db::connect_url(&t.url).await.expect("db");
    assert_eq!(calls(&second).await, 1);
}

#[tokio::test]
async fn a_taken_unique_key_is_reported_as_a_duplicate() {
    let (_t, db) = TestDb::migrated().await;
    let first = call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "r")));
    let inserted = transaction!(&db, async move |e| Ok(Done::Commit(
        e.insert(&first).await?
    )))
    .expect("first");
    assert_eq!(inserted, Inserted::Rows(1));
    // Same receipt id: the unique key refuses it, told apart from other errors. (PostgreSQL
    // aborts the transaction there, so a body rolls back after a duplicate.)
    let again = call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "r")));
    let inserted = transaction!(&db, async move |e| Ok(Done::Rollback(
        e.insert(&again).await?
    )))
    .expect("second");
    assert_eq!(inserted, Inserted::Duplicate);
    assert_eq!(calls(&db).await, 1);
}

#[tokio::test]
async fn a_panicking_body_leaves_nothing_and_the_connection_out_of_its_transaction() {
    let (t, db) = TestDb::migrated().await;
    let inner = db.clone();
    let insert = call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "r")));
    let panicked = tokio::spawn(async move {
        let _: Result<(), DbErr> = transaction!(&inner, async move |e| {
            e.exec(&insert).await?;
            panic!("a bug in the body");
        });
    })
    .await;
    assert!(panicked.is_err(), "the body panicked");
    call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "r2")))
        .exec_without_returning(&db)
        .await
        .expect("the connection still writes");
    // Seen from another connection: the later write is committed, the panicked one is not.
    let second = grove_common::db::connect_url(&t.url).await.expect("db");
    let seen = call::Entity::find().all(&second).await.expect("calls");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].receipt_id, "r2");
}

/// An update that reads its calls back (a run's start, `ledger::start_attempt`) gets each call as
/// sea-orm reads it: on SQLite the row is decoded from rusqlite, elsewhere by sea-orm.
#[tokio::test]
async fn an_update_reads_back_the_calls_it_changed_as_sea_orm_reads_them() {
    use sea_orm::{ColumnTrait, QueryFilter};
    let (_t, db) = TestDb::migrated().await;
    let (first, second, untouched) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    for (id, receipt) in [(first, "r1"), (second, "r2"), (untouched, "r3")] {
        let mut c = a_call(id, receipt);
        if id == second {
            c.completed_at = None;
            c.error = Some("was: 'quoted' ☕".into());
        }
        call::Entity::insert(call::ActiveModel::from(c))
            .exec_without_returning(&db)
            .await
            .expect("insert");
    }
    let update = call::Entity::update_many()
        .col_expr(call::Column::Status, CallStatus::Running.into())
        .col_expr(call::Column::UpdatedAt, Utc::now().into())
        .filter(call::Column::Id.is_in([first, second]));
    let mut returned = grove_common::db::write::update_calls(&db, update)
        .await
        .expect("update");
    returned.sort_by_key(|c| c.id);
    assert_eq!(returned.len(), 2, "the two calls it changed, not the third");
    for c in &returned {
        let read = call::Entity::find_by_id(c.id)
            .one(&db)
            .await
            .expect("read")
            .expect("row");
        assert_eq!(c, &read);
        assert_eq!(c.status, CallStatus::Running);
    }
    assert_eq!(returned[1].completed_at, None);
    assert_eq!(returned[1].error.as_deref(), Some("was: 'quoted' ☕"));
}

/// On a SQLite file the transactions run on a connection of their own beside sqlx's. When
/// sqlx's connection holds the write lock, a transaction must wait its turn without blocking
/// the runtime: on this one-thread runtime, a blocking wait would keep the other transaction
/// from ever reaching its COMMIT, and ours would fail with "database is locked".
#[tokio::test]
async fn a_transaction_waits_its_turn_behind_another_writer_without_blocking_the_runtime() {
    use sea_orm::TransactionTrait;
    let (_t, db) = TestDb::migrated().await;
    if db.get_database_backend() != DbBackend::Sqlite {
        return; // PostgreSQL locks rows, and these two writes share none.
    }
    // Opened once beforehand, so that the wait below is for the lock and nothing else.
    transaction!(&db, async move |_e| Ok(Done::Commit(()))).expect("the own connection opens");
    let holding = db.begin().await.expect("sqlx transaction");
    call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "held")))
        .exec_without_returning(&holding)
        .await
        .expect("sqlx's write takes the lock");

    let ours = db.clone();
    let insert = call::Entity::insert(call::ActiveModel::from(a_call(Uuid::now_v7(), "ours")));
    let waiting = tokio::spawn(async move {
        transaction!(&ours, async move |e| Ok(Done::Commit(
            e.exec(&insert).await?
        )))
    });
    // The spawned transaction runs now, finds the lock held, and must give the thread back.
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "it waits while the lock is held");
    holding.commit().await.expect("sqlx's transaction commits");
    let rows = waiting.await.expect("joined").expect("ours commits after");
    assert_eq!(rows, 1);
    assert_eq!(calls(&db).await, 2);
}

/// An in-memory database has no file for a second connection: transactions run on sqlx's own
/// connection, and read back what they wrote all the same.
#[tokio::test]
async fn an_in_memory_database_runs_the_same_transactions() {
    use sea_orm::{ColumnTrait, QueryFilter};
    let db = grove_common::db::connect_url("sqlite::memory:")
        .await
        .expect("database");
    grove_migrations::run(&db).await.expect("migrations");
    let id = Uuid::now_v7();
    let insert = call::Entity::insert(call::ActiveModel::from(a_call(id, "r")));
    transaction!(&db, async move |e| Ok(Done::Commit(e.exec(&insert).await?)))
        .expect("transaction");
    let update = call::Entity::update_many()
        .col_expr(call::Column::Status, CallStatus::Running.into())
        .filter(call::Column::Id.eq(id));
    let returned = grove_common::db::write::update_calls(&db, update)
        .await
        .expect("update");
    let read = call::Entity::find_by_id(id)
        .one(&db)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(returned, vec![read]);
}
