//! The node's answers to our settlement transaction (docs/settlement.md, "Sending a settlement"),
//! each produced by a JSON-RPC proxy in front of anvil: a refusal before broadcast sends nothing
//! and is the operator's fault (the authorization stays usable and settles once the node takes
//! it); an answer lost after the node took the transaction is followed to its receipt, never
//! taken for a refusal. Every row counts the transfers.

use alloy_primitives::{Address, U256};
use grove_common::config::Secret;
use grove_http::{SETTLER_UNAVAILABLE, SelfSettler, SettleOutcome, Settler, not_sent};
use grove_tests::{
    PAY_TO,
    chain::{Chain, SETTLER_KEY, payment, settler_options},
    rpc_proxy::{Fault, RpcProxy},
    x402::{PayOptions, TestWallet},
};
use serde_json::json;
use std::time::Duration;

const PRICE: u64 = 180_000;
const SEND: &str = "eth_sendRawTransaction";

fn pay_to() -> Address {
    PAY_TO.parse().expect("address")
}

async fn settler(url: &str, timeout: Duration) -> SelfSettler {
    SelfSettler::connect(
        &Secret::new(url),
        &Secret::new(SETTLER_KEY),
        settler_options(timeout),
        grove_common::config::Network::Base,
    )
    .await
    .expect("the settler connects")
}

#[tokio::test]
async fn refusals_before_broadcast_send_nothing_and_leave_the_authorization_usable() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let proxy = RpcProxy::start(&chain.url).await;
    let payer = TestWallet::new();
    chain.mint(payer.address(), 10 * PRICE).await;
    let settler = settler(&proxy.url, Duration::from_secs(30)).await;
    let rpc = |code: i64, message: &str| Fault::RpcError {
        code,
        message: message.into(),
    };
    let rows = [
        (SEND, Fault::Http(429), not_sent::RATE_LIMITED),
        (
            SEND,
            rpc(-32005, "request limit reached"),
            not_sent::RATE_LIMITED,
        ),
        (
            SEND,
            rpc(
                -32000,
                "insufficient funds for gas * price + value: balance 0",
            ),
            not_sent::SETTLER_OUT_OF_FUNDS,
        ),
        (
            SEND,
            rpc(-32003, "max fee per gas less than block base fee"),
            not_sent::FEE_ABOVE_CAP,
        ),
        // Taken on both tries (the fresh read from the chain too): another replica's nonce.
        (SEND, rpc(-32000, "nonce too low"), not_sent::NONCE_TAKEN),
        (SEND, rpc(-32000, "txpool is full"), not_sent::NODE_REFUSED),
        // The provider refused the request itself (a revoked API key).
        (SEND, Fault::Http(401), not_sent::NODE_REFUSED),
        // Reads before the send fail: nothing was sent either.
        ("eth_feeHistory", Fault::Http(502), SETTLER_UNAVAILABLE),
        ("eth_estimateGas", Fault::Http(429), not_sent::RATE_LIMITED),
        (
            "eth_call",
            rpc(-32000, "header not found"),
            SETTLER_UNAVAILABLE,
        ),
    ];
    let count = rows.len();
    for (method, fault, reason) in rows {
        let request = payment(&payer, PRICE, PayOptions::default());
        let sent_before = chain.nonce(settler.address()).await;
        proxy.fault(method, Some(fault.clone()));
        let outcome = settler.settle(&request).await;
        assert_eq!(
            outcome,
            SettleOutcome::Refused {
                reason: reason.into()
            },
            "{method} {fault:?}"
        );
        assert!(outcome.is_operator_fault(), "{fault:?}: never the payer's");
        assert_eq!(chain.nonce(settler.address()).await, sent_before);
        assert_eq!(chain.pending_from(settler.address()).await, 0);

        // The node takes it now: the very same authorization settles, once.
        let paid_before = chain.balance(pay_to()).await;
        proxy.fault(method, None);
        assert!(
            matches!(
                settler.settle(&request).await,
                SettleOutcome::Settled { local: false, .. }
            ),
            "{fault:?}: the same authorization settles afterwards"
        );
        assert_eq!(
            chain.balance(pay_to()).await,
            paid_before + U256::from(PRICE),
            "{fault:?}"
        );
    }
    assert_eq!(chain.authorizations_used(payer.address()).await, count);
}

#[tokio::test]
async fn an_answer_lost_after_the_node_took_the_transaction_is_followed_to_its_receipt() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let proxy = RpcProxy::start(&chain.url).await;
    let payer = TestWallet::new();
    chain.mint(payer.address(), PRICE).await;
    let settler = settler(&proxy.url, Duration::from_secs(30)).await;
    let sent_before = chain.nonce(settler.address()).await;
    proxy.fault(SEND, Some(Fault::ForwardThen502));

    let outcome = settler
        .settle(&payment(&payer, PRICE, PayOptions::default()))
        .await;

    // Not a refusal: the settler followed the transaction it signed, and the chain mined it.
    assert!(
        matches!(outcome, SettleOutcome::Settled { local: false, .. }),
        "{outcome:?}"
    );
    assert_eq!(proxy.faulted(), 1, "sent once");
    assert_eq!(chain.nonce(settler.address()).await, sent_before + 1);
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
}

#[tokio::test]
async fn an_answer_lost_with_nothing_mined_is_unknown_and_names_the_transaction() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let proxy = RpcProxy::start(&chain.url).await;
    let payer = TestWallet::new();
    chain.mint(payer.address(), PRICE).await;
    let settler = settler(&proxy.url, Duration::from_secs(2)).await;
    chain.rpc("evm_setAutomine", json!([false])).await;
    proxy.fault(SEND, Some(Fault::ForwardThen502));

    let outcome = settler
        .settle(&payment(&payer, PRICE, PayOptions::default()))
        .await;

    let SettleOutcome::Unknown {
        sent: Some(sent), ..
    } = outcome
    else {
        panic!("expected unknown with the transaction to follow, got {outcome:?}");
    };
    assert!(sent.raw.is_some(), "its signed bytes are kept");
    chain.rpc("evm_mine", json!([])).await;
    let receipt = chain.receipt(&sent.hash).await;
    assert_eq!(
        receipt["status"], "0x1",
        "the transaction followed is the one mined"
    );
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
}
