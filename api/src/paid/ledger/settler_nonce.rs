//! The settler key's nonce counter in PostgreSQL, shared by every `api` replica settling with
//! the key (`x402::chain::NonceStore`; table `settler_nonces`).
//!
//! A send holds the key's row with `SELECT … FOR UPDATE` in a transaction from picking its nonce
//! until the node has answered (one `eth_sendRawTransaction`, milliseconds), then writes the next
//! nonce and commits. A replica that dies mid-send rolls back: the counter stays where it was, and
//! the next send meets the taken nonce ("nonce too low"), asks the chain, and goes on. Each
//! replica first serializes its own sends (`SelfSettler::sending`), so at most one connection per
//! replica waits for the row.

use crate::x402::chain::{HeldNonce, NonceStore};
use alloy_primitives::Address;
use async_trait::async_trait;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, Statement,
    TransactionTrait,
};

pub struct SharedNonces {
    db: DatabaseConnection,
}

impl SharedNonces {
    /// PostgreSQL only: SQLite serves one process, whose own counter (`LocalNonces`) suffices.
    pub fn new(db: DatabaseConnection) -> Self {
        Self { db }
    }
}

#[async_trait]
impl NonceStore for SharedNonces {
    async fn hold(&self, settler: Address) -> Result<Box<dyn HeldNonce>, String> {
        let key = format!("{settler:#x}");
        let txn = self.db.begin().await.map_err(|e| e.to_string())?;
        let now = grove_common::clock::wall();
        txn.execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            r#"INSERT INTO "settler_nonces" ("settler", "next_nonce", "updated_at")
               VALUES ($1, NULL, $2) ON CONFLICT ("settler") DO NOTHING"#,
            [key.clone().into(), now.into()],
        ))
        .await
        .map_err(|e| e.to_string())?;
        let row = txn
            .query_one_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                r#"SELECT "next_nonce" FROM "settler_nonces" WHERE "settler" = $1 FOR UPDATE"#,
                [key.clone().into()],
            ))
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the settler's nonce row vanished")?;
        let next: Option<i64> = row.try_get("", "next_nonce").map_err(|e| e.to_string())?;
        Ok(Box::new(Held {
            txn,
            key,
            next: next.and_then(|n| u64::try_from(n).ok()),
        }))
    }
}

struct Held {
    txn: DatabaseTransaction,
    key: String,
    next: Option<u64>,
}

#[async_trait]
impl HeldNonce for Held {
    fn next(&self) -> Option<u64> {
        self.next
    }

    async fn release(self: Box<Self>, next: Option<u64>) -> Result<(), String> {
        let next: Option<i64> = next.and_then(|n| i64::try_from(n).ok());
        self.txn
            .execute_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                r#"UPDATE "settler_nonces" SET "next_nonce" = $2, "updated_at" = $3
                   WHERE "settler" = $1"#,
                [
                    self.key.clone().into(),
                    next.into(),
                    grove_common::clock::wall().into(),
                ],
            ))
            .await
            .map_err(|e| e.to_string())?;
        self.txn.commit().await.map_err(|e| e.to_string())
    }
}
