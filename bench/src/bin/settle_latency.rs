//! Settle latency of our own settlement (`X402_SETTLEMENT=self`) when blocks come every 2 s, as on
//! Base: anvil `--block-time 2` at chain id 8453 with the test token at USDC's address (the
//! settlement tests' chain, `scripts/anvil`). Each settlement is simulate, send, wait for the
//! receipt — what a paid call waits for before its work starts.
//!
//! `cargo run --release -p grove-bench --bin settle_latency -- [samples] [depths]` (default 20
//! samples at `SETTLEMENT_CONFIRMATIONS=1`; depths as `1,2,3` measure what each block of depth
//! adds per call).
//!
//! - back to back: each settlement starts right after the block that held the previous one (the
//!   worst phase: almost a whole block to wait);
//! - random block phase: a pause of 0–2 s first, as a client arriving at any time sees;
//! - 32 at once: concurrent settlements from one settler key (one nonce queue).

use futures::future::join_all;
use grove_common::config::{Network, Secret};
use grove_http::{SelfSettler, SettleOutcome, Settler};
use grove_tests::{
    chain::{Chain, SETTLER_KEY, payment},
    x402::{PayOptions, TestWallet},
};
use std::time::{Duration, Instant};

const PRICE: u64 = 180_000;
const CONCURRENT: usize = 32;

fn settled(outcome: &SettleOutcome) {
    assert!(
        matches!(outcome, SettleOutcome::Settled { local: false, .. }),
        "a settlement failed: {outcome:?}"
    );
}

async fn one(settler: &SelfSettler, payer: &TestWallet) -> Duration {
    let request = payment(payer, PRICE, PayOptions::default());
    let started = Instant::now();
    settled(&settler.settle(&request).await);
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let samples: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let Some(chain) = Chain::start_with(&["--block-time", "2"]).await else {
        eprintln!("no local chain: run scripts/anvil first");
        std::process::exit(1);
    };
    let payer = TestWallet::new();
    let total = (2 * samples + CONCURRENT) as u64;
    let depths: Vec<u64> = std::env::args()
        .nth(2)
        .map(|s| s.split(',').filter_map(|d| d.parse().ok()).collect())
        .unwrap_or_else(|| vec![1]);
    println!("settle latency, our own settlement on anvil --block-time 2 (chain id 8453)");
    println!(
        "{:<40} {:>4} {:>8} {:>8} {:>8}",
        "", "n", "p50 s", "p90 s", "max s"
    );
    for depth in depths {
        chain.mint(payer.address(), total * PRICE).await;
        measure(&chain, &payer, samples, depth).await;
    }
}

/// The three rows at `SETTLEMENT_CONFIRMATIONS=depth`.
async fn measure(chain: &Chain, payer: &TestWallet, samples: usize, depth: u64) {
    let settler = SelfSettler::connect(
        &Secret::new(&chain.url),
        &Secret::new(SETTLER_KEY),
        grove_http::SettlerOptions {
            confirmations: depth,
            ..grove_tests::chain::settler_options(Duration::from_secs(60))
        },
        Network::Base,
    )
    .await
    .expect("the settler connects to anvil");

    let mut back_to_back = Vec::new();
    for _ in 0..samples {
        back_to_back.push(one(&settler, payer).await);
    }
    let mut random_phase = Vec::new();
    for _ in 0..samples {
        tokio::time::sleep(Duration::from_millis(rand::random_range(0..2000))).await;
        random_phase.push(one(&settler, payer).await);
    }
    let started = Instant::now();
    let at_once = join_all((0..CONCURRENT).map(|_| one(&settler, payer))).await;
    let wall = started.elapsed();

    row(&format!("depth {depth}: back to back"), back_to_back);
    row(
        &format!("depth {depth}: at a random block phase"),
        random_phase,
    );
    row(&format!("depth {depth}: {CONCURRENT} at once"), at_once);
    println!(
        "depth {depth}: {CONCURRENT} at once all settled in {:.2} s",
        wall.as_secs_f64()
    );
}

fn row(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64();
    println!(
        "{name:<40} {:>4} {:>8.2} {:>8.2} {:>8.2}",
        samples.len(),
        at(0.5),
        at(0.9),
        at(1.0)
    );
}
