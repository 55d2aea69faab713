//! Our own settlement (`X402_SETTLEMENT=self`) against a real EVM: anvil at chain id 8453 with an
//! EIP-3009 token at Base USDC's address, paid with real signatures from the test wallet.
//! Each test starts its own chain (`grove_tests::chain`).

use alloy_primitives::{Address, U256};
use futures::future::join_all;
use grove_common::config::{Network, Secret};
use grove_http::{
    AuthorizationQuery, AuthorizationReader, AuthorizationState, ChainReader, SelfSettler,
    SettleOutcome, SettleRequest, Settler,
};
use grove_tests::chain::{Chain, SETTLER_KEY, authorization_of, has_authorization_used, payment};
use grove_tests::x402::{PayOptions, TestWallet};
use grove_tests::{PAY_TO, wait_until};
use serde_json::json;
use std::collections::HashSet;
use std::time::Duration;

const PRICE: u64 = 180_000;

fn pay_to() -> Address {
    PAY_TO.parse().expect("PAY_TO is an address")
}

async fn settler(chain: &Chain, timeout: Duration) -> SelfSettler {
    SelfSettler::connect(
        &Secret::new(&chain.url),
        &Secret::new(SETTLER_KEY),
        grove_tests::chain::settler_options(timeout),
        Network::Base,
    )
    .await
    .expect("the settler connects to anvil")
}

fn settled_hash(outcome: &SettleOutcome) -> String {
    match outcome {
        SettleOutcome::Settled {
            transaction,
            local: false,
        } => transaction.clone(),
        other => panic!("expected a settlement on chain, got {other:?}"),
    }
}

#[tokio::test]
async fn a_settlement_moves_exactly_the_price_from_payer_to_payee_and_uses_the_authorization() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), 1_000_000).await;
    let settler = settler(&chain, Duration::from_secs(30)).await;
    let reader = ChainReader::new(&Secret::new(&chain.url), Network::Base).expect("reader");
    let request = payment(&payer, PRICE, PayOptions::default());
    let (from, nonce) = authorization_of(&request);
    assert_eq!(reader.authorization_used(from, nonce).await, Ok(false));

    let outcome = settler.settle(&request).await;

    let hash = settled_hash(&outcome);
    assert_eq!(
        chain.balance(payer.address()).await,
        U256::from(1_000_000 - PRICE)
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    let receipt = chain.receipt(&hash).await;
    assert_eq!(receipt["status"], "0x1");
    assert!(
        has_authorization_used(&receipt, from, nonce),
        "AuthorizationUsed({from}, {nonce}) in {receipt}"
    );
    assert_eq!(reader.authorization_used(from, nonce).await, Ok(true));
}

#[tokio::test]
async fn a_reused_authorization_is_refused_on_chain_and_moves_nothing() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), 1_000_000).await;
    let settler = settler(&chain, Duration::from_secs(30)).await;
    let request = payment(&payer, PRICE, PayOptions::default());
    settled_hash(&settler.settle(&request).await);

    let again = settler.settle(&request).await;

    assert_eq!(
        again,
        SettleOutcome::Refused {
            reason: "authorization_used".into()
        }
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
}

#[tokio::test]
async fn usdc_refusals_keep_their_reasons() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), PRICE).await;
    let settler = settler(&chain, Duration::from_secs(30)).await;
    let settler_nonce = chain.nonce(settler.address()).await;
    let now = grove_tests::x402::now_unix();
    let cases = [
        (
            payment(&TestWallet::random(), PRICE, PayOptions::default()),
            "insufficient_funds",
        ),
        (
            payment(&payer, PRICE + 1, PayOptions::default()),
            "insufficient_funds",
        ),
        (
            payment(
                &payer,
                PRICE,
                PayOptions {
                    sign_with_other_key: true,
                    ..Default::default()
                },
            ),
            "invalid_signature",
        ),
        (
            payment(
                &payer,
                PRICE,
                PayOptions {
                    high_s: true,
                    ..Default::default()
                },
            ),
            "invalid_signature",
        ),
        (
            payment(
                &payer,
                PRICE,
                PayOptions {
                    valid_after: Some(now + 3600),
                    ..Default::default()
                },
            ),
            "FiatTokenV2: authorization is not yet valid",
        ),
    ];
    for (request, reason) in cases {
        assert_eq!(
            settler.settle(&request).await,
            SettleOutcome::Refused {
                reason: reason.into()
            }
        );
    }
    // Refused by simulation: nothing was sent, no gas was spent, no money moved.
    assert_eq!(chain.nonce(settler.address()).await, settler_nonce);
    assert_eq!(chain.balance(payer.address()).await, U256::from(PRICE));
}

#[tokio::test]
async fn sixty_four_concurrent_settlements_make_sixty_four_transfers_without_a_nonce_collision() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), 64 * PRICE).await;
    let settler = settler(&chain, Duration::from_secs(60)).await;
    let sent_before = chain.nonce(settler.address()).await;
    let requests: Vec<_> = (0..64)
        .map(|_| payment(&payer, PRICE, PayOptions::default()))
        .collect();

    let outcomes = join_all(requests.iter().map(|r| settler.settle(r))).await;

    let hashes: HashSet<String> = outcomes.iter().map(settled_hash).collect();
    assert_eq!(hashes.len(), 64, "64 distinct transactions");
    assert_eq!(chain.balance(payer.address()).await, U256::ZERO);
    assert_eq!(chain.balance(pay_to()).await, U256::from(64 * PRICE));
    assert_eq!(chain.nonce(settler.address()).await, sent_before + 64);
}

#[tokio::test]
async fn a_nonce_taken_by_another_sender_is_read_again_from_the_chain() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), 2 * PRICE).await;
    let settler = settler(&chain, Duration::from_secs(30)).await;
    settled_hash(
        &settler
            .settle(&payment(&payer, PRICE, PayOptions::default()))
            .await,
    );
    // The same key sends something else (anvil keeps its development accounts unlocked), so the
    // settler's counter is one behind the chain.
    let hash = chain
        .rpc(
            "eth_sendTransaction",
            json!([{"from": settler.address(), "to": settler.address(), "value": "0x0"}]),
        )
        .await;
    chain.receipt(hash.as_str().expect("a hash")).await;

    let outcome = settler
        .settle(&payment(&payer, PRICE, PayOptions::default()))
        .await;

    settled_hash(&outcome);
    assert_eq!(chain.balance(pay_to()).await, U256::from(2 * PRICE));
}

#[tokio::test]
async fn with_mining_stopped_the_outcome_is_unknown_and_the_authorization_is_used_once_mined() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), PRICE).await;
    let settler = settler(&chain, Duration::from_secs(1)).await;
    let reader = ChainReader::new(&Secret::new(&chain.url), Network::Base).expect("reader");
    let request = payment(&payer, PRICE, PayOptions::default());
    let (from, nonce) = authorization_of(&request);
    chain.rpc("evm_setAutomine", json!([false])).await;

    let outcome = settler.settle(&request).await;

    let SettleOutcome::Unknown {
        reason,
        sent: Some(sent),
    } = outcome
    else {
        panic!("expected an unknown outcome naming its transaction, got {outcome:?}");
    };
    assert_eq!(reason, "settlement_pending");
    assert!(
        sent.raw.is_some(),
        "our own transaction keeps its signed bytes"
    );
    assert_eq!(reader.authorization_used(from, nonce).await, Ok(false));
    assert_eq!(chain.balance(pay_to()).await, U256::ZERO);

    chain.rpc("evm_mine", json!([])).await;

    wait_until("the authorization to be used on chain", async || {
        reader.authorization_used(from, nonce).await == Ok(true)
    })
    .await;
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    // The settler's own connection reads the same state (reconciliation in self mode), and the
    // log names the transaction the unknown outcome carried.
    let own = settler.reader();
    assert_eq!(own.authorization_used(from, nonce).await, Ok(true));
    assert_eq!(
        own.authorization(&query(&request)).await,
        Ok(AuthorizationState::Paid {
            transaction: sent.hash.clone()
        })
    );
    assert_eq!(chain.receipt(&sent.hash).await["status"], "0x1");
}

fn query(request: &SettleRequest) -> AuthorizationQuery {
    grove_tests::chain::query_of(request, 0)
}

#[tokio::test]
async fn the_chain_tells_a_payment_from_a_cancellation_and_from_another_use_of_the_nonce() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), 10 * PRICE).await;
    let reader = ChainReader::new(&Secret::new(&chain.url), Network::Base).expect("reader");

    // Used for us: paid, with the transaction that did it.
    let paid = payment(&payer, PRICE, PayOptions::default());
    assert_eq!(
        reader.authorization(&query(&paid)).await,
        Ok(AuthorizationState::Unused)
    );
    let tx = chain.submit(&paid).await;
    assert_eq!(
        reader.authorization(&query(&paid)).await,
        Ok(AuthorizationState::Paid { transaction: tx })
    );

    // Canceled by the payer: authorizationState says "used" all the same; the log says void.
    let canceled = payment(&payer, PRICE, PayOptions::default());
    let (from, nonce) = authorization_of(&canceled);
    let receipt = chain.cancel(&payer, nonce).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(reader.authorization_used(from, nonce).await, Ok(true));
    assert_eq!(
        reader.authorization(&query(&canceled)).await,
        Ok(AuthorizationState::Void {
            reason: "authorization_canceled".into()
        })
    );

    // The payer signed a second authorization with the same nonce, to someone else, and used it
    // first: ours can never pay.
    let ours = payment(&payer, PRICE, PayOptions::default());
    let (_, nonce) = authorization_of(&ours);
    let elsewhere = payment(
        &payer,
        PRICE,
        PayOptions {
            nonce: Some(nonce),
            to: Some(payer.address()),
            ..Default::default()
        },
    );
    chain.submit(&elsewhere).await;
    assert_eq!(
        reader.authorization(&query(&ours)).await,
        Ok(AuthorizationState::Void {
            reason: "authorization_nonce_used_elsewhere".into()
        })
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
}

#[tokio::test]
async fn the_settler_refuses_an_endpoint_of_another_network_than_the_configured_one() {
    let Some(mainnet) = Chain::start().await else {
        return;
    };
    let (url, key) = (Secret::new(&mainnet.url), Secret::new(SETTLER_KEY));
    let connect = |network| {
        SelfSettler::connect(
            &url,
            &key,
            grove_tests::chain::settler_options(Duration::from_secs(5)),
            network,
        )
    };
    match connect(Network::BaseSepolia).await {
        Err(e) => assert_eq!(
            e.to_string(),
            "BASE_RPC_URL serves chain 8453, not Base Sepolia (84532)"
        ),
        Ok(_) => panic!("a testnet settler connected to Base mainnet's chain id"),
    }
    assert!(connect(Network::Base).await.is_ok());
}
