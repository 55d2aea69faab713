//! A review request as the API leaves it after a sale: a paid call, the customer's consent and
//! the request, `scheduled` to go at `now`. Worker-level tests run the send job on it directly.

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use grove_common::db::entities::{consent, review_request};
use grove_common::review::ReviewStatus;
use sea_orm::{ActiveValue::Set, DatabaseConnection, EntityTrait, prelude::Uuid};
use serde_json::json;

/// The recipient of [`insert_request`], a New York number.
pub const PHONE: &str = "+12125550177";

/// Monday 2026-11-16, 15:00 in New York: inside the quiet-hours window.
pub fn afternoon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("valid instant")
}

/// Inserts a paid call and its review request to [`PHONE`] (consent a month old), with or
/// without the follow-up; returns the call's id and the request's.
pub async fn insert_request(
    db: &DatabaseConnection,
    now: DateTime<Utc>,
    follow_up: bool,
) -> (Uuid, String) {
    let mut row = crate::db::call_row(grove_common::ledger::CallStatus::Pending);
    row.kind = Set(grove_common::ledger::CallKind::ReviewRequest);
    row.agent = Set(None);
    row.mode = Set(None);
    row.request = Set(json!({}));
    let call_id = crate::db::insert_row(db, row).await;
    let consent_id = Uuid::now_v7();
    consent::Entity::insert(consent::ActiveModel {
        id: Set(consent_id),
        phone: Set(PHONE.into()),
        business_name: Set("Harbor Physio".into()),
        method: Set("web_form_checkbox".into()),
        captured_at: Set(now - TimeDelta::days(30)),
        source: Set("intake form checkbox".into()),
        disclosure_text: Set(None),
        created_at: Set(now),
    })
    .exec(db)
    .await
    .expect("consent row");
    let review_id = format!("rr_test{}", call_id.simple());
    review_request::Entity::insert(review_request::ActiveModel {
        id: Set(review_id.clone()),
        call_id: Set(call_id),
        payer: Set("0x00000000000000000000000000000000000000aa".into()),
        phone: Set(PHONE.into()),
        first_name: Set("Dana".into()),
        business_name: Set("Harbor Physio".into()),
        review_url: Set("https://example.com/review".into()),
        zone: Set("America/New_York".into()),
        recipient_state: Set(Some("NY".into())),
        consent_id: Set(consent_id),
        template: Set(None),
        follow_up_enabled: Set(follow_up),
        follow_up_after_hours: Set(72),
        status: Set(ReviewStatus::Scheduled),
        send_at: Set(now),
        follow_up_due_at: Set(None),
        link_token: Set(format!("tok{}", call_id.simple())),
        clicked_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    })
    .exec(db)
    .await
    .expect("review row");
    (call_id, review_id)
}

/// A business time zone in which a text to `phone` may go out now and for the next half hour,
/// by the service's own quiet-hours rule (the federal window and the states the number could
/// belong to, holidays included), for tests that run on the real clock. The fixed-offset zones
/// cover every hour of the day, so one of them is always in daytime.
pub fn zone_open_now(phone: &str) -> String {
    use grove_common::review::{Opening, UsPhone, next_opening_all, parse_zone, recipient_states};
    let phone = UsPhone::parse(phone).expect("a US phone");
    let states = recipient_states(None, &phone);
    let now = Utc::now();
    (-12..=14)
        .map(|east: i32| match east {
            // IANA's Etc zones name the offset with the opposite sign (Etc/GMT-9 is UTC+9).
            0 => "Etc/UTC".to_owned(),
            e if e > 0 => format!("Etc/GMT-{e}"),
            e => format!("Etc/GMT+{}", -e),
        })
        .find(|name| {
            let tz = parse_zone(name).expect("an IANA zone");
            matches!(next_opening_all(now, tz, &states),
                Opening::Now { closes_at } if closes_at - now >= TimeDelta::minutes(30))
        })
        .expect("some offset is inside its sending window now")
}
