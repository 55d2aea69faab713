//! The server finishes what it was paid for without the client (issue 8 item 2): a settled
//! coaching call or review request whose job was lost (wiped from Redis) is pushed again by the
//! api's recovery sweep and completes, with one transfer, one model call or one text, and no
//! client retry; and the embedded mode, SIGKILLed with a call at the model and started again,
//! finishes that call by itself.

use chrono::{DateTime, TimeZone, Utc};
use grove_common::ledger::{CallStatus, PaymentStatus};
use grove_common::{
    clock::Clock,
    config::Config,
    db::{
        calls,
        entities::{call, payment},
    },
};
use grove_tests::{
    BASE_URL, PAY_TO, TestDb, action_body,
    facilitator::{FakeFacilitator, SettleScript},
    free_port,
    llm::{FakeLlm, Reply, caller_body},
    paid::{Options, REDIS_URL, namespace, spawn_paid, spawn_redis_worker, start_process},
    wait_until,
    x402::{PayOptions, TestWallet},
};
use sea_orm::EntityTrait;
use serde_json::{Value, json};
use std::{process::Child, sync::Arc, time::Duration};

const PATH: &str = "/api/v1/agents/mary/call";
const REVIEW_PATH: &str = "/api/v1/actions/review-request/call";

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

/// 2026-11-16 (a Monday) at 15:00 in New York: inside every quiet-hours window.
fn monday_afternoon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("valid instant")
}

#[tokio::test]
async fn a_settled_review_request_whose_job_was_wiped_is_texted_without_a_client_retry() {
    let ns = namespace();
    let rig = spawn_paid(Options {
        deadline_s: 2,
        twilio: true,
        clock_at: Some(monday_afternoon()),
        extra_env: vec![
            ("REDIS_URL".into(), REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), ns.clone()),
        ],
        ..Default::default()
    })
    .await;
    let mut body = action_body();
    body["consent"]["captured_at"] =
        json!((rig.clock.now() - chrono::Duration::days(30)).to_rfc3339());
    let payment = rig
        .payment_for(REVIEW_PATH, &body, PayOptions::default())
        .await;
    let r = rig.send_paid(REVIEW_PATH, &body, &payment, None).await;
    assert_eq!(
        r.status(),
        504,
        "no worker yet: the request is still running"
    );
    let answer: Value = r.json().await.expect("json");
    let receipt_url = answer["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    assert!(wipe_namespace(&ns).await > 0, "the job was in Redis");
    let config = Config::from_map(&rig.env).expect("config");
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    spawn_redis_worker(config, stopped, Arc::new(rig.clock.clone())).await;

    wait_until(
        "the lost review request completes with no client retry",
        async || rig.app.get_json(&receipt_url).await["status"] == "completed",
    )
    .await;
    assert_eq!(rig.twilio.sends(), 1, "one text");
    assert_eq!(rig.facilitator.transfers(), 1);
}

/// The `api` binary in the embedded mode (no Redis), killed and started again on one port.
struct EmbeddedApi {
    env: Vec<(String, String)>,
    child: Option<Child>,
    base: String,
    http: reqwest::Client,
}

impl EmbeddedApi {
    async fn start(env: Vec<(String, String)>, port: u16) -> Self {
        let mut api = Self {
            env,
            child: None,
            base: format!("http://127.0.0.1:{port}"),
            http: grove_common::http_client::builder()
                .no_proxy()
                .build()
                .expect("client"),
        };
        api.launch().await;
        api
    }

    async fn launch(&mut self) {
        let env = self.env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        self.child = Some(start_process("api", env));
        let healthz = format!("{}/healthz", self.base);
        wait_until("the api to answer", async || {
            self.http.get(&healthz).send().await.is_ok()
        })
        .await;
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Pays for `body` (402, then a fresh authorization) and sends the paid call on its own task,
    /// so the test can kill the process under it. The payment comes back for the retry.
    async fn pay_in_background(
        &self,
        body: &Value,
    ) -> (
        String,
        tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
    ) {
        let challenge = self.post(PATH, body).send().await.expect("challenge");
        assert_eq!(challenge.status(), 402);
        let challenge = challenge.headers()["payment-required"]
            .to_str()
            .expect("ascii")
            .to_owned();
        let payment = TestWallet::new().pay(&challenge, PayOptions::default());
        let paid = self.post(PATH, body).header("payment-signature", &payment);
        (payment, tokio::spawn(paid.send()))
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
    }
}

/// Waits until the (only) call is completed, with no client waiting on it.
async fn completed_without_client(conn: &sea_orm::DatabaseConnection) {
    wait_until("the call to complete with no client", async || {
        call::Entity::find()
            .one(conn)
            .await
            .ok()
            .flatten()
            .is_some_and(|c| c.status == CallStatus::Completed)
    })
    .await;
}

/// The embedded api's settings on `port`: loopback fakes, a 30 s call deadline, a sweep a second.
fn embedded_env(
    port: u16,
    db: &TestDb,
    facilitator: &FakeFacilitator,
    llm: &FakeLlm,
) -> Vec<(String, String)> {
    [
        ("BIND_ADDR", format!("127.0.0.1:{port}")),
        ("PUBLIC_BASE_URL", BASE_URL.into()),
        ("DATABASE_URL", db.url.clone()),
        ("X402_PAY_TO", PAY_TO.into()),
        ("X402_FACILITATOR_URL", facilitator.url().into()),
        // The fake's chain, read as production reads Base: a used nonce is ours only if the
        // chain shows our transfer.
        ("BASE_RPC_URL", facilitator.rpc_url()),
        ("LLM_PROVIDER", "openai".into()),
        ("LLM_BASE_URL", llm.openai_base()),
        ("CALL_DEADLINE_S", "30".into()),
        ("SWEEP_INTERVAL_S", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

impl Drop for EmbeddedApi {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test]
async fn the_embedded_mode_finishes_a_call_in_flight_after_a_crash_and_restart() {
    let db = TestDb::new().await;
    let llm = FakeLlm::start().await;
    let facilitator = FakeFacilitator::start().await;
    // The first run's answer would take long: the crash comes first. The re-run's is quick.
    llm.script([Reply::Slow(Duration::from_secs(60))]);
    let port = free_port();
    let env = embedded_env(port, &db, &facilitator, &llm);
    let mut api = EmbeddedApi::start(env, port).await;

    let body = caller_body("diagnose_growth");
    let (payment, cut) = api.pay_in_background(&body).await;
    wait_until("the model request", async || llm.received() == 1).await;

    // Settled, and running at the model: the process dies without a word.
    api.kill();
    assert!(
        cut.await.expect("task").is_err(),
        "the client's request was cut"
    );
    api.launch().await;

    let conn = grove_common::db::connect_url(&db.url).await.expect("db");
    completed_without_client(&conn).await;
    assert_eq!(facilitator.transfers(), 1);
    assert_eq!(llm.received(), 2, "the cut model call and one re-run");

    // The client coming back later gets the stored result: nothing charged or called again.
    let replay = api
        .post(PATH, &body)
        .header("payment-signature", &payment)
        .send()
        .await
        .expect("replay");
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replay"], "true");
    assert_eq!(facilitator.transfers(), 1);
    assert_eq!(llm.received(), 2);
}

/// What a crash of the embedded mode leaves when a settled call's job was still in the
/// in-process queue: the call `pending` since before the process started again.
#[tokio::test]
async fn the_embedded_mode_runs_at_start_up_the_calls_its_previous_run_had_queued() {
    let before = Utc::now();
    // A minute of call deadline: the sweep's usual "pending for a whole deadline" would wait it.
    let rig = spawn_paid(Options {
        deadline_s: 60,
        ..Default::default()
    })
    .await;
    let conn = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("db");
    let earlier = before - chrono::Duration::seconds(1);
    use sea_orm::ActiveValue::Set;
    let mut row = grove_tests::db::call_row(CallStatus::Pending);
    row.request_id = Set("req-before-the-crash".into());
    row.created_at = Set(earlier);
    row.updated_at = Set(earlier);
    // A call left pending by the previous run.
    let id = grove_tests::db::insert_row(&conn, row).await;

    wait_until("the call to run with no client", async || {
        calls::load(&conn, id)
            .await
            .ok()
            .flatten()
            .is_some_and(|c| c.status == CallStatus::Completed)
    })
    .await;
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_settlement_whose_process_died_before_its_outcome_is_reconciled_not_lost() {
    let db = TestDb::new().await;
    let llm = FakeLlm::start().await;
    let facilitator = FakeFacilitator::start().await;
    // The transfer happens at once; the answer would come a minute later.
    facilitator.script(SettleScript::Slow(Duration::from_secs(60)));
    let port = free_port();
    let mut env = embedded_env(port, &db, &facilitator, &llm);
    env.push(("X402_FACILITATOR_TIMEOUT_S".into(), "30".into()));
    let mut api = EmbeddedApi::start(env, port).await;

    let body = caller_body("diagnose_growth");
    let (payment, cut) = api.pay_in_background(&body).await;
    wait_until("the transfer", async || facilitator.transfers() == 1).await;

    // The money moved and the gate is still waiting for the answer: the process dies, so no
    // outcome (not even "unknown") is ever recorded by it.
    api.kill();
    assert!(cut.await.expect("task").is_err(), "the request was cut");
    let conn = grove_common::db::connect_url(&db.url).await.expect("db");
    let reserved = payment::Entity::find().one(&conn).await.expect("read");
    assert_eq!(
        reserved.map(|p| p.status),
        Some(PaymentStatus::Reserved),
        "the crash left the reservation without an outcome"
    );

    // Started again (with a short settle timeout, so the reservation is stale within seconds),
    // the server reconciles it as unknown: the chain shows the transfer made, the work runs.
    facilitator.script(SettleScript::Success);
    for (k, v) in &mut api.env {
        if k == "X402_FACILITATOR_TIMEOUT_S" {
            *v = "1".into();
        }
    }
    api.launch().await;
    completed_without_client(&conn).await;
    let settled = payment::Entity::find().one(&conn).await.expect("read");
    assert_eq!(settled.map(|p| p.status), Some(PaymentStatus::Settled));
    assert_eq!(facilitator.transfers(), 1, "one transfer, never a second");
    assert_eq!(llm.received(), 1, "one model call");

    // The client's retry gets the result; nothing is charged or called again.
    let replay = api
        .post(PATH, &body)
        .header("payment-signature", &payment)
        .send()
        .await
        .expect("replay");
    assert_eq!(replay.status(), 200);
    assert_eq!(facilitator.transfers(), 1);
    assert_eq!(llm.received(), 1);
}
