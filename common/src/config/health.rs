//! The providers' health gates (`grove_common::health`): `HEALTH_WINDOW_S`, `HEALTH_FAILURES`,
//! `HEALTH_PROBE_S`, `HEALTH_PROBE_MAX_S`.

use super::{ConfigError, count_between, invalid, parse_or};
use std::time::Duration;

/// When a gate opens and how it is probed (the argument for each default is in
/// `docs/provider-health.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HealthPolicy {
    /// `HEALTH_WINDOW_S`: how far back one process counts a provider's outcomes.
    pub window: Duration,
    /// `HEALTH_FAILURES`: failed calls within the window that open the gate, when they are
    /// also at least as many as the calls that succeeded in it.
    pub failures: u32,
    /// `HEALTH_PROBE_S`: the first probe after the gate opens; each failed probe doubles it.
    pub probe_after: Duration,
    /// `HEALTH_PROBE_MAX_S`: the longest pause between two probes.
    pub probe_max: Duration,
}

impl Default for HealthPolicy {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(30),
            failures: 5,
            probe_after: Duration::from_secs(5),
            probe_max: Duration::from_secs(15),
        }
    }
}

pub(super) fn read(var: &impl Fn(&str) -> Option<String>) -> Result<HealthPolicy, ConfigError> {
    let d = HealthPolicy::default();
    let window_s: u64 = count_between(
        "HEALTH_WINDOW_S",
        var("HEALTH_WINDOW_S"),
        d.window.as_secs(),
        3600,
    )?;
    let failures: u32 = count_between("HEALTH_FAILURES", var("HEALTH_FAILURES"), d.failures, 1000)?;
    let probe_s: u64 = count_between(
        "HEALTH_PROBE_S",
        var("HEALTH_PROBE_S"),
        d.probe_after.as_secs(),
        3600,
    )?;
    let max_default = d.probe_max.as_secs().max(probe_s).to_string();
    let probe_max_s: u64 = parse_or(
        "HEALTH_PROBE_MAX_S",
        var("HEALTH_PROBE_MAX_S"),
        &max_default,
    )?;
    if probe_max_s < probe_s || probe_max_s > 3600 {
        return Err(invalid(
            "HEALTH_PROBE_MAX_S",
            "must be at least HEALTH_PROBE_S and at most 3600",
        ));
    }
    Ok(HealthPolicy {
        window: Duration::from_secs(window_s),
        failures,
        probe_after: Duration::from_secs(probe_s),
        probe_max: Duration::from_secs(probe_max_s),
    })
}
