//! One scenario: fresh database, private Redis, fakes, the api and 3 workers; retrying clients
//! spread over the arrival window while the fault runs; then the counts.

use crate::{
    Args, CALL_PATH, FACILITATOR_TIMEOUT_S, Fault, REVIEW_PATH, WORKERS,
    client::{Outcome, Rng, ask_price, call_until_done},
    count::{self, Recorded, Row, review_phone},
    faults::{Targets, inject},
    model::{ModelLog, Proxy, forward},
    procs::{Procs, Redis, free_port, lock, wait_healthy},
};
use axum::Router;
use grove_tests::{
    BASE_URL, PAY_TO, TestDb, action_body,
    facilitator::{FakeFacilitator, SettleScript},
    llm::{FakeLlm, Reply, caller_body},
    private_pg::PrivatePostgres,
    twilio::{self as twilio_fake, FakeTwilio},
    x402::{PayOptions, TestWallet},
};
use serde_json::json;
use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

pub async fn scenario(args: &Args, name: &str, fault: Fault, bins: &Path, logs: &Path) -> Row {
    let dir = logs.join(name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
    std::fs::create_dir_all(&dir).expect("scenario directory");
    // The PostgreSQL restart runs on a server of its own (the shared one serves other tests).
    let private_pg = matches!(fault, Fault::PostgresRestart).then(PrivatePostgres::start);
    let shared_db = match &private_pg {
        Some(_) => None,
        None => Some(TestDb::on("postgres").await),
    };
    let db_url = match (&private_pg, &shared_db) {
        (Some(pg), _) => pg.database("chaos").await,
        (None, Some(db)) => db.url.clone(),
        (None, None) => unreachable!("one database or the other"),
    };
    let redis = Redis::start(&dir, matches!(fault, Fault::RedisRestart { persist: true }));
    redis.wait_ready().await;
    let facilitator = FakeFacilitator::start().await;
    let twilio = FakeTwilio::start().await;
    if !args.twilio.is_zero() {
        twilio.always(grove_tests::twilio::TwilioReply::Slow(args.twilio));
    }
    let llm = FakeLlm::start().await;
    llm.script(std::iter::repeat_n(
        Reply::Slow(args.model),
        args.calls * 20,
    ));
    let model_log = Arc::new(ModelLog::default());
    let proxy = Arc::new(Proxy {
        log: Arc::clone(&model_log),
        upstream: llm.openai_base().trim_end_matches("/v1").to_owned(),
        client: grove_common::http_client::builder()
            .no_proxy()
            .build()
            .expect("client"),
    });
    // Switchable: the model-down scenario makes this address refuse connections.
    let model_server = Arc::new(
        grove_tests::Switchable::serve(Router::new().fallback(forward).with_state(proxy)).await,
    );
    let model_url = model_server.url();
    if let Fault::RpcLag(secs) = fault {
        facilitator.lag_rpc(secs);
    }
    if let Fault::Facilitator | Fault::RpcLag(_) = fault {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..(args.calls + args.reviews) * 6 {
            facilitator.script_next(match rng.percent() {
                0..20 => SettleScript::SettleThenStatus(500),
                20..25 => SettleScript::Slow(Duration::from_secs(FACILITATOR_TIMEOUT_S + 2)),
                _ => SettleScript::Success,
            });
        }
    }

    // Our own settlement on a chain with a block every second (the settler-restart scenario).
    let chain = match fault {
        Fault::SettlerRestart => Some(
            grove_tests::chain::Chain::start_with(&["--block-time", "1"])
                .await
                .expect("the local chain (scripts/anvil)"),
        ),
        _ => None,
    };
    let api_port = free_port();
    let base = format!("http://127.0.0.1:{api_port}");
    let mut env: Vec<(String, String)> = [
        ("BIND_ADDR", format!("127.0.0.1:{api_port}")),
        // Whatever else runs on this machine: the admin listener on a port of its own.
        ("ADMIN_ADDR", "127.0.0.1:0".into()),
        ("PUBLIC_BASE_URL", BASE_URL.into()),
        ("X402_PAY_TO", PAY_TO.into()),
        ("X402_FACILITATOR_URL", facilitator.url().into()),
        // The fake's chain, read as production reads Base (`FakeFacilitator::rpc_url`).
        ("BASE_RPC_URL", facilitator.rpc_url()),
        (
            "X402_FACILITATOR_TIMEOUT_S",
            FACILITATOR_TIMEOUT_S.to_string(),
        ),
        ("LLM_PROVIDER", "openai".into()),
        ("LLM_BASE_URL", format!("{model_url}/v1")),
        ("DATABASE_URL", db_url.clone()),
        ("REDIS_URL", redis.url()),
        ("QUEUE_NAMESPACE", "chaos".into()),
        ("CALL_DEADLINE_S", args.deadline_s.to_string()),
        ("SWEEP_INTERVAL_S", args.sweep_s.to_string()),
        ("SMS_PROVIDER", "twilio".into()),
        ("TWILIO_ACCOUNT_SID", twilio_fake::ACCOUNT_SID.into()),
        ("TWILIO_AUTH_TOKEN", twilio_fake::AUTH_TOKEN.into()),
        ("TWILIO_FROM", twilio_fake::FROM.into()),
        ("TWILIO_BASE_URL", twilio.url().into()),
        ("RUST_LOG", "warn".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if let Some(chain) = &chain {
        env.retain(|(k, _)| !k.starts_with("X402_FACILITATOR") && k != "BASE_RPC_URL");
        for (k, v) in [
            ("X402_SETTLEMENT", "self".to_owned()),
            ("BASE_RPC_URL", chain.url.clone()),
            (
                "SETTLER_PRIVATE_KEY",
                grove_tests::chain::SETTLER_KEY.to_owned(),
            ),
            ("SETTLEMENT_CONFIRMATIONS", "2".to_owned()),
        ] {
            env.push((k.to_owned(), v));
        }
    }
    let procs = Arc::new(Mutex::new(Procs {
        bins: bins.to_path_buf(),
        logs: dir.clone(),
        env,
        api: None,
        workers: (0..WORKERS).map(|_| None).collect(),
        api_restarting: false,
        exits: vec![],
        supervised: !matches!(fault, Fault::PostgresRestart),
    }));
    let client = grove_common::http_client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(args.deadline_s + 15))
        .build()
        .expect("client");
    // The api first (it migrates the fresh database), then the workers.
    lock(&procs).start_api();
    wait_healthy(&client, &base).await;
    for i in 0..WORKERS {
        lock(&procs).start_worker(i);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Requests: each coaching call carries its index in its message; each review its own phone.
    // Every review phone shares an area code (Illinois), so one zone fits them all.
    let zone = grove_tests::review::zone_open_now(&review_phone(1));
    let consent_at = (chrono::Utc::now() - chrono::Duration::days(30)).to_rfc3339();
    let call_body = |i: usize| {
        let mut b = caller_body("diagnose_growth");
        let text = b["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        b["messages"][0]["content"] = json!(format!("{text} (chaoscall{i}end)"));
        b.to_string()
    };
    let review_body = |i: usize| {
        let mut b = action_body();
        b["customer"]["phone"] = json!(review_phone(i));
        b["consent"]["captured_at"] = json!(consent_at);
        b["business"]["timezone"] = json!(zone);
        b.to_string()
    };
    let challenge = |path: &'static str, body: String| {
        let client = client.clone();
        let url = format!("{base}{path}");
        async move {
            let r = client
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .expect("challenge");
            assert_eq!(r.status(), 402, "an unpaid {path} answers 402");
            r.headers()["payment-required"]
                .to_str()
                .expect("ascii")
                .to_owned()
        }
    };
    let call_challenge = challenge(CALL_PATH, call_body(0)).await;
    let review_challenge = challenge(REVIEW_PATH, review_body(0)).await;
    let wallet = Arc::new(TestWallet::new());
    if let Some(chain) = &chain {
        // More than every request could cost.
        chain.mint(wallet.address(), 1_000_000_000_000).await;
    }

    let (stop_supervisor, mut supervisor_stopped) = tokio::sync::watch::channel(false);
    let supervisor = {
        let procs = Arc::clone(&procs);
        tokio::spawn(async move {
            while !*supervisor_stopped.borrow() {
                lock(&procs).supervise();
                let _ =
                    tokio::time::timeout(Duration::from_millis(250), supervisor_stopped.changed())
                        .await;
            }
        })
    };

    let t0 = Instant::now();
    let total = args.calls + args.reviews;
    // Each client asks for its own price first (as an x402 client does), in the scenario whose
    // fault makes the price a 503.
    let priced_each = matches!(fault, Fault::ModelDown(_));
    let mut clients = Vec::new();
    let (mut next_call, mut next_review) = (0, 0);
    for k in 0..total {
        // Reviews interleaved evenly with the calls, all starting evenly over the spread.
        let review = (k + 1) * args.reviews / total > k * args.reviews / total;
        let index = if review {
            next_review += 1;
            next_review - 1
        } else {
            next_call += 1;
            next_call - 1
        };
        let start = t0 + args.spread.mul_f64(k as f64 / total as f64);
        let (url, body, challenge) = if review {
            (
                format!("{base}{REVIEW_PATH}"),
                review_body(index + 1),
                review_challenge.clone(),
            )
        } else {
            (
                format!("{base}{CALL_PATH}"),
                call_body(index),
                call_challenge.clone(),
            )
        };
        let (client, wallet, bound) = (client.clone(), Arc::clone(&wallet), args.bound);
        clients.push((
            review,
            index,
            tokio::spawn(async move {
                tokio::time::sleep_until(start.into()).await;
                let began = Instant::now();
                let (challenge, unpriced) = if priced_each {
                    ask_price(&client, &url, &body, bound).await
                } else {
                    (Some(challenge), 0)
                };
                let Some(challenge) = challenge else {
                    return Outcome {
                        started: Some(began),
                        last: Some(503),
                        unpriced,
                        ..Default::default()
                    };
                };
                let payment = wallet.pay(&challenge, PayOptions::default());
                let mut out = call_until_done(client, url, body, payment, bound).await;
                out.started = Some(began);
                out.unpriced = unpriced;
                out
            }),
        ));
    }

    // The fault, on its own task; it records when each fault ended.
    let fault_ends = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let timeline = Arc::new(Mutex::new(Vec::<String>::new()));
    let (stop_faults, faults_stopped) = tokio::sync::watch::channel(false);
    let redis = Arc::new(tokio::sync::Mutex::new(redis));
    let private_pg = private_pg.map(Arc::new);
    let injector = {
        let targets = Targets {
            procs: Arc::clone(&procs),
            redis: redis.clone(),
            model: Arc::clone(&model_server),
            pg: private_pg.clone(),
        };
        let (ends, timeline) = (Arc::clone(&fault_ends), Arc::clone(&timeline));
        let (client, base, args) = (client.clone(), base.clone(), args.clone());
        tokio::spawn(async move {
            inject(
                fault,
                &args,
                t0,
                targets,
                ends,
                timeline,
                &client,
                &base,
                faults_stopped,
            )
            .await
        })
    };

    let mut calls = vec![Outcome::default(); args.calls];
    let mut reviews = vec![Outcome::default(); args.reviews];
    for (review, index, task) in clients {
        let out = task.await.unwrap_or_default();
        if review {
            reviews[index] = out;
        } else {
            calls[index] = out;
        }
    }
    let _ = stop_faults.send(true);
    let _ = injector.await;
    // Paid calls left without a 200: their receipts, until each shows the result or 60 s pass
    // (the service finishes paid work by itself).
    let drain_receipts = Instant::now() + Duration::from_secs(60);
    for o in calls.iter_mut().filter(|o| o.ok_at.is_none()) {
        let Some(url) = o.receipt.clone() else {
            continue;
        };
        while Instant::now() < drain_receipts {
            let receipt: serde_json::Value = match client.get(format!("{base}{url}")).send().await {
                Ok(r) => r.json().await.unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            };
            if receipt["status"] == "completed" {
                o.completed_by_receipt = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    // Let late texts and late re-runs show up before counting.
    let reviewed: Vec<String> = (0..args.reviews)
        .filter(|i| reviews[*i].ok_at.is_some())
        .map(|i| review_phone(i + 1))
        .collect();
    let drain_until = Instant::now() + Duration::from_secs(30);
    loop {
        let texted: std::collections::HashSet<String> = twilio
            .messages()
            .iter()
            .filter_map(|m| m.field("To").map(str::to_owned))
            .collect();
        if reviewed.iter().all(|p| texted.contains(p)) || Instant::now() >= drain_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let wall = t0.elapsed();
    // What the api says about review requests that never reached Twilio.
    let messages = twilio.messages();
    let mut untexted = Vec::new();
    for (i, o) in reviews.iter().enumerate() {
        let phone = review_phone(i + 1);
        let texted = messages
            .iter()
            .any(|m| m.field("To") == Some(phone.as_str()));
        if let (false, Some(id)) = (texted, &o.id) {
            let url = format!("{base}/api/v1/actions/review-request/requests/{id}");
            let view: serde_json::Value = match client.get(url).send().await {
                Ok(r) => r.json().await.unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            };
            let events: Vec<&str> = view["events"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["event"].as_str())
                .collect();
            untexted.push(format!(
                "{id} status {} events [{}]",
                view["status"],
                events.join(", ")
            ));
        }
    }
    // Where the texted review requests end (issue 26: none may read `failed`), once every send
    // whose outcome a kill left unknown has been looked up (bounded).
    let texted_ids: Vec<&String> = reviews
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            let phone = review_phone(i + 1);
            messages
                .iter()
                .any(|m| m.field("To") == Some(phone.as_str()) && m.sid.is_some())
        })
        .filter_map(|(_, o)| o.id.as_ref())
        .collect();
    let settle_until = Instant::now() + Duration::from_secs(90);
    let mut texted_states = std::collections::BTreeMap::<String, usize>::new();
    loop {
        texted_states.clear();
        for id in &texted_ids {
            let url = format!("{base}/api/v1/actions/review-request/requests/{id}");
            let view: serde_json::Value = match client.get(url).send().await {
                Ok(r) => r.json().await.unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            };
            let status = view["status"].as_str().unwrap_or("unreadable").to_owned();
            *texted_states.entry(status).or_default() += 1;
        }
        let open = ["sending", "unconfirmed"]
            .iter()
            .any(|s| texted_states.contains_key(*s));
        if !open || Instant::now() >= settle_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // On our own chain, every transfer is an `AuthorizationUsed` log of the clients' wallet.
    let chain_nonces = match &chain {
        Some(chain) => Some(
            chain
                .used_nonces(wallet.address())
                .await
                .iter()
                .map(|n| format!("{n:#x}"))
                .collect::<Vec<_>>(),
        ),
        None => None,
    };
    let _ = stop_supervisor.send(true);
    let _ = supervisor.await;
    let exits = std::mem::take(&mut lock(&procs).exits);
    lock(&procs).stop_all();
    redis.lock().await.kill();
    count::row(
        args,
        Recorded {
            name: name.to_owned(),
            fault,
            dir,
            calls,
            reviews,
            chain_transfers: chain_nonces
                .as_ref()
                .map_or_else(|| facilitator.transfers(), Vec::len),
            settle_requests: match chain_nonces {
                // One settlement per transfer, as the counting reads the facilitator's.
                Some(nonces) => nonces
                    .into_iter()
                    .map(
                        |n| json!({"paymentPayload": {"payload": {"authorization": {"nonce": n}}}}),
                    )
                    .collect(),
                None => facilitator.requests(),
            },
            messages,
            untexted,
            texted_states,
            arrivals: lock(&model_log.arrivals).clone(),
            answered: lock(&model_log.answered).clone(),
            fault_ends: lock(&fault_ends).clone(),
            timeline: lock(&timeline).clone(),
            exits,
            wall,
        },
    )
}
