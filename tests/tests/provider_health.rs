//! No money for work that cannot run (issue 30). With the loopback model or Twilio down (their
//! ports refusing connections), the provider's health gate opens after the threshold: an unpaid
//! request answers `503 model_unavailable` / `sms_unavailable` with `Retry-After`, never a price,
//! and nothing is settled; free endpoints and the sandbox keep working; the repeat of a paid call
//! is never refused. Once the provider is back, the gate closes after its probe, calls are priced
//! again, and the calls paid before it opened complete on their own: one successful model call
//! each, the result in the receipt, no second settlement.
//!
//! Each runs embedded (one process: the api and its worker share the gates) and distributed
//! (Redis and a worker with gates of its own: the api learns what the worker saw through the
//! database).

use grove_tests::{
    action_body,
    llm::caller_body,
    mcp::{self, assert_refused, call, tool_arguments},
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::PayOptions,
};
use serde_json::{Value, json};

const CALL: &str = "/api/v1/agents/mary/call";
const REVIEW: &str = "/api/v1/actions/review-request/call";
const MODEL_GATE: &str = "model:gpt-4o-mini";

/// A gate that opens after two failures and probes every second.
fn fast_gates() -> Vec<(String, String)> {
    [
        ("HEALTH_FAILURES", "2"),
        ("HEALTH_WINDOW_S", "60"),
        ("HEALTH_PROBE_S", "1"),
        ("HEALTH_PROBE_MAX_S", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn redis(workers: usize) -> Options {
    Options {
        redis_workers: workers,
        ..Default::default()
    }
}

/// A coaching body of its own (a distinct request per caller).
fn question(n: usize) -> Value {
    let mut body = caller_body("diagnose_growth");
    let text = body["messages"][0]["content"].as_str().unwrap_or_default();
    body["messages"][0]["content"] = json!(format!("{text} (caller {n})"));
    body
}

async fn unpaid(rig: &PaidApp, path: &str, body: &Value) -> reqwest::Response {
    rig.app.post_json(path, body, &[]).await
}

/// The value of one exact series line in `/metrics`.
fn series(metrics: &str, line: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(line)?.strip_prefix(' ')?.parse().ok())
}

/// The gate's state in the api's `/readyz` (shown whether or not the api is ready: a worker
/// process may not have registered with the queue yet).
async fn gate_state(rig: &PaidApp, provider: &str) -> String {
    let ready: Value = rig.app.get("/readyz").await.json().await.expect("json");
    ready["gates"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["provider"] == provider)
        .and_then(|g| g["state"].as_str())
        .unwrap_or("missing")
        .to_owned()
}

/// A `worker` process of the rig's, with its health endpoint; killed when dropped.
struct WorkerProcess {
    child: std::process::Child,
    health: String,
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl WorkerProcess {
    fn start(rig: &PaidApp) -> Self {
        let addr = format!("127.0.0.1:{}", grove_tests::free_port());
        let child = rig.start_worker_process_with(&[("WORKER_HEALTH_ADDR", &addr)]);
        Self {
            child,
            health: format!("http://{addr}"),
        }
    }

    /// The model gate's state as the worker's `/readyz` shows it, and its `/metrics` line.
    async fn gate(&self, rig: &PaidApp) -> (String, Option<f64>) {
        let get = |path: &str| rig.app.client.get(format!("{}{path}", self.health)).send();
        let Ok(ready) = get("/readyz").await else {
            return ("unreachable".into(), None);
        };
        let ready: Value = ready.json().await.unwrap_or_default();
        let state = ready["gates"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["provider"] == MODEL_GATE)
            .and_then(|g| g["state"].as_str())
            .unwrap_or("missing")
            .to_owned();
        let metrics = match get("/metrics").await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let open = format!("grove_provider_gate_open{{provider=\"{MODEL_GATE}\"}}");
        (state, series(&metrics, &open))
    }
}

/// `worker_process`: the jobs run in a separate `worker` binary (through Redis), whose own
/// `/readyz` and `/metrics` must show the gate too.
async fn model_outage_is_not_sold_and_paid_calls_finish_after_it(
    opts: Options,
    worker_process: bool,
) {
    let mut extra_env = fast_gates();
    if worker_process {
        extra_env.push(("REDIS_URL".into(), grove_tests::paid::REDIS_URL.into()));
        extra_env.push(("QUEUE_NAMESPACE".into(), grove_tests::paid::namespace()));
    }
    let rig = spawn_paid(Options {
        deadline_s: 4,
        extra_env,
        ..opts
    })
    .await;
    let worker = worker_process.then(|| WorkerProcess::start(&rig));
    if let Some(w) = &worker {
        wait_until(
            "the worker's health endpoint shows the closed gate",
            async || w.gate(&rig).await == ("closed".into(), Some(0.0)),
        )
        .await;
    }
    let bodies = [question(1), question(2)];
    // Two callers hold prices quoted while the model was up.
    let mut payments = Vec::new();
    for body in &bodies {
        payments.push(rig.payment_for(CALL, body, PayOptions::default()).await);
    }
    assert_eq!(gate_state(&rig, MODEL_GATE).await, "closed");

    rig.llm.go_down().await;
    // Paid before the gate opened: settled, then failed with the model unreachable.
    let sent = bodies
        .iter()
        .zip(&payments)
        .map(|(b, p)| rig.send_paid(CALL, b, p, None));
    let mut receipts = Vec::new();
    for r in futures::future::join_all(sent).await {
        assert_eq!(r.status(), 502);
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"]["code"], "upstream_failed", "{body}");
        receipts.push(
            body["error"]["receipt"]["url"]
                .as_str()
                .expect("receipt")
                .to_owned(),
        );
    }
    assert_eq!(rig.facilitator.settle_calls(), 2);

    // After the threshold: 503 naming the provider, never a price, nothing settled.
    let fresh = question(3);
    wait_until("the model's gate opens", async || {
        unpaid(&rig, CALL, &fresh).await.status() == 503
    })
    .await;
    let r = unpaid(&rig, CALL, &fresh).await;
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("payment-required").is_none(), "no price");
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=2).contains(&wait), "until the next probe: {wait}");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "model_unavailable", "{body}");
    assert!(body.get("accepts").is_none() && body.get("x402Version").is_none());
    // A payment that does not verify is not answered with a price either.
    let forged = rig
        .app
        .post_json(
            CALL,
            &fresh,
            &[("payment-signature", "bm90IGEgcGF5bWVudA==")],
        )
        .await;
    assert_eq!(forged.status(), 503);
    if let Some(python) = mcp::python() {
        let mut arguments = tool_arguments(&fresh);
        arguments["coach"] = json!("mary");
        let url = rig.app.url("/mcp");
        let report = mcp::run(
            &python,
            &url,
            "auto",
            vec![call("diagnose_growth", arguments, "none")],
        )
        .await;
        let error = assert_refused(&report["results"][0], "model_unavailable");
        assert!(
            error["retry_after_s"].as_u64().is_some_and(|s| s >= 1),
            "{error}"
        );
    }
    assert_eq!(
        rig.facilitator.settle_calls(),
        2,
        "nothing settled for refused requests"
    );

    // What needs no model keeps working: the sandbox, the catalogs, the review request.
    let sandbox = rig
        .app
        .post_json(CALL, &fresh, &[("x-grove-sandbox", "1")])
        .await;
    assert_eq!(sandbox.status(), 200);
    assert_eq!(rig.app.get("/api/v1/agents").await.status(), 200);
    assert_eq!(unpaid(&rig, REVIEW, &action_body()).await.status(), 402);
    // /readyz shows the gate and stays ready; /metrics counts the refusals.
    let ready = rig.app.get("/readyz").await;
    assert_eq!(
        ready.status(),
        200,
        "an open gate is no reason to leave the load balancer"
    );
    assert!(
        ["open", "half_open"].contains(&gate_state(&rig, MODEL_GATE).await.as_str()),
        "shown open"
    );
    let metrics = rig.app.metrics().await;
    let refused = format!("grove_gate_refusals_total{{provider=\"{MODEL_GATE}\"}}");
    assert!(
        series(&metrics, &refused).is_some_and(|n| n >= 3.0),
        "{metrics}"
    );
    let open = format!("grove_provider_gate_open{{provider=\"{MODEL_GATE}\"}}");
    assert_eq!(series(&metrics, &open), Some(1.0));
    if let Some(w) = &worker {
        let (state, gauge) = w.gate(&rig).await;
        assert!(["open", "half_open"].contains(&state.as_str()), "{state}");
        assert_eq!(gauge, Some(1.0));
    }

    // The repeat of a paid call is never refused: it is the paid call's answer (a free re-run,
    // failed fast while the model is down), not a 503.
    let repeat = rig.send_paid(CALL, &bodies[0], &payments[0], None).await;
    assert_eq!(repeat.status(), 502);
    assert_eq!(
        rig.llm.received(),
        0,
        "nothing reached the model while it was down"
    );

    // The model is back: the gate closes after its probe and calls are priced again.
    rig.llm.come_back().await;
    wait_until("calls are priced again", async || {
        unpaid(&rig, CALL, &fresh).await.status() == 402
    })
    .await;
    assert!(rig.llm.probes() >= 1, "closed by a probe");
    assert_eq!(gate_state(&rig, MODEL_GATE).await, "closed");
    if let Some(w) = &worker {
        wait_until("the worker shows the gate closed", async || {
            w.gate(&rig).await == ("closed".into(), Some(0.0))
        })
        .await;
    }

    // The calls paid before the gate opened complete on their own: their receipts show the
    // result, with one model call each, and nothing is settled again.
    for url in &receipts {
        wait_until("the paid call completes by itself", async || {
            rig.app.get_json(url).await["status"] == "completed"
        })
        .await;
        let receipt = rig.app.get_json(url).await;
        assert_eq!(receipt["result"]["mode"], "diagnose_growth", "{receipt}");
    }
    assert_eq!(
        rig.llm.received(),
        2,
        "one model call per paid call, the one that succeeded"
    );
    assert_eq!(rig.llm.completed(), 2);
    // A repeat of the request returns the result, settling nothing and asking no model.
    let replay = rig.send_paid(CALL, &bodies[1], &payments[1], None).await;
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replay"], "true");
    assert_eq!(rig.facilitator.settle_calls(), 2, "no second charge");
    assert_eq!(rig.llm.received(), 2);
}

#[tokio::test]
async fn embedded_model_outage_is_not_sold_and_paid_calls_finish_after_it() {
    model_outage_is_not_sold_and_paid_calls_finish_after_it(Options::default(), false).await;
}

#[tokio::test]
async fn distributed_model_outage_is_not_sold_and_paid_calls_finish_after_it() {
    model_outage_is_not_sold_and_paid_calls_finish_after_it(redis(1), false).await;
}

#[tokio::test]
async fn a_worker_process_shows_the_model_outage_and_the_api_refuses_from_what_it_saw() {
    model_outage_is_not_sold_and_paid_calls_finish_after_it(Options::default(), true).await;
}

/// A review request for `phone` whose consent is a month old by the rig's clock.
fn review_for(rig: &PaidApp, phone: &str) -> Value {
    use grove_common::clock::Clock;
    let mut b = action_body();
    b["customer"]["phone"] = json!(phone);
    b["consent"]["captured_at"] =
        json!((rig.clock.now() - chrono::Duration::days(30)).to_rfc3339());
    b
}

async fn twilio_outage_is_not_sold(opts: Options) {
    let rig = spawn_paid(Options {
        twilio: true,
        clock_at: Some(grove_tests::review::afternoon()),
        extra_env: fast_gates(),
        ..opts
    })
    .await;
    let gate = "sms:twilio";
    assert_eq!(gate_state(&rig, gate).await, "closed");
    rig.twilio.go_down().await;
    // Two paid requests whose texts find Twilio unreachable.
    for phone in ["+13055550161", "+13055550162"] {
        let body = review_for(&rig, phone);
        let payment = rig.payment_for(REVIEW, &body, PayOptions::default()).await;
        let _ = rig.send_paid(REVIEW, &body, &payment, None).await;
    }
    let settled = rig.facilitator.settle_calls();
    assert_eq!(settled, 2);

    let fresh = review_for(&rig, "+13055550163");
    wait_until("Twilio's gate opens", async || {
        unpaid(&rig, REVIEW, &fresh).await.status() == 503
    })
    .await;
    let r = unpaid(&rig, REVIEW, &fresh).await;
    assert!(r.headers().get("payment-required").is_none(), "no price");
    assert!(r.headers().get("retry-after").is_some());
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "sms_unavailable", "{body}");
    // Refusals before any charge still come first; the sandbox and coaching are unaffected.
    let mut no_consent = fresh.clone();
    no_consent
        .as_object_mut()
        .expect("object")
        .remove("consent");
    assert_eq!(unpaid(&rig, REVIEW, &no_consent).await.status(), 422);
    let sandbox = rig
        .app
        .post_json(REVIEW, &fresh, &[("x-grove-sandbox", "1")])
        .await;
    assert_eq!(sandbox.status(), 200);
    assert_eq!(unpaid(&rig, CALL, &question(1)).await.status(), 402);
    assert_eq!(
        rig.facilitator.settle_calls(),
        settled,
        "nothing settled while refused"
    );
    let metrics = rig.app.metrics().await;
    let refused = format!("grove_gate_refusals_total{{provider=\"{gate}\"}}");
    assert!(
        series(&metrics, &refused).is_some_and(|n| n >= 1.0),
        "{metrics}"
    );

    rig.twilio.come_back().await;
    wait_until("review requests are priced again", async || {
        unpaid(&rig, REVIEW, &fresh).await.status() == 402
    })
    .await;
    assert!(
        rig.twilio.probes() >= 1,
        "closed by a probe (an account fetch, no text)"
    );
    assert_eq!(gate_state(&rig, gate).await, "closed");
}

#[tokio::test]
async fn embedded_twilio_outage_is_not_sold() {
    twilio_outage_is_not_sold(Options::default()).await;
}

#[tokio::test]
async fn distributed_twilio_outage_is_not_sold() {
    twilio_outage_is_not_sold(redis(1)).await;
}
