//! Reconciliation that reads the chain (`BASE_RPC_URL`) while a facilitator settles (issue 7):
//! USDC's `authorizationState` is true for a used and for a canceled authorization alike, so only
//! the `AuthorizationUsed` log (and the `Transfer` after it) proves a payment, and names its
//! transaction. A payer who cancels while the outcome is unknown gets no work for free.
//! Anvil at chain id 8453 with our EIP-3009 token at Base USDC's address; the facilitator is the
//! loopback fake, the chain is real.

use alloy_primitives::{Address, B256, U256};
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
use serde_json::{Value, json};
use std::time::Duration;

const PATH: &str = "/api/v1/agents/mary/call";
const PRICE: u64 = 180_000;

async fn rig(chain: &Chain) -> PaidApp {
    spawn_paid(Options {
        deadline_s: 2,
        redis_workers: usize::from(db::backend() == "postgres"),
        extra_env: vec![
            ("BASE_RPC_URL".into(), chain.url.clone()),
            ("X402_FACILITATOR_TIMEOUT_S".into(), "1".into()),
        ],
        ..Default::default()
    })
    .await
}

fn nonce_of(payment: &str) -> B256 {
    decode_b64_json(payment)["payload"]["authorization"]["nonce"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .expect("nonce")
}

/// Pays, with the facilitator hanging then down: the answer is 504 `settlement_pending`.
/// Returns the receipt URL.
async fn pay_into_an_unknown_outcome(rig: &PaidApp, body: &Value, payment: &str) -> String {
    rig.facilitator
        .script_next(SettleScript::Hang(Duration::from_secs(3)));
    rig.facilitator.script(SettleScript::Down);
    let r = rig.send_paid(PATH, body, payment, Some("k")).await;
    assert_eq!(r.status(), 504, "unknown is never a 402");
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"]["code"], "settlement_pending");
    answer["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned()
}

#[tokio::test]
async fn a_payer_who_cancels_while_the_outcome_is_unknown_gets_no_work() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let receipt_url = pay_into_an_unknown_outcome(&rig, &body, &payment).await;

    // The payer voids the authorization on chain (EIP-3009 cancelAuthorization); from now on a
    // facilitator answers the re-post the way USDC words a used or canceled nonce.
    let canceled = chain.cancel(&rig.wallet, nonce_of(&payment)).await;
    assert_eq!(canceled["status"], "0x1", "{canceled}");
    rig.facilitator.script(SettleScript::RefuseWith200(
        "FiatTokenV2: authorization is used or canceled",
    ));

    wait_until("reconciliation proves the call unpaid", async || {
        rig.app.get_json(&receipt_url).await["status"] == "unpaid"
    })
    .await;
    let receipt = rig.app.get_json(&receipt_url).await;
    assert_eq!(receipt["settlement"], "refused");
    assert!(receipt["result"].is_null());
    assert_eq!(
        rig.llm.received(),
        0,
        "no model call for money that never moved"
    );
    let pay_to: Address = PAY_TO.parse().expect("address");
    assert_eq!(chain.balance(pay_to).await, U256::ZERO);
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 0);

    // The identical retry gets the 402 again, naming why.
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 402);
    assert!(r.headers().get("payment-required").is_some());
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"], "settlement_failed:authorization_canceled");
    assert_eq!(rig.llm.received(), 0);
}

#[tokio::test]
async fn a_transfer_the_facilitator_broadcast_before_failing_is_found_on_chain_with_its_hash() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let receipt_url = pay_into_an_unknown_outcome(&rig, &body, &payment).await;

    // What the facilitator did before it went quiet: the transfer is on chain.
    let broadcast = chain
        .submit(&SettleRequest {
            x402_version: 2,
            payment_payload: decode_b64_json(&payment),
            payment_requirements: json!({}),
        })
        .await;

    wait_until(
        "reconciliation finds the transfer and the work runs",
        async || rig.app.get_json(&receipt_url).await["status"] == "completed",
    )
    .await;
    assert_eq!(
        rig.app.get_json(&receipt_url).await["transaction"],
        broadcast.as_str()
    );
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 200);
    let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
    assert_eq!(
        settle,
        json!({
            "success": true,
            "transaction": broadcast,
            "network": "eip155:8453",
            "payer": format!("{:#x}", rig.wallet.address()),
        })
    );
    assert_eq!(
        chain.balance(PAY_TO.parse().expect("address")).await,
        U256::from(PRICE)
    );
    assert_eq!(rig.llm.received(), 1);
    assert_eq!(
        rig.facilitator.transfers(),
        0,
        "the fake moved nothing: the chain did"
    );
}
