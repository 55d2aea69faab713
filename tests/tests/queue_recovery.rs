//! Redis faults under running `worker` processes (issue 8). A restart of Redis (with or
//! without its data) and a pause longer than the response timeout leave the consumers taking
//! jobs again without anyone restarting the worker; a job in flight at the fault runs once; a
//! worker that cannot get back within its limit exits non-zero for its supervisor.
//!
//! A worker killed mid-call has its call taken over by another at once, straight from the
//! database (even with Redis down); a push that fails after settlement is retried until it
//! lands; the api stays ready while no worker consumes its queues, and says so.
//!
//! Each test runs its own redis-server on a free port (`grove_tests::queue_rig`): faults must not
//! reach the shared Redis other tests use. Times are printed (`--nocapture`) as the measured recovery numbers.

use grove_common::db::{calls, entities::call};
use grove_tests::{
    free_port,
    llm::Reply,
    paid::{Options, spawn_paid},
    queue_rig::{PrivateRedis, Rig, new_question, rig, worker_ready},
    wait_until,
};
use sea_orm::EntityTrait;
use serde_json::Value;
use std::time::{Duration, Instant};

const PATH: &str = "/api/v1/agents/mary/call";

async fn a_restart_is_survived(persist: bool) {
    let mut rig = rig(persist, 60).await;
    rig.paid_call(Duration::from_secs(20)).await;
    assert_eq!(rig.paid.llm.received(), 1);

    rig.redis.restart().await;
    let answering = Instant::now();
    let (ready, result) = rig.recovers(answering).await;
    assert_eq!(rig.paid.llm.received(), 2, "one model call per paid call");
    assert_eq!(rig.paid.facilitator.settle_calls(), 2);
    eprintln!(
        "redis restart (persist={persist}): worker ready {:.2}s and a new call answered {:.2}s after Redis answered",
        ready.as_secs_f64(),
        result.as_secs_f64()
    );
}

#[tokio::test]
async fn consumers_resume_after_redis_restarts_without_its_data() {
    a_restart_is_survived(false).await;
}

#[tokio::test]
async fn consumers_resume_after_redis_restarts_with_its_data() {
    a_restart_is_survived(true).await;
}

#[tokio::test]
async fn a_job_in_flight_when_redis_restarts_runs_once() {
    let mut rig = rig(true, 60).await;
    rig.paid.llm.script([Reply::Slow(Duration::from_secs(3))]);
    let body = new_question();
    let payment = rig
        .paid
        .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
        .await;
    let call = rig.paid.spawn_paid_call(PATH, &body, &payment);
    wait_until("the model request", async || rig.paid.llm.received() == 1).await;
    rig.redis.restart().await;
    let answering = Instant::now();

    let response = tokio::time::timeout(Duration::from_secs(40), call)
        .await
        .expect("answered in time")
        .expect("task")
        .expect("response");
    assert_eq!(response.status(), 200);
    let first = answering.elapsed();
    // The job in flight finished on its own task. The old consumer's in-flight set came back
    // with the data, so the job is delivered once more when that consumer's name expires: that
    // run finds the call done, says so on the done channel, and calls no model.
    let client = redis::Client::open(rig.redis.url()).expect("client");
    let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
    let namespace = rig.paid.env["QUEUE_NAMESPACE"].clone();
    pubsub
        .subscribe(grove_common::jobs::done_channel(&namespace))
        .await
        .expect("subscribe");
    let redelivered = tokio::time::timeout(Duration::from_secs(30), async {
        use futures::StreamExt;
        pubsub.on_message().next().await
    })
    .await
    .expect("the job in flight at the fault is delivered again");
    assert!(redelivered.is_some());
    let again = answering.elapsed();
    assert_eq!(rig.paid.llm.received(), 1, "no second model call");

    let (ready, _) = rig.recovers(answering).await;
    assert_eq!(rig.paid.llm.received(), 2, "one model call per paid call");
    assert_eq!(rig.paid.llm.completed(), 2);
    eprintln!(
        "redis restart mid-job: the in-flight call answered {:.2}s, its redelivery ran (no model call) {:.2}s, the worker was ready {:.2}s after Redis answered",
        first.as_secs_f64(),
        again.as_secs_f64(),
        ready.as_secs_f64()
    );
}

#[tokio::test]
async fn consumers_resume_after_a_pause_longer_than_the_response_timeout() {
    let mut rig = rig(false, 60).await;
    rig.paid_call(Duration::from_secs(20)).await;

    // 7 s: longer than the 5 s response timeout of every Redis connection we make.
    let client = redis::Client::open(rig.redis.url()).expect("client");
    let mut admin = client
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection");
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(7000)
        .arg("ALL")
        .query_async(&mut admin)
        .await
        .expect("CLIENT PAUSE");
    let paused = Instant::now();
    // A command sent now is answered when the pause ends: that is when Redis answers again.
    let patient =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(20)));
    let mut probe = client
        .get_multiplexed_async_connection_with_config(&patient)
        .await
        .expect("probe connection");
    let _: String = tokio::time::timeout(
        Duration::from_secs(20),
        redis::cmd("PING").query_async(&mut probe),
    )
    .await
    .expect("the pause ends")
    .expect("PING");
    let answering = Instant::now();
    assert!(paused.elapsed() >= Duration::from_secs(6));

    let (ready, result) = rig.recovers(answering).await;
    assert_eq!(rig.paid.llm.received(), 2, "one model call per paid call");
    eprintln!(
        "7 s CLIENT PAUSE: worker ready {:.2}s and a new call answered {:.2}s after Redis answered",
        ready.as_secs_f64(),
        result.as_secs_f64()
    );
}

#[tokio::test]
async fn the_workers_readiness_is_503_naming_its_consumers_while_redis_is_gone() {
    let mut rig = rig(false, 60).await;
    let readyz = format!("{}/readyz", rig.health);
    rig.redis.kill();
    let mut seen: Option<Value> = None;
    wait_until("the worker to report not ready", async || {
        match rig.http.get(&readyz).send().await {
            Ok(r) if r.status() == 503 => {
                seen = r.json().await.ok();
                true
            }
            _ => false,
        }
    })
    .await;
    let body = seen.expect("a JSON body");
    assert_eq!(body["status"], "not_ready");
    let consumers = body["consumers"].as_array().expect("consumers listed");
    assert!(
        consumers.iter().any(|c| c["state"] != "running"),
        "a consumer down is named: {body}"
    );
    // The worker is still up (its limit is 60 s) and ready again once Redis is back.
    assert!(rig.worker.try_wait().expect("wait").is_none());
    rig.redis.restart().await;
    wait_until("the worker to be ready again", async || rig.ready().await).await;
}

#[tokio::test]
async fn a_worker_that_cannot_get_back_to_redis_exits_non_zero() {
    let mut rig = rig(false, 2).await;
    rig.redis.kill();
    let gone = Instant::now();
    let status = rig.exited("the worker to give up").await;
    assert!(!status.success(), "exit status {status}");
    eprintln!(
        "Redis gone (limit 2 s): the worker exited with {status} after {:.2}s",
        gone.elapsed().as_secs_f64()
    );
}

#[tokio::test]
async fn a_killed_workers_jobs_spread_over_the_others_and_run_once_more() {
    const CALLS: usize = 6;
    let mut rig = rig(false, 60).await;
    let model = Duration::from_secs(4);
    rig.paid.llm.script(vec![Reply::Slow(model); CALLS * 2]);
    // The first worker takes every call (it is alone), then two more join.
    let mut calls = Vec::new();
    for _ in 0..CALLS {
        let body = new_question();
        let payment = rig
            .paid
            .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
            .await;
        calls.push(rig.paid.spawn_paid_call(PATH, &body, &payment));
    }
    wait_until("every call at the model", async || {
        rig.paid.llm.received() == CALLS
    })
    .await;
    let mut others = Vec::new();
    for _ in 0..2 {
        let health = format!("127.0.0.1:{}", free_port());
        let child = rig
            .paid
            .start_worker_process_with(&[("WORKER_HEALTH_ADDR", &health)]);
        others.push((child, health));
    }
    for (_, health) in &others {
        wait_until("another worker", async || {
            worker_ready(&rig.http, health).await
        })
        .await;
    }

    let _ = rig.worker.kill();
    let _ = rig.worker.wait();
    let killed = Instant::now();
    wait_until("the orphans back at the model", async || {
        rig.paid.llm.received() == CALLS * 2
    })
    .await;
    let rerun_after = killed.elapsed();
    // Who runs them now: the process each call's lease names. The killed worker's calls were
    // taken over (its liveness lock went with it), spread over both survivors.
    let db = grove_common::db::connect_url(&rig.paid.db.url)
        .await
        .expect("db");
    let mut by_process = std::collections::BTreeMap::<i64, usize>::new();
    for c in call::Entity::find().all(&db).await.expect("calls") {
        let holder = calls::holder(&db, c.id)
            .await
            .expect("holder")
            .expect("the call");
        *by_process
            .entry(holder.lease_process.expect("a process holds it"))
            .or_default() += 1;
    }
    let mut held: Vec<usize> = by_process.into_values().collect();
    held.sort_unstable();
    assert_eq!(held.iter().sum::<usize>(), CALLS, "{held:?}");
    assert_eq!(
        held.len(),
        2,
        "both surviving workers took orphans: {held:?}"
    );
    assert!(held[0] >= 2, "spread, not one batch: {held:?}");

    for call in calls {
        let response = tokio::time::timeout(Duration::from_secs(40), call)
            .await
            .expect("answered")
            .expect("task")
            .expect("response");
        assert_eq!(response.status(), 200);
    }
    let answered_after = killed.elapsed();
    assert_eq!(
        rig.paid.llm.completed(),
        CALLS,
        "one answer billed per call"
    );
    assert_eq!(
        rig.paid.llm.received(),
        CALLS * 2,
        "two model calls per paid call: the killed one and its re-run"
    );
    for (mut child, _) in others {
        let _ = child.kill();
        let _ = child.wait();
    }
    eprintln!(
        "worker SIGKILL with {CALLS} calls in flight: orphans spread {held:?}, re-run at the model {:.2}s and all answered {:.2}s after the kill (model {:.0}s)",
        rerun_after.as_secs_f64(),
        answered_after.as_secs_f64(),
        model.as_secs_f64()
    );
}

#[tokio::test]
async fn a_killed_workers_call_is_taken_over_by_another_worker_even_with_redis_down() {
    let mut rig = rig(false, 60).await;
    rig.paid.llm.script([Reply::Slow(Duration::from_secs(60))]);
    let body = new_question();
    let payment = rig
        .paid
        .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
        .await;
    let call = rig.paid.spawn_paid_call(PATH, &body, &payment);
    wait_until("the model request", async || rig.paid.llm.received() == 1).await;
    let health = format!("127.0.0.1:{}", free_port());
    let mut other = rig
        .paid
        .start_worker_process_with(&[("WORKER_HEALTH_ADDR", &health)]);
    wait_until("a second worker", async || {
        worker_ready(&rig.http, &health).await
    })
    .await;

    // No queue to redeliver anything, and the worker at the model dies.
    rig.redis.kill();
    let _ = rig.worker.kill();
    let _ = rig.worker.wait();
    let killed = Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("answered in time")
        .expect("task")
        .expect("response");
    let answered = killed.elapsed();
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(response.status(), 200);
    assert_eq!(rig.paid.facilitator.transfers(), 1);
    assert_eq!(
        rig.paid.llm.received(),
        2,
        "the cut model call and the re-run"
    );
    assert_eq!(rig.paid.llm.completed(), 1, "one answer billed");
    eprintln!(
        "worker SIGKILL with Redis down: the call re-ran on the other worker and was answered {:.2}s after the kill",
        answered.as_secs_f64()
    );
}

/// The api's `grove_push_retries` gauge.
async fn push_retries(rig: &Rig) -> Option<u64> {
    let text = rig.paid.app.admin_get("/metrics").await.text().await.ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("grove_push_retries ")?.parse().ok())
}

#[tokio::test]
async fn a_push_that_fails_after_settlement_is_retried_until_it_lands() {
    // CALL_DEADLINE_S is 40 here: the recovery sweep alone would wait that long.
    let mut rig = rig(false, 60).await;
    rig.redis.kill();
    let body = new_question();
    let payment = rig
        .paid
        .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
        .await;
    let call = rig.paid.spawn_paid_call(PATH, &body, &payment);
    wait_until("the failed push to be retried", async || {
        push_retries(&rig).await == Some(1)
    })
    .await;
    assert_eq!(
        rig.paid.facilitator.transfers(),
        1,
        "settled before the push"
    );
    assert_eq!(rig.paid.llm.received(), 0);

    rig.redis.launch().await;
    let back = Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("answered without a client retry")
        .expect("task")
        .expect("response");
    assert_eq!(response.status(), 200);
    let answered = back.elapsed();
    assert_eq!(rig.paid.llm.received(), 1, "one model call");
    assert_eq!(rig.paid.facilitator.transfers(), 1);
    wait_until("no push left to retry", async || {
        push_retries(&rig).await == Some(0)
    })
    .await;
    eprintln!(
        "push refused (Redis down) after settlement: answered {:.2}s after Redis came back",
        answered.as_secs_f64()
    );
}

/// One line of the api's `/metrics`, as a number.
async fn gauge(paid: &grove_tests::paid::PaidApp, line: &str) -> Option<u64> {
    let text = paid.app.admin_get("/metrics").await.text().await.ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(line)?.trim().parse().ok())
}

/// The readiness policy (issue 27): the api is ready when it can serve (its database and queue
/// answer); a queue nobody consumes is said in the body and the metrics, never a 503, so workers
/// scaled to zero do not take the api out of its load balancer exactly when work arrives. The
/// queue's gauges tell ready, delayed and held jobs apart, per queue.
#[tokio::test]
async fn the_api_stays_ready_without_workers_and_its_gauges_tell_ready_delayed_and_held_jobs_apart()
{
    let redis = PrivateRedis::start(false).await;
    let namespace = grove_tests::paid::namespace();
    let paid = spawn_paid(Options {
        extra_env: vec![
            ("REDIS_URL".into(), redis.url()),
            ("QUEUE_NAMESPACE".into(), namespace.clone()),
        ],
        deadline_s: 30,
        ..Default::default()
    })
    .await;
    let r = paid.app.get("/readyz").await;
    assert_eq!(
        r.status(),
        200,
        "no worker is no reason to leave the load balancer"
    );
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["checks"]["queue"], "ok");
    assert_eq!(body["checks"]["consumers"], "none_alive");
    assert_eq!(
        body["consumers"],
        serde_json::json!({"coaching": 0, "review": 0})
    );

    // A paid call waits for a worker: one ready coaching job. A follow-up due in an hour: one
    // scheduled review job, which is no work for anyone yet.
    paid.llm.script([Reply::Slow(Duration::from_secs(3))]);
    let body = new_question();
    let payment = paid
        .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
        .await;
    let call = paid.spawn_paid_call(PATH, &body, &payment);
    let client = redis::Client::open(redis.url()).expect("client");
    let queue = grove_common::queue::JobQueue::redis(&client, &namespace)
        .await
        .expect("queue");
    let follow_up = grove_common::jobs::ReviewJob {
        review_id: "rr_later".into(),
        step: grove_common::jobs::ReviewStep::FollowUp,
        request_id: "req-later".into(),
        trace: None,
    };
    queue
        .push_review(follow_up, Some(Duration::from_secs(3600)))
        .await
        .expect("push");
    let queues = || async {
        paid.app
            .admin_get("/metrics/queues")
            .await
            .json::<serde_json::Value>()
            .await
            .expect("json")["queues"]
            .clone()
    };
    wait_until("the paid call's job to wait", async || {
        queues().await["coaching"]["ready"] == 1
    })
    .await;
    let q = queues().await;
    assert_eq!(q["coaching"]["backlog"], 1);
    assert_eq!(q["coaching"]["consumers"], 0);
    assert_eq!(q["review"]["ready"], 0, "a delayed job is not ready: {q}");
    assert_eq!(q["review"]["scheduled"], 1);
    assert_eq!(q["review"]["backlog"], 0);
    assert_eq!(
        gauge(&paid, "grove_queue_ready_jobs{queue=\"coaching\"}").await,
        Some(1)
    );
    assert_eq!(
        gauge(&paid, "grove_queue_scheduled_jobs{queue=\"review\"}").await,
        Some(1)
    );

    // A worker takes it: held, no longer ready, while the model thinks.
    let mut worker = paid.start_worker_process();
    wait_until("the worker to hold the job", async || {
        let q = queues().await;
        q["coaching"]["held"] == 1 && q["coaching"]["ready"] == 0
    })
    .await;
    assert_eq!(queues().await["coaching"]["backlog"], 1);
    let metrics = paid.app.metrics().await;
    assert!(
        metrics.contains("grove_queue_consumers{queue=\"coaching\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("grove_queue_held_jobs{queue=\"coaching\"} 1"));
    let response = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("answered")
        .expect("task")
        .expect("response");
    assert_eq!(response.status(), 200);
    wait_until("nothing held once it is done", async || {
        queues().await["coaching"]["backlog"] == 0
    })
    .await;

    // The worker goes; once its heartbeats stop the api says so, and stays ready.
    let _ = worker.kill();
    let _ = worker.wait();
    wait_until("the api to see no worker", async || {
        queues().await["coaching"]["consumers"] == 0
    })
    .await;
    assert_eq!(paid.app.get("/readyz").await.status(), 200);
}

/// The commands its private Redis has processed so far (`INFO stats`).
async fn commands_processed(url: &str) -> u64 {
    let client = redis::Client::open(url).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut conn)
        .await
        .expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_commands_processed")
}

/// An idle worker fetches once per signal (a push's wake-up, its poll tick), not in a loop: its
/// two consumers used to wake each other into about 2,200 empty fetches a second each (issue
/// 12). Over two idle seconds its Redis now sees the ticks and heartbeats: a few dozen commands.
#[tokio::test]
async fn an_idle_worker_does_not_fetch_in_a_loop() {
    let rig = rig(false, 60).await;
    let url = rig.redis.url();
    let before = commands_processed(&url).await;
    let window = Duration::from_secs(2);
    tokio::time::sleep(window).await;
    let after = commands_processed(&url).await;
    // Two queues polled every 250 ms (5 commands a fetch) and a heartbeat each every 2 s come
    // to about 100; the loop made over 20,000.
    let seen = after - before;
    assert!(
        seen < 400,
        "{seen} Redis commands in {window:?} from an idle worker"
    );
    // And it still takes work: the call is answered (200) by one model call.
    rig.paid_call(Duration::from_secs(20)).await;
    assert_eq!(rig.paid.llm.received(), 1);
}
