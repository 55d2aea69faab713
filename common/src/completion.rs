//! "This call is finished": pushed by whoever stores a call's outcome, awaited by the API.
//!
//! Waiters subscribe to one process-local broadcast. In the embedded mode the in-process worker
//! sends into it directly; with Redis, the worker PUBLISHes and one subscriber task per API
//! process forwards the messages into the broadcast. Pub/sub is at-most-once, so waiters also
//! re-check the database on a slow timer; a lost message costs latency, never a result.

use crate::jobs;
use futures::StreamExt;
use redis::{AsyncCommands, aio::ConnectionManager};
use std::time::Duration;
use tokio::sync::broadcast;
use uuid::Uuid;

#[derive(Clone)]
pub struct Completions {
    local: broadcast::Sender<Uuid>,
    publisher: Option<ConnectionManager>,
    channel: String,
}

impl Completions {
    /// In-process only (embedded mode and tests).
    pub fn local() -> Self {
        let (local, _) = broadcast::channel(4096);
        Self {
            local,
            publisher: None,
            channel: String::new(),
        }
    }

    /// Publishes through Redis; call `subscribe_redis` too in processes that wait.
    pub fn redis(publisher: ConnectionManager, namespace: &str) -> Self {
        let (local, _) = broadcast::channel(4096);
        Self {
            local,
            publisher: Some(publisher),
            channel: jobs::done_channel(namespace),
        }
    }

    /// Forwards done-channel messages into the local broadcast, reconnecting on failure.
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
                            let mut stream = pubsub.on_message();
                            while let Some(msg) = stream.next().await {
                                if let Ok(id) =
                                    msg.get_payload::<String>().map(|s| Uuid::parse_str(&s))
                                    && let Ok(id) = id
                                {
                                    let _ = local.send(id);
                                }
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

    /// Announces that `call_id` reached a final state.
    pub async fn notify(&self, call_id: Uuid) {
        match &self.publisher {
            Some(conn) => {
                let published: Result<i64, _> = conn
                    .clone()
                    .publish(&self.channel, call_id.to_string())
                    .await;
                if let Err(e) = published {
                    // Waiters fall back to polling the database; log and carry on.
                    tracing::warn!(error = %e, %call_id, "could not publish completion");
                }
            }
            None => {
                let _ = self.local.send(call_id);
            }
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Uuid> {
        self.local.subscribe()
    }
}
