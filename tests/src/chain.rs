//! A local Base for the settlement tests: anvil with chain id 8453 and our EIP-3009 test token
//! (`tests/contracts/Eip3009Token.sol`) placed at USDC's address, so that payments signed for
//! Base USDC's EIP-712 domain are valid on it unchanged.
//!
//! Beside it, at their Base addresses or fixed test ones, the rest of `tests/contracts`: the
//! Multicall3 stand-in and the smart-wallet factory (`crate::smart_wallet`).
//!
//! `scripts/anvil` installs anvil and solcjs from npm and compiles the contracts; it is run once
//! per test binary. Without them a test skips with a notice, or fails when `GROVE_REQUIRE_ANVIL=1`
//! (`scripts/test` sets it), so the suite cannot pass by quietly not testing.

use crate::x402::{PayOptions, TestWallet, decode_b64_json};
use alloy_primitives::{Address, B256, U256, address};
use alloy_sol_types::{SolCall, SolEvent, sol};
use base64::{Engine, engine::general_purpose::STANDARD};
use grove_http::SettleRequest;
use grove_http::{IUsdc, MULTICALL3};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

/// Base mainnet's chain id, which the local chain answers unless a test asks for another.
pub const BASE_CHAIN_ID: u64 = 8453;

/// USDC on Base mainnet, where the test token sits (spelled out here, not taken from grove's
/// network table, so that a mistake there cannot move the token with it).
pub const USDC: Address = address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");

/// Anvil's third development key: public, funded with test ether by anvil; it pays for gas.
pub const SETTLER_KEY: &str = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
sol! {
    /// What the test token has beyond USDC's interface (and FiatToken's `cancelAuthorization`).
    interface ITestToken {
        function mint(address to, uint256 value) external;
        function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;
    }
}

/// The test chain's initial base fee, in wei (0.01 gwei).
pub const BASE_FEE_WEI: &str = "10000000";

/// Anvil's second development account, unlocked: it mints test USDC.
const MINTER: &str = "0x70997970C51812dc3A010C7D01b50e0d17dc79C8";

struct Tools {
    anvil: PathBuf,
    token_runtime: String,
    multicall3_runtime: String,
    wallet_factory_runtime: String,
}

/// Runs `scripts/anvil` once: the paths it prints, or why it failed.
fn tools() -> Result<&'static Tools, String> {
    static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/anvil");
            let out = Command::new(&script)
                .stderr(Stdio::inherit())
                .output()
                .map_err(|e| format!("could not run {}: {e}", script.display()))?;
            if !out.status.success() {
                return Err(format!("{} exited with {}", script.display(), out.status));
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            let value = |key: &str| {
                stdout
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{key}=")))
                    .map(str::to_owned)
                    .ok_or_else(|| format!("scripts/anvil printed no {key}= line"))
            };
            let runtime = |key: &str| {
                let path = value(key)?;
                std::fs::read_to_string(&path)
                    .map(|code| code.trim().to_owned())
                    .map_err(|e| format!("could not read {path}: {e}"))
            };
            Ok(Tools {
                anvil: PathBuf::from(value("anvil")?),
                token_runtime: runtime("token")?,
                multicall3_runtime: runtime("multicall3")?,
                wallet_factory_runtime: runtime("wallet_factory")?,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A running anvil with the token in place; killed on drop.
pub struct Chain {
    child: Child,
    pub url: String,
    client: reqwest::Client,
}

impl Drop for Chain {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Chain {
    /// A fresh chain that mines on every transaction, or `None` (after a notice) when anvil
    /// cannot be had and `GROVE_REQUIRE_ANVIL` is not `1`.
    pub async fn start() -> Option<Self> {
        Self::start_with(&[]).await
    }

    /// With extra anvil arguments (`--block-time 2`).
    pub async fn start_with(args: &[&str]) -> Option<Self> {
        Self::start_on_chain(BASE_CHAIN_ID, args).await
    }

    /// A chain that answers `eth_chainId` with `chain_id` (another chain than Base, for tests of
    /// what refuses it), the token still at USDC's address.
    pub async fn start_on_chain(chain_id: u64, args: &[&str]) -> Option<Self> {
        let tools = match tools() {
            Ok(tools) => tools,
            Err(why) => {
                assert!(
                    std::env::var("GROVE_REQUIRE_ANVIL").as_deref() != Ok("1"),
                    "GROVE_REQUIRE_ANVIL=1 but the local chain is unavailable: {why}"
                );
                // Straight to stderr: libtest would swallow an `eprintln!` of a passing test.
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED: no local chain ({why}); set GROVE_REQUIRE_ANVIL=1 to fail"
                );
                return None;
            }
        };
        let mut child = Command::new(&tools.anvil)
            .args([
                // Base's base fee (usually well below 0.05 gwei), not anvil's 1 gwei, so that
                // settlements fit under `SETTLER_MAX_FEE_GWEI`'s default as they do on Base.
                "--base-fee",
                BASE_FEE_WEI,
                "--chain-id",
                &chain_id.to_string(),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
            ])
            .args(args)
            // Unless a test sets its own depth, the `safe` block is the head: a transfer is final
            // once mined, for the tests about other things. Tests of finality pass a depth.
            .args(if args.contains(&"--slots-in-an-epoch") {
                &[][..]
            } else {
                &["--slots-in-an-epoch", "0"][..]
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("anvil starts");
        let stdout = child.stdout.take().expect("anvil's stdout");
        let (tx, rx) = mpsc::channel();
        // Reads the address it listens on, then keeps draining: anvil logs every request, and a
        // full pipe would stall it.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("Listening on ") {
                    let _ = tx.send(addr.trim().to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("anvil prints the address it listens on");
        let chain = Self {
            child,
            url: format!("http://{addr}"),
            client: grove_common::http_client::builder()
                .no_proxy()
                .build()
                .expect("client"),
        };
        for (address, code) in [
            (USDC, &tools.token_runtime),
            (MULTICALL3, &tools.multicall3_runtime),
            (
                crate::smart_wallet::WALLET_FACTORY,
                &tools.wallet_factory_runtime,
            ),
        ] {
            chain.rpc("anvil_setCode", json!([address, code])).await;
        }
        Some(chain)
    }

    /// Places the test token's code at `address` too (another network's USDC address); its
    /// EIP-712 name stays "USD Coin", so only code checks can use it there, not signatures.
    pub async fn token_also_at(&self, address: Address) {
        let tools = tools().expect("the chain started, so its tools are there");
        self.rpc("anvil_setCode", json!([address, &tools.token_runtime]))
            .await;
    }

    /// One JSON-RPC call; panics on an error answer.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let answer: Value = self
            .client
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .expect("anvil answers")
            .json()
            .await
            .expect("JSON-RPC answer");
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// Mints test USDC to `to` and waits for the block.
    pub async fn mint(&self, to: Address, amount: u64) {
        let data = ITestToken::mintCall {
            to,
            value: U256::from(amount),
        }
        .abi_encode();
        let hash = self
            .rpc(
                "eth_sendTransaction",
                json!([{"from": MINTER, "to": USDC, "data": alloy_primitives::hex::encode_prefixed(data)}]),
            )
            .await;
        self.receipt(hash.as_str().expect("a hash")).await;
    }

    /// Sends a transaction to USDC from the unlocked minter account and waits for its receipt;
    /// returns the transaction hash.
    async fn send_to_usdc(&self, data: Vec<u8>) -> String {
        self.send_as_minter(USDC, data).await
    }

    /// Sends a transaction from the unlocked minter account and waits for its receipt; returns
    /// the transaction hash.
    pub async fn send_as_minter(&self, to: Address, data: Vec<u8>) -> String {
        let hash = self
            .rpc(
                "eth_sendTransaction",
                json!([{"from": MINTER, "to": to, "data": alloy_primitives::hex::encode_prefixed(data), "gas": "0x100000"}]),
            )
            .await;
        let hash = hash.as_str().expect("a hash").to_owned();
        self.receipt(&hash).await;
        hash
    }

    /// The payer cancels the authorization of `nonce` (EIP-3009 `cancelAuthorization`, signed by
    /// `wallet`, submitted by someone else as anyone may).
    pub async fn cancel(&self, wallet: &TestWallet, nonce: B256) -> Value {
        let sig = wallet.cancel_signature(nonce);
        let data = ITestToken::cancelAuthorizationCall {
            authorizer: wallet.address(),
            nonce,
            v: sig[64],
            r: B256::from_slice(&sig[..32]),
            s: B256::from_slice(&sig[32..64]),
        }
        .abi_encode();
        let hash = self.send_to_usdc(data).await;
        self.receipt(&hash).await
    }

    /// Submits a payment's `transferWithAuthorization` as a facilitator would (from another
    /// account); returns the transaction hash.
    pub async fn submit(&self, request: &SettleRequest) -> String {
        let auth = &request.payment_payload["payload"]["authorization"];
        let sig = alloy_primitives::hex::decode(
            request.payment_payload["payload"]["signature"]
                .as_str()
                .expect("signature"),
        )
        .expect("hex");
        let uint = |k: &str| U256::from_str_radix(auth[k].as_str().expect(k), 10).expect(k);
        let address = |k: &str| auth[k].as_str().and_then(|s| s.parse().ok()).expect(k);
        let data = IUsdc::transferWithAuthorizationCall {
            from: address("from"),
            to: address("to"),
            value: uint("value"),
            validAfter: uint("validAfter"),
            validBefore: uint("validBefore"),
            nonce: auth["nonce"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .expect("nonce"),
            v: sig[64],
            r: B256::from_slice(&sig[..32]),
            s: B256::from_slice(&sig[32..64]),
        }
        .abi_encode();
        self.send_to_usdc(data).await
    }

    /// How many `AuthorizationUsed` events USDC emitted for `authorizer`.
    pub async fn authorizations_used(&self, authorizer: Address) -> usize {
        self.used_nonces(authorizer).await.len()
    }

    /// The nonces of `authorizer`'s `AuthorizationUsed` events, one per event.
    pub async fn used_nonces(&self, authorizer: Address) -> Vec<B256> {
        let logs = self
            .rpc(
                "eth_getLogs",
                json!([{
                    "address": USDC,
                    "fromBlock": "0x0",
                    "toBlock": "latest",
                    "topics": [IUsdc::AuthorizationUsed::SIGNATURE_HASH, authorizer.into_word()],
                }]),
            )
            .await;
        logs.as_array()
            .expect("logs")
            .iter()
            .filter_map(|log| log["topics"][2].as_str()?.parse().ok())
            .collect()
    }

    /// Transactions `who` has sent that are not mined yet.
    pub async fn pending_from(&self, who: Address) -> u64 {
        let pending = self
            .rpc("eth_getTransactionCount", json!([who, "pending"]))
            .await;
        let pending =
            u64::from_str_radix(pending.as_str().expect("hex").trim_start_matches("0x"), 16)
                .expect("hex");
        pending - self.nonce(who).await
    }

    pub async fn balance(&self, who: Address) -> U256 {
        let data = IUsdc::balanceOfCall { account: who }.abi_encode();
        let out = self
            .rpc(
                "eth_call",
                json!([{"to": USDC, "data": alloy_primitives::hex::encode_prefixed(data)}, "latest"]),
            )
            .await;
        let bytes = alloy_primitives::hex::decode(out.as_str().expect("hex")).expect("hex");
        IUsdc::balanceOfCall::abi_decode_returns(&bytes).expect("a uint256")
    }

    /// The receipt of `hash`, waiting (bounded) for its block.
    pub async fn receipt(&self, hash: &str) -> Value {
        let mut receipt = Value::Null;
        crate::wait_until("a receipt", async || {
            receipt = self.rpc("eth_getTransactionReceipt", json!([hash])).await;
            !receipt.is_null()
        })
        .await;
        receipt
    }

    /// The timestamp (unix s) of the block that mined `hash`.
    pub async fn mined_at(&self, hash: &str) -> u64 {
        let receipt = self.receipt(hash).await;
        let block = self
            .rpc(
                "eth_getBlockByNumber",
                json!([receipt["blockNumber"], false]),
            )
            .await;
        u64::from_str_radix(
            block["timestamp"]
                .as_str()
                .expect("hex")
                .trim_start_matches("0x"),
            16,
        )
        .expect("hex")
    }

    /// How many transactions `who` has had mined.
    pub async fn nonce(&self, who: Address) -> u64 {
        let n = self
            .rpc("eth_getTransactionCount", json!([who, "latest"]))
            .await;
        u64::from_str_radix(n.as_str().expect("hex").trim_start_matches("0x"), 16).expect("hex")
    }
}

/// Our own settlement's options for the test chain: the configuration's defaults, except one
/// confirmation (the chain mines only when a transaction arrives) and `timeout`.
pub fn settler_options(timeout: Duration) -> grove_http::SettlerOptions {
    let env: std::collections::HashMap<String, String> = crate::default_env();
    let config = grove_common::config::Config::from_map(&env).expect("the test configuration");
    grove_http::SettlerOptions {
        timeout,
        ..grove_http::SettlerOptions::from(&config.settlement)
    }
}

/// Whether a receipt's logs hold `AuthorizationUsed(authorizer, nonce)` from USDC.
pub fn has_authorization_used(receipt: &Value, authorizer: Address, nonce: B256) -> bool {
    let expected = [
        IUsdc::AuthorizationUsed::SIGNATURE_HASH,
        authorizer.into_word(),
        nonce,
    ];
    receipt["logs"].as_array().is_some_and(|logs| {
        logs.iter().any(|log| {
            let from_usdc = log["address"]
                .as_str()
                .and_then(|a| a.parse::<Address>().ok())
                == Some(USDC);
            let topics: Vec<B256> = log["topics"]
                .as_array()
                .map(|t| t.iter().filter_map(|x| x.as_str()?.parse().ok()).collect())
                .unwrap_or_default();
            from_usdc && topics == expected
        })
    })
}

/// The requirement a paid call offers (USDC on Base to `PAY_TO`), written out by hand so that
/// grove-http's own builder cannot make both sides agree on a mistake.
pub fn requirement(amount: u64) -> Value {
    json!({
        "scheme": "exact",
        "network": "eip155:8453",
        "amount": amount.to_string(),
        "asset": USDC.to_checksum(None),
        "payTo": crate::PAY_TO,
        "maxTimeoutSeconds": 300,
        "extra": {"name": "USD Coin", "version": "2"},
    })
}

/// A settle request for `amount`, signed by `wallet` the way x402 clients sign: with the test
/// wallet of `crate::x402`, through a v2 challenge.
pub fn payment(wallet: &TestWallet, amount: u64, opts: PayOptions) -> SettleRequest {
    let requirement = requirement(amount);
    let challenge = json!({
        "x402Version": 2,
        "resource": {"url": "https://grove.test/api/v1/coach"},
        "accepts": [requirement],
    });
    let header = wallet.pay(&STANDARD.encode(challenge.to_string()), opts);
    SettleRequest {
        x402_version: 2,
        payment_payload: decode_b64_json(&header),
        payment_requirements: requirement,
    }
}

/// The `(from, nonce)` of a payment's authorization.
pub fn authorization_of(request: &SettleRequest) -> (Address, B256) {
    let auth = &request.payment_payload["payload"]["authorization"];
    let from = auth["from"].as_str().and_then(|s| s.parse().ok());
    let nonce = auth["nonce"].as_str().and_then(|s| s.parse().ok());
    (from.expect("from"), nonce.expect("nonce"))
}

/// The chain question of a settle request, asked now, for uses since `since` (unix s).
pub fn query_of(request: &SettleRequest, since: u64) -> grove_http::AuthorizationQuery {
    let auth = &request.payment_payload["payload"]["authorization"];
    let uint = |k: &str| U256::from_str_radix(auth[k].as_str().expect(k), 10).expect(k);
    let (authorizer, nonce) = authorization_of(request);
    grove_http::AuthorizationQuery {
        authorizer,
        nonce,
        to: auth["to"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("to"),
        value: uint("value"),
        since,
        valid_before: uint("validBefore").to::<u64>(),
        asked_at: crate::x402::now_unix(),
    }
}
