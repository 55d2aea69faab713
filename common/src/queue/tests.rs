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

/// A job pushed to run now reaches the workers' wake channel in the same round trip as the
/// push (`waking`), and only once it is queued: a worker woken by it finds the job. After Redis
/// lost its scripts (a restart does that), the push loads the script again and still wakes.
#[tokio::test]
async fn a_job_pushed_to_run_now_wakes_the_workers_once_it_is_queued() {
    use futures::StreamExt;
    let client = redis::Client::open("redis://127.0.0.1:6379").expect("redis url");
    let namespace = format!("waking{}", Uuid::now_v7().simple());
    let queue_name = jobs::coaching_queue(&namespace);
    let scheduled = redis_config(&queue_name).scheduled_jobs_set();
    let mut wakes = client.get_async_pubsub().await.expect("redis pubsub");
    wakes
        .subscribe(jobs::wake_channel(&queue_name))
        .await
        .expect("subscribed");
    let queue = JobQueue::redis(&client, &namespace).await.expect("queue");
    let mut conn = redis_connection(&client).await.expect("redis");
    let mut queued = async || -> u64 {
        redis::cmd("ZCARD")
            .arg(&scheduled)
            .query_async(&mut conn)
            .await
            .expect("zcard")
    };
    let job = |i: u32| CoachingJob::new(Uuid::now_v7(), format!("r{i}"));

    // Read while the push may still be under way: the wake-up comes after the job.
    let pushing = tokio::spawn({
        let queue = queue.clone();
        async move { queue.push(job(0)).await }
    });
    let woken = tokio::time::timeout(Duration::from_secs(10), wakes.on_message().next())
        .await
        .expect("a wake-up within 10 s")
        .expect("a message");
    assert_eq!(woken.get_channel_name(), jobs::wake_channel(&queue_name));
    assert_eq!(
        queued().await,
        1,
        "the job is queued when its wake-up arrives"
    );
    pushing.await.expect("no panic").expect("pushed");

    // Without its script in Redis the push still lands, and a wake-up follows it.
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut redis_connection(&client).await.expect("redis"))
        .await
        .expect("scripts flushed");
    queue
        .push(job(1))
        .await
        .expect("pushed after a script flush");
    assert_eq!(queued().await, 2);
    tokio::time::timeout(Duration::from_secs(10), wakes.on_message().next())
        .await
        .expect("a wake-up within 10 s")
        .expect("a message");
}
