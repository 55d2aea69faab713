//! Where the settler key's next transaction nonce is kept between sends (issue 25 item 6).
//!
//! Every send holds the counter from the moment it picks a nonce until the node has answered, so
//! two sends never sign the same nonce and none is skipped. In one process that is a mutex
//! (`LocalNonces`); `api` replicas sharing one key share a row in the database instead, held with
//! a row lock for the same span (`paid::ledger::settler_nonce`, docs/settlement.md argues the
//! choice). A send refused by the node leaves the counter where it was; a send whose fate is
//! unknown leaves it unset, so the next send asks the chain.

use alloy_primitives::Address;
use async_trait::async_trait;
use std::sync::Arc;
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The counter of the settler key, held by one send at a time.
#[async_trait]
pub trait NonceStore: Send + Sync {
    /// Waits for the counter of `settler`. `Err` (the store is unreachable) means nothing is sent.
    async fn hold(&self, settler: Address) -> Result<Box<dyn HeldNonce>, String>;
}

/// A held counter. Dropped without `release`, it is left as it was.
#[async_trait]
pub trait HeldNonce: Send {
    /// The next nonce to sign with; `None` means "ask the chain" (`pending` count).
    fn next(&self) -> Option<u64>;
    /// Leaves `next` for the following send and lets it go.
    async fn release(self: Box<Self>, next: Option<u64>) -> Result<(), String>;
}

/// The counter in this process's memory: enough for one `api` process per settler key.
#[derive(Default)]
pub struct LocalNonces {
    next: Arc<Mutex<Option<u64>>>,
}

#[async_trait]
impl NonceStore for LocalNonces {
    async fn hold(&self, _settler: Address) -> Result<Box<dyn HeldNonce>, String> {
        Ok(Box::new(LocalHeld(
            Arc::clone(&self.next).lock_owned().await,
        )))
    }
}

struct LocalHeld(OwnedMutexGuard<Option<u64>>);

#[async_trait]
impl HeldNonce for LocalHeld {
    fn next(&self) -> Option<u64> {
        *self.0
    }
    async fn release(mut self: Box<Self>, next: Option<u64>) -> Result<(), String> {
        *self.0 = next;
        Ok(())
    }
}
