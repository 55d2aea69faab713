//! A fake Twilio on 127.0.0.1:0 speaking the real `Messages.json` API: its create checks Basic
//! auth and the form fields the way Twilio does, answers a script, records every request, and
//! counts sends (tests assert exactly how often a customer would have been texted); its list
//! (`list`) shows the messages it accepted, as Twilio's does. It can go down (connections
//! refused) and come back on the same address.
//!
//! `webhook` builds the form posts Twilio sends us (status callbacks, inbound messages) and
//! signs them.
//!
//! The account fetch (`GET …/Accounts/{sid}.json`, the worker's health probe) is answered and
//! counted (`probes`); `go_down` makes the whole fake refuse connections until `come_back`.

mod account;
mod list;
mod webhook;

pub use list::Carrier;
pub use webhook::{InboundSms, StatusCallback, message_sid, sign_webhook};

use axum::{
    Form, Json, Router,
    extract::{Path, State},
    http::{HeaderMap, StatusCode, header::AUTHORIZATION},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use grove_common::{
    clock::{Clock, ManualClock},
    config::{Secret, TwilioConfig},
};
use serde_json::json;
use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

pub const ACCOUNT_SID: &str = "AC00000000000000000000000000000a11";
/// Doubles as a marker: it must never show up in a log line.
pub const AUTH_TOKEN: &str = "f00dcafe0badc0de5eedfeed1ee7b0a7";
/// Twilio's magic test sender.
pub const FROM: &str = "+15005550006";
pub const MESSAGING_SERVICE_SID: &str = "MG00000000000000000000000000000b22";

/// How a create request is answered once auth and fields pass.
#[derive(Clone, Debug)]
pub enum TwilioReply {
    /// 201 with a message resource: `queued` from a number, `accepted` (and 0 segments) from a
    /// Messaging Service, as Twilio does.
    Queued,
    /// 400, code 21610: the recipient texted STOP.
    OptedOut,
    /// 400, code 21211, quoting the number like Twilio does.
    InvalidNumber,
    /// 429, code 20429, without `Retry-After` (Twilio's usual answer).
    RateLimited,
    /// 429, code 20429, with `Retry-After` in whole seconds.
    RateLimitedFor(Duration),
    /// 500, code 20500: Twilio may or may not have created the message (this fake did not).
    ServerError,
    /// 503, code 20503 "Service unavailable": nothing was created; try again with back-off.
    Unavailable,
    /// Waits, then answers `Queued`: longer than the client's timeout, it is a timeout.
    Slow(Duration),
}

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct Received {
    pub account_sid: String,
    pub authorization: Option<String>,
    /// The form fields in the order they were sent.
    pub fields: Vec<(String, String)>,
    pub status: u16,
    /// The message sid answered, when the fake accepted the message.
    pub sid: Option<String>,
}

impl Received {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Inner {
    account_sid: String,
    auth_token: String,
    script: Mutex<VecDeque<TwilioReply>>,
    fallback: Mutex<TwilioReply>,
    received: Mutex<Vec<Received>>,
    sends: AtomicUsize,
    probes: AtomicUsize,
    /// The messages accepted, as the list shows them.
    kept: Mutex<Vec<list::Kept>>,
    carrier: Mutex<Carrier>,
    /// Stamps the messages' dates; the wall clock when unset.
    clock: Mutex<Option<ManualClock>>,
    lists: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking test thread poisons the lock; the data is still what we want.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct FakeTwilio {
    url: String,
    inner: Arc<Inner>,
    server: crate::Switchable,
}

impl FakeTwilio {
    /// Accepts [`ACCOUNT_SID`] with [`AUTH_TOKEN`] and queues every message until scripted.
    pub async fn start() -> Self {
        let inner = Arc::new(Inner {
            account_sid: ACCOUNT_SID.into(),
            auth_token: AUTH_TOKEN.into(),
            script: Mutex::default(),
            fallback: Mutex::new(TwilioReply::Queued),
            received: Mutex::default(),
            sends: AtomicUsize::new(0),
            probes: AtomicUsize::new(0),
            kept: Mutex::default(),
            carrier: Mutex::default(),
            clock: Mutex::default(),
            lists: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route(
                "/2010-04-01/Accounts/{sid}/Messages.json",
                post(create).get(list::list),
            )
            .route("/2010-04-01/Accounts/{file}", get(account))
            .route(
                "/2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json",
                get(account::incoming_numbers),
            )
            .route("/v1/Services/{sid}", get(account::messaging_service))
            .with_state(inner.clone());
        let server = crate::Switchable::serve(app).await;
        Self {
            url: server.url(),
            inner,
            server,
        }
    }

    /// Twilio's address refuses connections until `come_back`.
    pub async fn go_down(&self) {
        self.server.down().await;
    }

    pub async fn come_back(&self) {
        self.server.up().await;
    }

    /// Account fetches (the worker's health probes) received.
    pub fn probes(&self) -> usize {
        self.inner.probes.load(Ordering::SeqCst)
    }

    /// Dates the messages by `clock` (a test's service clock) instead of the wall clock.
    pub fn stamp_with(&self, clock: ManualClock) {
        *lock(&self.inner.clock) = Some(clock);
    }

    /// How far accepted messages have got when listed (default: sent).
    pub fn carrier(&self, carrier: Carrier) {
        *lock(&self.inner.carrier) = carrier;
    }

    /// List requests received.
    pub fn lists(&self) -> usize {
        self.inner.lists.load(Ordering::SeqCst)
    }

    /// `TWILIO_BASE_URL`: the client appends `/2010-04-01/…`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A configuration that sends from [`FROM`] to this fake.
    pub fn config(&self) -> TwilioConfig {
        TwilioConfig {
            account_sid: ACCOUNT_SID.into(),
            auth_token: Secret::new(AUTH_TOKEN),
            from: Some(FROM.into()),
            messaging_service_sid: None,
            base_url: self.url.clone(),
        }
    }

    /// The next requests get these replies in order; then the fallback (`Queued`) again.
    pub fn script(&self, replies: impl IntoIterator<Item = TwilioReply>) {
        lock(&self.inner.script).extend(replies);
    }

    /// Every request from now on gets `reply`.
    pub fn always(&self, reply: TwilioReply) {
        lock(&self.inner.script).clear();
        *lock(&self.inner.fallback) = reply;
    }

    /// Create requests received, refused and failed ones included.
    pub fn sends(&self) -> usize {
        self.inner.sends.load(Ordering::SeqCst)
    }

    /// Every create request, in order.
    pub fn messages(&self) -> Vec<Received> {
        lock(&self.inner.received).clone()
    }

    /// The `Authorization` value a client with these credentials sends.
    pub fn basic_auth(account_sid: &str, auth_token: &str) -> String {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{account_sid}:{auth_token}"))
        )
    }
}

/// `GET /2010-04-01/Accounts/{sid}.json`: the account resource, behind the same Basic auth.
async fn account(
    State(inner): State<Arc<Inner>>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Response {
    inner.probes.fetch_add(1, Ordering::SeqCst);
    let authorization = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    let expected = FakeTwilio::basic_auth(&inner.account_sid, &inner.auth_token);
    let sid = file.strip_suffix(".json").unwrap_or_default();
    if sid != inner.account_sid || authorization != Some(expected.as_str()) {
        return error(StatusCode::UNAUTHORIZED, 20003, "Authenticate");
    }
    let body =
        json!({"sid": sid, "status": "active", "type": "Full", "friendly_name": "Grove test"});
    (StatusCode::OK, Json(body)).into_response()
}

/// Twilio's error body.
fn error(status: StatusCode, code: u32, message: &str) -> Response {
    let body = json!({
        "code": code,
        "message": message,
        "more_info": format!("https://www.twilio.com/docs/errors/{code}"),
        "status": status.as_u16(),
    });
    (status, Json(body)).into_response()
}

/// E.164: `+`, a non-zero digit, 7 to 14 more digits.
fn is_e164(number: &str) -> bool {
    number.strip_prefix('+').is_some_and(|d| {
        (8..=15).contains(&d.len()) && d.chars().all(|c| c.is_ascii_digit()) && !d.starts_with('0')
    })
}

async fn create(
    State(inner): State<Arc<Inner>>,
    Path(account_sid): Path<String>,
    headers: HeaderMap,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    inner.sends.fetch_add(1, Ordering::SeqCst);
    let authorization = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut received = Received {
        account_sid: account_sid.clone(),
        authorization: authorization.clone(),
        fields,
        status: 0,
        sid: None,
    };
    let (response, delay) = answer(
        &inner,
        &account_sid,
        authorization.as_deref(),
        &mut received,
    );
    received.status = response.status().as_u16();
    // Recorded before any delay: a client that times out has still made the request.
    lock(&inner.received).push(received);
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    response
}

fn answer(
    inner: &Inner,
    account_sid: &str,
    authorization: Option<&str>,
    received: &mut Received,
) -> (Response, Option<Duration>) {
    let expected = FakeTwilio::basic_auth(&inner.account_sid, &inner.auth_token);
    if account_sid != inner.account_sid || authorization != Some(expected.as_str()) {
        return (error(StatusCode::UNAUTHORIZED, 20003, "Authenticate"), None);
    }
    let to = received.field("To").unwrap_or_default().to_owned();
    let from = received.field("From").map(str::to_owned);
    let service = received.field("MessagingServiceSid").map(str::to_owned);
    let body = received.field("Body").unwrap_or_default().to_owned();
    let bad = |code, message: &str| (error(StatusCode::BAD_REQUEST, code, message), None);
    if to.is_empty() {
        return bad(21604, "A 'To' phone number is required.");
    }
    if !is_e164(&to) {
        return bad(
            21211,
            &format!("The 'To' number {to} is not a valid phone number."),
        );
    }
    if body.is_empty() {
        return bad(21602, "Message body is required.");
    }
    // Twilio itself takes both and uses the service; the fake is stricter so that a client
    // which sends both is caught.
    if from.is_some() == service.is_some() {
        return bad(
            21603,
            "Send exactly one of 'From' and 'MessagingServiceSid'.",
        );
    }
    let reply = lock(&inner.script)
        .pop_front()
        .unwrap_or_else(|| lock(&inner.fallback).clone());
    let queued = |received: &mut Received| {
        let resource = webhook::message_resource(
            &inner.account_sid,
            &to,
            from.as_deref(),
            service.as_deref(),
            &body,
        );
        received.sid = resource["sid"].as_str().map(str::to_owned);
        let now = lock(&inner.clock)
            .as_ref()
            .map_or_else(chrono::Utc::now, Clock::now);
        // Kept before any delay: a client that times out has still had its message created.
        list::keep(inner, resource.clone(), now);
        (StatusCode::CREATED, Json(resource)).into_response()
    };
    match reply {
        TwilioReply::Queued => (queued(received), None),
        TwilioReply::Slow(delay) => (queued(received), Some(delay)),
        TwilioReply::OptedOut => bad(21610, "Attempt to send to unsubscribed recipient"),
        TwilioReply::InvalidNumber => bad(
            21211,
            &format!("The 'To' number {to} is not a valid phone number."),
        ),
        TwilioReply::RateLimited => (
            error(StatusCode::TOO_MANY_REQUESTS, 20429, "Too Many Requests"),
            None,
        ),
        TwilioReply::RateLimitedFor(wait) => {
            let mut response = error(StatusCode::TOO_MANY_REQUESTS, 20429, "Too Many Requests");
            if let Ok(value) = wait.as_secs().to_string().parse() {
                response.headers_mut().insert("retry-after", value);
            }
            (response, None)
        }
        TwilioReply::ServerError => (
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                20500,
                "An internal server error has occurred",
            ),
            None,
        ),
        TwilioReply::Unavailable => (
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                20503,
                "Service unavailable",
            ),
            None,
        ),
    }
}
