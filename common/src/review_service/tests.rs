use super::*;
use crate::db::entities::review_event;
use serde_json::json;

#[test]
fn tries_wait_longer_each_time_up_to_ten_minutes() {
    let waits: Vec<i64> = (1..=9).map(|n| retry_delay(n).num_seconds()).collect();
    assert_eq!(waits, [15, 30, 60, 120, 240, 480, 600, 600, 600]);
    // Within the send window that is well over a hundred tries.
    let mut at = TimeDelta::zero();
    let mut tries = 0;
    while at < SEND_WINDOW {
        tries += 1;
        at += retry_delay(tries);
    }
    assert!(tries > 100, "{tries}");
}

fn entry(kind: EventKind, detail: serde_json::Value) -> review_event::Model {
    review_event::Model {
        id: uuid::Uuid::now_v7(),
        request_id: "rr_x".into(),
        kind,
        detail,
        created_at: crate::clock::wall(),
    }
}

#[test]
fn a_failure_is_explained_from_the_log() {
    let events = [
        entry(EventKind::Scheduled, json!({})),
        entry(
            EventKind::SendPostponed,
            json!({"reason": "provider_unavailable"}),
        ),
        entry(
            EventKind::Failed,
            json!({"reason": "provider_unavailable", "code": 20503}),
        ),
    ];
    let failure = failure(&events).expect("failed");
    assert_eq!(failure["reason"], "provider_unavailable");
    assert_eq!(failure["code"], 20503);
    assert!(
        failure["message"]
            .as_str()
            .is_some_and(|m| m.contains("24 h") && m.contains("nothing was sent")),
        "{failure}"
    );
    // A carrier's report of an undelivered text names no reason of ours.
    let undelivered = [entry(
        EventKind::Failed,
        json!({"provider_status": "undelivered", "error_code": 30006}),
    )];
    let failure = super::failure(&undelivered).expect("failed");
    assert_eq!(
        (failure["reason"].as_str(), failure["code"].as_i64()),
        (Some("undelivered"), Some(30006))
    );
    assert!(super::failure(&events[..2]).is_none());
}
