//! Where the chain reader reads each answer (issue 25, docs/settlement.md): a payment counts
//! from `SETTLEMENT_CONFIRMATIONS` deep, a refusal (canceled, expired unused) only at the `safe`
//! block, expiry by that block's own timestamp, and nothing at all from an endpoint whose head is
//! too old. Anvil mines only when told here; its `safe` block trails the head by
//! `--slots-in-an-epoch` blocks.

use grove_common::config::{Network, Secret};
use grove_http::{AuthorizationReader, AuthorizationState, ChainReader, Finality};
use grove_tests::chain::{Chain, payment, query_of};
use grove_tests::x402::{PayOptions, TestWallet, now_unix};
use serde_json::json;

const PRICE: u64 = 180_000;
/// The `safe` block trails the head by this many blocks.
const SAFE_LAG: u64 = 4;

async fn chain() -> Option<Chain> {
    Chain::start_with(&["--slots-in-an-epoch", &SAFE_LAG.to_string()]).await
}

fn reader(chain: &Chain, confirmations: u64, max_head_age_s: u64) -> ChainReader {
    ChainReader::new(&Secret::new(&chain.url), Network::Base)
        .expect("reader")
        .with_finality(Finality {
            confirmations,
            max_head_age_s,
        })
}

async fn mine(chain: &Chain, blocks: u64) {
    chain
        .rpc("anvil_mine", json!([format!("{blocks:#x}")]))
        .await;
}

fn not_final(state: &Result<AuthorizationState, String>) -> bool {
    matches!(state, Ok(AuthorizationState::NotFinal { .. }))
}

#[tokio::test]
async fn a_payment_counts_at_its_confirmation_depth_and_a_cancellation_only_at_the_safe_block() {
    let Some(chain) = chain().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), 10 * PRICE).await;
    mine(&chain, SAFE_LAG).await;
    let reader = reader(&chain, 2, 600);

    let paid = payment(&payer, PRICE, PayOptions::default());
    let tx = chain.submit(&paid).await;
    // One confirmation (its own block): not yet.
    assert!(not_final(&reader.authorization(&query_of(&paid, 0)).await));
    mine(&chain, 1).await;
    assert_eq!(
        reader.authorization(&query_of(&paid, 0)).await,
        Ok(AuthorizationState::Paid {
            transaction: tx.clone()
        })
    );

    let canceled = payment(&payer, PRICE, PayOptions::default());
    let (_, nonce) = grove_tests::chain::authorization_of(&canceled);
    chain.cancel(&payer, nonce).await;
    // Deep enough for a payment, but a refusal waits for the safe block.
    mine(&chain, 1).await;
    assert!(not_final(
        &reader.authorization(&query_of(&canceled, 0)).await
    ));
    mine(&chain, SAFE_LAG).await;
    assert_eq!(
        reader.authorization(&query_of(&canceled, 0)).await,
        Ok(AuthorizationState::Void {
            reason: "authorization_canceled".into()
        })
    );
}

#[tokio::test]
async fn expiry_is_decided_by_the_safe_blocks_timestamp_never_by_our_clock() {
    let Some(chain) = chain().await else {
        return;
    };
    let payer = TestWallet::new();
    chain.mint(payer.address(), PRICE).await;
    let reader = reader(&chain, 1, 600);
    let valid_before = now_unix() + 10;
    let unused = payment(
        &payer,
        PRICE,
        PayOptions {
            valid_before: Some(valid_before),
            ..Default::default()
        },
    );
    // Our wall clock far past `validBefore` changes nothing: the chain's blocks are not.
    let mut late = query_of(&unused, 0);
    late.asked_at = valid_before + 3_600;
    late.valid_before = valid_before;
    let fresh_enough = reader.authorization(&late).await;
    assert!(
        fresh_enough
            .as_ref()
            .is_err_and(|e| e.contains("we do not know")),
        "a head an hour older than our clock decides nothing: {fresh_enough:?}"
    );
    assert_eq!(
        reader.authorization(&query_of(&unused, 0)).await,
        Ok(AuthorizationState::Unused)
    );

    // The head passes `validBefore` + the margin, the safe block not yet: still undecided.
    let past = valid_before + grove_http::EXPIRY_MARGIN_S;
    chain.rpc("evm_setNextBlockTimestamp", json!([past])).await;
    mine(&chain, 1).await;
    assert_eq!(
        reader.authorization(&query_of(&unused, 0)).await,
        Ok(AuthorizationState::Unused)
    );
    // Once the safe block itself is that late, unused there means never.
    mine(&chain, SAFE_LAG).await;
    assert_eq!(
        reader.authorization(&query_of(&unused, 0)).await,
        Ok(AuthorizationState::Void {
            reason: "authorization_expired_unused".into()
        })
    );
}
