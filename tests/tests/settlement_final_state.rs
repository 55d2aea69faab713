//! Decisions from final chain state (issue 25). "Never settled" is decided only at a `safe` block
//! whose own timestamp is past `validBefore` plus a margin, never from our clock or a lagging
//! `latest`; an RPC whose head is too old decides nothing; a reorg that drops a delivered call's
//! transfer is surfaced. Anvil mines a block every second here, so the chain's time moves; the
//! facilitator is the loopback fake, which moves nothing: every transfer counted is on the chain.

use alloy_primitives::{Address, U256};
use grove_common::db::entities::payment;
use grove_http::SettleRequest;
use grove_tests::{
    PAY_TO,
    chain::{Chain, SETTLER_KEY},
    db,
    facilitator::SettleScript,
    lagging_rpc::LaggingRpc,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until_within,
    x402::{PayOptions, decode_b64_json, now_unix},
};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

const PATH: &str = "/api/v1/agents/mary/call";
const PRICE: u64 = 180_000;

fn pay_to() -> Address {
    PAY_TO.parse().expect("address")
}

async fn rig(rpc_url: &str, extra: &[(&str, &str)], clock_ahead_s: i64) -> PaidApp {
    let mut extra_env = vec![
        ("BASE_RPC_URL".to_owned(), rpc_url.to_owned()),
        ("X402_FACILITATOR_TIMEOUT_S".to_owned(), "1".to_owned()),
    ];
    extra_env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    spawn_paid(Options {
        deadline_s: 2,
        redis_workers: usize::from(db::backend() == "postgres"),
        clock_ahead_s,
        extra_env,
        ..Default::default()
    })
    .await
}

/// Pays with an authorization valid until `valid_before` while the facilitator is down: 504
/// `settlement_pending`. Returns the payment header and the receipt URL.
async fn pay_into_an_unknown_outcome(rig: &PaidApp, valid_before: u64) -> (String, String) {
    rig.facilitator.script(SettleScript::Down);
    let body = caller_body("diagnose_growth");
    let payment = rig
        .payment_for(
            PATH,
            &body,
            PayOptions {
                valid_before: Some(valid_before),
                ..Default::default()
            },
        )
        .await;
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 504, "unknown is never a 402");
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"]["code"], "settlement_pending");
    let receipt = answer["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();
    (payment, receipt)
}

fn settle_request(payment: &str) -> SettleRequest {
    SettleRequest {
        x402_version: 2,
        payment_payload: decode_b64_json(payment),
        payment_requirements: json!({}),
    }
}

async fn status(rig: &PaidApp, receipt: &str) -> String {
    rig.app.get_json(receipt).await["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn only_payment(rig: &PaidApp) -> payment::Model {
    let conn = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("db");
    let mut all = payment::Entity::find().all(&conn).await.expect("payments");
    assert_eq!(all.len(), 1, "one payment");
    all.remove(0)
}

/// The call is delivered once, for one transfer on chain: its receipt holds the result and
/// names that transfer.
async fn assert_delivered_once(rig: &PaidApp, chain: &Chain, receipt: &str, tx: &str) {
    let p = only_payment(rig).await;
    assert_eq!(p.status.as_str(), "settled");
    assert_eq!(p.transaction.as_deref(), Some(tx));
    let shown = rig.app.get_json(receipt).await;
    assert_eq!(shown["transaction"], tx, "{shown}");
    assert!(
        !shown["result"].is_null(),
        "the result is delivered: {shown}"
    );
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 1);
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    assert_eq!(rig.llm.received(), 1, "one model call");
    assert_eq!(rig.facilitator.transfers(), 0, "only the chain moved money");
}

#[tokio::test]
async fn a_transfer_mined_before_valid_before_is_found_through_an_rpc_twenty_seconds_behind() {
    let Some(chain) = Chain::start_with(&["--block-time", "1"]).await else {
        return;
    };
    // A hosted endpoint 20 blocks (20 s here) behind: its `latest` does not show the transfer
    // until well after `validBefore` has passed on every clock.
    let rpc = LaggingRpc::start(&chain.url, 20).await;
    let rig = rig(&rpc.url, &[], 0).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let valid_before = now_unix() + 8;
    let (payment, receipt) = pay_into_an_unknown_outcome(&rig, valid_before).await;

    // What the facilitator broadcast before it went quiet lands before `validBefore`.
    let tx = chain.submit(&settle_request(&payment)).await;
    assert!(chain.mined_at(&tx).await < valid_before);

    // Past `validBefore` by our clock, the lagging `latest` still shows the authorization
    // unused: no decision is made from that. Once the endpoint's `safe` block is past
    // `validBefore`, it shows the transfer.
    wait_until_within(
        "the transfer is found and the work delivered",
        90,
        async || {
            let now = status(&rig, &receipt).await;
            assert_ne!(now, "unpaid", "decided unsettled from a lagging RPC");
            now == "completed"
        },
    )
    .await;
    assert!(
        rpc.served() > 0,
        "the app read through the lagging endpoint"
    );
    assert_delivered_once(&rig, &chain, &receipt, &tx).await;
}

#[tokio::test]
async fn an_rpc_whose_head_is_too_old_decides_nothing_until_it_catches_up() {
    let Some(chain) = Chain::start_with(&["--block-time", "1"]).await else {
        return;
    };
    let rpc = LaggingRpc::start(&chain.url, 0).await;
    let rig = rig(&rpc.url, &[("BASE_RPC_MAX_HEAD_AGE_S", "10")], 0).await;
    let (_, receipt) = pay_into_an_unknown_outcome(&rig, now_unix() + 8).await;
    // 30 blocks behind, beyond the 10 s bound: the authorization expires unused, and still
    // nothing is decided while the endpoint lags.
    rpc.set_lag(30);
    let expired_by_any_clock = now_unix() + 8 + 12 + 5;
    let conn = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("db");
    wait_until_within("checks past expiry on a lagging endpoint", 60, async || {
        let p = payment::Entity::find()
            .all(&conn)
            .await
            .expect("payments")
            .remove(0);
        assert_eq!(
            p.status.as_str(),
            "unknown",
            "a lagging endpoint decided: {p:?}"
        );
        now_unix() > expired_by_any_clock && p.checks >= 3
    })
    .await;
    let p = only_payment(&rig).await;
    assert!(
        p.error
            .as_deref()
            .is_some_and(|e| e.contains("we do not know")),
        "{:?}",
        p.error
    );
    let shown = rig.app.get_json(&receipt).await;
    assert_eq!(
        (&shown["status"], &shown["settlement"]),
        (&json!("pending"), &json!("unknown"))
    );

    // Caught up: the `safe` block is past `validBefore`, the authorization unused there.
    rpc.set_lag(0);
    wait_until_within("the call is proven unpaid", 60, async || {
        status(&rig, &receipt).await == "unpaid"
    })
    .await;
    assert_eq!(
        only_payment(&rig).await.error.as_deref(),
        Some("authorization_expired_unused")
    );
    assert_eq!(rig.llm.received(), 0);
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 0);
}

#[tokio::test]
async fn a_server_clock_thirty_seconds_fast_does_not_expire_an_authorization_early() {
    let Some(chain) = Chain::start_with(&["--block-time", "1"]).await else {
        return;
    };
    let rig = rig(&chain.url, &[], 30).await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    // Valid for 40 s of real time: the fast server sees 10 s left and accepts it.
    let valid_before = now_unix() + 40;
    let (payment, receipt) = pay_into_an_unknown_outcome(&rig, valid_before).await;

    // By the server's clock the authorization expires 30 s before it really does. Until a few
    // seconds before the real expiry the call stays `settling`.
    let late = valid_before - 4;
    wait_until_within(
        "a few seconds before the real validBefore",
        60,
        async || {
            let now = status(&rig, &receipt).await;
            assert_ne!(now, "unpaid", "expired by our fast clock, not the chain's");
            now_unix() >= late
        },
    )
    .await;
    // The facilitator's broadcast lands then, still valid on chain.
    let tx = chain.submit(&settle_request(&payment)).await;
    assert!(chain.mined_at(&tx).await < valid_before);
    wait_until_within("the work is delivered", 60, async || {
        let now = status(&rig, &receipt).await;
        assert_ne!(now, "unpaid");
        now == "completed"
    })
    .await;
    assert_delivered_once(&rig, &chain, &receipt, &tx).await;
}

#[tokio::test]
async fn a_reorg_that_drops_a_delivered_calls_transfer_is_surfaced() {
    // The `safe` block trails the head by 40 blocks (40 s): the transfer is delivered at
    // `SETTLEMENT_CONFIRMATIONS` and watched until it is final.
    let Some(chain) = Chain::start_with(&["--block-time", "1", "--slots-in-an-epoch", "40"]).await
    else {
        return;
    };
    let rig = spawn_paid(Options {
        deadline_s: 20,
        facilitator: false,
        redis_workers: usize::from(db::backend() == "postgres"),
        extra_env: vec![
            ("X402_SETTLEMENT".into(), "self".into()),
            ("BASE_RPC_URL".into(), chain.url.clone()),
            ("SETTLER_PRIVATE_KEY".into(), SETTLER_KEY.into()),
        ],
        ..Default::default()
    })
    .await;
    chain.mint(rig.wallet.address(), 1_000_000).await;
    let before = chain.rpc("evm_snapshot", json!([])).await;

    let body = caller_body("diagnose_growth");
    let r = rig.pay_and_call(PATH, &body, Some("k")).await;
    assert_eq!(r.status(), 200, "delivered");
    assert_eq!(rig.llm.received(), 1);
    assert_eq!(chain.balance(pay_to()).await, U256::from(PRICE));
    let settled = only_payment(&rig).await;
    assert_eq!(settled.status.as_str(), "settled");

    // The chain rolls back past the transfer, as a reorg of the unsafe head would.
    assert_eq!(chain.rpc("evm_revert", json!([before])).await, json!(true));
    assert_eq!(chain.balance(pay_to()).await, U256::ZERO);

    wait_until_within("the watch marks the payment reorged", 40, async || {
        only_payment(&rig).await.status.as_str() == "reorged"
    })
    .await;
    let p = only_payment(&rig).await;
    assert!(
        p.error
            .as_deref()
            .is_some_and(|e| e.contains("not on chain")),
        "{:?}",
        p.error
    );
    let metrics = rig.app.metrics().await;
    assert!(
        metrics.contains("grove_settlements_total{result=\"reorged\"} 1"),
        "{metrics}"
    );
    // The delivered result stays delivered; nothing ran twice, nothing was charged again.
    assert_eq!(rig.llm.received(), 1);
    assert_eq!(chain.authorizations_used(rig.wallet.address()).await, 0);
}
