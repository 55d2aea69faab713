//! A paid call settled by Grove itself on a real EVM (issue 7 item 4, through the HTTP API): anvil
//! at chain id 8453 with our EIP-3009 token at Base USDC's address. The call moves exactly the
//! price from payer to payee once, `PAYMENT-RESPONSE` names the real transaction, 64 concurrent
//! calls make 64 transfers, and a settlement stuck in the mempool is unknown (504
//! `settlement_pending`, never 402) while reconciliation follows the one transaction it sent,
//! never sending another, until it is mined.

use alloy_primitives::{Address, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use futures::future::join_all;
use grove_common::db::entities::payment;
use grove_tests::{
    PAY_TO,
    chain::{Chain, SETTLER_KEY, has_authorization_used},
    db,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use sea_orm::EntityTrait;
use serde_json::{Value, json};
use std::collections::HashSet;

const PATH: &str = "/api/v1/agents/mary/call";
/// Mary's tier price in atomic USDC.
const PRICE: u64 = 180_000;

async fn rig(chain: &Chain, deadline_s: u64, settle_timeout_s: u64) -> PaidApp {
    spawn_paid(Options {
        facilitator: false,
        deadline_s,
        redis_workers: usize::from(db::backend() == "postgres"),
        extra_env: vec![
            ("X402_SETTLEMENT".into(), "self".into()),
            ("BASE_RPC_URL".into(), chain.url.clone()),
            ("SETTLER_PRIVATE_KEY".into(), SETTLER_KEY.into()),
            ("X402_SETTLE_TIMEOUT_S".into(), settle_timeout_s.to_string()),
        ],
        ..Default::default()
    })
    .await
}

fn pay_to() -> Address {
    PAY_TO.parse().expect("address")
}

fn settler() -> Address {
    SETTLER_KEY
        .parse::<PrivateKeySigner>()
        .expect("key")
        .address()
}

/// The decoded `PAYMENT-RESPONSE` of a paid answer.
fn settlement_of(r: &reqwest::Response) -> Value {
    decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"))
}

/// Checks that a `PAYMENT-RESPONSE` names a mined transaction that used `payment`'s
/// authorization; returns its hash.
async fn assert_names_the_transfer(
    chain: &Chain,
    settle: &Value,
    rig: &PaidApp,
    payment: &str,
) -> String {
    assert_eq!(settle["success"], true, "{settle}");
    assert_eq!(settle["network"], "eip155:8453", "{settle}");
    assert_eq!(settle["payer"], format!("{:#x}", rig.wallet.address()));
    let hash = settle["transaction"]
        .as_str()
        .expect("transaction")
        .to_owned();
    let receipt = chain.receipt(&hash).await;
    assert_eq!(receipt["status"], "0x1", "{settle}");
    let nonce: B256 = decode_b64_json(payment)["payload"]["authorization"]["nonce"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .expect("nonce");
    assert!(
        has_authorization_used(&receipt, rig.wallet.address(), nonce),
        "{receipt}"
    );
    hash
}

#[tokio::test]
async fn a_paid_call_moves_exactly_the_price_once_and_names_the_real_transaction() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain, 20, 30).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 200);
    assert_names_the_transfer(&chain, &settlement_of(&r), &rig, &payment).await;
    assert_eq!(
        chain.balance(rig.wallet.address()).await,
        U256::from(1_000_000 - PRICE)
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(rig.llm.received(), 1);

    // The identical retry replays; the chain does not move again.
    let again = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(again.status(), 200);
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_settlement_stuck_in_the_mempool_is_followed_not_resent_and_reconciled_once_mined() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain, 3, 1).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let sent_before = chain.nonce(settler()).await;
    chain.rpc("evm_setAutomine", json!([false])).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 504, "unknown is never a 402");
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"]["code"], "settlement_pending");
    let receipt_url = answer["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    // Several reconciliation passes while the transaction sits in the mempool.
    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("database");
    wait_until("three reconciliation checks", async || {
        let rows = payment::Entity::find().all(&db).await.expect("payments");
        rows.iter().any(|p| p.checks >= 3)
    })
    .await;
    assert_eq!(
        chain.pending_from(settler()).await,
        1,
        "one transaction in the mempool, however many passes"
    );
    assert_eq!(
        chain.balance(pay_to()).await,
        U256::ZERO,
        "nothing mined yet"
    );
    assert_eq!(rig.llm.received(), 0);

    chain.rpc("evm_setAutomine", json!([true])).await;
    chain.rpc("evm_mine", json!([])).await;
    wait_until("reconciliation settles and the work runs", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    assert_eq!(
        chain.nonce(settler()).await,
        sent_before + 1,
        "exactly one transaction from the settler"
    );
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    assert_eq!(
        chain.balance(pay_to()).await,
        U256::from(PRICE),
        "moved once"
    );
    assert_eq!(
        chain.balance(rig.wallet.address()).await,
        U256::from(1_000_000 - PRICE)
    );
    assert_eq!(rig.llm.received(), 1);
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 200);
    let hash = assert_names_the_transfer(&chain, &settlement_of(&r), &rig, &payment).await;
    assert_eq!(
        rig.app.get_json(&receipt_url).await["transaction"],
        hash.as_str()
    );
    assert_eq!(rig.llm.received(), 1);
}

/// The hash of the transaction a stored payment's unknown outcome follows.
async fn followed_tx(db: &sea_orm::DatabaseConnection) -> Option<String> {
    let rows = payment::Entity::find().all(db).await.expect("payments");
    rows.into_iter().find_map(|p| p.sent_tx)
}

#[tokio::test]
async fn a_settlement_whose_transaction_lost_its_nonce_is_sent_again_once() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain, 3, 1).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let nonce = chain.nonce(settler()).await;
    chain.rpc("evm_setAutomine", json!([false])).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 504);
    let answer: Value = r.json().await.expect("json");
    let receipt_url = answer["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();
    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("database");
    let first = followed_tx(&db)
        .await
        .expect("the sent transaction is kept");

    // Our transaction leaves the mempool and another one of the settler key takes its nonce:
    // it can never be mined now.
    chain.rpc("anvil_dropTransaction", json!([first])).await;
    chain
        .rpc(
            "eth_sendTransaction",
            json!([{"from": settler(), "to": settler(), "value": "0x0", "nonce": format!("{nonce:#x}"),
                "maxFeePerGas": "0x174876e800", "maxPriorityFeePerGas": "0x3b9aca00"}]),
        )
        .await;
    chain.rpc("evm_mine", json!([])).await;
    wait_until("reconciliation sends a new transaction", async || {
        followed_tx(&db).await.is_some_and(|tx| tx != first)
    })
    .await;
    assert_eq!(chain.pending_from(settler()).await, 1);

    chain.rpc("evm_setAutomine", json!([true])).await;
    chain.rpc("evm_mine", json!([])).await;
    wait_until("reconciliation settles and the work runs", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 200);
    let hash = assert_names_the_transfer(&chain, &settlement_of(&r), &rig, &payment).await;
    assert_ne!(hash, first);
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    assert_eq!(
        chain.nonce(settler()).await,
        nonce + 2,
        "the intruder and one resend"
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn sixty_four_concurrent_paid_calls_make_sixty_four_transfers_through_the_api() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain, 60, 60).await;
    chain.mint(rig.wallet.address(), 64 * PRICE).await;
    let sent_before = chain.nonce(settler()).await;
    let body = caller_body("diagnose_growth");
    let mut payments = Vec::new();
    for _ in 0..64 {
        payments.push(rig.payment_for(PATH, &body, PayOptions::default()).await);
    }

    // 64 purchases at once: each its own Idempotency-Key and authorization.
    let (rig_ref, body_ref) = (&rig, &body);
    let calls = payments.iter().enumerate().map(|(i, payment)| {
        let key = format!("concurrent-{i}");
        async move { rig_ref.send_paid(PATH, body_ref, payment, Some(&key)).await }
    });
    let answers = join_all(calls).await;

    let mut transactions = HashSet::new();
    for (r, payment) in answers.iter().zip(&payments) {
        assert_eq!(r.status(), 200, "every call is delivered");
        let hash = assert_names_the_transfer(&chain, &settlement_of(r), &rig, payment).await;
        transactions.insert(hash);
    }
    assert_eq!(transactions.len(), 64, "64 distinct transactions");
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 64);
    assert_eq!(
        chain.nonce(settler()).await,
        sent_before + 64,
        "no nonce collision"
    );
    assert_eq!(chain.balance(rig.wallet.address()).await, U256::ZERO);
    assert_eq!(chain.balance(pay_to()).await, U256::from(64 * PRICE));
    assert_eq!(rig.llm.received(), 64, "one model call each");
}

#[tokio::test]
async fn an_unknown_outcome_proven_unsettled_on_chain_releases_the_scope() {
    // Blocks every second: "expired" is the chain's time at its safe block, not ours.
    let Some(chain) = Chain::start_with(&["--block-time", "1"]).await else {
        return;
    };
    // A facilitator that is down moves nothing; the chain tells reconciliation so.
    let rig = spawn_paid(Options {
        deadline_s: 2,
        extra_env: vec![
            ("BASE_RPC_URL".into(), chain.url.clone()),
            ("X402_FACILITATOR_TIMEOUT_S".into(), "1".into()),
        ],
        ..Default::default()
    })
    .await;
    rig.facilitator
        .script(grove_tests::facilitator::SettleScript::Down);
    let body = caller_body("diagnose_growth");
    // Expires in 8 s: the shortest authorization local verification accepts is 6 s.
    let expires = grove_tests::x402::now_unix() + 8;
    let payment = rig
        .payment_for(
            PATH,
            &body,
            PayOptions {
                valid_before: Some(expires),
                ..Default::default()
            },
        )
        .await;
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 504);
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"]["code"], "settlement_pending");
    let receipt_url = answer["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    // Once a safe block past `validBefore` (and the margin) shows it unused, the call is
    // proven unpaid.
    grove_tests::wait_until_within(
        "reconciliation proves the payment unsettled",
        60,
        async || rig.app.get_json(&receipt_url).await["status"] == "unpaid",
    )
    .await;
    assert_eq!(
        rig.app.get_json(&receipt_url).await["settlement"],
        "refused"
    );
    assert_eq!(
        rig.llm.received(),
        0,
        "nothing ran for money that never moved"
    );
    // A retry gets the 402 again (the expired authorization is refused locally); a new one buys
    // the call, whose scope the proof released.
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 402);
    assert!(r.headers().get("payment-required").is_some());
    rig.facilitator
        .script(grove_tests::facilitator::SettleScript::Success);
    let fresh = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &fresh, Some("k")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);
}
