//! What the api records and shows on `/metrics`: calls by mode and outcome, settlements,
//! payment refusals, rate-limit and gate refusals, job latency (enqueue to outcome, as the api
//! sees it), HTTP requests (`crate::http_metrics`), and at scrape time the queues, the payments
//! needing attention, the providers' health gates and the process. The series and their names
//! live in `grove_common::metrics::catalog`; with the embedded worker, its model and SMS series
//! are in the same registry.

use grove_common::{
    db::payments::UnknownCounts,
    health::GateView,
    jobs::SweepStats,
    metrics::{Metrics as Registry, catalog as m},
};
use std::{sync::Arc, time::Duration};

/// The api's handle on its process's registry (shared with an embedded worker).
#[derive(Clone, Debug, Default)]
pub struct Metrics(Arc<Registry>);

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
    /// How long the oldest paid call's write has waited for a database batch
    /// (`paid::health::writes_keep_up`).
    pub write_wait: std::time::Duration,
}

impl Metrics {
    pub fn new(registry: Arc<Registry>) -> Self {
        Self(registry)
    }

    /// The registry itself, for what records beside the api (HTTP requests, an embedded worker).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.0
    }

    pub fn call_outcome(&self, mode: Option<&str>, outcome: &str) {
        let mode = mode.unwrap_or("review_request");
        self.0
            .count(m::CALLS, &[("mode", mode), ("outcome", outcome)], 1);
    }

    pub fn settlement(&self, result: &str) {
        self.0.count(m::SETTLEMENTS, &[("result", result)], 1);
    }

    pub fn payment_rejected(&self, reason: &str) {
        self.0.count(m::PAYMENT_REFUSALS, &[("reason", reason)], 1);
    }

    /// A request refused by a rate limit (`ip`, `payer` or `bad_payments`).
    pub fn rate_limited(&self, limit: &'static str) {
        self.0.count(m::RATE_LIMITED, &[("limit", limit)], 1);
    }

    /// An unpaid coaching request answered 503 `over_capacity` (`paid::admission`).
    pub fn over_capacity(&self) {
        self.0.count(m::OVER_CAPACITY, &[], 1);
    }

    /// A request answered 503 instead of a price because `provider`'s health gate was open.
    pub fn gate_refusal(&self, provider: &str) {
        self.0.count(m::GATE_REFUSALS, &[("provider", provider)], 1);
    }

    /// A Twilio delivery report (`MessageStatus`, and `ErrorCode` when it has one).
    pub fn sms_status(&self, status: &str, error_code: Option<&str>) {
        let code = error_code.unwrap_or("none");
        self.0.count(
            m::SMS_STATUS,
            &[("status", status), ("error_code", code)],
            1,
        );
    }

    pub fn job_latency(&self, elapsed: Duration) {
        self.0.observe(m::JOB_LATENCY, &[], elapsed);
    }

    /// Prometheus text exposition format, with the figures read at scrape time.
    pub fn render(
        &self,
        queue: &QueueGauges,
        sweeps: Option<&SweepStats>,
        gates: &[GateView],
        payments: Option<UnknownCounts>,
    ) -> String {
        let r = &self.0;
        // Registered at zero, so "never refused" is a series an alert can compare.
        r.count(m::OVER_CAPACITY, &[], 0);
        for g in gates {
            let provider = g.provider.as_str();
            // Registered at zero, so "no refusals" is a series, not an absence.
            r.count(m::GATE_REFUSALS, &[("provider", provider)], 0);
            let open = if g.admits() { 0.0 } else { 1.0 };
            r.gauge(m::GATE_OPEN, &[("provider", provider)], open);
        }
        // Separate gauges, each labelled by queue: a delayed follow-up is no work for a worker
        // yet, so only `ready` (and what workers hold) is a scaling signal.
        for s in queue.stats.iter().flatten() {
            let q = [("queue", s.queue)];
            r.gauge(m::QUEUE_READY, &q, s.ready as f64);
            r.gauge(m::QUEUE_SCHEDULED, &q, s.scheduled as f64);
            r.gauge(m::QUEUE_HELD, &q, s.held as f64);
            r.gauge(m::QUEUE_BACKLOG, &q, s.backlog() as f64);
        }
        for (name, n) in queue.consumers.iter().flatten() {
            r.gauge(m::QUEUE_CONSUMERS, &[("queue", name)], *n as f64);
        }
        r.gauge(m::PUSH_RETRIES, &[], queue.push_retries as f64);
        let (load, ahead) = &queue.admission;
        r.gauge(m::ADMISSION_CAPACITY, &[], load.capacity as f64);
        r.gauge(m::ADMISSION_AHEAD, &[], *ahead as f64);
        r.gauge(m::ADMISSION_COMPLETIONS, &[], load.completions_per_s());
        r.gauge(m::ADMISSION_WRITE_WAIT, &[], queue.write_wait.as_secs_f64());
        if let Some(service) = load.service_time() {
            r.gauge(m::ADMISSION_SERVICE, &[], service.as_secs_f64());
        }
        if let Some(p) = payments {
            r.gauge(m::PAYMENTS_UNKNOWN, &[], p.unknown as f64);
            r.gauge(m::PAYMENTS_SET_ASIDE, &[], p.set_aside as f64);
        }
        if let Some(s) = sweeps {
            r.count_total(m::SWEEPS, &[], s.passes());
            r.count_total(m::SWEEP_ACTIONS, &[], s.actions());
            r.gauge(m::SWEEP_LAST_SUCCESS, &[], s.last_pass_at() as f64);
        }
        r.render()
    }
}
