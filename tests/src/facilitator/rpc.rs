//! The fake facilitator's chain, served over JSON-RPC as Base would serve it (`BASE_RPC_URL`), so
//! that reconciliation, the "nonce already used" check and the reorg watch read the transfers the
//! fake made exactly as they read Base: `eth_chainId` 8453, code at USDC's address, each transfer
//! in a block of its own (`AuthorizationUsed` then `Transfer` of the value to `payTo`), the `safe`
//! block at the head. Only the methods the api calls are answered.
//!
//! The view may lag (`FakeFacilitator::lag_rpc`): its head is that many seconds old, and a
//! transfer younger than that is not in it yet.

use super::{Inner, read};
use crate::chain::USDC;

/// Circle's USDC on Base Sepolia, where a testnet rig's start-up looks for code.
const SEPOLIA_USDC: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
use axum::{Json, extract::State};
use grove_http::IUsdc;
use serde_json::{Value, json};
use std::{
    sync::{Arc, atomic::Ordering},
    time::{SystemTime, UNIX_EPOCH},
};

use alloy_sol_types::SolEvent;

/// One transfer on the fake chain.
#[derive(Clone, Debug)]
pub(super) struct Transfer {
    pub(super) tx: String,
    from: String,
    to: String,
    nonce: String,
    value: u128,
    block: u64,
    /// Unix seconds when it happened.
    at: u64,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Transfer {
    pub(super) fn of(request: &Value, tx: &str, block: u64) -> Self {
        let auth = |k: &str| {
            request
                .pointer(&format!("/paymentPayload/payload/authorization/{k}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase()
        };
        Self {
            tx: tx.to_owned(),
            from: auth("from"),
            to: auth("to"),
            nonce: auth("nonce"),
            value: auth("value").parse().unwrap_or(0),
            block,
            at: now(),
        }
    }
}

fn hex(n: u64) -> String {
    format!("{n:#x}")
}

fn word(hex_text: &str) -> String {
    format!("0x{:0>64}", hex_text.trim_start_matches("0x"))
}

/// The transfers the (possibly lagging) view holds, by block.
fn visible(inner: &Inner) -> (Vec<Transfer>, u64) {
    let lag = inner.rpc_lag_s.load(Ordering::SeqCst);
    let cutoff = now().saturating_sub(lag);
    let mut all: Vec<Transfer> = read(&inner.used)
        .into_values()
        .filter(|t| t.at <= cutoff)
        .collect();
    all.sort_by_key(|t| t.block);
    (all, cutoff)
}

fn block_json(number: u64, timestamp: u64) -> Value {
    let zero = word("0");
    json!({
        "hash": word(&format!("{:x}", number + 1)), "parentHash": zero, "sha3Uncles": zero,
        "miner": "0x0000000000000000000000000000000000000000", "stateRoot": zero,
        "transactionsRoot": zero, "receiptsRoot": zero, "logsBloom": format!("0x{}", "0".repeat(512)),
        "difficulty": "0x0", "number": hex(number), "gasLimit": "0x1c9c380", "gasUsed": "0x0",
        "timestamp": hex(timestamp), "extraData": "0x", "mixHash": zero, "nonce": "0x0000000000000000",
        "baseFeePerGas": "0x1", "size": "0x200", "uncles": [], "transactions": [],
    })
}

fn logs_of(t: &Transfer) -> Vec<Value> {
    let common = |index: u64| {
        json!({
            "address": USDC, "blockHash": word(&format!("{:x}", t.block + 1)),
            "blockNumber": hex(t.block), "transactionHash": t.tx, "transactionIndex": "0x0",
            "logIndex": hex(index), "removed": false,
        })
    };
    let mut used = common(0);
    used["topics"] = json!([
        IUsdc::AuthorizationUsed::SIGNATURE_HASH,
        word(&t.from),
        word(&t.nonce)
    ]);
    used["data"] = json!("0x");
    let mut transfer = common(1);
    transfer["topics"] = json!([IUsdc::Transfer::SIGNATURE_HASH, word(&t.from), word(&t.to)]);
    transfer["data"] = json!(word(&format!("{:x}", t.value)));
    vec![used, transfer]
}

fn receipt_json(t: &Transfer) -> Value {
    json!({
        "transactionHash": t.tx, "transactionIndex": "0x0",
        "blockHash": word(&format!("{:x}", t.block + 1)), "blockNumber": hex(t.block),
        "from": t.from, "to": USDC, "contractAddress": null, "cumulativeGasUsed": "0x10000",
        "gasUsed": "0x10000", "effectiveGasPrice": "0x1", "type": "0x2", "status": "0x1",
        "logsBloom": format!("0x{}", "0".repeat(512)), "logs": logs_of(t),
    })
}

/// A block argument as a number (tags are the head: the `safe` block is the head here).
fn block_arg(v: &Value, head: u64) -> u64 {
    match v.as_str() {
        Some(s) if s.starts_with("0x") => u64::from_str_radix(&s[2..], 16).unwrap_or(head),
        _ => head,
    }
    .min(head)
}

pub(super) async fn serve(
    State(inner): State<Arc<Inner>>,
    Json(body): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if inner.rpc_down.load(Ordering::SeqCst) {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    answer(&inner, &body).into_response()
}

/// Whether `address` holds code on the fake chain: only USDC (Base's, or Base Sepolia's).
fn has_code(address: &str) -> bool {
    address.eq_ignore_ascii_case(&format!("{USDC:#x}"))
        || address.eq_ignore_ascii_case(SEPOLIA_USDC)
}

fn answer(inner: &Inner, body: &Value) -> Json<Value> {
    let (transfers, time) = visible(inner);
    let head = transfers.last().map_or(0, |t| t.block);
    let params = &body["params"];
    let result = match body["method"].as_str().unwrap_or_default() {
        "eth_chainId" => match inner.chain_id.load(Ordering::SeqCst) {
            0 => json!("0x2105"),
            id => json!(hex(id)),
        },
        "eth_blockNumber" => json!(hex(head)),
        // USDC (Base's, or Base Sepolia's on the testnet) is "deployed"; every other address is a
        // plain account (a payer's EOA), so a forged signature is not taken for a smart wallet's.
        "eth_getCode" if has_code(params[0].as_str().unwrap_or_default()) => json!("0x6080"),
        "eth_getCode" => json!("0x"),
        "eth_getBlockByNumber" => json!(block_json(block_arg(&params[0], head), time)),
        // A call to any address but USDC's reaches no code (a payer's EOA): empty output.
        "eth_call" if !has_code(params[0]["to"].as_str().unwrap_or_default()) => json!("0x"),
        "eth_call" => {
            // authorizationState(address, bytes32) at a block.
            let data = params[0]["data"]
                .as_str()
                .or(params[0]["input"].as_str())
                .unwrap_or_default()
                .to_ascii_lowercase();
            let at = block_arg(&params[1], head);
            let (authorizer, nonce) = (
                data.get(10 + 24..10 + 64).unwrap_or_default(),
                data.get(10 + 64..10 + 128).unwrap_or_default(),
            );
            let used = transfers.iter().any(|t| {
                t.block <= at
                    && t.from.trim_start_matches("0x") == authorizer
                    && t.nonce.trim_start_matches("0x") == nonce
            });
            json!(word(if used { "1" } else { "0" }))
        }
        "eth_getLogs" => {
            let filter = &params[0];
            let (from, to) = (
                block_arg(&filter["fromBlock"], head),
                block_arg(&filter["toBlock"], head),
            );
            let topic = |i: usize| {
                filter["topics"][i]
                    .as_str()
                    .map(|s| s.trim_start_matches("0x").to_ascii_lowercase())
            };
            let logs: Vec<Value> = transfers
                .iter()
                .filter(|t| (from..=to).contains(&t.block))
                .filter(|t| topic(1).is_none_or(|a| word(&t.from).ends_with(&a)))
                .filter(|t| topic(2).is_none_or(|n| word(&t.nonce).ends_with(&n)))
                .map(|t| logs_of(t).remove(0))
                .collect();
            json!(logs)
        }
        "eth_getTransactionReceipt" => {
            let hash = params[0].as_str().unwrap_or_default().to_ascii_lowercase();
            transfers
                .iter()
                .find(|t| t.tx == hash)
                .map_or(Value::Null, receipt_json)
        }
        other => {
            return Json(json!({"jsonrpc": "2.0", "id": body["id"],
                "error": {"code": -32601, "message": format!("the fake chain does not answer {other}")}}));
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
}
