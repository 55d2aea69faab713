//! Smart-wallet payers through the HTTP API (issue 25 item 7, docs/smart-wallets.md): a deployed
//! ERC-1271 wallet and a counterfactual ERC-6492 one pay on anvil, each moving the price exactly
//! once, with one model call and one delivered result; a bad wallet signature is refused before
//! anything moves; a facilitator receives the signature as the client sent it; without a chain
//! a wallet's signature is refused, and an EOA's never needs one.

use alloy_primitives::{Address, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use grove_http::MULTICALL3;
use grove_tests::{
    PAY_TO,
    chain::{Chain, SETTLER_KEY, has_authorization_used},
    db,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    smart_wallet::{Encoding, SmartAccount, WALLET_FACTORY, create_call, erc6492},
    x402::{PayOptions, TestWallet, decode_b64_json},
};
use serde_json::{Value, json};

const PATH: &str = "/api/v1/agents/mary/call";
/// Mary's tier price in atomic USDC.
const PRICE: u64 = 180_000;

/// Grove settling on `chain` itself.
async fn self_settling(chain: &Chain) -> PaidApp {
    spawn_paid(Options {
        facilitator: false,
        redis_workers: usize::from(db::backend() == "postgres"),
        extra_env: vec![
            ("X402_SETTLEMENT".into(), "self".into()),
            ("BASE_RPC_URL".into(), chain.url.clone()),
            ("SETTLER_PRIVATE_KEY".into(), SETTLER_KEY.into()),
            ("X402_SETTLE_TIMEOUT_S".into(), "30".into()),
        ],
        ..Default::default()
    })
    .await
}

/// Grove settling through the loopback facilitator, with (or without) a chain to read.
async fn through_facilitator(rpc_url: Option<&str>) -> PaidApp {
    spawn_paid(Options {
        fake_chain: false,
        extra_env: rpc_url
            .map(|url| ("BASE_RPC_URL".to_owned(), url.to_owned()))
            .into_iter()
            .collect(),
        ..Default::default()
    })
    .await
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

/// Signs the challenge of `rig` as `payer` and sends the paid request, as a purchase of its own
/// (a fresh Idempotency-Key: the same body again would otherwise replay the first).
async fn pay(rig: &PaidApp, payer: &TestWallet, opts: PayOptions) -> (reqwest::Response, Paid) {
    let body = caller_body("diagnose_growth");
    let payment = payer.pay(&rig.challenge(PATH, &body).await, opts);
    let key = format!("k{}", rand::random::<u64>());
    let r = rig.send_paid(PATH, &body, &payment, Some(&key)).await;
    (r, Paid { payment, key })
}

/// A payment header as sent, with its Idempotency-Key.
struct Paid {
    payment: String,
    key: String,
}

/// The error code of a refusal (a 402's `error`, or a JSON error body's `error.code`).
async fn error_code(r: reqwest::Response) -> String {
    let body: Value = r.json().await.expect("json");
    body["error"]["code"]
        .as_str()
        .or(body["error"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The delivered answer's `PAYMENT-RESPONSE`, checked against the chain: a mined transaction
/// that used `payment`'s authorization, naming the wallet as payer. Returns its receipt.
async fn assert_settled_on_chain(
    chain: &Chain,
    r: &reqwest::Response,
    payer: Address,
    payment: &str,
) -> Value {
    assert_eq!(r.status(), 200);
    let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
    assert_eq!(settle["success"], true, "{settle}");
    assert_eq!(settle["payer"], format!("{payer:#x}"), "{settle}");
    let receipt = chain
        .receipt(settle["transaction"].as_str().expect("transaction"))
        .await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    let nonce: B256 = decode_b64_json(payment)["payload"]["authorization"]["nonce"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .expect("nonce");
    assert!(has_authorization_used(&receipt, payer, nonce), "{receipt}");
    receipt
}

fn sent_to(receipt: &Value) -> Address {
    receipt["to"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .expect("to")
}

#[tokio::test]
async fn a_deployed_erc1271_wallet_pays_once_through_the_api() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = self_settling(&chain).await;
    let owner = TestWallet::random();
    let wallet = chain
        .deployed_wallet(owner.address(), B256::repeat_byte(1), Encoding::Named)
        .await;
    let payer = owner.owning(wallet);
    chain.mint(payer.address(), 1_000_000).await;
    let sent_before = chain.nonce(settler()).await;

    let (r, paid) = pay(&rig, &payer, PayOptions::default()).await;
    let signature = &decode_b64_json(&paid.payment)["payload"]["signature"];
    assert!(
        signature.as_str().expect("hex").len() > 2 + 130,
        "longer than an EOA's"
    );
    let receipt = assert_settled_on_chain(&chain, &r, payer.address(), &paid.payment).await;
    assert_eq!(
        sent_to(&receipt),
        grove_tests::chain::USDC,
        "straight to USDC"
    );
    assert_eq!(chain.transfers_from(payer.address()).await, 1);
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(chain.nonce(settler()).await, sent_before + 1);
    assert_eq!(rig.llm.received(), 1);

    // The identical retry replays the result; nothing moves again.
    let body = caller_body("diagnose_growth");
    let again = rig
        .send_paid(PATH, &body, &paid.payment, Some(&paid.key))
        .await;
    assert_eq!(again.status(), 200);
    assert_eq!(chain.transfers_from(payer.address()).await, 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_wallets_65_byte_signature_that_recovers_its_owner_is_asked_on_chain_and_pays() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = self_settling(&chain).await;
    let owner = TestWallet::random();
    let wallet = chain
        .deployed_wallet(owner.address(), B256::repeat_byte(2), Encoding::Raw)
        .await;
    let payer = owner.owning(wallet);
    chain.mint(payer.address(), 1_000_000).await;

    let (r, paid) = pay(&rig, &payer, PayOptions::default()).await;
    let signature = &decode_b64_json(&paid.payment)["payload"]["signature"];
    assert_eq!(signature.as_str().expect("hex").len(), 2 + 130);
    assert_settled_on_chain(&chain, &r, payer.address(), &paid.payment).await;
    assert_eq!(chain.transfers_from(payer.address()).await, 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_counterfactual_erc6492_wallet_is_deployed_and_pays_in_one_transaction() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = self_settling(&chain).await;
    let owner = TestWallet::random();
    let wallet = chain
        .counterfactual_wallet(owner.address(), B256::repeat_byte(3), Encoding::Named)
        .await;
    let payer = owner.owning(wallet.clone());
    // Funded before it exists, as counterfactual wallets are.
    chain.mint(payer.address(), 1_000_000).await;
    assert!(!chain.has_code(payer.address()).await);
    let sent_before = chain.nonce(settler()).await;

    let (r, paid) = pay(&rig, &payer, PayOptions::default()).await;
    let receipt = assert_settled_on_chain(&chain, &r, payer.address(), &paid.payment).await;
    assert_eq!(
        sent_to(&receipt),
        MULTICALL3,
        "deployment and transfer in one transaction"
    );
    assert!(chain.has_code(payer.address()).await, "deployed");
    assert_eq!(chain.wallets_created().await, 1);
    assert_eq!(
        chain.nonce(settler()).await,
        sent_before + 1,
        "one transaction"
    );
    assert_eq!(chain.transfers_from(payer.address()).await, 1);
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(rig.llm.received(), 1);

    // Its next payment, still wrapped in ERC-6492 as clients keep doing, goes straight to USDC.
    let (r, paid) = pay(&rig, &payer, PayOptions::default()).await;
    let receipt = assert_settled_on_chain(&chain, &r, payer.address(), &paid.payment).await;
    assert_eq!(sent_to(&receipt), grove_tests::chain::USDC);
    assert_eq!(chain.wallets_created().await, 1);
    assert_eq!(chain.transfers_from(payer.address()).await, 2);
    assert_eq!(chain.balance(pay_to()).await, U256::from(2 * PRICE));
    assert_eq!(rig.llm.received(), 2);
}

#[tokio::test]
async fn bad_smart_wallet_signatures_are_refused_before_any_money_moves() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = self_settling(&chain).await;
    let owner = PrivateKeySigner::random();
    let deployed = chain
        .deployed_wallet(owner.address(), B256::repeat_byte(4), Encoding::Named)
        .await;
    let counterfactual = chain
        .counterfactual_wallet(owner.address(), B256::repeat_byte(5), Encoding::Named)
        .await;
    // A deployment of the wrong wallet: another owner's, so at another address.
    let stranger = PrivateKeySigner::random().address();
    let wrong_deployment = SmartAccount {
        deployment: Some((WALLET_FACTORY, create_call(stranger, B256::repeat_byte(5)))),
        ..counterfactual.clone()
    };
    // A long signature from an address with no code, and no deployment for it.
    let nowhere = SmartAccount {
        address: Address::repeat_byte(0x77),
        deployment: None,
        ..counterfactual.clone()
    };
    let by_other_key = PayOptions {
        sign_with_other_key: true,
        ..Default::default()
    };
    let cases = [
        (
            "deployed, another key signs",
            deployed,
            by_other_key.clone(),
            "smart_wallet_signature_invalid",
        ),
        (
            "counterfactual, another key signs",
            counterfactual.clone(),
            by_other_key,
            "smart_wallet_signature_invalid",
        ),
        (
            "deploys another wallet",
            wrong_deployment,
            PayOptions::default(),
            "smart_wallet_not_deployed",
        ),
        (
            "no code, no deployment",
            nowhere,
            PayOptions::default(),
            "smart_wallet_not_deployed",
        ),
    ];
    let sent_before = chain.nonce(settler()).await;
    for (name, account, opts, reason) in cases {
        let payer = TestWallet::with_key(owner.clone()).owning(account);
        chain.mint(payer.address(), 1_000_000).await;
        let (r, _) = pay(&rig, &payer, opts).await;
        assert_eq!(r.status(), 402, "{name}");
        assert!(r.headers().get("payment-required").is_some(), "{name}");
        assert_eq!(
            error_code(r).await,
            format!("payment_invalid:{reason}"),
            "{name}"
        );
        assert_eq!(chain.transfers_from(payer.address()).await, 0, "{name}");
    }
    assert!(
        !chain.has_code(counterfactual.address).await,
        "checking a signature deploys nothing"
    );
    assert_eq!(chain.wallets_created().await, 1, "only the deployed one");
    assert_eq!(chain.nonce(settler()).await, sent_before, "nothing sent");
    assert_eq!(chain.balance(pay_to()).await, U256::ZERO);
    assert_eq!(rig.llm.received(), 0);
}

#[tokio::test]
async fn an_unfunded_counterfactual_wallet_is_refused_with_usdcs_reason_and_not_deployed() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = self_settling(&chain).await;
    let owner = PrivateKeySigner::random();
    let wallet = chain
        .counterfactual_wallet(owner.address(), B256::repeat_byte(6), Encoding::Named)
        .await;
    let payer = TestWallet::with_key(owner).owning(wallet);
    chain.mint(payer.address(), PRICE - 1).await;
    let sent_before = chain.nonce(settler()).await;

    let (r, _) = pay(&rig, &payer, PayOptions::default()).await;
    assert_eq!(r.status(), 402);
    assert_eq!(
        error_code(r).await,
        "settlement_failed:insufficient_funds",
        "USDC's reason, not Multicall3's"
    );
    assert!(
        !chain.has_code(payer.address()).await,
        "no deployment paid for"
    );
    assert_eq!(chain.nonce(settler()).await, sent_before, "nothing sent");
    assert_eq!(chain.transfers_from(payer.address()).await, 0);
    assert_eq!(rig.llm.received(), 0);
}

#[tokio::test]
async fn a_facilitator_receives_the_erc6492_signature_as_the_client_sent_it() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = through_facilitator(Some(&chain.url)).await;
    let owner = PrivateKeySigner::random();
    let wallet = chain
        .counterfactual_wallet(owner.address(), B256::repeat_byte(7), Encoding::Named)
        .await;
    let payer = TestWallet::with_key(owner).owning(wallet);

    let (r, paid) = pay(&rig, &payer, PayOptions::default()).await;
    assert_eq!(r.status(), 200);
    let sent = decode_b64_json(&paid.payment)["payload"]["signature"].clone();
    assert!(
        sent.as_str()
            .is_some_and(|s| s.ends_with(&"6492".repeat(16))),
        "{sent}"
    );
    let requests = rig.facilitator.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["paymentPayload"]["payload"]["signature"], sent);
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);
    // Verification only simulated the deployment; the facilitator deploys.
    assert!(!chain.has_code(payer.address()).await);
}

#[tokio::test]
async fn without_a_chain_a_smart_wallets_signature_is_refused_and_nothing_is_settled() {
    let rig = through_facilitator(None).await;
    let owner = PrivateKeySigner::random();
    let factory = Address::repeat_byte(0xfa);
    let accounts = [
        SmartAccount {
            address: Address::repeat_byte(0x11),
            owner: owner.address(),
            encoding: Encoding::Named,
            deployment: None,
        },
        SmartAccount {
            address: Address::repeat_byte(0x12),
            owner: owner.address(),
            encoding: Encoding::Raw,
            deployment: Some((factory, vec![1, 2, 3])),
        },
    ];
    for account in accounts {
        let payer = TestWallet::with_key(owner.clone()).owning(account);
        let (r, _) = pay(&rig, &payer, PayOptions::default()).await;
        assert_eq!(r.status(), 402);
        assert_eq!(
            error_code(r).await,
            "payment_invalid:smart_wallet_needs_chain"
        );
    }
    // A malformed ERC-6492 wrapping (its first 40 bytes cut) says so, chain or not.
    let body = caller_body("diagnose_growth");
    let challenge = rig.challenge(PATH, &body).await;
    let payment = TestWallet::with_key(owner.clone()).pay(
        &challenge,
        PayOptions {
            after_signing: Some(|d| {
                let sig = erc6492(Address::ZERO, &[], &[]);
                d["payload"]["signature"] =
                    json!(alloy_primitives::hex::encode_prefixed(&sig[40..]));
            }),
            ..Default::default()
        },
    );
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 402);
    assert_eq!(error_code(r).await, "payment_invalid:bad_erc6492_signature");
    assert_eq!(rig.facilitator.settle_calls(), 0);
    assert_eq!(rig.llm.received(), 0);
}

#[tokio::test]
async fn an_eoas_payment_asks_no_chain_and_an_unreachable_chain_is_a_503_for_a_wallet() {
    // The chain answered at start-up (the api checks it is Base), then became unreachable.
    let rig = spawn_paid(Options::default()).await;
    rig.facilitator.rpc_down(true);

    let r = rig
        .pay_and_call(PATH, &caller_body("diagnose_growth"), None)
        .await;
    assert_eq!(r.status(), 200, "an EOA's signature is checked locally");
    assert_eq!(rig.facilitator.transfers(), 1);

    let owner = PrivateKeySigner::random();
    let wallet = SmartAccount {
        address: Address::repeat_byte(0x13),
        owner: owner.address(),
        encoding: Encoding::Named,
        deployment: None,
    };
    let payer = TestWallet::with_key(owner).owning(wallet);
    let (r, _) = pay(&rig, &payer, PayOptions::default()).await;
    assert_eq!(r.status(), 503, "not the payer's fault: never a 402");
    assert!(r.headers().get("retry-after").is_some());
    assert_eq!(error_code(r).await, "settlement_unavailable");
    assert_eq!(rig.facilitator.settle_calls(), 1, "only the EOA's");
    assert_eq!(rig.llm.received(), 1);
}
