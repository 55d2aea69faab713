//! The facilitator client against a fake facilitator speaking the real `/settle` wire format
//! (CONTRACT 3, "Facilitator"): success only on `success == true`, bodies read on 200/400/412,
//! an explicit timeout, an auth header that is sent but never printed, and HTTP/2 by prior
//! knowledge when asked.

use grove_common::{
    config::{Http2, Secret},
    x402::{PaymentRequirementsResponseV1, PaymentRequirementsV2},
};
use grove_http::{
    Facilitator, FacilitatorError, FacilitatorTransport, HttpFacilitator, LocalFacilitator,
    SettleRequest, requirements_for,
};
use grove_tests::{
    facilitator::{FakeFacilitator, SettleScript},
    x402::TestWallet,
};
use serde_json::{Value, json};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(2);

fn client(fake: &FakeFacilitator, auth: Option<&str>) -> HttpFacilitator {
    HttpFacilitator::new(fake.url(), auth.map(Secret::new), TIMEOUT).expect("client builds")
}

/// A settle request shaped like a real v2 one (the signature's validity is not the point here).
fn request() -> SettleRequest {
    let wallet = TestWallet::new();
    let requirements = json!({
        "scheme": "exact", "network": "eip155:8453", "amount": "180000",
        "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        "payTo": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
        "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"},
    });
    SettleRequest {
        x402_version: 2,
        payment_payload: json!({
            "x402Version": 2,
            "accepted": requirements,
            "payload": {"signature": "0x00", "authorization": {"from": wallet.address().to_checksum(None)}},
        }),
        payment_requirements: requirements,
    }
}

#[tokio::test]
async fn successful_settlement_is_parsed_and_the_request_follows_the_wire_format() {
    let fake = FakeFacilitator::start().await;
    let answer = client(&fake, None)
        .settle(&request())
        .await
        .expect("settles");
    assert!(answer.success);
    assert_eq!(answer.transaction.len(), 66);
    assert_eq!(answer.network, "eip155:8453");
    assert_eq!(
        answer.payer,
        Some(TestWallet::new().address().to_checksum(None))
    );
    assert_eq!(answer.error_reason, None);

    assert_eq!(fake.settle_calls(), 1);
    let sent = &fake.requests()[0];
    let keys: Vec<&str> = sent
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["x402Version", "paymentPayload", "paymentRequirements"]
    );
    assert_eq!(sent["x402Version"], 2);
    assert_eq!(sent["paymentPayload"], request().payment_payload);
    assert_eq!(sent["paymentRequirements"], request().payment_requirements);
    assert_eq!(fake.auth_headers(), [None]);
}

/// `X402_FACILITATOR_HTTP2=prior-knowledge`: a burst of settles is streams of one h2c
/// connection, not a connection (and a file descriptor on both sides) per settle in flight.
#[tokio::test]
async fn by_prior_knowledge_a_burst_of_settles_shares_one_http2_connection() {
    let fake = FakeFacilitator::start().await;
    let transport = FacilitatorTransport {
        timeout: TIMEOUT,
        http2: Http2::PriorKnowledge,
    };
    let http = HttpFacilitator::new(fake.url(), None, transport).expect("client builds");

    let request = request();
    let settles = futures::future::join_all((0..20).map(|_| http.settle(&request))).await;

    assert!(settles.iter().all(Result::is_ok), "{settles:?}");
    assert_eq!(fake.settle_calls(), 20);
    assert!(
        fake.connections() <= 2,
        "20 settles over {} connections",
        fake.connections()
    );
}

#[tokio::test]
async fn the_auth_header_is_sent_verbatim_and_never_printed() {
    let fake = FakeFacilitator::start().await;
    fake.expect_auth("Bearer very-secret-token");
    let http = client(&fake, Some("Bearer very-secret-token"));
    assert!(!format!("{http:?}").contains("very-secret-token"));
    assert!(http.settle(&request()).await.expect("settles").success);
    assert_eq!(
        fake.auth_headers(),
        [Some("Bearer very-secret-token".to_owned())]
    );

    let wrong = client(&fake, Some("Bearer wrong"));
    let err = wrong.settle(&request()).await.expect_err("refused");
    assert!(
        matches!(err, FacilitatorError::Unauthorized { status: 401 }),
        "{err:?}"
    );
    assert!(
        !err.to_string().contains("wrong"),
        "the secret is not echoed"
    );
}

#[tokio::test]
async fn an_unusable_auth_value_fails_at_construction_without_echoing_it() {
    let err = HttpFacilitator::new(
        "http://127.0.0.1:9",
        Some(Secret::new("line\nbreak-secret")),
        TIMEOUT,
    )
    .expect_err("invalid header value");
    assert!(!err.to_string().contains("break-secret"));
}

#[tokio::test]
async fn refusal_with_http_200_is_an_answer_not_a_success() {
    let fake = FakeFacilitator::start().await;
    fake.script(SettleScript::RefuseWith200(
        "invalid_exact_evm_nonce_already_used",
    ));
    let answer = client(&fake, None)
        .settle(&request())
        .await
        .expect("an answer");
    assert!(!answer.success);
    assert_eq!(
        answer.error_reason.as_deref(),
        Some("invalid_exact_evm_nonce_already_used")
    );
}

#[tokio::test]
async fn refusal_with_http_400_carries_the_facilitators_reason() {
    let fake = FakeFacilitator::start().await;
    fake.script(SettleScript::RefuseWith400("insufficient_funds"));
    let answer = client(&fake, None)
        .settle(&request())
        .await
        .expect("a 400 settle body is an answer");
    assert!(!answer.success);
    assert_eq!(answer.error_reason.as_deref(), Some("insufficient_funds"));
    assert_eq!(answer.transaction, "");
}

#[tokio::test]
async fn http_412_body_is_read_as_a_refusal() {
    let fake = FakeFacilitator::start().await;
    fake.script(SettleScript::PreconditionFailed);
    let answer = client(&fake, None)
        .settle(&request())
        .await
        .expect("an answer");
    assert!(!answer.success);
    assert_eq!(
        answer.error_reason.as_deref(),
        Some("permit2_allowance_required")
    );
}

#[tokio::test]
async fn a_slow_facilitator_times_out() {
    let fake = FakeFacilitator::start().await;
    fake.script(SettleScript::Slow(Duration::from_secs(5)));
    let http = HttpFacilitator::new(fake.url(), None, Duration::from_millis(300)).expect("client");
    let started = std::time::Instant::now();
    let err = http.settle(&request()).await.expect_err("times out");
    assert_eq!(err, FacilitatorError::Timeout);
    assert_eq!(err.reason(), "facilitator_timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(fake.settle_calls(), 1, "no retry behind the caller's back");
}

#[tokio::test]
async fn a_server_error_is_a_status_error_with_a_short_excerpt() {
    let fake = FakeFacilitator::start().await;
    fake.script(SettleScript::ServerError);
    let err = client(&fake, None)
        .settle(&request())
        .await
        .expect_err("500");
    let FacilitatorError::Status {
        status,
        body_excerpt,
    } = &err
    else {
        panic!("expected a status error, got {err:?}");
    };
    assert_eq!(*status, 500);
    assert!(body_excerpt.starts_with("upstream RPC failed"));
    assert!(body_excerpt.chars().count() <= 200);
    assert_eq!(err.reason(), "facilitator_error");
}

#[tokio::test]
async fn an_unreadable_200_is_a_decode_error() {
    let fake = FakeFacilitator::start().await;
    fake.script(SettleScript::NotJson);
    let err = client(&fake, None)
        .settle(&request())
        .await
        .expect_err("not JSON");
    assert!(matches!(err, FacilitatorError::Decode(_)), "{err:?}");
}

#[tokio::test]
async fn an_unreachable_facilitator_is_a_transport_error() {
    // Bind, learn the port, close it: nothing listens there any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let http = HttpFacilitator::new(&url, None, TIMEOUT).expect("client");
    let err = http.settle(&request()).await.expect_err("nobody listens");
    assert!(matches!(err, FacilitatorError::Transport(_)), "{err:?}");
    assert_eq!(err.reason(), "facilitator_unreachable");
}

#[tokio::test]
async fn a_trailing_slash_in_the_base_url_is_harmless() {
    let fake = FakeFacilitator::start().await;
    let http = HttpFacilitator::new(&format!("{}/", fake.url()), None, TIMEOUT).expect("client");
    assert!(http.settle(&request()).await.expect("settles").success);
}

#[tokio::test]
async fn the_local_facilitator_settles_nothing_and_says_success() {
    let answer = LocalFacilitator::default()
        .settle(&request())
        .await
        .expect("never fails");
    assert!(answer.success);
    assert_eq!(answer.transaction, "");
    assert_eq!(answer.network, "eip155:8453");
    assert_eq!(
        answer.payer,
        Some(TestWallet::new().address().to_checksum(None))
    );
}

#[tokio::test]
async fn a_verified_payment_settles_with_its_own_payload_and_the_offered_requirements() {
    let app = grove_tests::spawn_app().await;
    let r = app
        .post_json(
            "/api/v1/agents/mary/call",
            &grove_tests::coaching_body("diagnose_growth"),
            &[],
        )
        .await;
    let challenge = r.headers()["payment-required"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let v1_body: PaymentRequirementsResponseV1 = r.json().await.expect("v1 body");
    let offered_v2: PaymentRequirementsV2 = serde_json::from_value(
        grove_tests::x402::decode_b64_json(&challenge)["accepts"][0].clone(),
    )
    .expect("v2 entry");
    let wallet = TestWallet::new();
    let mut headers = axum::http::HeaderMap::new();
    headers.insert(
        "payment-signature",
        wallet
            .pay(&challenge, Default::default())
            .parse()
            .expect("header value"),
    );
    let expected = grove_http::Expected {
        network: grove_common::config::Network::Base,
        pay_to: grove_tests::PAY_TO.parse().expect("address"),
        amount_atomic: 180_000,
    };
    let mut payment = grove_http::verify(&headers, &expected, grove_tests::x402::now_unix())
        .expect("verifies")
        .expect("present");
    let payload = payment.payload.clone();

    let fake = FakeFacilitator::start().await;
    let requirements = requirements_for(payment.version, &offered_v2, &v1_body.accepts[0]);
    let request = SettleRequest::for_payment(&mut payment, requirements);
    let answer = client(&fake, None).settle(&request).await.expect("settles");
    assert!(answer.success);
    assert_eq!(answer.payer, Some(wallet.address().to_checksum(None)));
    let sent = &fake.requests()[0];
    assert_eq!(sent["x402Version"], 2);
    assert_eq!(sent["paymentPayload"], payload);
    // What the client echoed in `accepted` is exactly what we offered and now settle against.
    assert_eq!(
        sent["paymentRequirements"],
        sent["paymentPayload"]["accepted"]
    );
}

#[tokio::test]
async fn requirements_follow_the_payment_version() {
    let app = grove_tests::spawn_app().await;
    let r = app
        .post_json(
            "/api/v1/agents/mary/call",
            &grove_tests::coaching_body("diagnose_growth"),
            &[],
        )
        .await;
    let header = grove_tests::x402::decode_b64_json(
        r.headers()["payment-required"].to_str().expect("ascii"),
    );
    let v2: PaymentRequirementsV2 =
        serde_json::from_value(header["accepts"][0].clone()).expect("v2 entry");
    let v1_body: PaymentRequirementsResponseV1 = r.json().await.expect("v1 body");
    let v1 = &v1_body.accepts[0];

    let for_v2 = requirements_for(2, &v2, v1);
    assert_eq!(for_v2, header["accepts"][0]);
    assert_eq!(for_v2.get("resource"), None, "v2 requirements are bare");
    let for_v1 = requirements_for(1, &v2, v1);
    assert_eq!(for_v1["network"], "base");
    assert_eq!(for_v1["maxAmountRequired"], "180000");
    assert!(
        for_v1["resource"]
            .as_str()
            .is_some_and(|u| u.ends_with("/mary/call"))
    );
    assert_ne!(for_v1, Value::Null);
}
