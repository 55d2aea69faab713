//! Who settles payments (`X402_SETTLEMENT`) and what our own settlement needs: a Base RPC
//! endpoint (`BASE_RPC_URL`), the key that pays for gas (`SETTLER_PRIVATE_KEY`), how long a
//! settlement may wait for its receipt (`X402_SETTLE_TIMEOUT_S`), the most it pays per unit of gas
//! (`SETTLER_MAX_FEE_GWEI`), when a pending transaction is replaced (`SETTLER_REPLACE_AFTER_S`) and
//! how deep its receipt must be before the work is delivered (`SETTLEMENT_CONFIRMATIONS`); the
//! reasons are in docs/settlement.md.
//!
//! `BASE_RPC_URL` is read in both modes: with a facilitator it lets reconciliation read USDC's
//! `authorizationState` directly. RPC URLs often carry a provider's API key, so it is a secret.
//! With `APP_ENV=production` it is required, over https, in both modes: without a chain, an
//! unknown settlement can never be decided (docs/settlement.md).
//!
//! How deep a transfer must be before it counts (`SETTLEMENT_CONFIRMATIONS`) and how old the
//! RPC's head may be before its answers are "we do not know" (`BASE_RPC_MAX_HEAD_AGE_S`) are
//! argued in docs/settlement.md.

use super::{ConfigError, Secret, invalid, parse_or};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettlementMode {
    /// An x402 facilitator settles (`X402_FACILITATOR_URL`); without one, payments are verified
    /// locally and recorded unsettled (development only).
    Facilitator,
    /// Grove submits USDC's `transferWithAuthorization` itself (`X402_SETTLEMENT=self`).
    SelfHosted,
}

#[derive(Clone, Debug)]
pub struct SettlementConfig {
    pub mode: SettlementMode,
    pub base_rpc_url: Option<Secret>,
    /// 32 bytes of hex; checked at start-up, never printed.
    pub settler_private_key: Option<Secret>,
    /// How long our own settlement waits for a receipt before the outcome is unknown.
    pub timeout: Duration,
    /// The highest `maxFeePerGas` a settlement transaction is signed with, in wei: while the base
    /// fee is above it nothing is sent (503, the payment released).
    pub max_fee_wei: u128,
    /// How long a sent transaction may stay pending before it is replaced at the same nonce with
    /// higher fees.
    pub replace_after: Duration,
    /// Blocks a receipt must be deep (its own block counts as one) before the payment counts as
    /// settled.
    pub confirmations: u64,
    /// An RPC whose latest block is older than this (by our wall clock) decides nothing
    /// (`BASE_RPC_MAX_HEAD_AGE_S`).
    pub max_head_age: Duration,
}

/// `SETTLER_MAX_FEE_GWEI`'s default: on Base a settlement uses about 90 000 gas, so 0.5 gwei is at
/// most about 0.000045 ETH of gas, the price of the cheapest call at ETH ~ 3 000 USD, while Base's
/// base fee is usually below 0.05 gwei.
pub const DEFAULT_MAX_FEE_GWEI: &str = "0.5";

pub(super) fn read(var: &impl Fn(&str) -> Option<String>) -> Result<SettlementConfig, ConfigError> {
    let mode = match var("X402_SETTLEMENT").as_deref() {
        None | Some("facilitator") => SettlementMode::Facilitator,
        Some("self") => SettlementMode::SelfHosted,
        Some(other) => {
            return Err(invalid(
                "X402_SETTLEMENT",
                format!("expected facilitator or self, got {other:?}"),
            ));
        }
    };
    let base_rpc_url = var("BASE_RPC_URL");
    if let Some(url) = &base_rpc_url
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        // The value may embed an API key: the message does not quote it.
        return Err(invalid(
            "BASE_RPC_URL",
            "must start with https:// or http://",
        ));
    }
    let settler_private_key = var("SETTLER_PRIVATE_KEY");
    if let Some(key) = &settler_private_key
        && !is_private_key(key)
    {
        return Err(invalid(
            "SETTLER_PRIVATE_KEY",
            "expected a non-zero 32-byte hex private key (64 hex digits, 0x optional)",
        ));
    }
    let timeout_s: u64 = parse_or("X402_SETTLE_TIMEOUT_S", var("X402_SETTLE_TIMEOUT_S"), "30")?;
    if timeout_s == 0 || timeout_s > 300 {
        return Err(invalid(
            "X402_SETTLE_TIMEOUT_S",
            "must be between 1 and 300 seconds",
        ));
    }
    let max_fee_wei = parse_gwei(
        var("SETTLER_MAX_FEE_GWEI")
            .as_deref()
            .unwrap_or(DEFAULT_MAX_FEE_GWEI),
    )
    .ok_or_else(|| {
        invalid(
            "SETTLER_MAX_FEE_GWEI",
            "expected a positive number of gwei with at most 9 decimals, up to 1000 (e.g. 0.5)",
        )
    })?;
    let replace_after_s: u64 = parse_or(
        "SETTLER_REPLACE_AFTER_S",
        var("SETTLER_REPLACE_AFTER_S"),
        "10",
    )?;
    if replace_after_s == 0 || replace_after_s > 600 {
        return Err(invalid(
            "SETTLER_REPLACE_AFTER_S",
            "must be between 1 and 600 seconds",
        ));
    }
    let confirmations: u64 = parse_or(
        "SETTLEMENT_CONFIRMATIONS",
        var("SETTLEMENT_CONFIRMATIONS"),
        "2",
    )?;
    if confirmations == 0 || confirmations > 64 {
        return Err(invalid(
            "SETTLEMENT_CONFIRMATIONS",
            "must be between 1 (the receipt's own block) and 64",
        ));
    }
    let max_head_age_s = super::count_between(
        "BASE_RPC_MAX_HEAD_AGE_S",
        var("BASE_RPC_MAX_HEAD_AGE_S"),
        60,
        3_600,
    )?;
    if mode == SettlementMode::SelfHosted {
        if base_rpc_url.is_none() {
            return Err(invalid("BASE_RPC_URL", "X402_SETTLEMENT=self needs it"));
        }
        if settler_private_key.is_none() {
            return Err(invalid(
                "SETTLER_PRIVATE_KEY",
                "X402_SETTLEMENT=self needs it",
            ));
        }
    }
    Ok(SettlementConfig {
        mode,
        base_rpc_url: base_rpc_url.map(Secret::new),
        settler_private_key: settler_private_key.map(Secret::new),
        timeout: Duration::from_secs(timeout_s),
        max_fee_wei,
        replace_after: Duration::from_secs(replace_after_s),
        confirmations,
        max_head_age: Duration::from_secs(max_head_age_s),
    })
}

impl SettlementConfig {
    /// Production needs a chain to decide (issue 25): without one an unknown outcome can never
    /// be decided, and a "nonce used" answer cannot be told from a payer's cancellation. Checked
    /// after the other production refusals, so the first line names the first thing to fix.
    pub(super) fn refuse_without_a_chain(&self) -> Result<(), ConfigError> {
        match self.base_rpc_url.as_ref().map(Secret::expose) {
            None => Err(invalid(
                "BASE_RPC_URL",
                "APP_ENV=production needs a chain to decide settlements in both modes: set it to an https:// Base RPC endpoint",
            )),
            Some(url) if !url.starts_with("https://") => Err(invalid(
                "BASE_RPC_URL",
                "must be https:// with APP_ENV=production",
            )),
            Some(_) => Ok(()),
        }
    }
}

/// Gwei as written ("0.5", "2", "0.000000001") in wei; `None` unless positive, with at most 9
/// decimals (one wei) and at most 1000 gwei.
fn parse_gwei(s: &str) -> Option<u128> {
    let (whole, fraction) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty()
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 9
        || whole.len() > 4
    {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let fraction: u128 = format!("{fraction:0<9}").parse().ok()?;
    let wei = whole * 1_000_000_000 + fraction;
    (wei > 0 && wei <= 1_000 * 1_000_000_000).then_some(wei)
}

/// 64 hex digits (after an optional `0x`), not all zero. Whether the scalar is below the curve
/// order is left to the signer, which refuses it at start-up too.
fn is_private_key(s: &str) -> bool {
    let hex = s.strip_prefix("0x").unwrap_or(s);
    hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) && hex.bytes().any(|b| b != b'0')
}

#[cfg(test)]
mod tests {
    use super::super::{Config, ConfigError};
    use super::SettlementMode;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_map(&map)
    }

    const KEY: &str = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";

    #[test]
    fn the_facilitator_settles_by_default() {
        let c = config(&[]).expect("defaults parse");
        assert_eq!(c.settlement.mode, SettlementMode::Facilitator);
        assert_eq!(c.settlement.timeout.as_secs(), 30);
    }

    #[test]
    fn self_settlement_needs_an_rpc_url_and_a_key_everywhere() {
        let err = config(&[("X402_SETTLEMENT", "self"), ("SETTLER_PRIVATE_KEY", KEY)]).unwrap_err();
        assert!(err.to_string().starts_with("BASE_RPC_URL"), "{err}");
        let err = config(&[
            ("X402_SETTLEMENT", "self"),
            ("BASE_RPC_URL", "http://127.0.0.1:8545"),
        ])
        .unwrap_err();
        assert!(err.to_string().starts_with("SETTLER_PRIVATE_KEY"), "{err}");
        let c = config(&[
            ("X402_SETTLEMENT", "self"),
            ("BASE_RPC_URL", "http://127.0.0.1:8545"),
            ("SETTLER_PRIVATE_KEY", KEY),
            ("X402_SETTLE_TIMEOUT_S", "12"),
        ])
        .expect("a complete self-settlement configuration");
        assert_eq!(c.settlement.mode, SettlementMode::SelfHosted);
        assert_eq!(c.settlement.timeout.as_secs(), 12);
        assert!(!c.settles_locally());
    }

    #[test]
    fn fees_replacement_and_depth_have_defaults_and_read_gwei_as_written() {
        let c = config(&[]).expect("defaults parse");
        assert_eq!(c.settlement.max_fee_wei, 500_000_000);
        assert_eq!(c.settlement.replace_after.as_secs(), 10);
        assert_eq!(c.settlement.confirmations, 2);
        for (gwei, wei) in [
            ("2", 2_000_000_000),
            ("0.05", 50_000_000),
            (".5", 500_000_000),
            ("0.000000001", 1),
            ("1000", 1_000_000_000_000),
        ] {
            let c = config(&[("SETTLER_MAX_FEE_GWEI", gwei)]).expect(gwei);
            assert_eq!(c.settlement.max_fee_wei, wei, "{gwei}");
        }
        let c = config(&[
            ("SETTLER_REPLACE_AFTER_S", "4"),
            ("SETTLEMENT_CONFIRMATIONS", "1"),
        ])
        .expect("parses");
        assert_eq!(c.settlement.replace_after.as_secs(), 4);
        assert_eq!(c.settlement.confirmations, 1);
    }

    #[test]
    fn production_needs_an_https_rpc_in_both_modes() {
        let production = [
            ("APP_ENV", "production"),
            ("SMS_PROVIDER", "twilio"),
            ("TWILIO_ACCOUNT_SID", "AC1"),
            ("TWILIO_AUTH_TOKEN", "t"),
            ("TWILIO_FROM", "+15550100"),
            ("X402_FACILITATOR_URL", "https://facilitator.example"),
        ];
        for mode in [
            vec![],
            vec![("X402_SETTLEMENT", "self"), ("SETTLER_PRIVATE_KEY", KEY)],
        ] {
            let with = |rpc: Option<&'static str>| {
                let mut pairs = production.to_vec();
                pairs.extend(mode.iter().copied());
                pairs.extend(rpc.map(|url| ("BASE_RPC_URL", url)));
                config(&pairs)
            };
            let err = with(None).unwrap_err();
            assert!(
                matches!(
                    &err,
                    ConfigError::Invalid {
                        var: "BASE_RPC_URL",
                        ..
                    }
                ),
                "{err}"
            );
            let err = with(Some("http://rpc.example")).unwrap_err();
            assert!(
                matches!(
                    &err,
                    ConfigError::Invalid {
                        var: "BASE_RPC_URL",
                        ..
                    }
                ),
                "{err}"
            );
            let c = with(Some("https://rpc.example")).expect("production with an https RPC");
            assert_eq!(c.settlement.confirmations, 2);
            assert_eq!(c.settlement.max_head_age.as_secs(), 60);
        }
    }

    #[test]
    fn depth_and_head_age_are_bounded() {
        for (k, v) in [
            ("SETTLEMENT_CONFIRMATIONS", "0"),
            ("SETTLEMENT_CONFIRMATIONS", "65"),
            ("BASE_RPC_MAX_HEAD_AGE_S", "0"),
        ] {
            let err = config(&[(k, v)]).unwrap_err();
            assert!(err.to_string().starts_with(k), "{err}");
        }
    }

    #[test]
    fn a_malformed_key_names_its_variable_and_is_never_printed() {
        for bad in ["0x1234", "zz", &"0".repeat(64), &format!("{KEY}00")] {
            let err = config(&[("SETTLER_PRIVATE_KEY", bad)]).unwrap_err();
            assert!(err.to_string().starts_with("SETTLER_PRIVATE_KEY"), "{err}");
            assert!(!err.to_string().contains(bad), "{err}");
        }
        let c = config(&[("SETTLER_PRIVATE_KEY", KEY)]).expect("parses");
        assert!(!format!("{c:?}").contains(&KEY[2..]));
        for (k, v) in [
            ("X402_SETTLEMENT", "chain"),
            ("X402_SETTLE_TIMEOUT_S", "0"),
            ("SETTLER_MAX_FEE_GWEI", "0"),
            ("SETTLER_MAX_FEE_GWEI", "-1"),
            ("SETTLER_MAX_FEE_GWEI", "1e9"),
            ("SETTLER_MAX_FEE_GWEI", "0.0000000001"),
            ("SETTLER_MAX_FEE_GWEI", "1001"),
            ("SETTLER_REPLACE_AFTER_S", "0"),
            ("SETTLEMENT_CONFIRMATIONS", "0"),
            ("SETTLEMENT_CONFIRMATIONS", "65"),
        ] {
            let err = config(&[(k, v)]).unwrap_err();
            assert!(err.to_string().starts_with(k), "{err}");
        }
    }
}
