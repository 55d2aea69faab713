//! The server finishes what it was paid for without the client (issue 8 item 2): a settled call
//! whose job was lost (wiped from Redis) is pushed again by the api's recovery sweep and
//! completes, with one transfer and one model call, and no client retry.

use grove_common::config::Config;
use grove_tests::{
    llm::caller_body,
    paid::{Options, REDIS_URL, namespace, spawn_paid, spawn_redis_worker},
    wait_until,
    x402::PayOptions,
};
use serde_json::Value;
use std::sync::Arc;

const PATH: &str = "/api/v1/agents/mary/call";

async fn wipe_namespace(ns: &str) -> usize {
    let client = redis::Client::open(REDIS_URL).expect("redis client");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("redis");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{ns}*"))
        .query_async(&mut conn)
        .await
        .expect("keys");
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .expect("del");
    }
    keys.len()
}

#[tokio::test]
async fn a_settled_call_whose_job_was_wiped_completes_without_a_client_retry() {
    let ns = namespace();
    // Redis mode with no worker yet: the job waits in Redis, the call answers 504 at its deadline.
    let rig = spawn_paid(Options {
        deadline_s: 2,
        extra_env: vec![
            ("REDIS_URL".into(), REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), ns.clone()),
        ],
        ..Default::default()
    })
    .await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 504);
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["error"]["code"], "still_running");
    let receipt_url = answer["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    // Redis loses everything (a restart without persistence); then a worker comes up.
    assert!(wipe_namespace(&ns).await > 0, "the job was in Redis");
    let config = Config::from_map(&rig.env).expect("config");
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    spawn_redis_worker(config, stopped, Arc::new(rig.clock.clone())).await;

    wait_until("the lost call completes with no client retry", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1, "one model call");
}
