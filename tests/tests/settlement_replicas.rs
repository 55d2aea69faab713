//! Two `api` replicas settling with one key (issue 25 item 6): two `api` processes on one
//! PostgreSQL database and one anvil, sharing `SETTLER_PRIVATE_KEY`. The key's nonce counter is
//! a row both hold in turn (`settler_nonces`), so 64 concurrent paid calls split between them
//! make 64 transfers: no refusal, no duplicate, no nonce lost.

use alloy_primitives::{Address, U256};
use alloy_signer_local::PrivateKeySigner;
use futures::future::join_all;
use grove_tests::{
    PAY_TO, TestDb,
    api_process::ApiProcess,
    chain::{Chain, SETTLER_KEY},
    default_env,
    llm::{FakeLlm, caller_body},
    x402::{PayOptions, TestWallet, decode_b64_json},
};
use std::collections::HashSet;

const PATH: &str = "/api/v1/agents/mary/call";
const PRICE: u64 = 180_000;
const CALLS: usize = 64;

fn settler() -> Address {
    SETTLER_KEY
        .parse::<PrivateKeySigner>()
        .expect("key")
        .address()
}

/// One paid call through `api`: the challenge, then the payment. Its status and the
/// transaction its `PAYMENT-RESPONSE` names.
async fn pay(
    client: &reqwest::Client,
    api: &ApiProcess,
    wallet: &TestWallet,
    i: usize,
) -> (u16, Option<String>) {
    let url = format!("{}{PATH}", api.url);
    let body = caller_body("diagnose_growth").to_string();
    let post = || {
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("idempotency-key", format!("replica-call-{i}"))
            .body(body.clone())
    };
    let challenge = post().send().await.expect("challenge");
    assert_eq!(challenge.status(), 402);
    let required = challenge.headers()["payment-required"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let r = post()
        .header(
            "payment-signature",
            wallet.pay(&required, PayOptions::default()),
        )
        .send()
        .await
        .expect("answer");
    let tx = r.headers().get("payment-response").map(|h| {
        decode_b64_json(h.to_str().expect("ascii"))["transaction"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    (r.status().as_u16(), tx)
}

#[tokio::test]
async fn two_replicas_on_one_settler_key_make_sixty_four_transfers_without_a_collision() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let db = TestDb::on("postgres").await;
    let llm = FakeLlm::start().await;
    let mut env = default_env();
    for (k, v) in [
        ("DATABASE_URL", db.url.clone()),
        ("LLM_BASE_URL", llm.openai_base()),
        ("X402_SETTLEMENT", "self".into()),
        ("BASE_RPC_URL", chain.url.clone()),
        ("SETTLER_PRIVATE_KEY", SETTLER_KEY.into()),
        ("X402_SETTLE_TIMEOUT_S", "60".into()),
        ("CALL_DEADLINE_S", "90".into()),
    ] {
        env.insert(k.into(), v);
    }
    let env: Vec<(String, String)> = env.into_iter().collect();
    // One after the other: the first migrates the fresh database.
    let a = ApiProcess::start(&env).await;
    let b = ApiProcess::start(&env).await;
    let wallet = TestWallet::new();
    chain.mint(wallet.address(), CALLS as u64 * PRICE).await;
    let sent_before = chain.nonce(settler()).await;
    let client = grove_common::http_client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .expect("client");

    // 64 purchases at once, alternating between the replicas.
    let answers = join_all((0..CALLS).map(|i| {
        let api = if i % 2 == 0 { &a } else { &b };
        pay(&client, api, &wallet, i)
    }))
    .await;

    let refused: Vec<u16> = answers
        .iter()
        .map(|(status, _)| *status)
        .filter(|status| *status != 200)
        .collect();
    assert_eq!(refused, Vec::<u16>::new(), "every call delivered");
    let transactions: HashSet<&String> = answers.iter().filter_map(|(_, tx)| tx.as_ref()).collect();
    assert_eq!(transactions.len(), CALLS, "64 distinct transactions");
    assert_eq!(
        chain.authorizations_used(wallet.address()).await,
        CALLS,
        "no duplicate"
    );
    assert_eq!(
        chain.nonce(settler()).await,
        sent_before + CALLS as u64,
        "one settler nonce per transfer: none lost, none doubled"
    );
    let pay_to: Address = PAY_TO.parse().expect("address");
    assert_eq!(
        chain.balance(pay_to).await,
        U256::from(CALLS as u64 * PRICE)
    );
    assert_eq!(chain.balance(wallet.address()).await, U256::ZERO);
    assert_eq!(llm.received(), CALLS, "one model call each");
}
