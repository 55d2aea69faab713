//! Rows of the ledger for tests of its writes: claims with fixed fields, settled outcomes, and
//! where a call and its payment stand.

use crate::{TestDb, pg_proxy::PgProxy};
use chrono::Utc;
use grove_common::{
    db::entities::{call, payment},
    ledger::{
        self, CallKind, CallStatus, Claim, Claims, NewCall, NewPayment, Outcomes, PaymentStatus,
        Scope, Settlement,
    },
};
use sea_orm::{DatabaseConnection, EntityTrait};
use std::time::Duration;
use uuid::Uuid;

pub const PAYER: &str = "0x00000000000000000000000000000000000000aa";

/// What a claim of `scope` paid by the authorization `nonce` answered, tagged for assertions.
#[derive(Debug, PartialEq)]
pub enum Answer {
    New(Uuid),
    Existing(Uuid),
    NonceUsed,
    Vacated,
}

pub async fn claim(claims: &Claims, scope: &str, nonce: &str) -> Answer {
    let call = NewCall {
        kind: CallKind::Coaching,
        agent: None,
        mode: None,
        payer: PAYER.into(),
        request_hash: format!("hash-{scope}"),
        request: serde_json::json!({"messages": [{"role": "user", "content": scope}]}),
        request_id: format!("req-{scope}-{nonce}"),
    };
    let pay = NewPayment {
        nonce: nonce.into(),
        amount: "180000".into(),
        network: "eip155:8453".into(),
        x402_version: 2,
        settle_request: serde_json::json!({"x402Version": 2, "nonce": nonce}).to_string(),
        valid_before: 4_000_000_000,
    };
    let scope = Scope {
        key: scope,
        window: Duration::from_secs(86_400),
    };
    let now = Utc::now();
    match ledger::claim(claims, scope, call, pay, now, now)
        .await
        .expect("a claim answers")
    {
        Claim::New(call) => Answer::New(call.id),
        Claim::Existing { call_id, .. } => Answer::Existing(call_id),
        Claim::NonceUsed => Answer::NonceUsed,
        Claim::Vacated => Answer::Vacated,
    }
}

/// A migrated database, a connection to it, and one through a proxy that can cut a statement.
pub async fn proxied() -> (TestDb, DatabaseConnection, PgProxy, DatabaseConnection) {
    let (test_db, db) = TestDb::migrated().await;
    let proxy = PgProxy::in_front_of(&test_db.url).await;
    let through = grove_common::db::connect_url(&proxy.url_for(&test_db.url))
        .await
        .expect("through the proxy");
    (test_db, db, proxy, through)
}

pub fn new_id(a: &Answer) -> Uuid {
    match a {
        Answer::New(id) => *id,
        other => panic!("expected a new call, got {other:?}"),
    }
}

/// A settled outcome for `id`, paid by `transaction`: whether it moved the call.
pub async fn settle(
    outcomes: &Outcomes,
    id: Uuid,
    transaction: &str,
) -> Result<bool, sea_orm::DbErr> {
    let settled = Settlement::Settled {
        transaction: Some(transaction.into()),
        local: false,
    };
    Ok(outcomes.record(id, &settled, Utc::now(), None).await?.moved)
}

/// `n` new calls, each settling with its payment reserved.
pub async fn settling_calls(claims: &Claims, prefix: &str, n: usize) -> Vec<Uuid> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(new_id(
            &claim(claims, &format!("{prefix}-{i}"), &format!("n-{prefix}-{i}")).await,
        ));
    }
    ids
}

/// A call's status, its payment's, and the transaction that paid it.
pub async fn stands(
    db: &DatabaseConnection,
    id: Uuid,
) -> (CallStatus, PaymentStatus, Option<String>) {
    let call = call::Entity::find_by_id(id)
        .one(db)
        .await
        .expect("read")
        .expect("the call");
    let payments = payment::Entity::find().all(db).await.expect("read");
    let paid = payments
        .into_iter()
        .find(|p| p.call_id == id)
        .expect("its payment");
    (call.status, paid.status, paid.transaction)
}
