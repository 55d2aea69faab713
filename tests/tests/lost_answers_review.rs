//! A paid review request's write to PostgreSQL whose answer does not come back (the third
//! outcome, as `lost_answers.rs` stages it for the paid call): each case counts transfers, texts
//! and what the paid call answers.
//!
//! - The send's attempt row (the at-most-once key of the text, written before Twilio is called).
//!   Its answer lost, the run took it for a failed write; the run after it found the row and,
//!   taking it for another run's send in flight, left it: nothing was sent, and the request
//!   failed after the provider's lookup had found nothing for 15 minutes. The row is now written
//!   again with the same id, and a row found with the run's own id is its own.
//! - The commit that moves the request to `sending`, and the commit of the provider's answer (the
//!   text taken): their job is decided again from what is stored, through the blip, and the
//!   answer is acted on: never a second text, and the paid call sees `sent`.
//!
//! PostgreSQL only (`GROVE_TEST_DB=postgres`).

use chrono::{DateTime, Duration as Days, TimeZone, Utc};
use grove_common::clock::Clock;
use grove_tests::{
    action_body,
    paid::{Options, PaidApp, spawn_paid},
    pg_proxy::{Cut, PgProxy},
    x402::PayOptions,
};
use serde_json::{Value, json};

const PATH: &str = "/api/v1/actions/review-request/call";

/// Text only the attempt's insert has (`grove_common::db::reviews::begin_attempt`).
const ATTEMPT: &str = r#"INSERT INTO "review_messages""#;
/// Text only a move of the request's state has (`review_service::store::move_to`); the first
/// after a paid request is created is its move to `sending`.
const MOVE: &str = r#"UPDATE "review_requests" SET "status" = $1"#;
/// Text only a message's new status from the provider has (`db::reviews::message_status`).
const PROVIDER_STATUS: &str = r#""status_history" = $2, "error_code" = $3"#;

/// 2026-11-16 (a Monday) at 15:00 in New York: inside every window.
fn monday_afternoon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("valid instant")
}

async fn rig() -> Option<(PaidApp, PgProxy)> {
    if !grove_tests::db::postgres_only() {
        return None;
    }
    let rig = spawn_paid(Options {
        twilio: true,
        clock_at: Some(monday_afternoon()),
        deadline_s: 8,
        db_proxy: true,
        ..Default::default()
    })
    .await;
    let proxy = rig.db_proxy.clone().expect("the database behind a proxy");
    Some((rig, proxy))
}

/// Texts Twilio accepted.
fn texts(rig: &PaidApp) -> usize {
    let sent = rig.twilio.messages();
    sent.iter().filter(|m| m.sid.is_some()).count()
}

#[tokio::test]
async fn a_review_request_whose_write_is_cut_before_or_after_its_commit_texts_once() {
    let Some((rig, proxy)) = rig().await else {
        return;
    };
    let cases = [
        (ATTEMPT, Cut::AnswerLost),
        (ATTEMPT, Cut::Unsent),
        (MOVE, Cut::CommitLost),
        (PROVIDER_STATUS, Cut::CommitLost),
    ];
    for (n, (needle, cut)) in cases.into_iter().enumerate() {
        let case = format!("{needle} {cut:?}");
        let mut body = action_body();
        body["customer"]["phone"] = json!(format!("+1312555{:04}", 160 + n));
        body["consent"]["captured_at"] = json!((rig.clock.now() - Days::days(30)).to_rfc3339());
        let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
        proxy.cut_next(needle, cut);
        let r = rig.send_paid(PATH, &body, &payment, None).await;
        let status = r.status();
        let tracked: Value = r.json().await.expect("json");
        assert_eq!(proxy.cuts(), n + 1, "{case}: the statement was cut");
        assert_eq!(status, 200, "{case}: {tracked}");
        assert_eq!(tracked["status"], "sent", "{case}: {tracked}");
        assert_eq!(rig.facilitator.transfers(), n + 1, "{case}: one transfer");
        assert_eq!(texts(&rig), n + 1, "{case}: one text");
        assert_eq!(rig.twilio.sends(), n + 1, "{case}: one send to Twilio");
    }
}
