//! The reconciliation sweeps read the payments still in flight through their partial indexes
//! (migration 11, issue 12), in the plan PostgreSQL caches for every value of the statement's
//! parameters: the state is written into the statement (`payments::status_is`), because a
//! bound one cannot prove an index's predicate and the cached plan scanned every payment.

use grove_common::db::{entities::payment, payments};
use grove_common::ledger::PaymentStatus;
use grove_tests::TestDb;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, QueryTrait, Statement,
};

async fn exec(db: &DatabaseConnection, sql: &str) {
    db.execute_raw(Statement::from_string(DbBackend::Postgres, sql.to_owned()))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The plan PostgreSQL caches for every parameter value (a generic plan) of `sql`, as text.
async fn generic_plan(db: &DatabaseConnection, name: &str, sql: &str, args: &str) -> String {
    exec(db, &format!("PREPARE {name} AS {sql}")).await;
    let rows = db
        .query_all_raw(Statement::from_string(
            DbBackend::Postgres,
            format!("EXPLAIN EXECUTE {name}({args})"),
        ))
        .await
        .expect("explain");
    rows.iter()
        .map(|r| r.try_get::<String>("", "QUERY PLAN").expect("plan line"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn the_sweeps_read_payments_in_flight_through_their_partial_indexes() {
    let test_db = TestDb::on("postgres").await;
    // One connection: the session's plan setting and its prepared statements stay on it.
    let db = grove_common::db::connect_with(&test_db.url, Default::default(), 1)
        .await
        .expect("db");
    grove_migrations::run(&db).await.expect("migrations");
    // Many settled payments, a few in flight, and statistics that say so.
    exec(
        &db,
        r#"INSERT INTO "payments" ("id", "call_id", "payer", "nonce", "amount", "network",
            "x402_version", "status", "settle_request", "checks", "created_at", "updated_at",
            "next_check_at")
        SELECT gen_random_uuid(), gen_random_uuid(), '0xpayer', 'n' || i, '180000', 'eip155:8453',
            2, CASE WHEN i % 1000 = 0 THEN 'unknown' WHEN i % 1000 = 1 THEN 'reserved'
            ELSE 'settled' END, '{}', 0, now(), now(), now()
        FROM generate_series(1, 20000) AS i"#,
    )
    .await;
    exec(&db, r#"ANALYZE "payments""#).await;
    exec(&db, "SET plan_cache_mode = force_generic_plan").await;

    let now = chrono::Utc::now();
    let due = payment::Entity::find()
        .filter(payments::status_is(PaymentStatus::Unknown))
        .filter(payment::Column::NextCheckAt.lte(now))
        .order_by_asc(payment::Column::NextCheckAt)
        .limit(32)
        .build(DbBackend::Postgres)
        .sql;
    let plan = generic_plan(&db, "due", &due, "now(), 32").await;
    assert!(plan.contains("payments_unknown_due"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");

    let left = payment::Entity::find()
        .filter(payments::status_is(PaymentStatus::Reserved))
        .filter(payment::Column::UpdatedAt.lt(now))
        .build(DbBackend::Postgres)
        .sql;
    let plan = generic_plan(&db, "left_reserved", &left, "now()").await;
    assert!(plan.contains("payments_reserved_since"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");

    // What the sweeps wrote before: the state bound as a parameter, for which the cached plan
    // reads every payment.
    let bound = payment::Entity::find()
        .filter(payment::Column::Status.eq(PaymentStatus::Unknown))
        .filter(payment::Column::NextCheckAt.lte(now))
        .order_by_asc(payment::Column::NextCheckAt)
        .limit(32)
        .build(DbBackend::Postgres)
        .sql;
    let plan = generic_plan(&db, "bound", &bound, "'unknown', now(), 32").await;
    assert!(!plan.contains("payments_unknown_due"), "{plan}");
    db.close().await.expect("close");
}
