//! Request rate limits (`RATE_LIMIT_*`): per client address on the free and unpaid paths, per
//! payer on new paid calls, and per address on refused payment headers. Never on what a payer is
//! owed: a request carrying a payment skips the address limit (a payment retry, a paid repeat
//! waiting for its result), and a payer's limit counts only calls it would newly buy.
//!
//! The client's address is the connection's peer, or, behind a trusted proxy, the header it sets
//! (`CLIENT_IP_HEADER`, read `CLIENT_IP_HOPS` entries from the right, so a value the client wrote
//! itself is never believed). The HTTP layer that applies them is `crate::rate_limit`.

use axum::http::HeaderMap;
use governor::{
    DefaultKeyedRateLimiter, Quota, RateLimiter,
    clock::{Clock, DefaultClock},
};
use grove_common::config::{ClientIp, Rate, RateLimits};
use std::{
    collections::HashMap,
    hash::Hash,
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Paths no limit applies to: probes, metrics, and Twilio's signed webhooks (a burst of delivery
/// reports comes from a few of Twilio's addresses). `/mcp` is limited inside, where a tool call's
/// payment can be seen.
const EXEMPT: [&str; 6] = [
    "/healthz",
    "/readyz",
    "/metrics",
    "/metrics/",
    "/webhooks/",
    "/mcp",
];

/// Whether the HTTP layer limits requests to `path` (the OpenAPI document lists a 429 for them).
pub fn applies_to(path: &str) -> bool {
    !EXEMPT
        .iter()
        .any(|p| path == *p || (p.ends_with('/') && path.starts_with(p)))
}

/// Set on a response whose payment header was refused, so the address is charged for it.
#[derive(Clone, Copy, Debug)]
pub struct PaymentRefused;

pub struct Limits {
    per_ip: Option<DefaultKeyedRateLimiter<IpAddr>>,
    per_payer: Option<DefaultKeyedRateLimiter<String>>,
    bad_payments: Option<DefaultKeyedRateLimiter<IpAddr>>,
    /// Addresses over their refused-payment budget, and until when: their payment headers are
    /// refused before they are verified.
    blocked: Mutex<HashMap<IpAddr, Instant>>,
    client_ip: ClientIp,
}

fn limiter<K: Hash + Eq + Clone>(rate: Option<Rate>) -> Option<DefaultKeyedRateLimiter<K>> {
    rate.map(|r| {
        let quota = Quota::per_minute(r.per_minute).allow_burst(r.burst);
        RateLimiter::keyed(quota)
    })
}

/// Whole seconds to wait, at least one.
fn retry_after(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

impl Limits {
    pub fn new(config: &RateLimits) -> Self {
        Self {
            per_ip: limiter(config.per_ip),
            per_payer: limiter(config.per_payer),
            bad_payments: limiter(config.bad_payments),
            blocked: Mutex::default(),
            client_ip: config.client_ip.clone(),
        }
    }

    /// The client's address: the trusted header's entry `hops` from the right when the header
    /// is configured and present, else the peer's. `None` for loopback, which is never limited.
    pub fn client_ip(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Option<IpAddr> {
        let from_header = match &self.client_ip {
            ClientIp::Peer => None,
            ClientIp::Header { name, hops } => headers
                .get(name.as_str())
                .and_then(|v| v.to_str().ok())
                .and_then(|value| {
                    let entries: Vec<&str> = value.split(',').map(str::trim).collect();
                    let i = entries.len().checked_sub(*hops)?;
                    entries[i].parse().ok()
                }),
        };
        from_header.or(peer).filter(|ip| !ip.is_loopback())
    }

    /// One more free or unpaid request from `ip`: `Err` with the seconds to wait.
    pub(crate) fn check_ip(&self, ip: IpAddr) -> Result<(), u64> {
        check(self.per_ip.as_ref(), &ip)
    }

    /// A new paid call by `payer`: `Err` with the seconds to wait.
    pub fn check_payer(&self, payer: &str) -> Result<(), u64> {
        check(self.per_payer.as_ref(), &payer.to_owned())
    }

    pub(crate) fn blocked_for(&self, ip: IpAddr) -> Option<u64> {
        let blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        let until = *blocked.get(&ip)?;
        let left = until.checked_duration_since(Instant::now())?;
        Some(retry_after(left))
    }

    pub(crate) fn payment_refused(&self, ip: IpAddr) {
        if let Err(wait) = check(self.bad_payments.as_ref(), &ip) {
            let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
            blocked.insert(ip, Instant::now() + Duration::from_secs(wait));
        }
    }

    /// Forgets addresses and payers whose budget is whole again, so memory follows the clients
    /// of the last minute, not every client ever seen.
    pub fn forget_idle(&self) {
        for l in [&self.per_ip, &self.bad_payments].into_iter().flatten() {
            l.retain_recent();
        }
        if let Some(l) = &self.per_payer {
            l.retain_recent();
        }
        let now = Instant::now();
        self.blocked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, until| *until > now);
    }
}

fn check<K: Hash + Eq + Clone>(
    limiter: Option<&DefaultKeyedRateLimiter<K>>,
    key: &K,
) -> Result<(), u64> {
    let Some(limiter) = limiter else {
        return Ok(());
    };
    limiter
        .check_key(key)
        .map_err(|not_until| retry_after(not_until.wait_time_from(DefaultClock::default().now())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    fn limits(client_ip: ClientIp) -> Limits {
        let rate = Rate {
            per_minute: NonZeroU32::new(60).expect("non-zero"),
            burst: NonZeroU32::new(2).expect("non-zero"),
        };
        Limits::new(&RateLimits {
            per_ip: Some(rate),
            per_payer: Some(rate),
            bad_payments: Some(rate),
            client_ip,
        })
    }

    #[test]
    fn a_proxy_header_is_read_from_the_right_and_only_when_configured() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "6.6.6.6, 203.0.113.7".parse().expect("value"),
        );
        let peer: IpAddr = "10.0.0.1".parse().expect("ip");
        let header = |hops| {
            limits(ClientIp::Header {
                name: "x-forwarded-for".into(),
                hops,
            })
        };
        assert_eq!(
            limits(ClientIp::Peer).client_ip(&headers, Some(peer)),
            Some(peer)
        );
        assert_eq!(
            header(1).client_ip(&headers, Some(peer)),
            "203.0.113.7".parse().ok()
        );
        assert_eq!(
            header(2).client_ip(&headers, Some(peer)),
            "6.6.6.6".parse().ok()
        );
        // Fewer entries than hops, or no header: the peer.
        assert_eq!(header(3).client_ip(&headers, Some(peer)), Some(peer));
        assert_eq!(
            header(1).client_ip(&HeaderMap::new(), Some(peer)),
            Some(peer)
        );
        // Loopback is never limited.
        let local: IpAddr = "127.0.0.1".parse().expect("ip");
        assert_eq!(
            limits(ClientIp::Peer).client_ip(&headers, Some(local)),
            None
        );
    }

    #[test]
    fn a_burst_is_served_then_refused_with_a_wait_and_keys_are_apart() {
        let l = limits(ClientIp::Peer);
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        let b: IpAddr = "192.0.2.2".parse().expect("ip");
        assert_eq!(l.check_ip(a), Ok(()));
        assert_eq!(l.check_ip(a), Ok(()));
        let wait = l.check_ip(a).expect_err("over the burst");
        assert!((1..=2).contains(&wait), "{wait}");
        assert_eq!(l.check_ip(b), Ok(()));
        assert_eq!(l.check_payer("0xabc"), Ok(()));
    }

    #[test]
    fn refused_payments_past_their_budget_block_the_address() {
        let l = limits(ClientIp::Peer);
        let a: IpAddr = "192.0.2.9".parse().expect("ip");
        assert_eq!(l.blocked_for(a), None);
        for _ in 0..3 {
            l.payment_refused(a);
        }
        assert!(l.blocked_for(a).is_some());
    }
}
