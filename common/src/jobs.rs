//! Jobs as plain data, with stable queue names (renaming a type must not orphan queued jobs).

use crate::db::{calls::Runner, entities::call};
use serde::{Deserialize, Serialize};
use std::{
    sync::Arc,
    sync::atomic::{
        AtomicI64, AtomicU64,
        Ordering::{Acquire, Relaxed, Release},
    },
    time::Duration,
};
use tokio::time::Instant;
use uuid::Uuid;

/// Queue of settled coaching calls waiting for a model answer (`{namespace}:coaching`).
pub fn coaching_queue(namespace: &str) -> String {
    format!("{namespace}:coaching")
}

/// Queue of review-request sends and follow-ups (`{namespace}:review`).
pub fn review_queue(namespace: &str) -> String {
    format!("{namespace}:review")
}

/// Published by a worker after it stored a call's final outcome; payload is the call id.
pub fn done_channel(namespace: &str) -> String {
    format!("{namespace}:calls:done")
}

/// Published by the API after each push so idle workers fetch at once instead of at their
/// next poll (apalis-redis otherwise waits for its heartbeat).
pub fn wake_channel(queue: &str) -> String {
    format!("{queue}:wake")
}

/// How often an idle worker polls even without a wake-up: the backstop for a lost wake message.
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// Heartbeat of a Redis worker; a worker silent for `MISSED_HEARTBEATS` heartbeats is orphaned
/// and its jobs go back to the queue for another worker.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
pub const MISSED_HEARTBEATS: usize = 3;

/// Work on one settled coaching call. Everything else (body, coach, mode) is in the call record,
/// so a job stays small and a re-run reads the same input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoachingJob {
    pub call_id: Uuid,
    /// Carried so that traces join across the API and worker processes.
    pub request_id: String,
    /// The W3C `traceparent` of the span that pushed the job, which the worker continues:
    /// one trace per paid call. Absent in jobs queued before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The run the embedded api already started in the transaction that recorded the call's
    /// settlement (`ledger::start_settled`). It only travels through the in-process queue: it is
    /// never serialized, so a job read from Redis starts its run itself.
    #[serde(skip)]
    pub started: Option<Started>,
}

impl CoachingJob {
    /// A job whose worker starts the run itself, in the trace of the current span.
    pub fn new(call_id: Uuid, request_id: String) -> Self {
        Self {
            call_id,
            request_id,
            trace: crate::telemetry::traceparent(),
            started: None,
        }
    }
}

/// A run started for the worker in this process: who holds the lease, the call as the start
/// left it, and when (a job that waited in the queue renews the lease before its work).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    pub runner: Runner,
    pub call: Arc<call::Model>,
    pub at: Instant,
}

/// Which message of a review request a job is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStep {
    /// The first message (or its deferral by quiet hours).
    Send,
    /// The one reminder.
    FollowUp,
}

/// Work on one review request. The request row holds everything else; the job is a nudge that
/// is safe to deliver twice (the message rows make each SMS at-most-once).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewJob {
    pub review_id: String,
    pub step: ReviewStep,
    pub request_id: String,
    /// As `CoachingJob::trace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl ReviewJob {
    /// A job in the trace of the current span.
    pub fn new(review_id: String, step: ReviewStep, request_id: String) -> Self {
        Self {
            review_id,
            step,
            request_id,
            trace: crate::telemetry::traceparent(),
        }
    }
}

/// A job of either kind, as the api pushes it once a payment settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Job {
    Coaching(CoachingJob),
    Review(ReviewJob),
}

/// How often the sweeper looks for due sends and follow-ups that a lost job missed.
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(30);

/// What a process's review sweeper has done, for `/metrics`: operators alert when the last
/// pass is old, and tests wait for a pass that saw the time they set.
#[derive(Debug, Default)]
pub struct SweepStats {
    passes: AtomicU64,
    actions: AtomicU64,
    /// The clock's reading (Unix seconds) at the start of the last completed pass.
    last_pass_at: AtomicI64,
}

impl SweepStats {
    /// Records a completed pass that started at `started_at` and pushed or moved `actions`.
    pub fn record(&self, started_at: chrono::DateTime<chrono::Utc>, actions: usize) {
        self.actions
            .fetch_add(u64::try_from(actions).unwrap_or(u64::MAX), Relaxed);
        self.passes.fetch_add(1, Relaxed);
        // Published last (Release): whoever sees this pass's time also sees its counts.
        self.last_pass_at.store(started_at.timestamp(), Release);
    }

    pub fn passes(&self) -> u64 {
        self.passes.load(Relaxed)
    }

    /// Due jobs pushed and requests moved, over all passes.
    pub fn actions(&self) -> u64 {
        self.actions.load(Relaxed)
    }

    /// Unix seconds of the last completed pass, as the sweeper's clock read it (0: none yet).
    pub fn last_pass_at(&self) -> i64 {
        self.last_pass_at.load(Acquire)
    }
}

#[cfg(test)]
mod trace_field {
    use super::*;

    #[test]
    fn jobs_queued_before_the_trace_field_still_parse_and_new_ones_carry_it() {
        let old = r#"{"call_id":"0192f0c1-7b7e-7000-8000-000000000001","request_id":"r1"}"#;
        let job: CoachingJob = serde_json::from_str(old).expect("an old coaching job parses");
        assert_eq!(job.trace, None);
        let old = r#"{"review_id":"rr_1","step":"send","request_id":"r1"}"#;
        let job: ReviewJob = serde_json::from_str(old).expect("an old review job parses");
        assert_eq!(job.trace, None);

        let traced = ReviewJob {
            trace: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            ..job
        };
        let json = serde_json::to_value(&traced).expect("serializes");
        assert_eq!(json["trace"], traced.trace.as_deref().unwrap_or_default());
        let back: ReviewJob = serde_json::from_value(json).expect("parses");
        assert_eq!(back, traced);
    }
}
