//! Deduplication of Twilio webhooks: the first delivery of a key acts, every replay is ignored.
//! The receipt is written in the same transaction as the webhook's effects (the api's webhook
//! handlers), so a delivery that fails half-way, or finds nothing to act on, uses up no key.

use chrono::{DateTime, Utc};
use sea_orm::{
    ConnectionTrait, DbErr,
    sea_query::{Alias, OnConflict, Query},
};

/// Records `key`; true the first time it is seen. Call it inside the transaction that applies
/// the webhook: a concurrent delivery of the same key waits on the unique key until that
/// transaction ends, and a rolled-back one leaves the key free for the retry.
pub async fn first_time(
    db: &impl ConnectionTrait,
    key: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let mut insert = Query::insert();
    insert
        .into_table(Alias::new("webhook_receipts"))
        .columns([Alias::new("key"), Alias::new("received_at")])
        .values([key.into(), now.into()])
        .map_err(|e| DbErr::Custom(e.to_string()))?
        .on_conflict(
            OnConflict::column(Alias::new("key"))
                .do_nothing()
                .to_owned(),
        );
    let done = db.execute(&insert).await?;
    Ok(done.rows_affected() == 1)
}
