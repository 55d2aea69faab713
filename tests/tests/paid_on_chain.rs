//! A paid call settled by Grove itself on a real EVM (issue 7 item 4, through the HTTP API): anvil
//! at chain id 8453 with our EIP-3009 token at Base USDC's address. The call moves exactly the
//! price from payer to payee once, `PAYMENT-RESPONSE` names the real transaction, and a
//! settlement stuck in the mempool is unknown (504 `settlement_pending`, never 402) until
//! reconciliation reads the chain once it is mined.

use alloy_primitives::{Address, U256};
use grove_tests::{
    PAY_TO,
    chain::{Chain, SETTLER_KEY},
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use serde_json::{Value, json};

const PATH: &str = "/api/v1/agents/mary/call";
/// Mary's tier price in atomic USDC.
const PRICE: u64 = 180_000;

async fn rig(chain: &Chain, deadline_s: u64, settle_timeout_s: u64) -> PaidApp {
    spawn_paid(Options {
        facilitator: false,
        deadline_s,
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
    let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
    let hash = settle["transaction"]
        .as_str()
        .expect("transaction")
        .to_owned();
    assert_eq!(chain.receipt(&hash).await["status"], "0x1", "{settle}");
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
async fn a_settlement_stuck_in_the_mempool_is_unknown_then_reconciled_once_mined() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain, 3, 1).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
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
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn an_unknown_outcome_proven_unsettled_on_chain_releases_the_scope() {
    let Some(chain) = Chain::start().await else {
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

    // Once the authorization has expired unused, the call is proven unpaid.
    wait_until("reconciliation proves the payment unsettled", async || {
        rig.app.get_json(&receipt_url).await["status"] == "unpaid"
    })
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
