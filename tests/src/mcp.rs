//! Drives Grove's `/mcp` with an off-the-shelf MCP client: PyPI `mcp` and the x402 signer of PyPI
//! `x402`, pinned and installed by `scripts/mcp-client` into `target/mcp-client-venv`. The Python
//! side (`tests/mcp/client.py`) only acts and reports; the tests assert.

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
