//! A rolling restart under load (issue 27): every process (two workers, then the api) gets
//! SIGTERM and is replaced once while paid calls and review requests arrive. A worker stops
//! taking jobs, finishes what it holds and hands back what it had not started; the api stops
//! accepting and answers what it holds. Counted: every request delivered, one transfer, one
//! model call per coaching call and one text per review request: nothing lost, nothing done
//! twice; and every process stopped cleanly (exit status 0).

use grove_tests::{
    BASE_URL, PAY_TO, TestDb, action_body, default_env,
    facilitator::FakeFacilitator,
    free_port,
    llm::{FakeLlm, Reply},
    paid::start_process,
    queue_rig::{new_question, worker_ready},
    twilio::{self as twilio_fake, FakeTwilio},
    wait_until,
    x402::{PayOptions, TestWallet},
};
use serde_json::{Value, json};
use std::{
    collections::HashMap,
    process::Child,
    time::{Duration, Instant},
};

const CALL: &str = "/api/v1/agents/mary/call";
const REVIEW: &str = "/api/v1/actions/review-request/call";

/// SIGTERM, as Kubernetes and every process manager send it.
fn sigterm(child: &Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// Waits for `child` to exit on its own after SIGTERM; its status.
async fn exited(child: &mut Child) -> std::process::ExitStatus {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            Instant::now() < until,
            "did not stop within 60 s of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A review request that may be texted now: a business in daytime, a phone of its own.
fn review_body(i: usize) -> Value {
    let phone = format!("+1312{:07}", 3_000_000 + i);
    let mut b = action_body();
    b["business"]["timezone"] = json!(grove_tests::review::zone_open_now(&phone));
    b["customer"]["phone"] = json!(phone);
    b["consent"]["captured_at"] =
        json!((chrono::Utc::now() - chrono::Duration::days(30)).to_rfc3339());
    b
}

/// The identical request again on transport errors, 409 and 5xx until a 200.
async fn until_answered(
    http: reqwest::Client,
    url: String,
    body: Value,
    payment: String,
) -> (u16, Vec<u16>) {
    let mut seen = vec![];
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let r = http
            .post(&url)
            .header("content-type", "application/json")
            .header("payment-signature", &payment)
            .body(body.to_string())
            .send()
            .await;
        let status = r.as_ref().map_or(0, |r| r.status().as_u16());
        seen.push(status);
        if status == 200 || !(status == 0 || status == 409 || status >= 500) {
            return (status, seen);
        }
        assert!(Instant::now() < until, "never answered: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_rolling_restart_under_load_loses_nothing_and_does_nothing_twice() {
    const CALLS: usize = 30;
    const REVIEWS: usize = 6;
    let db = TestDb::new().await;
    let llm = FakeLlm::start().await;
    llm.script(vec![Reply::Slow(Duration::from_millis(1500)); CALLS * 3]);
    let facilitator = FakeFacilitator::start().await;
    let twilio = FakeTwilio::start().await;
    let api_addr = format!("127.0.0.1:{}", free_port());
    let mut env: HashMap<String, String> = default_env();
    for (k, v) in [
        ("BIND_ADDR", api_addr.clone()),
        ("PUBLIC_BASE_URL", BASE_URL.to_owned()),
        ("X402_PAY_TO", PAY_TO.to_owned()),
        ("X402_FACILITATOR_URL", facilitator.url().to_owned()),
        ("BASE_RPC_URL", facilitator.rpc_url()),
        ("LLM_BASE_URL", llm.openai_base()),
        ("DATABASE_URL", db.url.clone()),
        ("REDIS_URL", grove_tests::paid::REDIS_URL.to_owned()),
        ("QUEUE_NAMESPACE", grove_tests::paid::namespace()),
        ("CALL_DEADLINE_S", "30".to_owned()),
        ("SWEEP_INTERVAL_S", "2".to_owned()),
        ("SMS_PROVIDER", "twilio".to_owned()),
        ("TWILIO_ACCOUNT_SID", twilio_fake::ACCOUNT_SID.to_owned()),
        ("TWILIO_AUTH_TOKEN", twilio_fake::AUTH_TOKEN.to_owned()),
        ("TWILIO_FROM", twilio_fake::FROM.to_owned()),
        ("TWILIO_BASE_URL", twilio.url().to_owned()),
        ("WORKER_DRAIN_S", "30".to_owned()),
    ] {
        env.insert(k.to_owned(), v);
    }
    let start = |bin: &str, extra: Option<(&str, &str)>| {
        let env = env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        start_process(bin, env.chain(extra))
    };
    let http = grove_common::http_client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(45))
        .build()
        .expect("client");
    let api_url = format!("http://{api_addr}");
    let api_up = async |http: &reqwest::Client| {
        http.get(format!("{api_url}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
    };
    let mut api = start("api", None);
    wait_until("the api", async || api_up(&http).await).await;
    let healths: Vec<String> = (0..2)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();
    let mut workers: Vec<Child> = healths
        .iter()
        .map(|h| start("worker", Some(("WORKER_HEALTH_ADDR", h))))
        .collect();
    for h in &healths {
        wait_until("a worker", async || worker_ready(&http, h).await).await;
    }

    // Signed up front; sent spread over 9 s.
    let challenge = async |path: &str, body: &Value| {
        let r = http
            .post(format!("{api_url}{path}"))
            .json(body)
            .send()
            .await
            .expect("challenge");
        assert_eq!(r.status(), 402);
        r.headers()["payment-required"]
            .to_str()
            .expect("ascii")
            .to_owned()
    };
    let wallet = TestWallet::new();
    let mut requests = vec![];
    for i in 0..CALLS + REVIEWS {
        let (path, body) = if i % 6 == 5 {
            (REVIEW, review_body(i))
        } else {
            (CALL, new_question())
        };
        let payment = wallet.pay(&challenge(path, &body).await, PayOptions::default());
        requests.push((path, body, payment));
    }
    let t0 = Instant::now();
    let spread = Duration::from_secs(9);
    let n = requests.len();
    let clients: Vec<_> = requests
        .into_iter()
        .enumerate()
        .map(|(i, (path, body, payment))| {
            let (http, url) = (http.clone(), format!("{api_url}{path}"));
            let at = t0 + spread.mul_f64(i as f64 / n as f64);
            let phone = body["customer"]["phone"].as_str().map(str::to_owned);
            tokio::spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                (phone, until_answered(http, url, body, payment).await)
            })
        })
        .collect();

    // Each process in turn: SIGTERM while it holds work, wait for it to stop by itself, start
    // its replacement on the same address.
    let mut stops = vec![];
    for (i, health) in healths.iter().enumerate() {
        tokio::time::sleep_until((t0 + Duration::from_secs(2 + 3 * i as u64)).into()).await;
        sigterm(&workers[i]);
        let status = exited(&mut workers[i]).await;
        stops.push((format!("worker {i}"), status));
        workers[i] = start("worker", Some(("WORKER_HEALTH_ADDR", health)));
        wait_until("the new worker", async || worker_ready(&http, health).await).await;
    }
    sigterm(&api);
    let status = exited(&mut api).await;
    stops.push(("api".into(), status));
    api = start("api", None);
    wait_until("the new api", async || api_up(&http).await).await;

    let mut statuses: HashMap<u16, usize> = HashMap::new();
    let mut reviewed = vec![];
    for c in clients {
        let (phone, (last, seen)) = c.await.expect("client");
        assert_eq!(last, 200, "answered: {seen:?}");
        for s in seen {
            *statuses.entry(s).or_default() += 1;
        }
        reviewed.extend(phone);
    }
    // The texts of the review requests reach Twilio once each.
    wait_until("every review request texted", async || {
        let texted: std::collections::HashSet<String> = twilio
            .messages()
            .iter()
            .filter_map(|m| m.field("To").map(str::to_owned))
            .collect();
        reviewed.iter().all(|p| texted.contains(p))
    })
    .await;
    for (name, status) in &stops {
        assert!(
            status.success(),
            "{name} stopped cleanly on SIGTERM: {status}"
        );
    }
    assert_eq!(reviewed.len(), REVIEWS);
    assert_eq!(
        facilitator.transfers(),
        CALLS + REVIEWS,
        "one transfer each"
    );
    assert_eq!(llm.received(), CALLS, "one model call per coaching call");
    let mut texts: HashMap<String, usize> = HashMap::new();
    for m in twilio.messages() {
        if let Some(to) = m.field("To") {
            *texts.entry(to.to_owned()).or_default() += 1;
        }
    }
    assert!(
        texts.values().all(|n| *n == 1),
        "one text per review request: {texts:?}"
    );
    for mut w in workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    let _ = api.kill();
    let _ = api.wait();
    eprintln!(
        "rolling restart (2 workers, then the api) under {CALLS} paid calls and {REVIEWS} review requests: statuses seen {statuses:?}, {} model calls, {} texts, {:.1}s",
        llm.received(),
        twilio.messages().len(),
        t0.elapsed().as_secs_f64()
    );
}
