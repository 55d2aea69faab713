//! The admin API (issue 28): an operator's opt-out stops the next review request to that number
//! before any payment; a payment whose outcome is unknown is listed and resolved on the
//! operator's word when no chain is configured, moving its call as reconciliation would; lookups
//! show a call, its receipt and its review request; every action is in the audit with who did it.

use chrono::{DateTime, Duration as Days, TimeZone, Utc};
use grove_common::clock::Clock;
use grove_tests::{
    action_body,
    facilitator::SettleScript,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::PayOptions,
};
use serde_json::{Value, json};

const REVIEW: &str = "/api/v1/actions/review-request/call";
const CALL: &str = "/api/v1/agents/mary/call";

/// 2026-11-16 (a Monday) at 15:00 in New York: inside every sending window.
fn monday_afternoon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("valid instant")
}

fn review_body(rig: &PaidApp, phone: &str) -> Value {
    let mut b = action_body();
    b["customer"]["phone"] = json!(phone);
    b["consent"]["captured_at"] = json!((rig.clock.now() - Days::days(30)).to_rfc3339());
    b
}

/// An admin API request as alice: its status and JSON body.
async fn admin(rig: &PaidApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    rig.app.admin(method, path, body).await
}

fn paths(body: &Value) -> Vec<&str> {
    body["error"]["details"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["path"].as_str())
        .collect()
}

#[tokio::test]
async fn an_operator_opt_out_stops_the_next_review_request_before_any_payment() {
    let rig = spawn_paid(Options {
        clock_at: Some(monday_afternoon()),
        ..Default::default()
    })
    .await;
    let phone = "+13125550190";
    // A payment signed while the number could still be bought: what a caller would hold.
    let payment = rig
        .payment_for(REVIEW, &review_body(&rig, phone), PayOptions::default())
        .await;

    // Every problem of a bad order is named, and nothing is recorded.
    let (status, bad) = admin(
        &rig,
        "POST",
        "/admin/v1/opt-outs",
        Some(json!({"phone": "305-555-0142"})),
    )
    .await;
    assert_eq!(status, 422, "{bad}");
    assert_eq!(paths(&bad), ["/phone", "/reason"], "{bad}");

    let (status, done) = admin(
        &rig,
        "POST",
        "/admin/v1/opt-outs",
        Some(json!({"phone": phone, "reason": "customer phoned the front desk"})),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["suppressed"], true);

    // The next request to the number: refused before any 402, and with the payment in hand,
    // refused before any settlement.
    let unpaid = rig
        .app
        .post_json(REVIEW, &review_body(&rig, phone), &[])
        .await;
    assert_eq!(unpaid.status(), 409);
    let body: Value = unpaid.json().await.expect("json");
    assert_eq!(body["error"]["code"], "recipient_opted_out", "{body}");
    let paid = rig
        .send_paid(REVIEW, &review_body(&rig, phone), &payment, None)
        .await;
    assert_eq!(paid.status(), 409);
    let body: Value = paid.json().await.expect("json");
    assert_eq!(body["error"]["code"], "recipient_opted_out", "{body}");
    assert_eq!(rig.facilitator.settle_calls(), 0, "nothing was settled");
    assert_eq!(rig.facilitator.transfers(), 0, "nothing was charged");

    // The operator lifts it: the number may be offered for sale again.
    let (status, _) = admin(
        &rig,
        "POST",
        "/admin/v1/opt-outs/remove",
        Some(json!({"phone": phone, "reason": "customer asked to hear from us again"})),
    )
    .await;
    assert_eq!(status, 200);
    let again = rig
        .app
        .post_json(REVIEW, &review_body(&rig, phone), &[])
        .await;
    assert_eq!(again.status(), 402);

    // Both actions are audited under alice's name, newest first, with the reasons.
    let (_, audit) = admin(&rig, "GET", "/admin/v1/audit", None).await;
    let entries = audit["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{audit}");
    assert_eq!(entries[0]["action"], "opt_out.remove");
    assert_eq!(entries[1]["action"], "opt_out.add");
    assert!(entries.iter().all(|e| e["operator"] == "alice"));
    assert_eq!(entries[1]["subject"], phone);
    assert_eq!(entries[1]["reason"], "customer phoned the front desk");
    assert_eq!(entries[1]["before"], Value::Null, "no suppression before");
    assert_eq!(entries[1]["after"]["active"], true);
    assert_eq!(entries[0]["after"]["active"], false);
    let (_, list) = admin(&rig, "GET", "/admin/v1/opt-outs", None).await;
    assert_eq!(list["opt_outs"][0]["phone"], phone);
    assert_eq!(list["opt_outs"][0]["active"], false);
}

#[tokio::test]
async fn an_opt_out_ends_the_open_requests_to_that_number() {
    let rig = spawn_paid(Options {
        clock_at: Some(monday_afternoon()),
        ..Default::default()
    })
    .await;
    let phone = "+13125550191";
    let mut body = review_body(&rig, phone);
    // Due tomorrow: still open when the customer phones in.
    body["send_at"] = json!((rig.clock.now() + Days::days(1)).to_rfc3339());
    let r = rig.pay_and_call(REVIEW, &body, None).await;
    assert_eq!(r.status(), 200);
    let tracked: Value = r.json().await.expect("json");
    let id = tracked["id"].as_str().expect("id").to_owned();

    let (status, done) = admin(
        &rig,
        "POST",
        "/admin/v1/opt-outs",
        Some(json!({"phone": phone, "reason": "customer emailed to stop texts"})),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["requests_ended"], 1);
    let (status, seen) = admin(
        &rig,
        "GET",
        &format!("/admin/v1/review-requests/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["status"], "opted_out", "{seen}");
    assert_eq!(seen["recipient"]["phone_e164"], phone);
    assert_eq!(seen["suppressed"], true);
    let ended = seen["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["detail"]["operator"] == "alice")
        .expect("the operator's opt-out in the request's log");
    assert_eq!(ended["detail"]["reason"], "customer emailed to stop texts");
}

#[tokio::test]
async fn an_unknown_payment_is_listed_and_resolved_on_the_operators_word_without_a_chain() {
    let rig = spawn_paid(Options {
        deadline_s: 2,
        // No BASE_RPC_URL: the operator's word is all there is to decide by.
        fake_chain: false,
        extra_env: vec![("X402_FACILITATOR_TIMEOUT_S".into(), "1".into())],
        ..Default::default()
    })
    .await;
    rig.facilitator.script(SettleScript::Down);
    let body = caller_body("diagnose_growth");
    let r = rig.pay_and_call(CALL, &body, Some("k1")).await;
    let receipt_url = grove_tests::receipt_of_504(r, "the outcome is unknown").await;

    let (status, listed) = admin(&rig, "GET", "/admin/v1/payments", None).await;
    assert_eq!(status, 200);
    let rows = listed["payments"].as_array().expect("payments");
    assert_eq!(rows.len(), 1, "{listed}");
    let payment = &rows[0];
    assert_eq!(payment["status"], "unknown");
    assert_eq!(payment["attention"], "reconciling");
    assert_eq!(payment["mode"], "diagnose_growth");
    assert_eq!(payment["amount_usd"], "0.18");
    let id = payment["id"].as_str().expect("id").to_owned();
    let call_id = payment["call_id"].as_str().expect("call").to_owned();
    let resolve = format!("/admin/v1/payments/{id}/resolve");

    // A bad order names every problem and changes nothing.
    let (status, bad) = admin(
        &rig,
        "POST",
        &resolve,
        Some(json!({"outcome": "settled", "transaction": "0x12"})),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(paths(&bad), ["/transaction", "/reason"], "{bad}");

    let (status, done) = admin(
        &rig,
        "POST",
        &resolve,
        Some(json!({"outcome": "unsettled", "reason": "the facilitator's dashboard shows no transfer"})),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["confirmed_by"], "operator", "no chain to ask");
    assert_eq!(done["payment"]["status"], "refused");
    assert_eq!(done["payment"]["call_status"], "unpaid");
    // As reconciliation would: the call is unpaid, its receipt says so, nothing ran.
    let receipt = rig.app.get_json(&receipt_url).await;
    assert_eq!(receipt["status"], "unpaid");
    assert_eq!(rig.llm.received(), 0);
    let (_, listed) = admin(&rig, "GET", "/admin/v1/payments", None).await;
    assert_eq!(listed["payments"], json!([]));
    // Decided: not resolvable again.
    let (status, again) = admin(
        &rig,
        "POST",
        &resolve,
        Some(json!({"outcome": "settled", "transaction": format!("0x{}", "ab".repeat(32)), "reason": "changed my mind"})),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(again["error"]["code"], "not_resolvable");

    // The scope was released: a new payment buys the call.
    rig.facilitator.script(SettleScript::Success);
    let r = rig.pay_and_call(CALL, &body, Some("k1")).await;
    assert_eq!(r.status(), 200);

    // The audit: the resolution, and the refused second try, both alice's.
    let (_, audit) = admin(&rig, "GET", "/admin/v1/audit", None).await;
    let entries = audit["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{audit}");
    let done = &entries[1];
    assert_eq!(done["operator"], "alice");
    assert_eq!(done["action"], "payment.resolve");
    assert_eq!(done["subject"], id.as_str());
    assert_eq!(done["before"]["status"], "unknown");
    assert_eq!(done["before"]["call_status"], "settling");
    assert_eq!(done["after"]["status"], "refused");
    assert_eq!(done["after"]["call_status"], "unpaid");
    assert_eq!(done["after"]["confirmed_by"], "operator");
    assert!(
        entries[0]["after"]["refused"]
            .as_str()
            .is_some_and(|r| r.contains("refused")),
        "{}",
        entries[0]
    );

    // Lookups: the call with its payment, and its receipt even as an operator sees it.
    let (status, call) = admin(&rig, "GET", &format!("/admin/v1/calls/{call_id}"), None).await;
    assert_eq!(status, 200, "{call}");
    assert_eq!(call["status"], "unpaid");
    assert_eq!(call["payment"]["id"], id.as_str());
    let receipt_id = call["receipt_id"].as_str().expect("receipt id");
    let (status, by_receipt) = admin(
        &rig,
        "GET",
        &format!("/admin/v1/receipts/{receipt_id}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(by_receipt["id"], call_id.as_str());
    assert_eq!(by_receipt["receipt"]["expired"], false);
    let (status, _) = admin(&rig, "GET", "/admin/v1/calls/not-a-uuid", None).await;
    assert_eq!(status, 404);

    // The report counts the paid call's revenue under its mode, today.
    wait_until("the paid call's completion", async || {
        admin(&rig, "GET", "/admin/v1/report?days=1", None).await.1["total"]["outcomes"]
            ["completed"]
            == 1
    })
    .await;
    let (_, report) = admin(&rig, "GET", "/admin/v1/report?days=1", None).await;
    assert_eq!(report["total"]["calls"], 2, "{report}");
    assert_eq!(report["modes"]["diagnose_growth"]["revenue_usd"], "0.18");
    assert_eq!(report["total"]["outcomes"]["unpaid"], 1);
    assert_eq!(report["days"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["latency_s"]["count"], 1);
    let (status, _) = admin(&rig, "GET", "/admin/v1/report?days=0", None).await;
    assert_eq!(status, 422);
}
