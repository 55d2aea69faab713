//! A worker killed mid-send, with an SMS provider that never calls back (issue 26, item 4 of
//! its findings): no request whose text went out may read `failed`. Separate `worker`
//! processes over the shared Redis: the first takes every send and is SIGKILLed while all of
//! them are inside Twilio's (slow) create; a second takes over. Each send's outcome is unknown
//! (Twilio has the text, nobody heard its answer); the service looks each one up in Twilio's
//! list and finds it delivered, so each request goes on to its follow-up. No status callback is
//! ever posted. Counted: texts per request (one), final states, paid answers.

use chrono::{Duration as Delta, Timelike, Utc};
use grove_tests::{
    action_body,
    paid::{Options, REDIS_URL, namespace, spawn_paid},
    twilio::{Carrier, TwilioReply},
    wait_until,
    x402::PayOptions,
};
use serde_json::{Value, json};
use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

const PATH: &str = "/api/v1/actions/review-request/call";
const REQUESTS: usize = 6;

/// An IANA zone where it is early afternoon right now (the worker binary reads the real clock).
fn zone_at_midday() -> String {
    let hour = i64::from(Utc::now().hour());
    let mut offset = 13 - hour;
    if offset > 14 {
        offset -= 24;
    }
    if offset < -12 {
        offset += 24;
    }
    match offset {
        0 => "Etc/GMT".into(),
        o if o > 0 => format!("Etc/GMT-{o}"),
        o => format!("Etc/GMT+{}", -o),
    }
}

#[tokio::test]
async fn no_request_whose_text_went_out_reads_failed_after_a_worker_kill() {
    let rig = spawn_paid(Options {
        twilio: true,
        deadline_s: 90,
        extra_env: vec![
            ("REDIS_URL".into(), REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), namespace()),
        ],
        ..Default::default()
    })
    .await;
    // Twilio takes each text and is slow to say so; by the time anyone looks, it is delivered.
    rig.twilio.carrier(Carrier::Delivered);
    rig.twilio.always(TwilioReply::Slow(Duration::from_secs(8)));
    let mut first = rig.start_worker_process();

    let mut calls = Vec::new();
    for n in 0..REQUESTS {
        let mut body = action_body();
        body["customer"]["phone"] = json!(format!("+1212555{:04}", 300 + n));
        body["customer"]["timezone"] = json!(zone_at_midday());
        body["consent"]["captured_at"] = json!((Utc::now() - Delta::days(30)).to_rfc3339());
        let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
        calls.push(rig.spawn_paid_call(PATH, &body, &payment));
    }
    wait_until("every send inside Twilio's create", async || {
        rig.twilio.sends() == REQUESTS
    })
    .await;
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    let killed = Instant::now();
    // A second create would now be answered at once: the count below would catch it.
    rig.twilio.always(TwilioReply::Queued);
    let mut second = rig.start_worker_process();

    let mut ids = Vec::new();
    for call in calls {
        let response = tokio::time::timeout(Duration::from_secs(80), call)
            .await
            .expect("answered")
            .expect("task")
            .expect("response");
        assert_eq!(response.status(), 200);
        let tracked: Value = response.json().await.expect("json");
        assert_eq!(tracked["status"], "follow_up_scheduled", "{tracked}");
        ids.push(tracked["id"].as_str().expect("id").to_owned());
    }
    let resolved = killed.elapsed();
    let _ = second.kill();
    let _ = second.wait();

    let mut texts = BTreeMap::<String, usize>::new();
    for m in rig.twilio.messages().iter().filter(|m| m.sid.is_some()) {
        *texts
            .entry(m.field("To").unwrap_or_default().to_owned())
            .or_default() += 1;
    }
    assert_eq!(texts.len(), REQUESTS, "{texts:?}");
    assert!(
        texts.values().all(|n| *n == 1),
        "one text per request: {texts:?}"
    );
    assert_eq!(rig.twilio.sends(), REQUESTS, "no second create");
    assert!(rig.twilio.lists() >= REQUESTS, "each send was looked up");
    for id in &ids {
        let view = rig
            .app
            .get_json(&format!("/api/v1/actions/review-request/requests/{id}"))
            .await;
        assert_eq!(view["status"], "follow_up_scheduled", "{view}");
        assert_eq!(view["messages"][0]["status"], "delivered", "{view}");
        assert!(view["follow_up"]["due_at"].is_string(), "{view}");
        let events = view["events"].to_string();
        for kind in ["unconfirmed", "send_outcome_recovered", "delivered"] {
            assert!(events.contains(kind), "{kind}: {view}");
        }
        assert!(!events.contains("\"failed\""), "{view}");
    }
    eprintln!(
        "worker SIGKILL with {REQUESTS} sends inside Twilio's create, no callback: every request \
         resolved by the lookup to delivered with its follow-up scheduled, all answered {:.2}s \
         after the kill",
        resolved.as_secs_f64()
    );
}
