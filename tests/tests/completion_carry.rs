//! A completion carries its committed result to the waiting API process (issue 12: reading it
//! back was a fifth of PostgreSQL's statements per paid call), and what it carries is what a
//! later read returns: on PostgreSQL the result is kept as the JSON text it was written as.

use grove_common::ledger::{self, CallStatus};
use grove_common::{
    completion::{CARRIED_LIMIT, Completions},
    db::{calls, entities::result},
};
use grove_tests::{
    TestDb,
    paid::{REDIS_URL, live_completions},
};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

/// A publishing side (a worker's) and a subscribed side (an API process's) on one namespace.
async fn pair() -> (Completions, Completions) {
    let client = redis::Client::open(REDIS_URL).expect("redis url");
    let (worker, api, _) = live_completions(&client).await;
    (worker, api)
}

fn model(call_id: Uuid, body: Value) -> result::Model {
    result::Model {
        call_id,
        body,
        input_tokens: 11,
        output_tokens: 22,
        model_calls: 1,
        created_at: chrono::DateTime::from_timestamp_micros(1_764_000_000_123_456).expect("time"),
    }
}

/// Publishes `announce` until the waiter wakes (the subscription starts in the background, and
/// pub/sub drops what is published before it), then returns what the waiter was handed.
async fn delivered(
    api: &Completions,
    call_id: Uuid,
    announce: impl AsyncFn(),
) -> Option<result::Model> {
    let waiter = api.waiter(call_id);
    for _ in 0..100 {
        announce().await;
        if tokio::time::timeout(Duration::from_millis(100), waiter.notified())
            .await
            .is_ok()
        {
            return waiter.result();
        }
    }
    panic!("the completion never reached the waiter");
}

#[tokio::test]
async fn a_result_travels_with_its_completion_and_a_large_one_is_left_to_the_database() {
    let (worker, api) = pair().await;

    // Keys out of alphabetical order: they arrive in the order written.
    let id = Uuid::now_v7();
    let stored = model(id, json!({"zeta": 1, "alpha": {"y": [1, 2], "b": "ü\"x"}}));
    let got = delivered(&api, id, async || {
        worker.completed(id, stored.clone()).await
    })
    .await;
    let got = got.expect("the result came with the completion");
    assert_eq!(got, stored);
    assert_eq!(
        serde_json::to_string(&got.body).expect("json"),
        r#"{"zeta":1,"alpha":{"y":[1,2],"b":"ü\"x"}}"#
    );

    // Larger than a message carries: the waiter wakes without it, and reads the database.
    let id = Uuid::now_v7();
    let big = model(id, json!({"reply": "x".repeat(CARRIED_LIMIT)}));
    let got = delivered(&api, id, async || worker.completed(id, big.clone()).await).await;
    assert_eq!(got, None, "too large to carry");

    // A plain announcement (a failure, a refusal) carries nothing.
    let id = Uuid::now_v7();
    let got = delivered(&api, id, async || worker.notify(id).await).await;
    assert_eq!(got, None);
}

/// A new PostgreSQL database, migrated, and a connection to it.
async fn migrated_postgres() -> (TestDb, DatabaseConnection) {
    let test_db = TestDb::on("postgres").await;
    let db = grove_common::db::connect_url(&test_db.url)
        .await
        .expect("db");
    grove_migrations::run(&db).await.expect("migrations");
    (test_db, db)
}

/// A new call completed with `body` (and the model's answer, if given): its id and what was stored.
async fn completed(
    db: &DatabaseConnection,
    body: &Value,
    answer: Option<calls::ModelCallRecord>,
) -> (Uuid, result::Model) {
    let id = grove_tests::db::insert_call(db, CallStatus::Pending).await;
    let stored = ledger::complete(
        db,
        id,
        calls::Finisher::Unleased,
        body.clone(),
        (11, 22),
        1,
        answer,
    )
    .await
    .expect("complete")
    .expect("stored");
    (id, stored)
}

async fn column(db: &DatabaseConnection, table: &str, column: &str) -> (String, String) {
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            format!(
                "SELECT format_type(atttypid, atttypmod) AS ty, attcompression::text AS comp \
                 FROM pg_attribute WHERE attrelid = '\"{table}\"'::regclass AND attname = '{column}'"
            ),
        ))
        .await
        .expect("pg_attribute")
        .expect("the column exists");
    (
        row.try_get("", "ty").expect("ty"),
        row.try_get("", "comp").expect("comp"),
    )
}

async fn lz4_available(db: &DatabaseConnection) -> bool {
    db.query_one_raw(Statement::from_string(
        DbBackend::Postgres,
        "SELECT 1 AS one FROM pg_settings WHERE name = 'default_toast_compression' \
         AND 'lz4' = ANY(enumvals)",
    ))
    .await
    .expect("pg_settings")
    .is_some()
}

#[tokio::test]
async fn on_postgresql_a_result_is_read_back_as_written() {
    let (_test_db, db) = migrated_postgres().await;
    for (table, col) in [("results", "body"), ("model_calls", "outcome")] {
        let (ty, compression) = column(&db, table, col).await;
        assert_eq!(ty, "json", "{table}.{col} keeps the text as written");
        if lz4_available(&db).await {
            assert_eq!(compression, "l", "{table}.{col} is compressed with lz4");
        }
    }

    let body = json!({"zeta": 1, "alpha": {"y": [1, 2], "b": "ü\"x"}, "m": "y".repeat(5000)});
    let (id, stored) = completed(&db, &body, None).await;
    let read = calls::load_result(&db, id)
        .await
        .expect("read")
        .expect("a result");
    assert_eq!(
        read, stored,
        "what a completion carries is what a read returns"
    );
    assert_eq!(
        serde_json::to_string(&read.body).expect("json"),
        serde_json::to_string(&body).expect("json"),
        "in the order written"
    );
    db.close().await.expect("close");
}

/// Text that compresses about as little as a model's prose does under lz4: words from a small
/// generator, so that the compressed document stays over PostgreSQL's 2 KB threshold.
fn prose(words: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..words)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{:x}", x % 0xff_ffff)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The bytes a table keeps out of line, in its TOAST relation.
async fn out_of_line(db: &DatabaseConnection, table: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            format!(
                "SELECT pg_relation_size(reltoastrelid) AS size FROM pg_class \
                 WHERE oid = '\"{table}\"'::regclass"
            ),
        ))
        .await
        .expect("pg_class")
        .expect("the table exists");
    row.try_get("", "size").expect("size")
}

#[tokio::test]
async fn on_postgresql_a_result_and_its_model_answer_stay_in_their_rows() {
    let (_test_db, db) = migrated_postgres().await;

    // A typical paid call's documents: 3-4 KB each, about 2.5 KB once compressed.
    let body = json!({"reply": prose(450), "caveats": ["one", "two"]});
    let answer = calls::ModelCallRecord {
        run: 1,
        seq: 1,
        outcome: json!({"content": prose(420)}),
        tokens: (11, 22),
        http_attempts: 1,
    };
    let (_, stored) = completed(&db, &body, Some(answer)).await;
    assert_eq!(stored.body, body);
    for table in ["results", "model_calls"] {
        assert_eq!(
            out_of_line(&db, table).await,
            0,
            "{table}: a typical document is kept in its row, not in TOAST chunks beside it"
        );
    }

    // A document too large for a page still goes out of line, and reads back whole.
    let large = json!({"reply": prose(6000)});
    let (id, _) = completed(&db, &large, None).await;
    assert!(
        out_of_line(&db, "results").await > 0,
        "the large one is out of line"
    );
    let read = calls::load_result(&db, id)
        .await
        .expect("read")
        .expect("a result");
    assert_eq!(read.body, large);
    db.close().await.expect("close");
}
