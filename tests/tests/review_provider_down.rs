//! Paid review work finished when the SMS provider returns (issue 30, item 3). A send that
//! certainly did not happen (Twilio refusing connections, or answering 503 20503 "Service
//! unavailable") is tried again by the service with back-off while the request is inside its
//! send window (24 h from the first try; quiet hours still apply): once Twilio is back the text
//! goes, once, and the receipt shows it. If the window closes first the request fails, the
//! receipt says why, and the phone's cooldown mark is given back (nothing was texted). Never a
//! second charge.

use chrono::{DateTime, Duration as Delta, TimeZone, Utc};
use grove_common::{clock::Clock, db::entities::review_request, review_service};
use grove_tests::{
    action_body,
    paid::{Options, PaidApp, spawn_paid},
    twilio::TwilioReply,
    wait_until,
    x402::PayOptions,
};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

const PATH: &str = "/api/v1/actions/review-request/call";

/// 2026-11-16 (a Monday) at 15:00 in New York: inside every window.
fn monday_afternoon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("valid instant")
}

async fn rig() -> PaidApp {
    spawn_paid(Options {
        twilio: true,
        clock_at: Some(monday_afternoon()),
        // The paid call waits this long for a first outcome.
        deadline_s: 5,
        ..Default::default()
    })
    .await
}

fn body_for(rig: &PaidApp, phone: &str) -> Value {
    let mut b = action_body();
    b["customer"]["phone"] = json!(phone);
    b["consent"]["captured_at"] = json!((rig.clock.now() - Delta::days(30)).to_rfc3339());
    b
}

/// The one review request in the rig's database.
async fn the_request(rig: &PaidApp) -> review_request::Model {
    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("database");
    let mut all = review_request::Entity::find().all(&db).await.expect("rows");
    assert_eq!(all.len(), 1, "one request");
    all.remove(0)
}

async fn view(rig: &PaidApp, id: &str) -> Value {
    rig.app
        .get_json(&format!("/api/v1/actions/review-request/requests/{id}"))
        .await
}

/// Texts Twilio accepted.
fn texts(rig: &PaidApp) -> usize {
    rig.twilio
        .messages()
        .iter()
        .filter(|m| m.sid.is_some())
        .count()
}

/// Pays; the paid call answers 504 `still_running` (no outcome yet): its receipt's path.
async fn pay_while_twilio_cannot_take_it(rig: &PaidApp, body: &Value, payment: &str) -> String {
    let r = rig.send_paid(PATH, body, payment, None).await;
    assert_eq!(r.status(), 504);
    let err: Value = r.json().await.expect("json");
    assert_eq!(err["error"]["code"], "still_running", "{err}");
    let receipt = err["error"]["receipt"]["url"]
        .as_str()
        .expect("the receipt")
        .to_owned();
    let pending = rig.app.get_json(&receipt).await;
    assert_eq!(pending["status"], "pending", "{pending}");
    assert!(pending["result"].is_null(), "{pending}");
    receipt
}

#[tokio::test]
async fn a_send_refused_while_twilio_is_down_goes_once_twilio_is_back() {
    let rig = rig().await;
    rig.twilio.go_down().await;
    let body = body_for(&rig, "+13125550171");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let receipt = pay_while_twilio_cannot_take_it(&rig, &body, &payment).await;
    assert_eq!(rig.facilitator.settle_calls(), 1);
    assert_eq!(rig.twilio.sends(), 0, "nothing reached Twilio");

    let id = the_request(&rig).await.id;
    let waiting = view(&rig, &id).await;
    assert_eq!(waiting["status"], "scheduled", "{waiting}");
    assert_eq!(waiting["messages"][0]["status"], "not_sent", "{waiting}");
    assert!(
        waiting["events"].to_string().contains("send_postponed"),
        "{waiting}"
    );

    // Twilio is back; the next try falls due.
    rig.twilio.come_back().await;
    rig.clock.advance(Delta::seconds(16));
    wait_until("the text to go", async || texts(&rig) == 1).await;
    wait_until("the receipt to show the result", async || {
        rig.app.get_json(&receipt).await["status"] == "completed"
    })
    .await;
    let done = rig.app.get_json(&receipt).await;
    assert_eq!(done["result"]["status"], "sent", "{done}");
    assert!(done["result"]["failure"].is_null(), "{done}");
    let history = view(&rig, &id).await["messages"][0]["status_history"].to_string();
    assert!(
        history.find("not_sent") < history.rfind("attempting"),
        "not sent, then tried again: {history}"
    );

    // The identical retry returns the result; no second charge, no second text.
    let again = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replay"], "true");
    let tracked: Value = again.json().await.expect("json");
    assert_eq!(tracked["status"], "sent");
    assert_eq!(rig.facilitator.settle_calls(), 1, "charged once");
    assert_eq!(texts(&rig), 1, "one text");
}

#[tokio::test]
async fn a_send_twilio_keeps_refusing_fails_when_its_window_closes_and_says_why() {
    let rig = rig().await;
    rig.twilio.always(TwilioReply::Unavailable);
    let phone = "+13125550172";
    let body = body_for(&rig, phone);
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let receipt = pay_while_twilio_cannot_take_it(&rig, &body, &payment).await;
    let tries = rig.twilio.sends();
    assert_eq!(tries, 3, "the client's attempts, each refused with 20503");
    let id = the_request(&rig).await.id;

    // The next try is due 15 s later, and is refused again: the one after waits longer.
    rig.clock.advance(Delta::seconds(16));
    wait_until("the second try", async || rig.twilio.sends() == 2 * tries).await;
    wait_until("the second postponement", async || {
        view(&rig, &id).await["events"]
            .to_string()
            .matches("send_postponed")
            .count()
            == 2
    })
    .await;
    let req = the_request(&rig).await;
    assert_eq!(
        req.send_at,
        rig.clock.now() + Delta::seconds(30),
        "doubling back-off"
    );

    // The window closes before Twilio takes it: a failure the receipt explains.
    rig.clock.advance(review_service::SEND_WINDOW);
    wait_until("the request to fail", async || {
        view(&rig, &id).await["status"] == "failed"
    })
    .await;
    wait_until("the receipt to show the result", async || {
        rig.app.get_json(&receipt).await["status"] == "completed"
    })
    .await;
    let done = rig.app.get_json(&receipt).await;
    let result = &done["result"];
    assert_eq!(result["status"], "failed", "{done}");
    assert_eq!(
        result["failure"]["reason"], "provider_unavailable",
        "{done}"
    );
    assert_eq!(result["failure"]["code"], 20503, "{done}");
    assert_eq!(
        rig.twilio.sends(),
        2 * tries,
        "no try once the window closed"
    );
    assert_eq!(texts(&rig), 0);
    assert_eq!(rig.facilitator.settle_calls(), 1);
    let schema = grove_tests::compile(
        &rig.app
            .get_json("/api/v1/schemas/actions/review_request/response.json")
            .await,
    );
    assert!(schema.is_valid(result), "{result}");

    // Nothing was texted, so the phone's cooldown mark was given back: a new request inside a
    // 30-day cooldown is offered for sale.
    let mut again = body_for(&rig, phone);
    again["min_days_since_last_request"] = json!(30);
    rig.twilio.always(TwilioReply::Queued);
    let offered = rig.app.post_json(PATH, &again, &[]).await;
    assert_eq!(offered.status(), 402);
}
