//! The read-only resources the doctor asks the fake Twilio for, as Twilio answers them (the
//! account itself is `super::account`, which the health probe reads too): the account's numbers
//! filtered by `PhoneNumber`, and a Messaging Service (`GET /v1/Services/{sid}`, on messaging.twilio.com
//! in production). Each checks Basic auth first, as Twilio does (401, code 20003).

use super::{FROM, FakeTwilio, Inner, MESSAGING_SERVICE_SID, error};
use axum::{
    Json,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode, header::AUTHORIZATION},
    response::{IntoResponse, Response},
};
use serde_json::json;
use std::{collections::HashMap, sync::Arc};

fn authenticated(inner: &Inner, account_sid: &str, headers: &HeaderMap) -> bool {
    let expected = FakeTwilio::basic_auth(&inner.account_sid, &inner.auth_token);
    account_sid == inner.account_sid
        && headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(expected.as_str())
}

pub(super) async fn incoming_numbers(
    State(inner): State<Arc<Inner>>,
    Path(sid): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if !authenticated(&inner, &sid, &headers) {
        return error(StatusCode::UNAUTHORIZED, 20003, "Authenticate");
    }
    let numbers = match query.get("PhoneNumber") {
        Some(n) if n == FROM => vec![json!({
            "sid": "PN00000000000000000000000000000c33",
            "phone_number": FROM,
            "capabilities": {"sms": true, "mms": false, "voice": true, "fax": false},
        })],
        _ => vec![],
    };
    Json(json!({
        "incoming_phone_numbers": numbers,
        "page": 0,
        "page_size": 50,
        "next_page_uri": null,
    }))
    .into_response()
}

pub(super) async fn messaging_service(
    State(inner): State<Arc<Inner>>,
    Path(service): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authenticated(&inner, &inner.account_sid, &headers) {
        return error(StatusCode::UNAUTHORIZED, 20003, "Authenticate");
    }
    if service != MESSAGING_SERVICE_SID {
        return error(
            StatusCode::NOT_FOUND,
            20404,
            "The requested resource was not found",
        );
    }
    Json(json!({
        "sid": service,
        "account_sid": inner.account_sid,
        "friendly_name": "Grove reviews",
        "us_app_to_person_registered": true,
    }))
    .into_response()
}
