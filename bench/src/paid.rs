//! What the paid-call benchmarks (`--bin paid`, `--bin scale`) send: distinct coaching bodies,
//! each with its own freshly signed payment, prepared before the clock starts.

use crate::load::Request;
use grove_tests::{
    llm::caller_body,
    x402::{PayOptions, TestWallet},
};
use reqwest::Method;
use serde_json::Value;

/// The coaching path every paid benchmark buys.
pub const PATH: &str = "/api/v1/agents/mary/call";

/// A body and its payment header.
pub type Prepared = (Vec<u8>, String);

/// The `PAYMENT-REQUIRED` challenge of the server at `base`.
pub async fn challenge(base: &str) -> String {
    let client = grove_common::http_client::builder()
        .no_proxy()
        .build()
        .expect("client");
    client
        .post(format!("{base}{PATH}"))
        .header("content-type", "application/json")
        .body(caller_body("diagnose_growth").to_string())
        .send()
        .await
        .expect("402")
        .headers()["payment-required"]
        .to_str()
        .expect("ascii")
        .to_owned()
}

/// Bodies `from..from + n`, each distinct (else the second would be a replay) and paid by its
/// own authorization.
pub fn bodies_and_payments(challenge: &str, from: usize, n: usize) -> Vec<Prepared> {
    let wallet = TestWallet::new();
    (from..from + n)
        .map(|i| {
            let mut body = caller_body("diagnose_growth");
            let text = body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            body["messages"][0]["content"] = Value::from(format!("{text} (ref {i})"));
            (
                body.to_string().into_bytes(),
                wallet.pay(challenge, PayOptions::default()),
            )
        })
        .collect()
}

/// The paid POST of prepared body `i` (wrapping around) to the server at `base`.
pub fn paid_request(base: &str, prepared: &[Prepared], i: usize) -> Request {
    let (body, payment) = &prepared[i % prepared.len()];
    Request {
        method: Method::POST,
        url: format!("{base}{PATH}"),
        headers: vec![
            ("content-type", "application/json".into()),
            ("payment-signature", payment.clone()),
        ],
        body: Some(body.clone()),
        expect_status: 200,
    }
}
