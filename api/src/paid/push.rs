//! Pushing a settled call's job, and pushing it again until it lands.
//!
//! A push can fail after the money moved (Redis timed out, reset, restarting). The call then
//! stays `pending` with nothing queued, so the push is retried on its own task at once, with
//! backoff (0.25 s doubling to 5 s), until it lands or the call no longer waits for it (another
//! push ran it, or the process stops). The recovery sweep (`reconcile`) stays the backstop for
//! a process that died with retries in hand.

use crate::state::AppState;
use backon::{BackoffBuilder, ExponentialBuilder};
use grove_common::{db::calls, jobs::Job, ledger::CallStatus};
use std::time::Duration;
use uuid::Uuid;

const FIRST_PAUSE: Duration = Duration::from_millis(250);
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// The pauses between pushes: 0.25 s doubling to 5 s, for as long as it takes (no jitter: one
/// retry per call, and the calls that failed together did so at different moments).
fn pauses() -> impl Iterator<Item = Duration> {
    ExponentialBuilder::new()
        .with_min_delay(FIRST_PAUSE)
        .with_max_delay(MAX_PAUSE)
        .without_max_times()
        .build()
}
/// The attempt at which a push still failing is logged as an error.
const STILL_FAILING_AT: u32 = 10;

/// Pushes the call's job; true if it landed. A failed push is retried in the background until
/// it lands, so nothing paid for waits on a client or a sweep.
pub(crate) async fn enqueue(state: &AppState, call_id: Uuid, job: Job) -> bool {
    match state.queue.push_job(job.clone()).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, %call_id, "could not enqueue a settled call; retrying with backoff");
            if state.push_retries.begin(call_id) {
                tokio::spawn(retry(state.clone(), call_id, job));
            }
            false
        }
    }
}

/// Pushes again with backoff until the push lands, the call stops waiting for it, or shutdown.
async fn retry(state: AppState, call_id: Uuid, job: Job) {
    let mut stopped = state.push_retries.stopped.clone();
    let mut pauses = pauses().peekable();
    for attempt in 2u32.. {
        let pause = pauses.next().unwrap_or(MAX_PAUSE);
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stopped.wait_for(|s| *s) => break,
        }
        let pause = pauses.peek().copied().unwrap_or(MAX_PAUSE);
        // A call that left `pending` was run by another push (or failed): nothing to push.
        match calls::load(&state.db, call_id).await {
            Ok(Some(c)) if c.status != CallStatus::Pending => break,
            Ok(None) => break,
            // The database is unreachable too: try again later.
            Ok(Some(_)) | Err(_) => {}
        }
        match state.queue.push_job(job.clone()).await {
            Ok(()) => {
                tracing::info!(%call_id, attempt, "pushed a settled call's job after a failed push");
                break;
            }
            // Loud once it has gone on for a while (about half a minute): the queue is down.
            Err(e) if attempt == STILL_FAILING_AT => {
                tracing::error!(error = %e, %call_id, attempt, retry_in = ?pause, "push of a settled call still failing")
            }
            Err(e) => {
                tracing::warn!(error = %e, %call_id, attempt, retry_in = ?pause, "push still failing")
            }
        }
    }
    state.push_retries.end(call_id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_retried_after_a_quarter_second_doubling_to_five_seconds_without_end() {
        let ms: Vec<u128> = pauses().take(8).map(|d| d.as_millis()).collect();
        assert_eq!(ms, [250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
        assert_eq!(pauses().nth(10_000), Some(MAX_PAUSE));
    }
}
