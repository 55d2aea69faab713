//! A fake x402 facilitator on 127.0.0.1:0 speaking the real `POST /settle` wire format, scripted
//! per test, recording every request and counting calls (tests assert exactly how often money
//! would have moved).

mod probe;
mod rpc;

use crate::cdp::{self, CdpPublicKey};
use axum::{
    Json, Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode, header::AUTHORIZATION},
    response::{IntoResponse, Response},
    routing::post,
};
use serde_json::{Value, json};
use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};
use tokio::sync::oneshot;

/// How the next `/settle` calls are answered.
#[derive(Clone, Debug, Default)]
pub enum SettleScript {
    /// 200 `{success:true, transaction:"0x…", network, payer}`.
    #[default]
    Success,
    /// 200 `{success:false, errorReason}` (TypeScript facilitators refuse this way).
    RefuseWith200(&'static str),
    /// 400 `{success:false, errorReason, errorMessage, transaction:"", network:"", payer:""}`
    /// (x402-rs refuses this way).
    RefuseWith400(&'static str),
    /// 412 `{success:false, errorReason:"permit2_allowance_required", …}`.
    PreconditionFailed,
    /// Settles on chain at once, then sleeps this long before answering success: longer than
    /// the client timeout, the transfer happened and the client saw a timeout.
    Slow(Duration),
    /// 500 with a plain-text body; nothing moved.
    ServerError,
    /// Settles on chain, then answers this status with a plain-text body (a facilitator that
    /// lies: the money moved, the answer says error).
    SettleThenStatus(u16),
    /// Broadcasts the transfer (it lands) and answers `success:false, settlement_pending` with
    /// the transaction's hash, as facilitators that report pending settlements do.
    Pending,
    /// Settles, and answers a success that names no payer (one we cannot attribute).
    SettleWithoutPayer,
    /// 503, nothing moved (a facilitator that is down).
    Down,
    /// Waits this long without moving anything, then 503 (a hung facilitator).
    Hang(Duration),
    /// Waits this long, then refuses with the reason; nothing moved.
    RefuseAfter(Duration, &'static str),
    /// 200 with a body that is not a settle response.
    NotJson,
}

#[derive(Default)]
struct Inner {
    script: Mutex<SettleScript>,
    /// One-shot scripts for the next requests, in order, before `script` applies again.
    next: Mutex<std::collections::VecDeque<SettleScript>>,
    /// The chain: authorizations used (`from:nonce`), each moving the money once, with the
    /// transfer that moved it (served over JSON-RPC too, `rpc`).
    used: Mutex<std::collections::HashMap<String, rpc::Transfer>>,
    /// Seconds the JSON-RPC view lags the fake chain (`rpc`).
    rpc_lag_s: std::sync::atomic::AtomicU64,
    /// The chain id its JSON-RPC view answers (8453 unless `serve_chain` changed it).
    chain_id: std::sync::atomic::AtomicU64,
    /// The JSON-RPC endpoint answers 503 to everything.
    rpc_down: std::sync::atomic::AtomicBool,
    transfers: AtomicUsize,
    expected_auth: Mutex<Option<String>>,
    expected_cdp: Mutex<Option<CdpCheck>>,
    cdp_refusals: Mutex<Vec<String>>,
    requests: Mutex<Vec<Value>>,
    auth_seen: Mutex<Vec<Option<String>>>,
    calls: AtomicUsize,
    /// What `/supported` lists (`None`: exact on Base, `probe::supported`).
    supported: Mutex<Option<Vec<Value>>>,
}

/// What CDP's facilitator checks: a bearer token signed by this key, for this request.
#[derive(Clone, Debug)]
struct CdpCheck {
    key_id: String,
    key: CdpPublicKey,
    /// `POST 127.0.0.1:<port>/settle`: the `uris` claim of a token made for this request.
    uri: String,
}

/// Reads a lock even after a panicking test thread poisoned it: the data is still what we want.
fn read<T: Clone>(m: &Mutex<T>) -> T {
    m.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

fn write<T>(m: &Mutex<T>, f: impl FnOnce(&mut T)) {
    f(&mut m.lock().unwrap_or_else(PoisonError::into_inner));
}

pub struct FakeFacilitator {
    url: String,
    inner: Arc<Inner>,
    stop: Option<oneshot::Sender<()>>,
    accepted: Arc<AtomicUsize>,
}

impl Drop for FakeFacilitator {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl FakeFacilitator {
    /// Starts a facilitator that settles everything successfully until scripted otherwise.
    pub async fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let app = Router::new()
            .route("/settle", post(settle))
            .route("/supported", axum::routing::get(probe::supported))
            .route("/verify", post(probe::verify))
            .route("/rpc", post(rpc::serve))
            .with_state(inner.clone());
        let (url, stop, accepted) = crate::loopback::serve_on_port_0(app).await;
        Self {
            url,
            inner,
            stop: Some(stop),
            accepted,
        }
    }

    /// Connections accepted since it started (HTTP/1.1 or h2c, on the same port).
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The base URL (`X402_FACILITATOR_URL`); the client appends `/settle`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn script(&self, script: SettleScript) {
        write(&self.inner.script, |s| *s = script);
    }

    /// Answers the next request with `script`, once (queued in order); then the standing script.
    pub fn script_next(&self, script: SettleScript) {
        write(&self.inner.next, |q| q.push_back(script));
    }

    /// Transfers that happened on the fake chain (each authorization at most once).
    pub fn transfers(&self) -> usize {
        self.inner.transfers.load(Ordering::SeqCst)
    }

    /// The hash of the transfer that used this authorization nonce, once it happened.
    pub fn transaction_of(&self, nonce: &str) -> Option<String> {
        let suffix = format!(":{}", nonce.to_ascii_lowercase());
        read(&self.inner.used)
            .into_iter()
            .find_map(|(auth, t)| auth.ends_with(&suffix).then_some(t.tx))
    }

    /// A JSON-RPC endpoint (`BASE_RPC_URL`) serving this fake chain as Base would: chain 8453,
    /// USDC "deployed", each transfer in a block of its own with its `AuthorizationUsed` and
    /// `Transfer` logs, the `safe` block at the head. Reconciliation reads it as it reads Base.
    pub fn rpc_url(&self) -> String {
        format!("{}/rpc", self.url)
    }

    /// From now on the JSON-RPC view answers `eth_chainId` with `chain_id` (84532: Base Sepolia,
    /// for a rig on the testnet).
    pub fn serve_chain(&self, chain_id: u64) {
        self.inner.chain_id.store(chain_id, Ordering::SeqCst);
    }

    /// From now on the JSON-RPC view lags the fake chain by `secs`: its head is that old, and a
    /// transfer younger than that is not in it yet (a hosted endpoint behind the chain).
    pub fn lag_rpc(&self, secs: u64) {
        self.inner.rpc_lag_s.store(secs, Ordering::SeqCst);
    }

    /// From now on the JSON-RPC endpoint answers 503 (`false`: serves again).
    pub fn rpc_down(&self, down: bool) {
        self.inner.rpc_down.store(down, Ordering::SeqCst);
    }

    /// The `/settle` requests that carried this authorization nonce.
    pub fn requests_for_nonce(&self, nonce: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| {
                r.pointer("/paymentPayload/payload/authorization/nonce")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.eq_ignore_ascii_case(nonce))
            })
            .count()
    }

    /// From now on, a request without exactly this `Authorization` value gets a 401.
    pub fn expect_auth(&self, value: &str) {
        write(&self.inner.expected_auth, |a| *a = Some(value.to_owned()));
    }

    /// From now on, every request must carry `Bearer <token>` signed by `key` for `key_id`,
    /// made for `POST 127.0.0.1:<port>/settle` and valid now (`cdp::check_claims`); others get
    /// a 401 and are listed by `cdp_refusals`.
    pub fn expect_cdp_token(&self, key_id: &str, key: CdpPublicKey) {
        let host_and_port = self.url.trim_start_matches("http://");
        let check = CdpCheck {
            key_id: key_id.to_owned(),
            key,
            uri: format!("POST {host_and_port}/settle"),
        };
        write(&self.inner.expected_cdp, |c| *c = Some(check));
    }

    /// Why each CDP token was refused, in order.
    pub fn cdp_refusals(&self) -> Vec<String> {
        read(&self.inner.cdp_refusals)
    }

    /// How many `/settle` requests arrived (refused and failed ones included).
    pub fn settle_calls(&self) -> usize {
        self.inner.calls.load(Ordering::SeqCst)
    }

    /// Every request body received, in order (a body that is not JSON is kept as a string).
    pub fn requests(&self) -> Vec<Value> {
        read(&self.inner.requests)
    }

    /// The `Authorization` header of every request, in order.
    pub fn auth_headers(&self) -> Vec<Option<String>> {
        read(&self.inner.auth_seen)
    }
}

async fn settle(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let call = inner.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let request = serde_json::from_slice::<Value>(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let auth = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    write(&inner.requests, |r| r.push(request.clone()));
    write(&inner.auth_seen, |a| a.push(auth.clone()));

    if let Some(expected) = read(&inner.expected_auth)
        && auth.as_deref() != Some(expected.as_str())
    {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "unauthorized"})),
        )
            .into_response();
    }

    if let Some(check) = read(&inner.expected_cdp)
        && let Err(problem) = check_cdp(&check, auth.as_deref())
    {
        write(&inner.cdp_refusals, |r| r.push(problem.clone()));
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": problem}))).into_response();
    }

    let network = request
        .pointer("/paymentRequirements/network")
        .cloned()
        .unwrap_or_else(|| json!("eip155:8453"));
    let payer = request
        .pointer("/paymentPayload/payload/authorization/from")
        .cloned()
        .unwrap_or(Value::Null);
    let authorization = format!(
        "{}:{}",
        payer.as_str().unwrap_or_default().to_ascii_lowercase(),
        request
            .pointer("/paymentPayload/payload/authorization/nonce")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase()
    );
    // Unique per call, shaped like a transaction hash.
    let tx_hash = format!("0x{call:064x}");
    // Like USDC: an authorization moves money once; `false` when it was already used.
    let transfer = || {
        let mut fresh = false;
        write(&inner.used, |u| {
            if !u.contains_key(&authorization) {
                let t = rpc::Transfer::of(&request, &tx_hash, u.len() as u64 + 1);
                u.insert(authorization.clone(), t);
                fresh = true;
            }
        });
        if fresh {
            inner.transfers.fetch_add(1, Ordering::SeqCst);
        }
        fresh
    };
    let refuse_200 = |reason: &str| {
        Json(json!({
            "success": false,
            "errorReason": reason,
            "transaction": "",
            "network": network,
        }))
        .into_response()
    };
    let success = Json(json!({
        "success": true,
        "transaction": tx_hash,
        "network": network,
        "payer": payer,
    }));
    let script = {
        let mut next = None;
        write(&inner.next, |q| next = q.pop_front());
        next.unwrap_or_else(|| read(&inner.script))
    };
    // What the TypeScript facilitator answers when the chain refuses a used nonce.
    const NONCE_USED: &str = "invalid_exact_evm_nonce_already_used";
    match script {
        SettleScript::Success if transfer() => success.into_response(),
        SettleScript::Success => refuse_200(NONCE_USED),
        SettleScript::RefuseWith200(reason) => refuse_200(reason),
        SettleScript::RefuseWith400(reason) => (
            StatusCode::BAD_REQUEST,
            Json(json!({
                "success": false,
                "errorReason": reason,
                "errorMessage": "refused by the fake facilitator",
                "transaction": "",
                "network": "",
                "payer": "",
            })),
        )
            .into_response(),
        SettleScript::PreconditionFailed => (
            StatusCode::PRECONDITION_FAILED,
            Json(json!({
                "success": false,
                "errorReason": "permit2_allowance_required",
                "transaction": "",
                "network": "",
            })),
        )
            .into_response(),
        SettleScript::Slow(delay) => {
            let fresh = transfer();
            tokio::time::sleep(delay).await;
            if fresh {
                success.into_response()
            } else {
                refuse_200(NONCE_USED)
            }
        }
        SettleScript::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "upstream RPC failed: ".repeat(50),
        )
            .into_response(),
        SettleScript::SettleThenStatus(status) => {
            transfer();
            (
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                "receipt lookup failed",
            )
                .into_response()
        }
        SettleScript::Pending => {
            transfer();
            Json(json!({
                "success": false,
                "errorReason": "settlement_pending",
                "transaction": tx_hash,
                "network": network,
            }))
            .into_response()
        }
        SettleScript::SettleWithoutPayer => {
            transfer();
            Json(json!({"success": true, "transaction": tx_hash, "network": network}))
                .into_response()
        }
        SettleScript::Down => (StatusCode::SERVICE_UNAVAILABLE, "maintenance").into_response(),
        SettleScript::Hang(delay) => {
            tokio::time::sleep(delay).await;
            (StatusCode::SERVICE_UNAVAILABLE, "gave up").into_response()
        }
        SettleScript::RefuseAfter(delay, reason) => {
            tokio::time::sleep(delay).await;
            refuse_200(reason)
        }
        SettleScript::NotJson => "<html>a captive portal</html>".into_response(),
    }
}

fn check_cdp(check: &CdpCheck, auth: Option<&str>) -> Result<(), String> {
    let token = auth
        .and_then(|a| a.strip_prefix("Bearer "))
        .ok_or("no bearer token")?;
    let verified = cdp::verify(token, &check.key)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    cdp::check_claims(&verified, &check.key_id, &check.uri, now)
}
