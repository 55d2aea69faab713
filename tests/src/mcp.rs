//! Drives Grove's `/mcp` with an off-the-shelf MCP client: PyPI `mcp` and the x402 signer of PyPI
//! `x402`, pinned and installed by `scripts/mcp-client` into `target/mcp-client-venv`. The Python
//! side (`tests/mcp/client.py`) only acts and reports; the tests assert.

use crate::{
    db,
    paid::{Options, PaidApp, spawn_paid},
};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The script the client runs.
fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp/client.py")
}

/// The Python with the pinned client: `GROVE_MCP_PYTHON`, else the venv `scripts/mcp-client`
/// makes, else `python3` if it has the packages. None: the caller skips, unless
/// `GROVE_REQUIRE_MCP_CLIENT` is set (as `scripts/test` does), which makes it a failure.
pub fn python() -> Option<PathBuf> {
    let venv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-client-venv/bin/python");
    let candidates = [
        std::env::var_os("GROVE_MCP_PYTHON").map(PathBuf::from),
        Some(venv),
        Some(PathBuf::from("python3")),
    ];
    let found = candidates.into_iter().flatten().find(|python| {
        std::process::Command::new(python)
            .args([
                "-c",
                "import mcp, x402.mechanisms.evm.exact, eth_account; from mcp import Client",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("GROVE_REQUIRE_MCP_CLIENT").is_none(),
            "GROVE_REQUIRE_MCP_CLIENT is set but no python with PyPI mcp and x402 was found (run scripts/mcp-client)"
        );
        eprintln!("skipped: no python with PyPI mcp and x402 (scripts/mcp-client installs them)");
    }
    found
}

/// Runs `steps` in one client connection (`mode`: "auto" negotiates the current protocol,
/// "legacy" the `initialize` handshake) and returns the client's report:
/// `{protocol_version, payer, results: [...]}`. Runs on tokio's process support, so the server
/// in this test's runtime keeps answering.
pub async fn run(python: &PathBuf, url: &str, mode: &str, steps: Vec<Value>) -> Value {
    let plan = json!({"mode": mode, "steps": steps});
    let output = tokio::process::Command::new(python)
        .arg(script())
        .arg(url)
        .arg(plan.to_string())
        // The client talks to loopback only; a proxy from the environment must not intercept.
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .output()
        .await
        .expect("python runs");
    assert!(
        output.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "the MCP client printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// A step listing everything the server offers.
pub fn discover() -> Value {
    json!({"op": "discover"})
}

/// A step reading one resource.
pub fn read(uri: &str) -> Value {
    json!({"op": "read", "uri": uri})
}

/// A step calling `tool` with `arguments`, paying as `payment` says (see `tests/mcp/client.py`:
/// "none", "sign", "reuse:<step>", "forge_from", "forge_signature").
pub fn call(tool: &str, arguments: Value, payment: &str) -> Value {
    json!({"op": "call", "tool": tool, "arguments": arguments, "payment": payment})
}

/// The nonce of the authorization a call step sent.
pub fn nonce_sent(result: &Value) -> String {
    result["sent_payment"]["payload"]["authorization"]["nonce"]
        .as_str()
        .expect("the step sent a payment")
        .to_owned()
}

/// A coaching body as a tool's arguments: without `mode` (the tool is the mode).
pub fn tool_arguments(body: &Value) -> Value {
    let mut arguments = body.clone();
    if let Some(fields) = arguments.as_object_mut() {
        fields.remove("mode");
    }
    arguments
}

/// The paid rig (loopback facilitator and model) for the MCP tests.
pub async fn rig() -> PaidApp {
    rig_with(Options::default()).await
}

/// The paid rig with `opts`; on PostgreSQL the jobs run through Redis, as in production.
pub async fn rig_with(opts: Options) -> PaidApp {
    spawn_paid(Options {
        redis_workers: usize::from(db::backend() == "postgres"),
        ..opts
    })
    .await
}

/// A published schema, read from `schemas/`.
pub fn published(path: &str) -> Value {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas")
        .join(path);
    serde_json::from_str(&std::fs::read_to_string(&file).expect("schema file")).expect("JSON")
}

/// Checks a call result's envelope against `schemas/<path>` and that the text content repeats it.
pub fn assert_answer_matches(result: &Value, schema_path: &str) {
    assert_eq!(result["is_error"], false, "{result}");
    let envelope = &result["structured"];
    let errors: Vec<String> = crate::compile(&published(schema_path))
        .iter_errors(envelope)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{schema_path}: {errors:?}");
    let text: Value =
        serde_json::from_str(result["text"][0].as_str().expect("text")).expect("JSON");
    assert_eq!(&text, envelope, "content[0].text carries the same JSON");
}

/// An x402 v2 PaymentRequired for `tool` at `atomic` USDC units on Base, with `error`.
pub fn assert_payment_required(result: &Value, tool: &str, atomic: &str, error: &str) {
    assert_payment_required_on("eip155:8453", result, tool, atomic, error);
}

/// `assert_payment_required` on `network` (CAIP-2).
pub fn assert_payment_required_on(
    network: &str,
    result: &Value,
    tool: &str,
    atomic: &str,
    error: &str,
) {
    assert_eq!(result["is_error"], true, "{result}");
    let required = &result["structured"];
    assert_eq!(required["x402Version"], 2);
    assert_eq!(required["error"], error);
    assert_eq!(required["resource"]["url"], format!("mcp://tool/{tool}"));
    let accepts = required["accepts"].as_array().expect("accepts");
    assert_eq!(accepts.len(), 1);
    assert_eq!(accepts[0]["scheme"], "exact");
    assert_eq!(accepts[0]["network"], network);
    assert_eq!(accepts[0]["amount"], atomic);
    assert_eq!(accepts[0]["payTo"], crate::PAY_TO);
    let text: Value =
        serde_json::from_str(result["text"][0].as_str().expect("text")).expect("JSON");
    assert_eq!(&text, required, "content[0].text carries the same JSON");
}

/// An error result in the HTTP error body with `code`, and nothing an x402 client would pay.
pub fn assert_refused(result: &Value, code: &str) -> Value {
    assert_eq!(result["is_error"], true, "{result}");
    let body = &result["structured"];
    assert!(
        body.get("x402Version").is_none() && body.get("accepts").is_none(),
        "a refusal is not a price: {body}"
    );
    assert_eq!(body["error"]["code"], code, "{body}");
    body["error"].clone()
}
