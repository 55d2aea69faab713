//! Prometheus metrics, recorded through the `metrics` facade into one
//! `metrics-exporter-prometheus` recorder per process (per app in tests, which start several in
//! one process: each owns its `Metrics`, none is installed globally). The exporter writes the
//! text format, label values escaped (a model name is the operator's text).
//!
//! Every series is named once, in [`catalog::ALL`], with its type and help; `docs/operations.md`
//! lists the same names, and the alert rules in `deploy/` may use no other.

pub mod catalog;
mod process;

use catalog::Kind;
use metrics::{Key, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use std::time::Duration;

pub use process::ProcessStats;

/// Latency buckets (seconds): from a 5 ms free endpoint to a 60 s model answer.
const LATENCY_BUCKETS_S: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The recorder's callsite, which the exporter ignores (it has no per-target filtering).
static META: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, None);

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One process's metrics: what its api and its worker record, rendered on `/metrics`.
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    pub fn new() -> Self {
        let builder = PrometheusBuilder::new()
            // Every `_seconds` series is a histogram (the exporter's default is a summary,
            // which cannot be aggregated across replicas).
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &LATENCY_BUCKETS_S)
            .expect("the buckets are not empty");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        for m in catalog::ALL {
            let (name, help) = (metrics::KeyName::from(m.name), m.help.into());
            match m.kind {
                Kind::Counter => recorder.describe_counter(name, None, help),
                Kind::Gauge => recorder.describe_gauge(name, None, help),
                Kind::Histogram => recorder.describe_histogram(name, None, help),
            }
        }
        let metrics = Self { recorder, handle };
        // Series a process always has, so a dashboard or an alert sees a zero, not "no data".
        metrics.gauge(catalog::PROCESS_START_TIME, &[], process::start_time());
        metrics
    }

    /// Adds `by` to the counter `name` with `labels`.
    pub fn count(&self, name: &'static str, labels: &[(&'static str, &str)], by: u64) {
        self.recorder
            .register_counter(&key(name, labels), &META)
            .increment(by);
    }

    /// Sets the counter `name` with `labels` to `total`, for counts kept elsewhere (a
    /// sweeper's passes, a consumer's restarts).
    pub fn count_total(&self, name: &'static str, labels: &[(&'static str, &str)], total: u64) {
        self.recorder
            .register_counter(&key(name, labels), &META)
            .absolute(total);
    }

    /// Sets the gauge `name` with `labels`.
    pub fn gauge(&self, name: &'static str, labels: &[(&'static str, &str)], value: f64) {
        self.recorder
            .register_gauge(&key(name, labels), &META)
            .set(value);
    }

    /// Records one observation of `elapsed` in the histogram `name`.
    pub fn observe(&self, name: &'static str, labels: &[(&'static str, &str)], elapsed: Duration) {
        self.recorder
            .register_histogram(&key(name, labels), &META)
            .record(elapsed.as_secs_f64());
    }

    /// One HTTP request answered: by method, route template (never the raw path, whose values
    /// are the caller's) and status.
    pub fn http_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let status = status.to_string();
        let labels = [("method", method), ("route", route)];
        self.count(
            catalog::HTTP_REQUESTS,
            &[labels[0], labels[1], ("status", &status)],
            1,
        );
        self.observe(catalog::HTTP_REQUEST_DURATION, &labels, elapsed);
    }

    /// The Prometheus text of every series, after reading this process's own figures (memory,
    /// CPU, file descriptors) from `/proc`.
    pub fn render(&self) -> String {
        if let Some(p) = ProcessStats::read() {
            self.gauge(catalog::PROCESS_RSS, &[], p.resident_bytes as f64);
            self.gauge(catalog::PROCESS_VIRTUAL, &[], p.virtual_bytes as f64);
            self.gauge(catalog::PROCESS_CPU, &[], p.cpu_seconds);
            self.gauge(catalog::PROCESS_OPEN_FDS, &[], p.open_fds as f64);
            if let Some(max) = p.max_fds {
                self.gauge(catalog::PROCESS_MAX_FDS, &[], max as f64);
            }
        }
        self.handle.render()
    }
}

fn key(name: &'static str, labels: &[(&'static str, &str)]) -> Key {
    let labels: Vec<Label> = labels
        .iter()
        .map(|(k, v)| Label::new(*k, (*v).to_owned()))
        .collect();
    Key::from_parts(name, labels)
}

#[cfg(test)]
mod tests;
