//! Paid calls' writes that arrive together share one statement on PostgreSQL (issue 31), and
//! each gets the answer it would have got alone. Claims (`ledger::Claims`): a new call, the
//! scope's holder, or the authorization used, with nothing kept of a refused claim; a race the
//! batch cannot see undoes the batch, and a lost answer is each member's lost answer. Settled
//! outcomes (`ledger::Outcomes`): each moves its own call once. PostgreSQL only (SQLite's writes
//! are written by their callers, together by group commit).
//!
//! The tests run on one thread: every claim of a `join_all` reaches the batcher before its
//! runner does, so what shares a statement is known without timing anything.

use futures::future::join_all;
use grove_common::{
    db::{
        entities::{call, idempotency, payment},
        outage,
    },
    ledger::{CallStatus, Claims, Outcomes, PaymentStatus},
};
use grove_tests::{
    TestDb,
    ledger_rows::{Answer, PAYER, claim, new_id, proxied, settle, settling_calls, stands},
    pg_proxy::Cut,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait, TransactionTrait};
use uuid::Uuid;

async fn scope_kept(db: &DatabaseConnection, scope: &str) -> bool {
    idempotency::Entity::find_by_id(scope.to_owned())
        .one(db)
        .await
        .expect("read")
        .is_some()
}

/// The call, its reserved payment and its receipt are stored for a new call.
async fn assert_recorded(db: &DatabaseConnection, id: Uuid, nonce: &str) {
    let call = call::Entity::find_by_id(id).one(db).await.expect("read");
    assert!(call.is_some(), "call {id} is stored");
    let payments = payment::Entity::find().all(db).await.expect("read");
    let paid = payments
        .iter()
        .find(|p| p.nonce == nonce)
        .expect("its payment");
    assert_eq!(paid.call_id, id);
    assert_eq!(paid.status, PaymentStatus::INITIAL);
}

#[tokio::test]
async fn claims_that_arrive_together_share_a_statement_and_each_keeps_its_own_answer() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db) = TestDb::migrated().await;
    let claims = Claims::new(db.clone(), 64);
    // Alone, before: a call to repeat, and an authorization used by another scope.
    let earlier = new_id(&claim(&claims, "earlier", "n-earlier").await);
    let used = new_id(&claim(&claims, "used", "n-used").await);
    assert_eq!(claims.shared(), 0, "a lone claim runs the single statement");

    let fresh: Vec<(String, String)> = (0..16)
        .map(|i| (format!("fresh-{i}"), format!("n-fresh-{i}")))
        .collect();
    let mut together: Vec<_> = fresh.iter().map(|(s, n)| claim(&claims, s, n)).collect();
    // A new scope; the same scope with another authorization; another scope with the first's
    // authorization; a scope paid by an authorization another call holds; a repeat.
    together.push(claim(&claims, "a", "n-a"));
    together.push(claim(&claims, "a", "n-b"));
    together.push(claim(&claims, "g", "n-a"));
    together.push(claim(&claims, "c", "n-used"));
    together.push(claim(&claims, "earlier", "n-earlier"));
    let answers = join_all(together).await;

    for ((_, nonce), answer) in fresh.iter().zip(&answers) {
        assert_recorded(&db, new_id(answer), nonce).await;
    }
    let a = new_id(&answers[16]);
    assert_recorded(&db, a, "n-a").await;
    assert_eq!(answers[17], Answer::Existing(a), "the scope's holder");
    assert_eq!(
        answers[18],
        Answer::NonceUsed,
        "the authorization paid for a"
    );
    assert_eq!(
        answers[19],
        Answer::NonceUsed,
        "the authorization paid for another"
    );
    assert_eq!(answers[20], Answer::Existing(earlier), "a repeat");
    assert!(
        !scope_kept(&db, "g").await,
        "a refused claim keeps no scope"
    );
    assert!(
        !scope_kept(&db, "c").await,
        "a refused claim keeps no scope"
    );
    // The sixteen and `a` shared one statement; the rest were claimed alone.
    assert_eq!(claims.shared(), 17);
    assert_eq!(call::Entity::find().count(&db).await.expect("count"), 19);
    assert_eq!(payment::Entity::find().count(&db).await.expect("count"), 19);
    assert_ne!(earlier, used);
}

/// The one case the batch's own check cannot see: an authorization reserved by a transaction
/// that commits while the batch waits on it. The batch raises, nothing of it stays, and each
/// member is claimed alone with the single claim's answer.
#[tokio::test]
async fn a_race_for_an_authorization_undoes_the_batch_and_each_is_claimed_alone() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db) = TestDb::migrated().await;
    let claims = Claims::new(db.clone(), 64);
    let other = db.begin().await.expect("a transaction");
    other
        .execute_unprepared(&format!(
            r#"INSERT INTO "payments" ("id", "call_id", "payer", "nonce", "amount", "network",
                "x402_version", "status", "settle_request", "valid_before", "checks",
                "created_at", "updated_at")
            VALUES (gen_random_uuid(), gen_random_uuid(), '{PAYER}', 'n-race', '180000',
                'eip155:8453', 2, 'reserved', '{{}}', 4000000000, 0, now(), now())"#
        ))
        .await
        .expect("the other reservation");
    let mut pairs: Vec<(String, String)> = (0..3)
        .map(|i| (format!("r-fresh-{i}"), format!("n-r-{i}")))
        .collect();
    pairs.push(("r".into(), "n-race".into()));
    let together = tokio::spawn({
        let claims = claims.clone();
        async move { join_all(pairs.iter().map(|(s, n)| claim(&claims, s, n))).await }
    });
    // Something waits on the other transaction's row: the batch's insert of the payment.
    let waiting = loop {
        let waiting = db
            .query_all_raw(sea_orm::Statement::from_string(
                sea_orm::DbBackend::Postgres,
                "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
            ))
            .await
            .expect("read");
        if let Some(row) = waiting.first() {
            break row.try_get::<String>("", "query").expect("its text");
        }
        assert!(
            !together.is_finished(),
            "no claim waited on the reservation"
        );
        tokio::task::yield_now().await;
    };
    assert!(
        waiting.contains("json_to_recordset"),
        "the batch waits, not a claim alone: {waiting:.80}"
    );
    other.commit().await.expect("commit");
    let answers = together.await.expect("claims");
    for (i, answer) in answers[..3].iter().enumerate() {
        assert_recorded(&db, new_id(answer), &format!("n-r-{i}")).await;
    }
    assert_eq!(answers[3], Answer::NonceUsed);
    assert!(
        !scope_kept(&db, "r").await,
        "the refused claim keeps no scope"
    );
    assert_eq!(claims.shared(), 0, "every member was claimed alone");
}

/// A batch whose answer is lost after it committed: each member learns that its own call holds
/// its scope, and nothing is written twice.
#[tokio::test]
async fn a_batch_whose_answer_is_lost_gives_each_member_its_own_call() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db, proxy, through) = proxied().await;
    let claims = Claims::new(through, 64);
    proxy.cut_next("json_to_recordset", Cut::AnswerLost);
    let answers = join_all((0..5).map(|i| {
        let claims = &claims;
        async move { claim(claims, &format!("lost-{i}"), &format!("n-lost-{i}")).await }
    }))
    .await;
    assert_eq!(proxy.cuts(), 1, "the batch's answer was lost");
    for (i, answer) in answers.iter().enumerate() {
        assert_recorded(&db, new_id(answer), &format!("n-lost-{i}")).await;
    }
    assert_eq!(call::Entity::find().count(&db).await.expect("count"), 5);
}

#[tokio::test]
async fn settled_outcomes_that_arrive_together_share_a_statement_and_each_moves_its_own_call() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db) = TestDb::migrated().await;
    let claims = Claims::new(db.clone(), 1);
    let outcomes = Outcomes::new(db.clone(), 64);
    let ids = settling_calls(&claims, "o", 9).await;
    // The last was settled before: its payment no longer takes an outcome.
    assert!(
        settle(&outcomes, ids[8], "0xearlier")
            .await
            .expect("written")
    );
    assert_eq!(
        outcomes.shared(),
        0,
        "a lone outcome runs the single statement"
    );

    let transactions: Vec<String> = (0..8).map(|i| format!("0x{i:064x}")).collect();
    let mut together: Vec<_> = ids[..8]
        .iter()
        .zip(&transactions)
        .map(|(id, tx)| settle(&outcomes, *id, tx))
        .collect();
    // The first call's outcome again, and the earlier call's.
    together.push(settle(&outcomes, ids[0], "0xagain"));
    together.push(settle(&outcomes, ids[8], "0xlate"));
    let moved: Vec<bool> = join_all(together)
        .await
        .into_iter()
        .map(|r| r.expect("written"))
        .collect();
    assert_eq!(moved[..8], [true; 8], "each moves its own call");
    assert!(!moved[8], "a call moves once");
    assert!(!moved[9], "a settled payment takes no second outcome");
    for (id, tx) in ids[..8].iter().zip(&transactions) {
        let (call, paid, transaction) = stands(&db, *id).await;
        assert_eq!(call, CallStatus::Pending);
        assert_eq!(paid, PaymentStatus::Settled);
        assert_eq!(
            transaction.as_deref(),
            Some(tx.as_str()),
            "its own transaction"
        );
    }
    assert_eq!(stands(&db, ids[8]).await.2.as_deref(), Some("0xearlier"));
    // The eight and the late one shared a statement; the repeat was written alone.
    assert_eq!(outcomes.shared(), 9);
}

/// A batch of outcomes whose answer is lost after it committed: each member is told its answer
/// was lost (so the paid request rides it out and reads where its call stands), and the calls
/// moved once.
#[tokio::test]
async fn a_batch_of_outcomes_whose_answer_is_lost_tells_each_member_so() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db, proxy, through) = proxied().await;
    let ids = settling_calls(&Claims::new(db.clone(), 1), "lost", 4).await;
    let outcomes = Outcomes::new(through, 64);
    proxy.cut_next("json_to_recordset", Cut::AnswerLost);
    let answers = join_all(ids.iter().map(|id| settle(&outcomes, *id, "0xabc"))).await;
    assert_eq!(proxy.cuts(), 1, "the batch's answer was lost");
    for (id, answer) in ids.iter().zip(answers) {
        let e = answer.expect_err("the answer was lost");
        assert!(outage::answer_lost(&e), "{e}");
        assert_eq!(stands(&db, *id).await.0, CallStatus::Pending);
    }
    // Written again, each finds its call moved: nothing moves twice.
    for id in &ids {
        assert!(!settle(&outcomes, *id, "0xabc").await.expect("written"));
    }
}

/// A batch of claims finds each member's authorization by the `(payer, nonce)` index, not by
/// scanning every payment: as `NOT EXISTS` the planner made it a hash anti-join over a scan of
/// the whole table, once per batch, which a table of many payments makes the costliest part of
/// every claim.
#[tokio::test]
async fn a_batch_of_claims_reads_payments_by_their_index() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db) = TestDb::migrated().await;
    db.execute_unprepared(&format!(
        r#"INSERT INTO "payments" ("id", "call_id", "payer", "nonce", "amount", "network",
            "x402_version", "status", "settle_request", "valid_before", "checks", "created_at",
            "updated_at")
        SELECT gen_random_uuid(), gen_random_uuid(), '{PAYER}', 'n-' || g, '180000',
            'eip155:8453', 2, 'settled', '{{}}', 4000000000, 0, now(), now()
        FROM generate_series(1, 3000) g;
        ANALYZE "payments""#
    ))
    .await
    .expect("payments");
    let members = serde_json::json!([
        {"i": 0, "payer": PAYER, "nonce": "new-1", "scope": "s1"},
        {"i": 1, "payer": PAYER, "nonce": "new-2", "scope": "s2"},
    ]);
    let sql = Claims::batch_statement().replace("$1::json", &format!("'{members}'::json"));
    let plan: Vec<String> = db
        .query_all_raw(sea_orm::Statement::from_string(
            sea_orm::DbBackend::Postgres,
            format!("EXPLAIN {sql}"),
        ))
        .await
        .expect("explain")
        .iter()
        .map(|row| row.try_get::<String>("", "QUERY PLAN").expect("a line"))
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("using payments_payer_nonce on payments q"),
        "{plan}"
    );
    assert!(!plan.contains("Seq Scan on payments"), "{plan}");
}
