//! Deduplication of Twilio webhooks: the first delivery of a key acts, every replay is ignored.

use chrono::{DateTime, Utc};
use sea_orm::{
    ConnectionTrait, DbErr,
    sea_query::{Alias, OnConflict, Query},
};

/// Records `key`; true the first time it is seen.
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
