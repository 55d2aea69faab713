//! An operator resolves a payment set aside for them, on a real EVM (anvil at chain id 8453 with
//! our EIP-3009 token at Base USDC's address): the resolution stands only when the chain
//! confirms it, and every try is in the audit with who made it.
//!
//! The story: the facilitator was down, so the settlement's outcome was unknown; in fact the
//! transfer landed. Without `BASE_RPC_URL`, reconciliation could never tell and set the payment
//! aside. The operator then configures the chain and resolves it with the transaction's hash.

use grove_common::{config::Config, db::entities::payment};
use grove_http::SettleRequest;
use grove_tests::{
    ADMIN_TOKEN,
    chain::Chain,
    facilitator::SettleScript,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    start_with_clock, wait_until,
};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use std::sync::Arc;

const CALL: &str = "/api/v1/agents/mary/call";
/// Mary's tier price in atomic USDC.
const PRICE: u64 = 180_000;

async fn resolve(rig: &PaidApp, id: &str, order: Value) -> (u16, Value) {
    let r = rig
        .app
        .client
        .post(
            rig.app
                .admin_url(&format!("/admin/v1/payments/{id}/resolve")),
        )
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", "application/json")
        .body(order.to_string())
        .send()
        .await
        .expect("reaches");
    let status = r.status().as_u16();
    (status, r.json().await.expect("json"))
}

async fn the_payment(db: &DatabaseConnection) -> payment::Model {
    let mut all = payment::Entity::find().all(db).await.expect("payments");
    assert_eq!(all.len(), 1);
    all.remove(0)
}

#[tokio::test]
async fn a_set_aside_payment_is_resolved_settled_only_with_the_transaction_the_chain_confirms() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let mut rig = spawn_paid(Options {
        deadline_s: 2,
        extra_env: vec![("X402_FACILITATOR_TIMEOUT_S".into(), "1".into())],
        ..Default::default()
    })
    .await;
    chain.mint(rig.wallet.address(), PRICE).await;
    rig.facilitator.script(SettleScript::Down);
    let body = caller_body("diagnose_growth");
    let r = rig.pay_and_call(CALL, &body, Some("k")).await;
    let receipt_url = grove_tests::receipt_of_504(r, "the settlement's outcome is unknown").await;
    let config = Config::from_map(&rig.env).expect("config");
    let db = grove_common::db::connect(&config).await.expect("database");

    // The transfer landed after all (as a facilitator that went down mid-answer may have done).
    let stored = the_payment(&db).await;
    let request: SettleRequest =
        serde_json::from_value(stored.settle_request.clone().expect("settle request"))
            .expect("a settle request");
    let transaction = chain.submit(&request).await;
    assert_eq!(chain.receipt(&transaction).await["status"], "0x1");

    // The process without a chain stops; its reconciliation's last check is written (a row it
    // leases carries a lease a minute long, one it has checked a backoff of at most a minute),
    // and the payment is set aside as reconciliation without a chain leaves it.
    rig.app.stop().await;
    wait_until("the last reconciliation check to be written", async || {
        let p = the_payment(&db).await;
        p.next_check_at
            .is_some_and(|next| next - p.updated_at <= chrono::Duration::seconds(60))
    })
    .await;
    payment::Entity::update_many()
        .col_expr(
            payment::Column::NextCheckAt,
            Option::<chrono::DateTime<chrono::Utc>>::None.into(),
        )
        .filter(payment::Column::Id.eq(stored.id))
        .exec(&db)
        .await
        .expect("set aside");

    // The operator configures the chain and restarts.
    rig.env.insert("BASE_RPC_URL".into(), chain.url.clone());
    let config = Config::from_map(&rig.env).expect("config");
    rig.app = start_with_clock(config, Arc::new(rig.clock.clone())).await;
    let listed: Value = rig
        .app
        .client
        .get(rig.app.admin_url("/admin/v1/payments"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("reaches")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["payments"][0]["attention"], "set_aside", "{listed}");
    let id = stored.id.to_string();

    // The chain disagrees: another transaction, or "never settled". Nothing changes.
    let other = format!("0x{}", "ab".repeat(32));
    let (status, refused) = resolve(
        &rig,
        &id,
        json!({"outcome": "settled", "transaction": other, "reason": "a guess"}),
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "chain_disagrees");
    let message = refused["error"]["message"].as_str().expect("message");
    assert!(
        message.contains(&transaction.to_ascii_lowercase()) || message.contains(&transaction),
        "it names the transaction that paid: {message}"
    );
    let (status, refused) = resolve(
        &rig,
        &id,
        json!({"outcome": "unsettled", "reason": "no money arrived, I think"}),
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "chain_disagrees");
    let p = the_payment(&db).await;
    assert_eq!(p.status.as_str(), "unknown", "nothing changed");

    // With the transaction that paid: settled, and the call runs as reconciliation would run it.
    let (status, done) = resolve(
        &rig,
        &id,
        json!({"outcome": "settled", "transaction": transaction, "reason": "the transfer is in the block explorer"}),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["confirmed_by"], "chain");
    assert_eq!(done["payment"]["status"], "settled");
    let p = the_payment(&db).await;
    assert_eq!(p.transaction.as_deref(), Some(transaction.as_str()));
    wait_until("the resolved call to complete", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    let receipt = rig.app.get_json(&receipt_url).await;
    assert_eq!(receipt["settlement"], "settled");
    assert_eq!(receipt["transaction"], transaction.as_str());
    assert_eq!(rig.llm.received(), 1, "the work ran once");
    assert_eq!(
        chain.authorizations_used(rig.wallet.address()).await,
        1,
        "the money moved once"
    );

    // The audit: two refusals and the resolution, each alice's, with before and after.
    let audit: Value = rig
        .app
        .client
        .get(rig.app.admin_url("/admin/v1/audit"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("reaches")
        .json()
        .await
        .expect("json");
    let entries = audit["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 3, "{audit}");
    assert!(entries.iter().all(|e| e["operator"] == "alice"
        && e["action"] == "payment.resolve"
        && e["subject"] == id.as_str()));
    let done = &entries[0];
    assert_eq!(done["before"]["status"], "unknown");
    assert_eq!(done["after"]["status"], "settled");
    assert_eq!(done["after"]["transaction"], transaction.as_str());
    assert_eq!(done["after"]["confirmed_by"], "chain");
    assert_eq!(done["reason"], "the transfer is in the block explorer");
    for refused in &entries[1..] {
        assert!(refused["after"]["refused"].is_string(), "{refused}");
        assert_eq!(refused["after"]["confirmed_by"], "chain");
    }
}
