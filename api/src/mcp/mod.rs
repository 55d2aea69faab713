//! Grove as an MCP server at `/mcp` (issue 13): the coaching modes and the review request as
//! tools, paid with x402 over MCP; the catalogs, guides, skill file and schemas as resources.
//!
//! Transport: streamable HTTP (rmcp, the official Rust SDK), stateless, answering JSON. The
//! current protocol (2026-07-28) has no sessions; older clients still `initialize` and are served
//! without a session id, which that protocol allows. Grove sends nothing to a client unasked, so
//! a session would only pin clients to one process's memory, which breaks behind several `api`
//! replicas. Only POST is served (GET and DELETE, for server streams and sessions, answer 405).
//!
//! `/mcp` is not an operation of the route table (`routes::table`) nor of the OpenAPI document:
//! it speaks JSON-RPC, not REST, and its tools are described by MCP's own `tools/list`.
//! `routes::router` mounts it next to the table's routes, under the same layers (request id,
//! CORS, panic guard).

mod answer;
mod call;
mod pay;
mod resources;
mod server;
mod tools;

use crate::{extract::MAX_BODY_BYTES, state::AppState};
use axum::http::Uri;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};
use std::sync::Arc;

pub use grove_common::catalog::paths::MCP as PATH;

/// The service mounted at [`PATH`].
pub fn service(state: AppState) -> StreamableHttpService<server::GroveMcp, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(allowed_hosts(&state.config.public_base_url))
        // A request body as large as the HTTP API takes, plus room for the JSON-RPC envelope
        // and the payment in `_meta`.
        .with_max_request_body_bytes(MAX_BODY_BYTES + 64 * 1024);
    let handler = server::GroveMcp::new(state);
    StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// The `Host` values served: the public host (behind a proxy that keeps `Host`) and loopback.
/// Any other host gets 403, which stops DNS rebinding against a server run on a laptop.
fn allowed_hosts(public_base_url: &str) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Some(host) = public_base_url
        .parse::<Uri>()
        .ok()
        .and_then(|u| u.host().map(str::to_owned))
        && !hosts.contains(&host)
    {
        hosts.push(host);
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_host_is_allowed_on_any_port_besides_loopback() {
        assert_eq!(
            allowed_hosts("https://grove.example.com"),
            ["localhost", "127.0.0.1", "::1", "grove.example.com"]
        );
        assert_eq!(
            allowed_hosts("http://localhost:8080"),
            ["localhost", "127.0.0.1", "::1"]
        );
    }
}
