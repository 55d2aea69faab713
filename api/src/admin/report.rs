//! Revenue and counts by day and mode, calls by outcome, and latency percentiles, read from the
//! ledger (calls and payments) rather than from a process's counters: they are the same whichever
//! replica answers and survive restarts.
//!
//! Revenue is what settled on chain (`settled`); what was only verified locally (`unsettled`,
//! development) is counted apart, never as money. A call counts on the day (UTC) it was made,
//! under its mode (`review_request` for the action). Latency is a completed call's time from
//! being recorded to its result.

use crate::{error::ApiError, state::AppState};
use axum::{
    Json,
    extract::{Query, State},
};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use grove_common::{
    catalog::ModeId,
    db::entities::{call, payment},
    ledger::{CallKind, CallStatus, PaymentStatus},
    money::UsdcAmount,
    schema::Violation,
};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;

/// One mode's figures on one day (or over the whole window).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub calls: u64,
    /// Calls by their status (`completed`, `failed`, `unpaid`, `settling`, ...).
    pub outcomes: BTreeMap<String, u64>,
    /// Settled money, atomic USDC.
    pub revenue: u64,
    /// Verified locally and never settled (development), atomic USDC.
    pub unsettled: u64,
}

impl Figures {
    fn add(&mut self, status: CallStatus, payment: Option<&(PaymentStatus, u64)>) {
        self.calls += 1;
        *self.outcomes.entry(status.to_string()).or_default() += 1;
        match payment {
            Some((PaymentStatus::Settled, amount)) => self.revenue += amount,
            Some((PaymentStatus::Unsettled, amount)) => self.unsettled += amount,
            _ => {}
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "calls": self.calls,
            "outcomes": self.outcomes,
            "revenue_usd": UsdcAmount::from_atomic(self.revenue).decimal_usd(),
            "unsettled_usd": UsdcAmount::from_atomic(self.unsettled).decimal_usd(),
        })
    }
}

/// Latency percentiles of completed calls, in seconds (nearest rank).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latency {
    pub count: usize,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

impl Latency {
    pub fn of(mut seconds: Vec<f64>) -> Self {
        seconds.sort_by(f64::total_cmp);
        let rank = |p: f64| -> Option<f64> {
            if seconds.is_empty() {
                return None;
            }
            // Nearest rank: the smallest value with at least p of the values at or below it.
            let n = seconds.len() as f64;
            let i = ((p * n).ceil() as usize).clamp(1, seconds.len()) - 1;
            seconds.get(i).copied()
        };
        Self {
            count: seconds.len(),
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
        }
    }

    pub fn to_json(&self) -> Value {
        let r = |v: Option<f64>| v.map(|s| (s * 1000.0).round() / 1000.0);
        json!({"count": self.count, "p50": r(self.p50), "p90": r(self.p90), "p99": r(self.p99)})
    }
}

/// Everything since a moment: per day and mode, per mode, and latencies.
#[derive(Debug, Default)]
pub struct Summary {
    pub days: BTreeMap<NaiveDate, BTreeMap<String, Figures>>,
    pub modes: BTreeMap<String, Figures>,
    pub total: Figures,
    pub latency: Latency,
}

type CallRow = (
    Uuid,
    CallKind,
    Option<ModeId>,
    CallStatus,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

/// Reads the calls made since `since` and their payments, and sums them.
pub async fn summary(state: &AppState, since: DateTime<Utc>) -> Result<Summary, DbErr> {
    let calls: Vec<CallRow> = call::Entity::find()
        .select_only()
        .columns([
            call::Column::Id,
            call::Column::Kind,
            call::Column::Mode,
            call::Column::Status,
            call::Column::CreatedAt,
            call::Column::CompletedAt,
        ])
        .filter(call::Column::CreatedAt.gte(since))
        .into_tuple()
        .all(&state.db)
        .await?;
    // A payment is recorded in the call's own transaction: the same window finds it.
    let payments: HashMap<Uuid, (PaymentStatus, u64)> = payment::Entity::find()
        .select_only()
        .columns([
            payment::Column::CallId,
            payment::Column::Status,
            payment::Column::Amount,
        ])
        .filter(payment::Column::CreatedAt.gte(since - Duration::minutes(1)))
        .into_tuple::<(Uuid, PaymentStatus, String)>()
        .all(&state.db)
        .await?
        .into_iter()
        .map(|(id, status, amount)| (id, (status, amount.parse().unwrap_or(0))))
        .collect();
    let mut s = Summary::default();
    let mut latencies = Vec::new();
    for (id, kind, mode, status, created_at, completed_at) in calls {
        let mode = mode.map_or_else(|| kind.to_string(), |m| m.as_str().to_owned());
        let paid = payments.get(&id);
        s.days
            .entry(created_at.date_naive())
            .or_default()
            .entry(mode.clone())
            .or_default()
            .add(status, paid);
        s.modes.entry(mode).or_default().add(status, paid);
        s.total.add(status, paid);
        if status == CallStatus::Completed
            && let Some(done) = completed_at
        {
            latencies.push((done - created_at).as_seconds_f64().max(0.0));
        }
    }
    s.latency = Latency::of(latencies);
    Ok(s)
}

impl Summary {
    pub fn to_json(&self, since: DateTime<Utc>) -> Value {
        let days: Vec<Value> = self
            .days
            .iter()
            .map(|(date, modes)| {
                let mut day = Figures::default();
                for f in modes.values() {
                    day.calls += f.calls;
                    day.revenue += f.revenue;
                    day.unsettled += f.unsettled;
                    for (o, n) in &f.outcomes {
                        *day.outcomes.entry(o.clone()).or_default() += n;
                    }
                }
                let mut v = day.to_json();
                v["date"] = json!(date.to_string());
                v["modes"] = modes
                    .iter()
                    .map(|(m, f)| (m.clone(), f.to_json()))
                    .collect();
                v
            })
            .collect();
        json!({
            "since": since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "total": self.total.to_json(),
            "modes": self.modes.iter().map(|(m, f)| (m.clone(), f.to_json())).collect::<serde_json::Map<_, _>>(),
            "days": days,
            "latency_s": self.latency.to_json(),
        })
    }
}

/// The start of the window of the last `days` days, today included (UTC midnight).
pub fn window_start(now: DateTime<Utc>, days: i64) -> DateTime<Utc> {
    let today = now.date_naive();
    let first = today - Duration::days(days - 1);
    first.and_hms_opt(0, 0, 0).map_or(now, |t| t.and_utc())
}

/// `GET /admin/v1/report?days=N` (1-366, default 30): revenue and counts by day and mode.
pub(super) async fn get(
    State(state): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let days = match q.get("days").map(|d| d.parse::<i64>()) {
        None => 30,
        Some(Ok(d)) if (1..=366).contains(&d) => d,
        Some(_) => {
            return Err(ApiError::Validation(vec![Violation::new(
                "/query/days",
                "must be a whole number of days from 1 to 366",
            )]));
        }
    };
    let since = window_start(state.clock.wall(), days);
    Ok(Json(summary(&state, since).await?.to_json(since)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let l = Latency::of((1..=100).map(f64::from).rev().collect());
        assert_eq!(
            (l.count, l.p50, l.p90, l.p99),
            (100, Some(50.0), Some(90.0), Some(99.0))
        );
        let one = Latency::of(vec![2.5]);
        assert_eq!((one.p50, one.p99), (Some(2.5), Some(2.5)));
        assert_eq!(Latency::of(vec![]).p50, None);
    }

    #[test]
    fn revenue_counts_settled_money_only() {
        let mut f = Figures::default();
        use {CallStatus as C, PaymentStatus as P};
        f.add(C::Completed, Some(&(P::Settled, 180_000)));
        f.add(C::Completed, Some(&(P::Unsettled, 250_000)));
        f.add(C::Unpaid, Some(&(P::Refused, 180_000)));
        f.add(C::Settling, Some(&(P::Unknown, 180_000)));
        assert_eq!((f.calls, f.revenue, f.unsettled), (4, 180_000, 250_000));
        assert_eq!(f.to_json()["revenue_usd"], "0.18");
        assert_eq!(f.outcomes["completed"], 2);
    }

    #[test]
    fn the_window_starts_at_midnight_days_ago() {
        let now: DateTime<Utc> = "2026-11-27T15:30:00Z".parse().expect("time");
        assert_eq!(
            window_start(now, 1).to_rfc3339(),
            "2026-11-27T00:00:00+00:00"
        );
        assert_eq!(
            window_start(now, 30).to_rfc3339(),
            "2026-10-29T00:00:00+00:00"
        );
    }
}
