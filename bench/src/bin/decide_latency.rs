//! How long the chain reader takes to decide an authorization (issue 25, docs/settlement.md)
//! when blocks come every 2 s, as on Base: anvil `--block-time 2`, whose `safe` block is the head
//! minus `--slots-in-an-epoch` blocks.
//!
//! `cargo run -p grove-bench --bin decide_latency`
//!
//! - **paid**: from the transfer's block to `Paid`, per `SETTLEMENT_CONFIRMATIONS`;
//! - **expired unused**: from `validBefore` to `Void(authorization_expired_unused)`, per `safe`
//!   lag: the chain's time past `validBefore` + 12 s at the `safe` block;
//! - the same two through an endpoint 15 blocks (30 s) behind (`grove_tests::lagging_rpc`).

use grove_common::config::{Network, Secret};
use grove_http::{AuthorizationReader, AuthorizationState, ChainReader, Finality};
use grove_tests::{
    chain::{Chain, payment, query_of},
    lagging_rpc::LaggingRpc,
    x402::{PayOptions, TestWallet, now_unix},
};
use std::time::{Duration, Instant};

const PRICE: u64 = 180_000;
const BLOCK_S: f64 = 2.0;

struct Row {
    what: String,
    seconds: f64,
}

/// Polls the reader until `done`; the seconds from `since` (unix s, float) to then.
async fn until(
    reader: &ChainReader,
    request: &grove_http::SettleRequest,
    since: f64,
    done: impl Fn(&AuthorizationState) -> bool,
) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Ok(state) = reader.authorization(&query_of(request, 0)).await
            && done(&state)
        {
            return unix_now_f64() - since;
        }
        assert!(Instant::now() < deadline, "no decision in 300 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn unix_now_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

async fn measure(safe_lag: u64, confirmations: u64, rpc_lag: u64) -> Vec<Row> {
    let lag = safe_lag.to_string();
    let chain = Chain::start_with(&["--block-time", "2", "--slots-in-an-epoch", &lag])
        .await
        .expect("a local chain: run scripts/anvil first");
    let proxy = LaggingRpc::start(&chain.url, rpc_lag).await;
    let reader = ChainReader::new(&Secret::new(&proxy.url), Network::Base)
        .expect("reader")
        .with_finality(Finality {
            confirmations,
            max_head_age_s: 60,
        });
    let payer = TestWallet::new();
    chain.mint(payer.address(), 10 * PRICE).await;
    let label = format!("safe = head − {safe_lag}, {confirmations} conf., RPC {rpc_lag} behind");

    let paid = payment(&payer, PRICE, PayOptions::default());
    let tx = chain.submit(&paid).await;
    let mined = chain.mined_at(&tx).await as f64;
    let to_paid = until(&reader, &paid, mined, |s| {
        matches!(s, AuthorizationState::Paid { .. })
    })
    .await;

    let valid_before = now_unix() + 8;
    let unused = payment(
        &payer,
        PRICE,
        PayOptions {
            valid_before: Some(valid_before),
            ..Default::default()
        },
    );
    let to_void = until(&reader, &unused, valid_before as f64, |s| {
        matches!(s, AuthorizationState::Void { .. })
    })
    .await;
    vec![
        Row {
            what: format!("paid, {label}"),
            seconds: to_paid,
        },
        Row {
            what: format!("expired unused, {label}"),
            seconds: to_void,
        },
    ]
}

#[tokio::main]
async fn main() {
    let mut rows = Vec::new();
    for (safe_lag, confirmations, rpc_lag) in [(0, 1, 0), (0, 3, 0), (8, 3, 0), (8, 3, 15)] {
        rows.extend(measure(safe_lag, confirmations, rpc_lag).await);
    }
    println!("decision latency of the chain reader, anvil --block-time 2 (chain id 8453)");
    println!("{:<64} {:>8} {:>8}", "", "s", "blocks");
    for row in rows {
        println!(
            "{:<64} {:>8.1} {:>8.1}",
            row.what,
            row.seconds,
            row.seconds / BLOCK_S
        );
    }
}
