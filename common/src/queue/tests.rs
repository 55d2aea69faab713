//! Both job queues: pushes, delays, and the in-process lanes.

use super::*;
use uuid::Uuid;

/// The embedded mode's readiness: the queue is not ready once an in-process consumer died.
#[tokio::test]
async fn the_memory_queue_is_not_ready_when_a_consumer_died() {
    let (queue, storages) = JobQueue::memory();
    let coaching = storages.consumers.register("coaching");
    coaching.running();
    assert!(queue.ping().await.is_ok());
    coaching.dead("ended before shutdown");
    let err = queue.ping().await.expect_err("not ready");
    assert!(err.to_string().contains("coaching"), "{err}");
}

/// Regression: concurrent pushes to the memory lane used to panic inside apalis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pushes_to_the_memory_queue_all_arrive() {
    let (queue, storages) = JobQueue::memory();
    let pushes: Vec<_> = (0..200)
        .map(|i| {
            let q = queue.clone();
            tokio::spawn(async move {
                q.push(CoachingJob::new(Uuid::now_v7(), format!("r{i}")))
                    .await
            })
        })
        .collect();
    for p in pushes {
        assert!(p.await.expect("no panic").is_ok());
    }
    use futures::StreamExt;
    let received = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        storages.coaching.take(200).count(),
    )
    .await
    .expect("every pushed job arrives");
    assert_eq!(received, 200);
}
