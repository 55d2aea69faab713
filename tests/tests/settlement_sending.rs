//! Sending our own settlement (`X402_SETTLEMENT=self`, issue 25 items 3 and 4), through the API
//! on anvil: what the node refuses before broadcast is the operator's fault (503
//! `settlement_unavailable`, the payment released, no model call, and the very same payment
//! settles once fixed); a base fee above `SETTLER_MAX_FEE_GWEI` sends nothing; a stuck
//! transaction is replaced at the same nonce with higher fees and settles exactly once; delivery
//! waits for `SETTLEMENT_CONFIRMATIONS`. Each test counts transfers, model calls and results.

use alloy_primitives::{Address, U256};
use alloy_signer_local::PrivateKeySigner;
use grove_common::db::entities::payment;
use grove_tests::{
    PAY_TO,
    chain::{Chain, SETTLER_KEY},
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

const PATH: &str = "/api/v1/agents/mary/call";
const PRICE: u64 = 180_000;
const GWEI: u128 = 1_000_000_000;

async fn rig(chain: &Chain, extra: &[(&str, &str)]) -> PaidApp {
    rig_with_deadline(chain, 40, extra).await
}

/// With `CALL_DEADLINE_S=deadline_s`: how long a request waits for an unknown outcome.
async fn rig_with_deadline(chain: &Chain, deadline_s: u64, extra: &[(&str, &str)]) -> PaidApp {
    let mut extra_env = vec![
        ("X402_SETTLEMENT".into(), "self".into()),
        ("BASE_RPC_URL".into(), chain.url.clone()),
        ("SETTLER_PRIVATE_KEY".into(), SETTLER_KEY.into()),
        ("X402_SETTLE_TIMEOUT_S".into(), "30".into()),
    ];
    extra_env.extend(extra.iter().map(|(k, v)| ((*k).into(), (*v).into())));
    let rig = spawn_paid(Options {
        facilitator: false,
        deadline_s,
        extra_env,
        ..Default::default()
    })
    .await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    rig
}

fn settler() -> Address {
    SETTLER_KEY
        .parse::<PrivateKeySigner>()
        .expect("key")
        .address()
}

fn pay_to() -> Address {
    PAY_TO.parse().expect("address")
}

fn hex_u128(v: &Value) -> u128 {
    u128::from_str_radix(v.as_str().expect("hex").trim_start_matches("0x"), 16).expect("hex")
}

/// The transaction a paid answer's `PAYMENT-RESPONSE` names.
fn transaction_of(r: &reqwest::Response) -> String {
    let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
    settle["transaction"]
        .as_str()
        .expect("a transaction")
        .to_owned()
}

/// A 503 `settlement_unavailable` (no 402, a `Retry-After`), its payment released (the same
/// authorization may pay again) with `reason` kept for the operator.
async fn assert_not_sent(rig: &PaidApp, r: reqwest::Response, reason: &str) {
    assert_eq!(r.status(), 503, "the payer did nothing wrong");
    assert!(r.headers().get("payment-required").is_none());
    assert!(r.headers().get("retry-after").is_some());
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "settlement_unavailable", "{body}");
    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("database");
    let payments = payment::Entity::find().all(&db).await.expect("payments");
    assert_eq!(payments.len(), 1);
    assert_eq!(payments[0].status.as_str(), "released");
    assert_eq!(payments[0].error.as_deref(), Some(reason));
}

#[tokio::test]
async fn a_base_fee_above_the_cap_sends_nothing_and_the_same_payment_pays_once_fees_drop() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain, &[("SETTLER_MAX_FEE_GWEI", "0.5")]).await;
    let sent_before = chain.nonce(settler()).await;
    // A fee spike: the next block's base fee is 2 gwei, four times the cap.
    chain
        .rpc(
            "anvil_setNextBlockBaseFeePerGas",
            json!([format!("{:#x}", 2 * GWEI)]),
        )
        .await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    for attempt in ["first", "identical retry during the spike"] {
        let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
        assert_not_sent(&rig, r, "fee_above_cap").await;
        assert_eq!(
            chain.nonce(settler()).await,
            sent_before,
            "{attempt}: nothing sent"
        );
        assert_eq!(chain.pending_from(settler()).await, 0, "{attempt}");
    }
    assert_eq!(chain.balance(pay_to()).await, U256::ZERO);
    assert_eq!(rig.llm.received(), 0, "no model call");

    // Fees drop: the very same payment buys the call, once.
    chain
        .rpc(
            "anvil_setNextBlockBaseFeePerGas",
            json!([grove_tests::chain::BASE_FEE_WEI]),
        )
        .await;
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 200);
    let tx = chain
        .rpc("eth_getTransactionByHash", json!([transaction_of(&r)]))
        .await;
    assert!(
        hex_u128(&tx["maxFeePerGas"]) <= GWEI / 2,
        "signed under the cap: {tx}"
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    assert_eq!(rig.llm.received(), 1);
    let again = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(again.status(), 200);
    assert_eq!(
        chain.balance(pay_to()).await,
        U256::from(PRICE),
        "moved once"
    );
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_settler_without_eth_sends_nothing_and_the_same_payment_pays_once_funded() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain, &[]).await;
    let funds = chain
        .rpc("eth_getBalance", json!([settler(), "latest"]))
        .await;
    chain
        .rpc("anvil_setBalance", json!([settler(), "0x0"]))
        .await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_not_sent(&rig, r, "settler_out_of_funds").await;
    assert_eq!(chain.pending_from(settler()).await, 0);
    assert_eq!(chain.balance(pay_to()).await, U256::ZERO);
    assert_eq!(rig.llm.received(), 0, "no model call");

    // The operator tops the settler up: the same payment settles.
    chain
        .rpc("anvil_setBalance", json!([settler(), funds]))
        .await;
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_stuck_transaction_is_replaced_with_higher_fees_and_settles_exactly_once() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(
        &chain,
        &[
            ("SETTLER_MAX_FEE_GWEI", "50"),
            ("SETTLER_REPLACE_AFTER_S", "1"),
        ],
    )
    .await;
    let sent_before = chain.nonce(settler()).await;
    // Mining paused: the first version waits in the pool.
    chain.rpc("evm_setAutomine", json!([false])).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let paid = {
        let (rig, body, payment) = (&rig, &body, &payment);
        async move { rig.send_paid(PATH, body, payment, Some("k")).await }
    };
    let chain_ref = &chain;
    let operator = async move {
        let mut first_fee = 0;
        wait_until(
            "the first version in the pool",
            async || match pending_fee(chain_ref).await {
                Some(fee) => {
                    first_fee = fee;
                    true
                }
                None => false,
            },
        )
        .await;
        // The base fee rises past the first version's max fee: it can never be mined now.
        let risen = 5 * GWEI;
        assert!(first_fee < risen, "{first_fee}");
        chain_ref
            .rpc(
                "anvil_setNextBlockBaseFeePerGas",
                json!([format!("{risen:#x}")]),
            )
            .await;
        wait_until("a replacement above the new base fee", async || {
            pending_fee(chain_ref).await.is_some_and(|fee| fee > risen)
        })
        .await;
        // Mining resumes.
        chain_ref.rpc("evm_setAutomine", json!([true])).await;
        chain_ref.rpc("evm_mine", json!([])).await;
        first_fee
    };
    let (r, first_fee) = tokio::join!(paid, operator);
    assert_eq!(r.status(), 200, "delivered");
    let tx = chain
        .rpc("eth_getTransactionByHash", json!([transaction_of(&r)]))
        .await;
    let fee = hex_u128(&tx["maxFeePerGas"]);
    assert!(
        fee * 8 >= first_fee * 9,
        "at least 12.5 % above {first_fee}: {tx}"
    );
    assert_eq!(
        chain.nonce(settler()).await,
        sent_before + 1,
        "one nonce, one transaction mined"
    );
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    assert_eq!(
        chain.balance(pay_to()).await,
        U256::from(PRICE),
        "one transfer"
    );
    assert_eq!(rig.llm.received(), 1, "one model call");
}

/// The max fee of the settler's transaction waiting in the pool, if any.
async fn pending_fee(chain: &Chain) -> Option<u128> {
    let pool = chain.rpc("txpool_content", json!([])).await;
    let mine = pool["pending"]
        .as_object()?
        .iter()
        .find_map(|(from, txs)| {
            (from.parse::<Address>().ok() == Some(settler())).then_some(txs.clone())
        })?;
    mine.as_object()?
        .values()
        .map(|tx| hex_u128(&tx["maxFeePerGas"]))
        .max()
}

#[tokio::test]
async fn delivery_waits_until_the_transfer_is_the_configured_depth() {
    // Blocks every second, as on a real chain; three confirmations wanted.
    let Some(chain) = Chain::start_with(&["--block-time", "1"]).await else {
        return;
    };
    let rig = rig(&chain, &[("SETTLEMENT_CONFIRMATIONS", "3")]).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 200);
    let head = hex_u128(&chain.rpc("eth_blockNumber", json!([])).await);
    let receipt = chain.receipt(&transaction_of(&r)).await;
    let mined_in = hex_u128(&receipt["blockNumber"]);
    assert!(
        head >= mined_in + 2,
        "mined in {mined_in}, delivered at head {head}"
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn reconciliation_replaces_a_stuck_transaction_and_follows_every_version() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    // The settlement gives up after 1 s, the request after 3 s (504); reconciliation carries on.
    let rig = rig_with_deadline(
        &chain,
        3,
        &[
            ("SETTLER_MAX_FEE_GWEI", "50"),
            ("SETTLER_REPLACE_AFTER_S", "1"),
            ("X402_SETTLE_TIMEOUT_S", "1"),
        ],
    )
    .await;
    let sent_before = chain.nonce(settler()).await;
    chain.rpc("evm_setAutomine", json!([false])).await;
    // Fees rise past anything the first version offers, before it is sent.
    let risen = 5 * GWEI;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let (paid, ()) = tokio::join!(rig.send_paid(PATH, &body, &payment, Some("k")), async {
        wait_until("the first version in the pool", async || {
            pending_fee(&chain).await.is_some()
        })
        .await;
        chain
            .rpc(
                "anvil_setNextBlockBaseFeePerGas",
                json!([format!("{risen:#x}")]),
            )
            .await;
    });
    let receipt_url = grove_tests::receipt_of_504(paid, "unknown, never a 402").await;
    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("database");
    let versions = async || {
        let rows = payment::Entity::find().all(&db).await.expect("payments");
        rows[0]
            .sent_tx_raw
            .as_deref()
            .map_or(0, |raw| raw.split(',').count())
    };
    wait_until(
        "reconciliation replaces the stuck transaction",
        async || pending_fee(&chain).await.is_some_and(|fee| fee > risen) && versions().await >= 2,
    )
    .await;
    assert_eq!(rig.llm.received(), 0, "no work before the money moved");

    chain.rpc("evm_setAutomine", json!([true])).await;
    chain.rpc("evm_mine", json!([])).await;
    wait_until("reconciliation settles and the work runs", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    assert_eq!(
        chain.nonce(settler()).await,
        sent_before + 1,
        "one transaction mined"
    );
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    assert_eq!(
        chain.balance(pay_to()).await,
        U256::from(PRICE),
        "one transfer"
    );
    assert_eq!(rig.llm.received(), 1, "one model call");
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 200, "the result delivered");
    assert_eq!(rig.llm.received(), 1);
}
