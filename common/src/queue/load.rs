//! The workers' coaching load in Redis (issue 31), for admission before payment in api processes.
//!
//! Each worker writes its meter every `REPORT_EVERY` into one hash, `{namespace}:load`, under
//! its own field: `<unix ms> <capacity> <running> <served> <service ms>`. A reader sums the
//! fresh fields (a worker that stopped reporting for `STALE_AFTER` is gone: its field is dropped)
//! and takes the backlog from the coaching queue itself (ready plus held, `stats`), which counts
//! jobs no worker has taken yet.

use super::{JobQueue, QueueError};
use crate::consumers::Peers;
use crate::load::{Load, Meter};
use redis::AsyncCommands;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often a worker reports (and how stale an api's view may be, with its own pushes since
/// counted on top).
pub const REPORT_EVERY: Duration = Duration::from_secs(1);
/// A worker silent this long has stopped: its capacity no longer counts.
const STALE_AFTER: Duration = Duration::from_secs(5);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A report's fields after the time: capacity, running, served, service ms.
fn parse(report: &str) -> Option<(u64, Load)> {
    let mut f = report.split(' ').map(str::parse::<u64>);
    let at = f.next()?.ok()?;
    let mut next = || f.next()?.ok();
    let (capacity, backlog, served, service_ms) = (next()?, next()?, next()?, next()?);
    Some((
        at,
        Load {
            backlog,
            capacity,
            served,
            service_ms,
        },
    ))
}

impl JobQueue {
    /// Writes this worker's meter under `worker` (Redis only; nothing in memory mode, where the
    /// api reads the meter itself).
    pub async fn report_load(&self, worker: &str, meter: &Meter) -> Result<(), QueueError> {
        let (Some(conn), Some(key)) = (&self.conn, &self.load_key) else {
            return Ok(());
        };
        let l = meter.load();
        let report = format!(
            "{} {} {} {} {}",
            now_ms(),
            l.capacity,
            l.backlog,
            l.served,
            l.service_ms
        );
        let _: i64 = conn.clone().hset(key, worker, report).await?;
        Ok(())
    }

    /// Takes this worker's report away (it stops).
    pub async fn withdraw_load(&self, worker: &str) -> Result<(), QueueError> {
        let (Some(conn), Some(key)) = (&self.conn, &self.load_key) else {
            return Ok(());
        };
        let _: i64 = conn.clone().hdel(key, worker).await?;
        Ok(())
    }

    /// The workers' load as Redis holds it: capacity and runs summed over the workers that
    /// reported lately, backlog from the coaching queue. None in memory mode.
    pub async fn shared_load(&self) -> Result<Option<Load>, QueueError> {
        let (Some(conn), Some(key)) = (&self.conn, &self.load_key) else {
            return Ok(None);
        };
        let reports: Vec<(String, String)> = conn.clone().hgetall(key).await?;
        let now = now_ms();
        let mut load = Load::default();
        let mut stale = Vec::new();
        for (worker, report) in reports {
            match fresh(&report, now) {
                Some(l) => load.add(&l),
                None => stale.push(worker),
            }
        }
        if !stale.is_empty() {
            let _: i64 = conn.clone().hdel(key, stale).await?;
        }
        let coaching = self.stats().await?.into_iter().flatten();
        load.backlog = coaching
            .filter(|s| s.queue == "coaching")
            .map(|s| s.backlog())
            .sum();
        Ok(Some(load))
    }

    /// The workers other than `worker` on the coaching queue, as their fresh reports stand
    /// (what its consumer leaves turns to: `consumers::fetch`). Unknown in memory mode.
    pub async fn peers(&self, worker: &str) -> Result<Peers, QueueError> {
        let (Some(conn), Some(key)) = (&self.conn, &self.load_key) else {
            return Ok(Peers::Unknown);
        };
        let reports: Vec<(String, String)> = conn.clone().hgetall(key).await?;
        Ok(least_with_room(worker, &reports, now_ms()))
    }
}

/// A report's load, if it reads and was written within `STALE_AFTER` before `now` (a worker
/// silent longer has stopped).
fn fresh(report: &str, now: u64) -> Option<Load> {
    let fresh_from = now.saturating_sub(STALE_AFTER.as_millis() as u64);
    parse(report).and_then(|(at, l)| (at >= fresh_from).then_some(l))
}

/// The fewest jobs held by a worker other than `me` with a fresh report and room for another;
/// `Peers::None` when there is no such worker.
fn least_with_room(me: &str, reports: &[(String, String)], now: u64) -> Peers {
    reports
        .iter()
        .filter(|(worker, _)| worker != me)
        .filter_map(|(_, report)| fresh(report, now))
        .filter(|l| l.backlog < l.capacity)
        .map(|l| l.backlog)
        .min()
        .map_or(Peers::None, Peers::Least)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_the_other_live_workers_with_room() {
        let now = 1_700_000_010_000;
        let report = |w: &str, at: u64, capacity: u64, held: u64| {
            (w.to_owned(), format!("{at} {capacity} {held} 0 0"))
        };
        // Alone: its own report is not a peer.
        assert_eq!(
            least_with_room("me", &[report("me", now, 100, 50)], now),
            Peers::None
        );
        assert_eq!(least_with_room("me", &[], now), Peers::None);
        let reports = [
            report("me", now, 100, 90),
            report("busy", now - 1_000, 100, 70),
            report("idle", now - 2_000, 100, 20),
            // Full: it would not take a turn left to it.
            report("full", now, 10, 10),
            // Silent past `STALE_AFTER`: gone.
            report("gone", now - 6_000, 100, 0),
        ];
        assert_eq!(least_with_room("me", &reports, now), Peers::Least(20));
        assert_eq!(
            least_with_room("me", &[report("full", now, 10, 10)], now),
            Peers::None
        );
    }

    #[test]
    fn a_report_reads_back_and_a_malformed_one_is_dropped() {
        let (at, l) = parse("1700000000000 64 10 30 300000").expect("report");
        assert_eq!(at, 1_700_000_000_000);
        assert_eq!((l.capacity, l.backlog, l.served), (64, 10, 30));
        assert_eq!(l.service_time(), Some(Duration::from_secs(10)));
        assert_eq!(parse("1700000000000 64 ten"), None);
        assert_eq!(parse(""), None);
    }
}
