//! The fake's memory of what it sent, and Twilio's Messages list resource over it
//! (`GET /2010-04-01/Accounts/{sid}/Messages.json`, sms.md §8): filtered by `To` and by
//! `DateSent>` (on or after a day, GMT: a message not sent yet has no sent date and is left
//! out, as a date filter would leave it), newest first, paged by `PageSize` and `Page` with
//! Twilio's paging fields (`next_page_uri` and the rest).

use super::{FakeTwilio, Inner, error, lock};
use axum::{
    Json,
    extract::{Path, RawQuery, State},
    http::{HeaderMap, StatusCode, header::AUTHORIZATION},
    response::{IntoResponse, Response},
};
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};
use std::sync::{Arc, atomic::Ordering};

/// How far an accepted message has got by the time anyone lists it: as if the carrier had
/// answered at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Carrier {
    /// Still queued at Twilio: no sent date yet.
    Queued,
    /// Sent to the carrier, no delivery report yet.
    #[default]
    Sent,
    /// Delivered to the handset.
    Delivered,
}

/// One message the fake accepted, as its list shows it.
#[derive(Clone, Debug)]
pub(super) struct Kept {
    pub resource: Value,
    pub sent_at: Option<DateTime<Utc>>,
}

/// Keeps an accepted message (its create answer's resource, stamped at `now`) for the list.
pub(super) fn keep(inner: &Inner, mut resource: Value, now: DateTime<Utc>) {
    let carrier = *lock(&inner.carrier);
    let stamp = now.to_rfc2822();
    resource["date_created"] = json!(stamp);
    resource["date_updated"] = json!(stamp);
    let (status, sent_at) = match carrier {
        Carrier::Queued => ("queued", None),
        Carrier::Sent => ("sent", Some(now)),
        Carrier::Delivered => ("delivered", Some(now)),
    };
    resource["status"] = json!(status);
    resource["date_sent"] = sent_at.map_or(Value::Null, |t| json!(t.to_rfc2822()));
    lock(&inner.kept).push(Kept { resource, sent_at });
}

pub(super) async fn list(
    State(inner): State<Arc<Inner>>,
    Path(account_sid): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    inner.lists.fetch_add(1, Ordering::SeqCst);
    let expected = FakeTwilio::basic_auth(&inner.account_sid, &inner.auth_token);
    let authorization = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    if account_sid != inner.account_sid || authorization != Some(expected.as_str()) {
        return error(StatusCode::UNAUTHORIZED, 20003, "Authenticate");
    }
    let params: Vec<(String, String)> =
        serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default();
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let sent_on_or_after = match get("DateSent>") {
        None => None,
        // Twilio takes `YYYY-MM-DD`; a longer value is read by its date.
        Some(v) => match v
            .get(..10)
            .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
        {
            Some(day) => Some(day),
            None => return error(StatusCode::BAD_REQUEST, 20001, "Invalid date value."),
        },
    };
    let page_size = get("PageSize")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(50)
        .clamp(1, 1000);
    let page = get("Page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let matching: Vec<Value> = lock(&inner.kept)
        .iter()
        .rev()
        .filter(|m| get("To").is_none_or(|to| m.resource["to"] == to))
        .filter(|m| {
            sent_on_or_after.is_none_or(|day| m.sent_at.is_some_and(|t| t.date_naive() >= day))
        })
        .map(|m| m.resource.clone())
        .collect();
    let start = page * page_size;
    let messages: Vec<Value> = matching
        .iter()
        .skip(start)
        .take(page_size)
        .cloned()
        .collect();
    let path = format!("/2010-04-01/Accounts/{account_sid}/Messages.json");
    let filters: Vec<(String, String)> = params
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "Page" | "PageSize" | "PageToken"))
        .cloned()
        .collect();
    let uri = |n: usize| {
        let mut q = filters.clone();
        q.push(("PageSize".into(), page_size.to_string()));
        q.push(("Page".into(), n.to_string()));
        if n > 0 {
            q.push(("PageToken".into(), format!("PA{n:032x}")));
        }
        format!(
            "{path}?{}",
            serde_urlencoded::to_string(&q).unwrap_or_default()
        )
    };
    let more = start + messages.len() < matching.len();
    let body = json!({
        "end": (start + messages.len()).saturating_sub(1),
        "first_page_uri": uri(0),
        "messages": messages,
        "next_page_uri": if more { json!(uri(page + 1)) } else { Value::Null },
        "page": page,
        "page_size": page_size,
        "previous_page_uri": if page > 0 { json!(uri(page - 1)) } else { Value::Null },
        "start": start,
        "uri": uri(page),
    });
    (StatusCode::OK, Json(body)).into_response()
}
