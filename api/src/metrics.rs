//! Prometheus metrics an operator would graph: calls by mode and outcome, settlements, payment
//! refusals, job latency (enqueue to outcome, as the API sees it), queue depth, and the
//! providers' health gates (open or not, and the requests each refused).

use grove_common::{health::GateView, jobs::SweepStats};
use std::{collections::BTreeMap, fmt::Write, sync::Mutex, time::Duration};

const LATENCY_BUCKETS_S: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

#[derive(Default)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS_S.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Inner {
    calls: BTreeMap<(String, String), u64>,
    settlements: BTreeMap<String, u64>,
    payment_refusals: BTreeMap<String, u64>,
    rate_limited: BTreeMap<&'static str, u64>,
    gate_refusals: BTreeMap<String, u64>,
    /// Unpaid coaching requests answered 503 `over_capacity` (`paid::admission`).
    over_capacity: u64,
    job_latency: Histogram,
}

#[derive(Default)]
pub struct Metrics(Mutex<Inner>);

/// The queue as read at scrape time.
pub struct QueueGauges {
    /// Ready, scheduled and held jobs per queue (None: in-process queue, or Redis unreadable).
    pub stats: Option<Vec<grove_common::queue::QueueStats>>,
    /// Live consumers per queue (None: in-process queue, or Redis unreadable).
    pub consumers: Option<Vec<(&'static str, u64)>>,
    /// Settled calls whose failed push is being retried.
    pub push_retries: usize,
    /// What admission reads: the workers' coaching load, and the calls ahead of a new one
    /// (`paid::admission`).
    pub admission: (grove_common::load::Load, u64),
}

impl Metrics {
    fn with(&self, f: impl FnOnce(&mut Inner)) {
        if let Ok(mut inner) = self.0.lock() {
            f(&mut inner);
        }
    }

    pub fn call_outcome(&self, mode: Option<&str>, outcome: &str) {
        let key = (
            mode.unwrap_or("review_request").to_owned(),
            outcome.to_owned(),
        );
        self.with(|m| *m.calls.entry(key).or_default() += 1);
    }

    pub fn settlement(&self, result: &str) {
        self.with(|m| *m.settlements.entry(result.to_owned()).or_default() += 1);
    }

    pub fn payment_rejected(&self, reason: &str) {
        self.with(|m| *m.payment_refusals.entry(reason.to_owned()).or_default() += 1);
    }

    /// A request refused by a rate limit (`ip`, `payer` or `bad_payments`).
    pub fn rate_limited(&self, limit: &'static str) {
        self.with(|m| *m.rate_limited.entry(limit).or_default() += 1);
    }

    /// A request answered 503 instead of a price because `provider`'s health gate was open.
    pub fn over_capacity(&self) {
        self.with(|m| m.over_capacity += 1);
    }

    pub fn gate_refusal(&self, provider: &str) {
        self.with(|m| *m.gate_refusals.entry(provider.to_owned()).or_default() += 1);
    }

    pub fn job_latency(&self, elapsed: Duration) {
        let s = elapsed.as_secs_f64();
        self.with(|m| {
            let h = &mut m.job_latency;
            h.count += 1;
            h.sum += s;
            for (i, le) in LATENCY_BUCKETS_S.iter().enumerate() {
                if s <= *le {
                    h.buckets[i] += 1;
                }
            }
        });
    }

    /// Prometheus text exposition format.
    pub fn render(
        &self,
        queue: &QueueGauges,
        sweeps: Option<&SweepStats>,
        gates: &[GateView],
    ) -> String {
        let mut out = String::new();
        let Ok(m) = self.0.lock() else { return out };
        let _ = writeln!(
            out,
            "# HELP grove_calls_total Paid calls by mode and outcome.\n# TYPE grove_calls_total counter"
        );
        for ((mode, outcome), n) in &m.calls {
            let _ = writeln!(
                out,
                "grove_calls_total{{mode=\"{mode}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP grove_settlements_total Settlement results.\n# TYPE grove_settlements_total counter"
        );
        for (result, n) in &m.settlements {
            let _ = writeln!(out, "grove_settlements_total{{result=\"{result}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP grove_payment_refusals_total Payments refused before settlement, by reason.\n# TYPE grove_payment_refusals_total counter"
        );
        for (reason, n) in &m.payment_refusals {
            let _ = writeln!(
                out,
                "grove_payment_refusals_total{{reason=\"{reason}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP grove_rate_limited_total Requests refused by a rate limit, by limit.\n# TYPE grove_rate_limited_total counter"
        );
        for (limit, n) in &m.rate_limited {
            let _ = writeln!(out, "grove_rate_limited_total{{limit=\"{limit}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP grove_over_capacity_total Unpaid coaching requests answered 503 instead of a price because the calls ahead would not finish within the deadline.\n# TYPE grove_over_capacity_total counter\ngrove_over_capacity_total {}",
            m.over_capacity
        );
        let _ = writeln!(
            out,
            "# HELP grove_gate_refusals_total Requests answered 503 instead of a price because their provider's health gate was open, by provider.\n# TYPE grove_gate_refusals_total counter"
        );
        for g in gates {
            let n = m.gate_refusals.get(&g.provider).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "grove_gate_refusals_total{{provider=\"{}\"}} {n}",
                label(&g.provider)
            );
        }
        let _ = writeln!(
            out,
            "# HELP grove_provider_gate_open 1 while a provider's health gate is open (or half-open): its paid work is not priced.\n# TYPE grove_provider_gate_open gauge"
        );
        for g in gates {
            let _ = writeln!(
                out,
                "grove_provider_gate_open{{provider=\"{}\"}} {}",
                label(&g.provider),
                u8::from(!g.admits())
            );
        }
        let h = &m.job_latency;
        let _ = writeln!(
            out,
            "# HELP grove_job_latency_seconds Time from enqueue to the job's outcome.\n# TYPE grove_job_latency_seconds histogram"
        );
        for (i, le) in LATENCY_BUCKETS_S.iter().enumerate() {
            let _ = writeln!(
                out,
                "grove_job_latency_seconds_bucket{{le=\"{le}\"}} {}",
                h.buckets[i]
            );
        }
        let _ = writeln!(
            out,
            "grove_job_latency_seconds_bucket{{le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(
            out,
            "grove_job_latency_seconds_sum {}\ngrove_job_latency_seconds_count {}",
            h.sum, h.count
        );
        if let Some(stats) = &queue.stats {
            // Separate gauges, each labelled by queue: a delayed follow-up is no work for a
            // worker yet, so only `ready` (and what workers hold) is a scaling signal.
            for (name, help, value) in [
                (
                    "grove_queue_ready_jobs",
                    "Jobs that could run now and wait for a worker, by queue.",
                    (|s: &grove_common::queue::QueueStats| s.ready) as fn(&_) -> u64,
                ),
                (
                    "grove_queue_scheduled_jobs",
                    "Delayed jobs not due yet, by queue.",
                    |s| s.scheduled,
                ),
                (
                    "grove_queue_held_jobs",
                    "Jobs workers took and have not finished, by queue.",
                    |s| s.held,
                ),
                (
                    "grove_queue_backlog",
                    "Ready plus held jobs, by queue: what the worker autoscaler divides by one worker's concurrency.",
                    |s| s.backlog(),
                ),
            ] {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
                for s in stats {
                    let _ = writeln!(out, "{name}{{queue=\"{}\"}} {}", s.queue, value(s));
                }
            }
        }
        if let Some(consumers) = &queue.consumers {
            let _ = writeln!(
                out,
                "# HELP grove_queue_consumers Worker consumers with a recent heartbeat, by queue.\n# TYPE grove_queue_consumers gauge"
            );
            for (name, n) in consumers {
                let _ = writeln!(out, "grove_queue_consumers{{queue=\"{name}\"}} {n}");
            }
        }
        let (load, ahead) = &queue.admission;
        let _ = writeln!(
            out,
            "# HELP grove_admission_capacity Coaching jobs the workers run at once, as admission sees them.\n# TYPE grove_admission_capacity gauge\ngrove_admission_capacity {}\n# HELP grove_admission_ahead Coaching calls ahead of a new one: held by the workers, queued, being settled, or quoted a price moments ago.\n# TYPE grove_admission_ahead gauge\ngrove_admission_ahead {ahead}\n# HELP grove_admission_completions_per_second Coaching runs finished per second over the last minute.\n# TYPE grove_admission_completions_per_second gauge\ngrove_admission_completions_per_second {}",
            load.capacity,
            load.completions_per_s()
        );
        if let Some(service) = load.service_time() {
            let _ = writeln!(
                out,
                "# HELP grove_admission_service_seconds Mean time of one coaching run over the last minute.\n# TYPE grove_admission_service_seconds gauge\ngrove_admission_service_seconds {}",
                service.as_secs_f64()
            );
        }
        let _ = writeln!(
            out,
            "# HELP grove_push_retries Settled calls whose failed push is being retried.\n# TYPE grove_push_retries gauge\ngrove_push_retries {}",
            queue.push_retries
        );
        if let Some(s) = sweeps {
            let _ = writeln!(
                out,
                "# HELP grove_review_sweeps_total Completed passes of the review sweeper.\n# TYPE grove_review_sweeps_total counter\ngrove_review_sweeps_total {}",
                s.passes()
            );
            let _ = writeln!(
                out,
                "# HELP grove_review_sweep_actions_total Due review jobs the sweeper pushed or requests it moved.\n# TYPE grove_review_sweep_actions_total counter\ngrove_review_sweep_actions_total {}",
                s.actions()
            );
            let _ = writeln!(
                out,
                "# HELP grove_review_sweep_last_success_timestamp_seconds When the last completed sweep pass started.\n# TYPE grove_review_sweep_last_success_timestamp_seconds gauge\ngrove_review_sweep_last_success_timestamp_seconds {}",
                s.last_pass_at()
            );
        }
        out
    }
}

/// A label value as Prometheus' text format writes it (a model name is the operator's text).
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
