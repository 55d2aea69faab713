//! What a node's answer to `eth_sendRawTransaction` says about our transaction: the node holds
//! it, the nonce is taken, it was definitely not taken (nothing sent: the operator's fault, never
//! the payer's), or we cannot tell. The table in docs/settlement.md ("Sending a settlement")
//! lists these rows with their tests.
//!
//! Only an answer the node wrote about this transaction, or a failure before the request left
//! this process, proves "not sent". A timeout, a dropped connection after the request was written,
//! a 5xx or an unreadable answer may hide an accepted transaction: unknown, and followed.

use crate::x402::settle::not_sent;
use alloy_provider::transport::{RpcError, TransportError, TransportErrorKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SendAnswer {
    /// Accepted now, or already in the node's pool ("already known").
    Holds,
    /// The nonce is used (mined) or held by a pending transaction from another sender of the
    /// key: the transaction was not taken; a fresh nonce may be.
    NonceTaken,
    /// Definitely not taken, for this reason (`settle::not_sent`).
    NotSent(&'static str),
    /// It may have reached the node.
    Unknown,
}

/// Reads the error of a send; `Ok` is `Holds`.
pub(super) fn classify(e: &TransportError) -> SendAnswer {
    match e {
        RpcError::ErrorResp(payload) => classify_message(payload.code, &payload.message),
        // We could not even write the request.
        RpcError::SerError(_) | RpcError::UnsupportedFeature(_) | RpcError::LocalUsageError(_) => {
            SendAnswer::NotSent(not_sent::NODE_REFUSED)
        }
        RpcError::Transport(kind) => classify_transport(kind),
        _ => SendAnswer::Unknown,
    }
}

/// A JSON-RPC error answer: the node (or the provider in front of it) refused this request.
pub(super) fn classify_message(code: i64, message: &str) -> SendAnswer {
    let m = message.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if already_has_it(&m) {
        SendAnswer::Holds
    } else if has(&[
        "nonce too low",
        "replacement transaction underpriced",
        "replacement fee too low",
    ]) {
        SendAnswer::NonceTaken
    } else if has(&["insufficient funds"]) {
        SendAnswer::NotSent(not_sent::SETTLER_OUT_OF_FUNDS)
    } else if code == -32005
        || code == 429
        || has(&[
            "rate limit",
            "too many requests",
            "limit exceeded",
            "exceeded the limit",
        ])
    {
        SendAnswer::NotSent(not_sent::RATE_LIMITED)
    } else if has(&[
        "base fee",
        "basefee",
        "fee cap",
        "feecap",
        "underpriced",
        "fee too low",
        "exceeds the configured cap",
    ]) {
        SendAnswer::NotSent(not_sent::FEE_ABOVE_CAP)
    } else {
        // The node answered and did not take it ("nonce too high", "intrinsic gas too low",
        // "txpool is full", "invalid sender"...): nothing is in its pool under our name.
        SendAnswer::NotSent(not_sent::NODE_REFUSED)
    }
}

fn classify_transport(kind: &TransportErrorKind) -> SendAnswer {
    if let Some(http) = kind.as_http_error() {
        return match http.status {
            429 => SendAnswer::NotSent(not_sent::RATE_LIMITED),
            // The endpoint refused the request itself (a bad API key, a blocked method).
            400..=499 => SendAnswer::NotSent(not_sent::NODE_REFUSED),
            // A gateway's 5xx may come after the node took it.
            _ => SendAnswer::Unknown,
        };
    }
    match kind {
        // No connection was made, so the request was never written.
        TransportErrorKind::Custom(err) => match err.downcast_ref::<reqwest::Error>() {
            Some(e) if e.is_connect() || e.is_builder() => {
                SendAnswer::NotSent(not_sent::NODE_REFUSED)
            }
            _ => SendAnswer::Unknown,
        },
        _ => SendAnswer::Unknown,
    }
}

/// Whether a node's refusal of a raw transaction means it already holds that very transaction
/// (geth and reth: "already known"; anvil: "transaction already imported").
pub(super) fn already_has_it(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("already known") || m.contains("already imported") || m.contains("known transaction")
}

#[cfg(test)]
mod tests {
    use super::*;
    use SendAnswer::*;

    /// The rows of docs/settlement.md's table, in the wording of geth, reth, anvil and hosted
    /// providers.
    #[test]
    fn node_answers_map_to_the_documented_outcomes() {
        for (code, message, expected) in [
            (-32000, "already known", Holds),
            (-32003, "transaction already imported", Holds),
            (
                -32000,
                "nonce too low: next nonce 7, tx nonce 5",
                NonceTaken,
            ),
            (-32000, "replacement transaction underpriced", NonceTaken),
            (
                -32003,
                "Insufficient funds for gas * price + value",
                NotSent(not_sent::SETTLER_OUT_OF_FUNDS),
            ),
            (
                -32000,
                "insufficient funds for gas * price + value: balance 0, tx cost 21000",
                NotSent(not_sent::SETTLER_OUT_OF_FUNDS),
            ),
            (
                -32003,
                "max fee per gas less than block base fee",
                NotSent(not_sent::FEE_ABOVE_CAP),
            ),
            (
                -32000,
                "transaction underpriced",
                NotSent(not_sent::FEE_ABOVE_CAP),
            ),
            (
                -32000,
                "tx fee (1.20 ether) exceeds the configured cap (1.00 ether)",
                NotSent(not_sent::FEE_ABOVE_CAP),
            ),
            (
                -32005,
                "request limit reached",
                NotSent(not_sent::RATE_LIMITED),
            ),
            (429, "Too Many Requests", NotSent(not_sent::RATE_LIMITED)),
            (
                -32000,
                "Your app has exceeded its compute units per second capacity: rate limit",
                NotSent(not_sent::RATE_LIMITED),
            ),
            (-32000, "nonce too high", NotSent(not_sent::NODE_REFUSED)),
            (
                -32000,
                "intrinsic gas too low",
                NotSent(not_sent::NODE_REFUSED),
            ),
        ] {
            assert_eq!(
                classify_message(code, message),
                expected,
                "{code} {message}"
            );
        }
    }

    #[test]
    fn transport_failures_are_unknown_unless_nothing_left_this_process() {
        assert_eq!(
            classify(&TransportErrorKind::http_error(429, String::new())),
            NotSent(not_sent::RATE_LIMITED)
        );
        assert_eq!(
            classify(&TransportErrorKind::http_error(401, "bad key".into())),
            NotSent(not_sent::NODE_REFUSED)
        );
        assert_eq!(
            classify(&TransportErrorKind::http_error(502, "bad gateway".into())),
            Unknown
        );
        assert_eq!(classify(&TransportErrorKind::backend_gone()), Unknown);
    }

    #[tokio::test]
    async fn a_refused_connection_sent_nothing_but_a_timeout_may_have() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let url = format!("http://{}", closed.local_addr().expect("addr"));
        drop(closed);
        let client = grove_common::http_client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let refused = client.post(&url).send().await.expect_err("nothing listens");
        assert_eq!(
            classify(&TransportErrorKind::custom(refused)),
            NotSent(not_sent::NODE_REFUSED)
        );

        // A server that reads the request and never answers: the request was written.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}", silent.local_addr().expect("addr"));
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = silent.accept().await {
                held.push(socket);
            }
        });
        let timed_out = client
            .post(&url)
            .body("{}")
            .timeout(std::time::Duration::from_millis(200))
            .send()
            .await
            .expect_err("no answer");
        assert_eq!(classify(&TransportErrorKind::custom(timed_out)), Unknown);
    }
}
