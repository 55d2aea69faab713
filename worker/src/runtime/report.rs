//! A worker's coaching load, reported to Redis every second for the api processes' admission
//! before payment (`grove_common::load`, `JobQueue::report_load`), and withdrawn when it stops.
//! The same round reads the other workers' reports: the coaching consumer leaves its turns to
//! them only (`grove_common::consumers::fetch`).

use crate::jobs::Deps;
use grove_common::{consumers::Peers, queue::LOAD_REPORT_EVERY};
use std::sync::Arc;
use tokio::sync::watch;

pub(super) async fn load(
    deps: Arc<Deps>,
    worker: String,
    peers: watch::Sender<Peers>,
    mut stopped: watch::Receiver<bool>,
) {
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
        // Not knowing the others, the consumer leaves them their turns, as with no reports.
        peers.send_replace(deps.queue.peers(&worker).await.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "could not read the other workers' load");
            Peers::Unknown
        }));
    }
    if let Err(e) = deps.queue.withdraw_load(&worker).await {
        tracing::debug!(error = %e, "could not withdraw the coaching load report");
    }
}
