//! The per-phone sale mark behind the review cooldown (issue 10): taken in one statement, so
//! concurrent requests to one phone inside a cooldown cannot all pass a check and then all buy.

use super::{entities::phone_mark, reviews};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set,
    ColumnTrait, ConnectionTrait, DbErr, DeleteMany, EntityTrait, ExprTrait, QueryFilter,
    TransactionTrait, UpdateMany,
    sea_query::{Expr, OnConflict},
};
use uuid::Uuid;

/// Whether a text to a phone may be sold, decided at the last step before settlement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sale {
    /// The mark is ours: settle.
    Marked,
    /// Another request to the phone was sold inside the cooldown.
    CooldownActive,
    /// The phone opted out since the pre-payment checks (a STOP that landed meanwhile).
    OptedOut,
}

/// Takes the phone's sale mark and re-reads the suppression list in one transaction, right
/// before settlement (issue 10): the pre-payment checks ran earlier, and a STOP that landed since
/// must not be charged and then refused at send time. The mark is taken first, so on SQLite the
/// write lock is held while the list is read; on PostgreSQL the read sees every STOP committed
/// before it. Either refusal rolls the mark back.
pub async fn take_for_sale(
    db: &sea_orm::DatabaseConnection,
    phone: &str,
    call_id: Uuid,
    now: DateTime<Utc>,
    days: i64,
) -> Result<Sale, DbErr> {
    let txn = db.begin().await?;
    if !take(&txn, phone, call_id, now, days).await? {
        return Ok(Sale::CooldownActive);
    }
    if reviews::is_suppressed(&txn, phone).await? {
        return Ok(Sale::OptedOut);
    }
    txn.commit().await?;
    Ok(Sale::Marked)
}

/// Marks a sale to `phone` by `call_id` at `now`, unless one was marked less than `days` ago
/// (`days == 0`: no cooldown asked, the mark is always taken). False: the cooldown holds.
pub async fn take(
    db: &impl ConnectionTrait,
    phone: &str,
    call_id: Uuid,
    now: DateTime<Utc>,
    days: i64,
) -> Result<bool, DbErr> {
    let row = phone_mark::ActiveModel {
        phone: Set(phone.to_owned()),
        call_id: Set(call_id),
        last_at: Set(now),
        previous_at: Set(None),
    };
    let mut on_conflict = OnConflict::column(phone_mark::Column::Phone);
    on_conflict
        .value(phone_mark::Column::CallId, Expr::value(call_id))
        .value(phone_mark::Column::LastAt, Expr::value(now))
        .value(
            phone_mark::Column::PreviousAt,
            Expr::col((phone_mark::Entity, phone_mark::Column::LastAt)),
        );
    if days > 0 {
        on_conflict.action_and_where(
            Expr::col((phone_mark::Entity, phone_mark::Column::LastAt))
                .lt(now - chrono::Duration::days(days)),
        );
    }
    let taken = phone_mark::Entity::insert(row)
        .on_conflict(on_conflict)
        .exec_without_returning(db)
        .await?;
    Ok(taken == 1)
}

/// The sale by `call_id` did not happen (its settlement was refused): its mark goes back to what
/// it was, if no later sale has replaced it.
pub async fn give_back(db: &impl ConnectionTrait, call_id: Uuid) -> Result<(), DbErr> {
    let (drop_new, restore) = give_back_statements(call_id);
    drop_new.exec(db).await?;
    restore.exec(db).await?;
    Ok(())
}

/// `give_back` as two statements, for the ledger to run in the transaction that refuses the
/// sale: the hand-back then happens exactly when the refusal moves the call, never twice (a
/// second run would drop the mark of the sale before) and never not at all (a crash between
/// the two writes would hold the phone's cooldown for a text never sold).
pub fn give_back_statements(
    call_id: Uuid,
) -> (
    DeleteMany<phone_mark::Entity>,
    UpdateMany<phone_mark::Entity>,
) {
    let drop_new = phone_mark::Entity::delete_many()
        .filter(phone_mark::Column::CallId.eq(call_id))
        .filter(phone_mark::Column::PreviousAt.is_null());
    let restore = phone_mark::Entity::update_many()
        .col_expr(
            phone_mark::Column::LastAt,
            Expr::col(phone_mark::Column::PreviousAt),
        )
        .col_expr(
            phone_mark::Column::PreviousAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(phone_mark::Column::CallId.eq(call_id));
    (drop_new, restore)
}
