//! The health gates' shared state machine (issue 30), with two processes' handles on one
//! database: one process's failures open the gate for both, exactly one of them runs each due
//! probe, a failed probe doubles the wait, a passed one closes the gate for both, and a closed
//! gate counts afresh.

use futures::future::BoxFuture;
use grove_common::{
    config::HealthPolicy,
    db,
    health::{GateState, Gates, Outcome, Probe, ProviderId},
};
use grove_tests::{TestDb, wait_until};
use std::{
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    time::Duration,
};

/// Opens after 3 failures; the first probe is due a second later, then after 2 s, 4 s (at most).
fn policy() -> HealthPolicy {
    HealthPolicy {
        window: Duration::from_secs(60),
        failures: 3,
        probe_after: Duration::from_secs(1),
        probe_max: Duration::from_secs(4),
    }
}

/// Offers the probe to `gates` until it has run `runs` times (the bound is `wait_until`'s).
async fn probed(gates: &[&Gates], provider: &ProviderId, probe: &Scripted, runs: usize) {
    wait_until("the probe is due and runs", async || {
        for g in gates {
            g.probe_if_due(provider, probe).await.expect("probe");
        }
        probe.runs.load(Ordering::SeqCst) >= runs
    })
    .await;
}

/// A probe that passes or fails as told, and counts its runs.
#[derive(Default)]
struct Scripted {
    passes: AtomicBool,
    runs: AtomicUsize,
}

impl Probe for Scripted {
    fn probe(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            // Long enough for a second process to try while this one holds the probe.
            tokio::time::sleep(Duration::from_millis(50)).await;
            if self.passes.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("connection refused".into())
            }
        })
    }
}

/// Two processes' gates over one fresh database.
async fn two_processes(provider: &ProviderId) -> (TestDb, Gates, Gates) {
    let (test_db, _) = TestDb::migrated().await;
    let mut gates = Vec::new();
    for _ in 0..2 {
        let conn = db::connect_url(&test_db.url).await.expect("database");
        let g = Gates::start(conn, policy(), std::slice::from_ref(provider))
            .await
            .expect("gates");
        gates.push(g);
    }
    let b = gates.pop().expect("b");
    let a = gates.pop().expect("a");
    (test_db, a, b)
}

fn failed() -> Outcome {
    Outcome::Failed("could not connect".into())
}

#[tokio::test]
async fn one_processs_failures_open_the_gate_for_every_process_and_one_probe_closes_it() {
    let model = ProviderId::model("gpt-test");
    let (_db, a, b) = two_processes(&model).await;
    assert!(a.admits(&model) && b.admits(&model));

    // The threshold reached, but outnumbered by successes: still closed.
    a.record(&model, failed()).await;
    a.record(&model, failed()).await;
    for _ in 0..4 {
        a.record(&model, Outcome::Succeeded).await;
    }
    a.record(&model, failed()).await;
    assert!(a.admits(&model), "3 failures beside 4 successes");
    a.record(&model, failed()).await;
    assert!(!a.admits(&model), "4 failures beside 4 successes open it");
    b.refresh().await.expect("read");
    assert!(!b.admits(&model), "the other process sees it open");
    assert!(
        b.refusal(&model)
            .is_some_and(|wait| wait >= Duration::from_secs(1))
    );
    let view = b.view(&model).expect("view");
    assert!(
        view.reason
            .as_deref()
            .is_some_and(|r| r.contains("could not connect"))
    );

    // Not due before its time.
    let probe = Scripted::default();
    a.probe_if_due(&model, &probe).await.expect("probe");
    assert_eq!(
        probe.runs.load(Ordering::SeqCst),
        0,
        "the first probe waits a second"
    );
    // Once due, both processes try it at once: one runs it. It fails: the wait doubles.
    wait_until("the probe is due", async || {
        let (ra, rb) = tokio::join!(
            a.probe_if_due(&model, &probe),
            b.probe_if_due(&model, &probe)
        );
        ra.expect("probe a");
        rb.expect("probe b");
        probe.runs.load(Ordering::SeqCst) > 0
    })
    .await;
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1, "one probe at a time");
    b.refresh().await.expect("read");
    let view = b.view(&model).expect("view");
    assert_eq!((view.state, view.probes_failed), (GateState::Open, 1));
    let wait = b.refusal(&model).expect("still refused");
    assert_eq!(
        wait,
        Duration::from_secs(2),
        "the next probe waits twice as long"
    );
    // Not due yet: nobody probes.
    a.probe_if_due(&model, &probe).await.expect("probe");
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_passed_probe_closes_the_gate_and_the_window_starts_afresh() {
    let sms = ProviderId::twilio();
    let (_db, a, b) = two_processes(&sms).await;
    for _ in 0..3 {
        b.record(&sms, failed()).await;
    }
    assert!(!b.admits(&sms));
    // Outcomes while open are not counted.
    b.record(&sms, Outcome::Succeeded).await;
    assert!(!b.admits(&sms));

    let probe = Scripted::default();
    probe.passes.store(true, Ordering::SeqCst);
    a.refresh().await.expect("read");
    probed(&[&a], &sms, &probe, 1).await;
    assert!(a.admits(&sms), "closed where it was probed");
    b.refresh().await.expect("read");
    assert!(b.admits(&sms), "and for the other process");
    let outage = b.last_outage(&sms).expect("the outage it came out of");
    assert!(outage.closed_at >= outage.opened_at);

    // The failures from before the outage are gone: one more does not reopen it.
    b.record(&sms, failed()).await;
    assert!(b.admits(&sms));
    // A closed gate is not probed.
    a.probe_if_due(&sms, &probe).await.expect("probe");
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_provider_without_a_gate_is_always_admitted() {
    let (_db, a, _b) = two_processes(&ProviderId::twilio()).await;
    let other = ProviderId::model("not-configured");
    for _ in 0..10 {
        a.record(&other, failed()).await;
    }
    assert!(a.admits(&other) && a.refusal(&other).is_none());
}
