//! Retrying paid clients: one signed authorization each, the identical request again on 409,
//! 5xx, 504 and transport errors until a 200, a final answer or the bound. A client that asks
//! for its own price first (`ask_price`, the model-down scenario) waits out a 503 the way its
//! `Retry-After` says and asks again.

use grove_tests::x402::decode_b64_json;
use serde_json::Value;
use std::time::{Duration, Instant};

#[derive(Default, Clone)]
pub struct Outcome {
    pub started: Option<Instant>,
    pub ok_at: Option<Instant>,
    /// The `id` of the 200 body (a review request's tracking id).
    pub id: Option<String>,
    /// Status of the last answer (0: transport error) when the client stopped without a 200.
    pub last: Option<u16>,
    pub attempts: u32,
    pub nonce: String,
    /// Unpaid requests answered 503 instead of a price (`ask_price`).
    pub unpriced: u32,
    /// The receipt of a paid call that was not answered 200 (its error body names it).
    pub receipt: Option<String>,
    /// That receipt showed the result before the scenario's drain ended.
    pub completed_by_receipt: bool,
}

/// Asks for the price (an unpaid request), waiting out each 503 by its `Retry-After`, until a
/// 402 (its `PAYMENT-REQUIRED`), another answer or the bound. Returns the challenge and how many
/// 503s came first.
pub async fn ask_price(
    client: &reqwest::Client,
    url: &str,
    body: &str,
    bound: Duration,
) -> (Option<String>, u32) {
    let give_up = Instant::now() + bound;
    let mut refused = 0;
    loop {
        let sent = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await;
        let wait = match sent {
            Ok(r) if r.status() == 402 => {
                let challenge = r
                    .headers()
                    .get("payment-required")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                return (challenge, refused);
            }
            Ok(r) if r.status() == 503 => {
                refused += 1;
                r.headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                    .map_or(Duration::from_secs(1), Duration::from_secs)
            }
            Ok(_) => return (None, refused),
            Err(_) => Duration::from_millis(500),
        };
        if Instant::now() + wait >= give_up {
            return (None, refused);
        }
        tokio::time::sleep(wait).await;
    }
}

/// The receipt URL an error body names.
fn receipt_of(answer: &[u8]) -> Option<String> {
    let body: Value = serde_json::from_slice(answer).ok()?;
    body.pointer("/error/receipt/url")?
        .as_str()
        .map(str::to_owned)
}

pub fn retryable(status: u16) -> bool {
    status == 0 || status == 409 || status >= 500
}

pub async fn call_until_done(
    client: reqwest::Client,
    url: String,
    body: String,
    payment: String,
    bound: Duration,
) -> Outcome {
    let nonce = decode_b64_json(&payment)
        .pointer("/payload/authorization/nonce")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut out = Outcome {
        nonce,
        started: Some(Instant::now()),
        ..Default::default()
    };
    let give_up = Instant::now() + bound;
    loop {
        out.attempts += 1;
        let sent = client
            .post(&url)
            .header("content-type", "application/json")
            .header("payment-signature", &payment)
            .body(body.clone())
            .send()
            .await;
        let (status, wait, answer) = match sent {
            Ok(r) => {
                let s = r.status().as_u16();
                let retry_after = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                let answer = r.bytes().await.unwrap_or_default();
                (s, retry_after.map(Duration::from_secs), answer)
            }
            Err(_) => (0, None, Default::default()),
        };
        if status == 200 {
            out.ok_at = Some(Instant::now());
            out.id = serde_json::from_slice::<Value>(&answer)
                .ok()
                .and_then(|v| v["id"].as_str().map(str::to_owned));
            out.last = None;
            return out;
        }
        out.last = Some(status);
        if let Some(receipt) = receipt_of(&answer) {
            out.receipt = Some(receipt);
        }
        if !retryable(status) || Instant::now() >= give_up {
            return out;
        }
        let pause = wait.unwrap_or(Duration::from_millis(500));
        tokio::time::sleep(pause.min(give_up.saturating_duration_since(Instant::now()))).await;
    }
}

/// Deterministic pseudo-random numbers for fault scripts (xorshift64).
pub struct Rng(pub u64);

impl Rng {
    pub fn percent(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % 100
    }
}
