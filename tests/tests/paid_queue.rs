//! The job queue under paid calls: concurrent duplicates, Redis workers in other processes, and
//! a worker killed mid-job (at-least-once delivery must not bill or answer twice).

use grove_tests::{
    llm::{Reply, caller_body},
    paid::{Options, spawn_paid},
    wait_until,
    x402::PayOptions,
};
use serde_json::Value;
use std::time::Duration;

const PATH: &str = "/api/v1/agents/mary/call";

async fn twenty_concurrent_identical_requests(opts: Options) {
    let rig = spawn_paid(opts).await;
    rig.llm.script([Reply::Slow(Duration::from_millis(300))]);
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let sends = (0..20).map(|_| rig.send_paid(PATH, &body, &payment, None));
    let responses = futures::future::join_all(sends).await;
    let mut bodies = Vec::new();
    for r in responses {
        assert_eq!(r.status(), 200);
        bodies.push(r.json::<Value>().await.expect("json"));
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "twenty identical bodies"
    );
    assert_eq!(rig.facilitator.settle_calls(), 1, "one settlement");
    assert_eq!(rig.llm.received(), 1, "one model call");
}

#[tokio::test]
async fn twenty_concurrent_identical_requests_settle_once_on_the_embedded_queue() {
    twenty_concurrent_identical_requests(Options::default()).await;
}

#[tokio::test]
async fn twenty_concurrent_identical_requests_settle_once_through_redis() {
    twenty_concurrent_identical_requests(Options {
        redis_workers: 2,
        ..Default::default()
    })
    .await;
}

#[tokio::test]
async fn redis_workers_serve_paid_calls_for_several_coaches() {
    let rig = spawn_paid(Options {
        redis_workers: 2,
        ..Default::default()
    })
    .await;
    for (coach, mode) in [
        ("fern", "map_automation"),
        ("willow", "scope_role"),
        ("violet", "rescue_churn"),
    ] {
        let r = rig
            .pay_and_call(
                &format!("/api/v1/agents/{coach}/call"),
                &caller_body(mode),
                None,
            )
            .await;
        assert_eq!(r.status(), 200, "{coach}/{mode}");
        assert_eq!(r.json::<Value>().await.expect("json")["agent"], coach);
    }
    assert_eq!(rig.llm.received(), 3);
}

#[tokio::test]
async fn a_worker_killed_mid_job_still_delivers_and_the_model_is_billed_once() {
    // API with Redis and no in-process worker; the workers are separate processes.
    let rig = spawn_paid(Options {
        redis_workers: 0,
        deadline_s: 60,
        extra_env: vec![
            ("REDIS_URL".into(), grove_tests::paid::REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), grove_tests::paid::namespace()),
        ],
        ..Default::default()
    })
    .await;
    let mut first = rig.start_worker_process();
    rig.llm.script([Reply::Slow(Duration::from_secs(4))]);
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let call = rig.spawn_paid_call(PATH, &body, &payment);
    // The first worker has the job and is waiting on the model: kill it without warning.
    wait_until("the first model request", async || rig.llm.received() == 1).await;
    first.kill().expect("SIGKILL the worker");
    let _ = first.wait();
    let mut second = rig.start_worker_process();

    let response = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("answered in time")
        .expect("task")
        .expect("response");
    let _ = second.kill();
    let _ = second.wait();
    assert_eq!(response.status(), 200);
    let envelope: Value = response.json().await.expect("json");
    assert_eq!(envelope["mode"], "diagnose_growth");
    assert_eq!(rig.facilitator.settle_calls(), 1);
    assert_eq!(
        rig.llm.completed(),
        1,
        "only one model answer was delivered (and billed)"
    );
}
