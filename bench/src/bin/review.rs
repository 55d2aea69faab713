//! Review-request throughput with the loopback Twilio: paid request creation (verify, settle,
//! record, send job, SMS, first outcome) and signed status-webhook processing, beside the
//! action's sandbox in the same run.
//!
//! `cargo run --release -p grove-bench --bin review -- [seconds] [requests]`

use chrono::{TimeZone, Utc};
use grove_bench::load::{self, Request};
use grove_tests::{
    BASE_URL, action_body,
    paid::{Options, TWILIO_TOKEN, spawn_paid},
    twilio::{StatusCallback, sign_webhook},
    x402::PayOptions,
};
use reqwest::Method;
use serde_json::json;
use std::{sync::Arc, time::Duration};

const PATH: &str = "/api/v1/actions/review-request/call";
const CONNECTIONS: usize = 64;

#[tokio::main]
async fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    // A weekday afternoon in Chicago, inside every quiet-hours window.
    let at = Utc
        .with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("instant");
    let rig = spawn_paid(Options {
        twilio: true,
        clock_at: Some(at),
        ..Default::default()
    })
    .await;
    let base = rig.app.addr.clone();
    println!(
        "grove-bench review: loopback Twilio and facilitator, SQLite, embedded queue; {CONNECTIONS} connections; {secs} s or {n} requests"
    );

    let consent_at = (at - chrono::Duration::days(30)).to_rfc3339();
    let body_for = |i: usize| {
        let mut b = action_body();
        b["customer"]["phone"] = json!(format!("+1312{:07}", 2_000_000 + i));
        b["consent"]["captured_at"] = json!(consent_at);
        b
    };

    let sandbox_body = body_for(0).to_string().into_bytes();
    let b = base.clone();
    let sandbox = load::run(
        &format!("action sandbox, {CONNECTIONS} connections"),
        CONNECTIONS,
        Duration::from_secs(1),
        Duration::from_secs(secs),
        move |_| Request::sandbox(format!("{b}{PATH}"), sandbox_body.clone()),
    )
    .await;

    let challenge = rig.challenge(PATH, &body_for(1)).await;
    let prepared: Arc<Vec<(Vec<u8>, String)>> = Arc::new(
        (0..n)
            .map(|i| {
                (
                    body_for(i + 1).to_string().into_bytes(),
                    rig.wallet.pay(&challenge, PayOptions::default()),
                )
            })
            .collect(),
    );
    let (b, p) = (base.clone(), Arc::clone(&prepared));
    let create = load::run_bounded(
        &format!("paid review request, {CONNECTIONS} connections"),
        CONNECTIONS,
        Duration::ZERO,
        Duration::from_secs(secs),
        n,
        move |i| {
            let (body, payment) = &p[i];
            Request {
                method: Method::POST,
                url: format!("{b}{PATH}"),
                headers: vec![
                    ("content-type", "application/json".into()),
                    ("payment-signature", payment.clone()),
                ],
                body: Some(body.clone()),
                expect_status: 200,
            }
        },
    )
    .await;

    // One signed "delivered" report per message Twilio accepted.
    let url = format!("{BASE_URL}/webhooks/sms/status");
    let callbacks: Arc<Vec<(String, String)>> = Arc::new(
        rig.twilio
            .messages()
            .into_iter()
            .filter_map(|m| m.sid)
            .map(|sid| {
                let params = StatusCallback::new(&sid, "+13120000000", "delivered").params();
                let sig = sign_webhook(TWILIO_TOKEN, &url, &params);
                (
                    serde_urlencoded::to_string(&params).unwrap_or_default(),
                    sig,
                )
            })
            .collect(),
    );
    let count = callbacks.len();
    let (b, c) = (base.clone(), Arc::clone(&callbacks));
    let webhooks = load::run_bounded(
        &format!("signed status webhook, {CONNECTIONS} connections"),
        CONNECTIONS,
        Duration::ZERO,
        Duration::from_secs(secs),
        count,
        move |i| {
            let (form, sig) = &c[i];
            Request {
                method: Method::POST,
                url: format!("{b}/webhooks/sms/status"),
                headers: vec![
                    ("content-type", "application/x-www-form-urlencoded".into()),
                    ("x-twilio-signature", sig.clone()),
                ],
                body: Some(form.clone().into_bytes()),
                expect_status: 200,
            }
        },
    )
    .await;
    let reports = [sandbox, create, webhooks];
    load::print(&reports, &reports[0]);
    println!("messages sent through the loopback Twilio: {count}");
}
