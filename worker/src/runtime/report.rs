//! A worker's coaching load, reported to Redis every second for the api processes' admission
//! before payment (`grove_common::load`, `JobQueue::report_load`), and withdrawn when it stops.

use crate::jobs::Deps;
use grove_common::queue::LOAD_REPORT_EVERY;
use std::sync::Arc;
use tokio::sync::watch;

pub(super) async fn load(deps: Arc<Deps>, worker: String, mut stopped: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(LOAD_REPORT_EVERY);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopped.wait_for(|s| *s) => break,
        }
        // A missed report only ages this worker's last one; after a few the api stops counting
        // its capacity, which refuses more, never less.
        if let Err(e) = deps.queue.report_load(&worker, &deps.load).await {
            tracing::debug!(error = %e, "could not report the coaching load");
        }
    }
    if let Err(e) = deps.queue.withdraw_load(&worker).await {
        tracing::debug!(error = %e, "could not withdraw the coaching load report");
    }
}
