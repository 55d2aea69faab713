//! "Nonce already used" on a first settle (issue 25): a proxy that retried our POST, or a
//! front-runner that submitted our very authorization, used it by paying us. The chain decides:
//! our `Transfer` for that nonce is a settlement (the result is delivered, one transfer), a
//! cancellation is a refusal, and without a chain it stays unknown, reconciled, never taken as
//! paid. Anvil with our EIP-3009 token at USDC's address; the facilitator is the loopback fake,
//! which moves nothing.

use alloy_primitives::{Address, B256, U256};
use grove_common::db::entities::payment;
use grove_http::SettleRequest;
use grove_tests::{
    PAY_TO,
    chain::Chain,
    db,
    facilitator::SettleScript,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

const PATH: &str = "/api/v1/agents/mary/call";
const PRICE: u64 = 180_000;
/// How x402-rs words a used nonce.
const NONCE_USED: &str = "invalid_exact_evm_nonce_already_used";

async fn rig(chain: Option<&Chain>) -> PaidApp {
    let mut extra_env = vec![("X402_FACILITATOR_TIMEOUT_S".to_owned(), "1".to_owned())];
    if let Some(chain) = chain {
        extra_env.push(("BASE_RPC_URL".into(), chain.url.clone()));
    }
    spawn_paid(Options {
        deadline_s: 2,
        redis_workers: usize::from(db::backend() == "postgres"),
        fake_chain: false,
        extra_env,
        ..Default::default()
    })
    .await
}

fn settle_request(payment: &str) -> SettleRequest {
    SettleRequest {
        x402_version: 2,
        payment_payload: decode_b64_json(payment),
        payment_requirements: json!({}),
    }
}

fn nonce_of(payment: &str) -> B256 {
    decode_b64_json(payment)["payload"]["authorization"]["nonce"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .expect("nonce")
}

async fn payments(rig: &PaidApp) -> Vec<payment::Model> {
    let conn = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("db");
    payment::Entity::find().all(&conn).await.expect("payments")
}

#[tokio::test]
async fn our_own_transfer_behind_a_used_nonce_is_settled_and_the_result_delivered() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(Some(&chain)).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    // A proxy retried our settle: the first POST moved the money, the retry is answered
    // "nonce already used".
    let tx = chain.submit(&settle_request(&payment)).await;
    rig.facilitator
        .script(SettleScript::RefuseWith200(NONCE_USED));

    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 200, "the money moved: the result is owed");
    let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
    assert_eq!(settle["success"], true);
    assert_eq!(settle["transaction"], tx.as_str(), "names our transfer");
    let answer: Value = r.json().await.expect("json");
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(rig.llm.received(), 1, "one model call");
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    let pay_to: Address = PAY_TO.parse().expect("address");
    assert_eq!(
        chain.balance(pay_to).await,
        U256::from(PRICE),
        "one transfer"
    );
    assert_eq!(rig.facilitator.transfers(), 0);
    let p = payments(&rig).await;
    assert_eq!(
        (p[0].status.as_str(), p[0].transaction.as_deref()),
        ("settled", Some(tx.as_str()))
    );
}

#[tokio::test]
async fn a_used_nonce_that_the_payer_canceled_is_refused_without_work() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(Some(&chain)).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let canceled = chain.cancel(&rig.wallet, nonce_of(&payment)).await;
    assert_eq!(canceled["status"], "0x1", "{canceled}");
    rig.facilitator
        .script(SettleScript::RefuseWith200(NONCE_USED));

    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 402);
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"], "settlement_failed:authorization_canceled");
    assert_eq!(rig.llm.received(), 0);
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 0);
    assert_eq!(payments(&rig).await[0].status.as_str(), "refused");
}

#[tokio::test]
async fn without_a_chain_a_used_nonce_stays_unknown_and_is_never_taken_as_paid() {
    let rig = rig(None).await;
    rig.facilitator
        .script(SettleScript::RefuseWith200(NONCE_USED));
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;

    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 504, "neither paid nor refused: unknown");
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"]["code"], "settlement_pending");

    // Reconciliation re-posts and hears the same words; without a chain they prove nothing.
    wait_until("three reconciliation checks", async || {
        payments(&rig).await[0].checks >= 3
    })
    .await;
    let p = &payments(&rig).await[0];
    assert_eq!(p.status.as_str(), "unknown", "{p:?}");
    assert!(
        p.error
            .as_deref()
            .is_some_and(|e| e.contains("BASE_RPC_URL")),
        "{:?}",
        p.error
    );
    assert_eq!(rig.llm.received(), 0, "no work for money nobody saw move");
}
