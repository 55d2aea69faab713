//! "This call is finished": pushed by whoever stores a call's outcome, awaited by the API.
//!
//! Each waiter registers for its own call and is woken alone: a process-wide broadcast woke
//! every waiting request on every completion (64 wake-ups per call at 64 connections, issue 12).
//! In the embedded mode the in-process worker wakes the waiters directly; with Redis, the worker
//! PUBLISHes and one subscriber task per API process wakes them. Pub/sub is at-most-once, so
//! one backstop task per process (`backstop`) reads the waited-for calls' statuses once a second,
//! in batches, and wakes the waiters of those found final; a lost message costs latency, never a
//! result. When the subscription comes back after a break, every waiter is woken to look.
//!
//! Either way a completion carries the result it committed, so the waiter need not read it back
//! (with PostgreSQL that read was a fifth of the database's statements per paid call, issue 12).
//! Over Redis the message is `<call id>` or `<call id> <result as JSON>`; a result larger than
//! `CARRIED_LIMIT` is left to that read.

mod backstop;

use crate::{db::entities::result, jobs};
use futures::StreamExt;
use redis::{AsyncCommands, aio::ConnectionManager};
use sea_orm::DatabaseConnection;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};
use tokio::sync::Notify;
use tokio::sync::watch;
use uuid::Uuid;

/// One waiter's wake-up, and the result handed over with it (in-process completions only).
#[derive(Default)]
struct Slot {
    notify: Notify,
    result: Mutex<Option<Arc<result::Model>>>,
}

/// A call's waiters: each one's token and its own slot.
type CallWaiters = Vec<(u64, Arc<Slot>)>;

/// The waiters of each call, by call id.
#[derive(Default)]
struct Waiters {
    by_call: Mutex<HashMap<Uuid, CallWaiters>>,
    next: std::sync::atomic::AtomicU64,
}

/// The largest result a completion message carries (bytes of JSON); a larger one is read from
/// the database by its waiter. Every API process receives every message.
pub const CARRIED_LIMIT: usize = 64 * 1024;

/// A completion message: the call id, then the result when there is one and it is small enough.
fn message(call_id: Uuid, result: Option<&result::Model>) -> Vec<u8> {
    let mut out = call_id.to_string().into_bytes();
    if let Some(result) = result
        && let Ok(json) = serde_json::to_vec(result)
        && json.len() <= CARRIED_LIMIT
    {
        out.push(b' ');
        out.extend_from_slice(&json);
    }
    out
}

/// A completion message's call id, and the rest (the result's JSON, or nothing).
pub fn parse_message(payload: &[u8]) -> Option<(Uuid, &[u8])> {
    let (id, rest) = match payload.iter().position(|b| *b == b' ') {
        Some(at) => (&payload[..at], &payload[at + 1..]),
        None => (payload, &[][..]),
    };
    let id = Uuid::parse_str(std::str::from_utf8(id).ok()?).ok()?;
    Some((id, rest))
}

impl Waiters {
    /// Wakes the waiters a completion message names (an unreadable one is dropped: the
    /// waiters' database re-check finds the outcome). The result it carries is read only when
    /// someone here waits for the call.
    fn wake_from(&self, payload: &[u8]) {
        let Some((id, rest)) = parse_message(payload) else {
            return;
        };
        if !self.waits_for(id) {
            return;
        }
        let result = serde_json::from_slice::<result::Model>(rest)
            .ok()
            .filter(|r| r.call_id == id)
            .map(Arc::new);
        self.wake(id, result.as_ref());
    }

    /// The calls someone in this process waits for.
    fn ids(&self) -> Vec<Uuid> {
        self.by_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .copied()
            .collect()
    }

    /// Wakes every waiter (each looks at its call once): after a break in the subscription,
    /// when any completion may have been missed.
    fn wake_all(&self) {
        let by_call = self.by_call.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, slot) in by_call.values().flatten() {
            slot.notify.notify_one();
        }
    }

    fn waits_for(&self, call_id: Uuid) -> bool {
        self.by_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&call_id)
    }

    fn wake(&self, call_id: Uuid, result: Option<&Arc<result::Model>>) {
        let by_call = self.by_call.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, slot) in by_call.get(&call_id).into_iter().flatten() {
            if let Some(result) = result {
                *slot.result.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(Arc::clone(result));
            }
            // `notify_one` keeps a permit when the waiter is between two looks, so a completion
            // that lands then is not lost.
            slot.notify.notify_one();
        }
    }
}

/// One request waiting for one call. Registered when made, so a completion that happens before
/// the first look at the database still wakes it; unregistered when dropped.
pub struct Waiter {
    call_id: Uuid,
    token: u64,
    slot: Arc<Slot>,
    waiters: Arc<Waiters>,
}

impl Waiter {
    /// Returns once the call was announced finished (or at once, if it was since the last call).
    pub async fn notified(&self) {
        self.slot.notify.notified().await;
    }

    /// The stored result handed over with the wake-up, once: the worker passes what it
    /// committed, which saves the waiter reading it back (issue 12). None when the call ended
    /// otherwise, or its result was too large to carry over Redis.
    pub fn result(&self) -> Option<result::Model> {
        let taken = self
            .slot
            .result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        Some(Arc::try_unwrap(taken).unwrap_or_else(|shared| (*shared).clone()))
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut by_call = self
            .waiters
            .by_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(list) = by_call.get_mut(&self.call_id) {
            list.retain(|(t, _)| *t != self.token);
            if list.is_empty() {
                by_call.remove(&self.call_id);
            }
        }
    }
}

#[derive(Clone)]
pub struct Completions {
    local: Arc<Waiters>,
    publisher: Option<ConnectionManager>,
    channel: String,
}

impl Completions {
    /// In-process only (embedded mode and tests).
    pub fn local() -> Self {
        Self {
            local: Arc::default(),
            publisher: None,
            channel: String::new(),
        }
    }

    /// Publishes through Redis; call `subscribe_redis` too in processes that wait.
    pub fn redis(publisher: ConnectionManager, namespace: &str) -> Self {
        Self {
            local: Arc::default(),
            publisher: Some(publisher),
            channel: jobs::done_channel(namespace),
        }
    }

    /// Wakes this process's waiters on done-channel messages, reconnecting on failure.
    pub fn subscribe_redis(&self, client: redis::Client) {
        let local = self.local.clone();
        let channel = self.channel.clone();
        tokio::spawn(async move {
            loop {
                match client.get_async_pubsub().await {
                    Ok(mut pubsub) => {
                        if let Err(e) = pubsub.subscribe(&channel).await {
                            tracing::warn!(error = %e, "completion subscription failed");
                        } else {
                            // Messages published while unsubscribed are gone: every waiter looks.
                            local.wake_all();
                            let mut stream = pubsub.on_message();
                            while let Some(msg) = stream.next().await {
                                local.wake_from(msg.get_payload_bytes());
                            }
                            tracing::warn!("completion subscription ended; reconnecting");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "completion subscriber cannot connect"),
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
    }

    /// Starts this process's database backstop for its waiters (see `backstop`): once a second,
    /// the waited-for calls that are final wake their waiters. Runs until `stopped` is true.
    pub fn backstop(&self, db: DatabaseConnection, stopped: watch::Receiver<bool>) {
        tokio::spawn(backstop::run(Arc::clone(&self.local), db, stopped));
    }

    /// Announces that `call_id` reached a final state.
    pub async fn notify(&self, call_id: Uuid) {
        self.announce(call_id, None).await;
    }

    /// Announces that `call_id` completed with `result`, committed: waiters get it with the
    /// wake-up (over Redis, up to `CARRIED_LIMIT`), others read it from the database.
    pub async fn completed(&self, call_id: Uuid, result: result::Model) {
        self.announce(call_id, Some(Arc::new(result))).await;
    }

    async fn announce(&self, call_id: Uuid, result: Option<Arc<result::Model>>) {
        match &self.publisher {
            Some(conn) => {
                let published: Result<i64, _> = conn
                    .clone()
                    .publish(&self.channel, message(call_id, result.as_deref()))
                    .await;
                if let Err(e) = published {
                    // Waiters fall back to polling the database; log and carry on.
                    tracing::warn!(error = %e, %call_id, "could not publish completion");
                }
            }
            None => self.local.wake(call_id, result.as_ref()),
        }
    }

    /// Registers interest in `call_id`'s completion; make it before looking at the call.
    pub fn waiter(&self, call_id: Uuid) -> Waiter {
        let token = self
            .local
            .next
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let slot = Arc::new(Slot::default());
        self.local
            .by_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(call_id)
            .or_default()
            .push((token, Arc::clone(&slot)));
        Waiter {
            call_id,
            token,
            slot,
            waiters: Arc::clone(&self.local),
        }
    }

    /// Requests waiting in this process (for tests and metrics).
    pub fn waiting(&self) -> usize {
        self.local
            .by_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(Vec::len)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_completion_before_the_wait_is_not_lost_and_wakes_only_its_call() {
        let completions = Completions::local();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let wait_a = completions.waiter(a);
        let wait_b = completions.waiter(b);
        completions.notify(a).await;
        // Announced before anyone awaited: the permit is kept.
        tokio::time::timeout(Duration::from_secs(5), wait_a.notified())
            .await
            .expect("the waiter of the finished call wakes");
        let other = tokio::time::timeout(Duration::from_millis(50), wait_b.notified()).await;
        assert!(other.is_err(), "a waiter of another call stays asleep");
    }

    #[tokio::test]
    async fn every_waiter_of_a_call_wakes_and_dropped_waiters_unregister() {
        let completions = Completions::local();
        let id = Uuid::now_v7();
        let first = completions.waiter(id);
        let second = completions.waiter(id);
        assert_eq!(completions.waiting(), 2);
        completions.notify(id).await;
        for w in [&first, &second] {
            tokio::time::timeout(Duration::from_secs(5), w.notified())
                .await
                .expect("woken");
        }
        drop(first);
        drop(second);
        assert_eq!(completions.waiting(), 0);
    }

    #[tokio::test]
    async fn an_in_process_completion_hands_its_result_to_the_waiter_once() {
        let completions = Completions::local();
        let id = Uuid::now_v7();
        let waiter = completions.waiter(id);
        let stored = result::Model {
            call_id: id,
            body: serde_json::json!({"reply": "done"}),
            input_tokens: 3,
            output_tokens: 4,
            model_calls: 1,
            created_at: crate::clock::wall(),
        };
        completions.completed(id, stored.clone()).await;
        tokio::time::timeout(Duration::from_secs(5), waiter.notified())
            .await
            .expect("woken");
        assert_eq!(waiter.result(), Some(stored));
        assert_eq!(waiter.result(), None, "handed over once");
        // A plain announcement (a failure, a refusal) carries none: the waiter reads the call.
        completions.notify(id).await;
        assert_eq!(waiter.result(), None);
    }
}
