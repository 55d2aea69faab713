//! The embedded (in-process) queue under load: many concurrent pushes while a worker consumes.
//! Regression: apalis-core 1.0's memory backend lost wake-ups when a push and the worker's own
//! readiness check met on the sink's lock; both then slept for good and every later push hung
//! (the paid benchmark stalled after about 1,500 calls at 64 connections).

use apalis::prelude::*;
use grove_common::{jobs::CoachingJob, queue::JobQueue};
use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};
use uuid::Uuid;

async fn count(_job: CoachingJob, seen: Data<Arc<AtomicUsize>>) -> Result<(), BoxDynError> {
    seen.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_pushed_under_contention_is_run() {
    const PUSHERS: usize = 64;
    const EACH: usize = 400;
    let (queue, storages) = JobQueue::memory();
    let seen = Arc::new(AtomicUsize::new(0));
    let worker = WorkerBuilder::new("memory-queue-test")
        .backend(storages.coaching)
        .concurrency(32)
        .data(Arc::clone(&seen))
        .build(count);
    tokio::spawn(async move {
        let _ = worker.run().await;
    });

    let pushers: Vec<_> = (0..PUSHERS)
        .map(|p| {
            let q = queue.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    q.push(CoachingJob::new(Uuid::now_v7(), format!("p{p}-{i}")))
                        .await
                        .expect("push");
                    // Let the worker poll between pushes, as the API's requests do.
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    // A bound to turn a hang into a failure, far above the second or so this takes.
    let all_pushed = tokio::time::timeout(Duration::from_secs(120), async {
        for p in pushers {
            p.await.expect("pusher");
        }
    })
    .await;
    assert!(all_pushed.is_ok(), "a push never completed");
    let total = PUSHERS * EACH;
    let ran = tokio::time::timeout(Duration::from_secs(120), async {
        while seen.load(Ordering::SeqCst) < total {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        ran.is_ok(),
        "only {} of {total} jobs ran",
        seen.load(Ordering::SeqCst)
    );
}
