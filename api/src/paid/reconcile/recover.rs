//! Recovery: settled calls whose job is lost are pushed again.

use super::BATCH;
use crate::{paid::fulfil, state::AppState};
use chrono::{DateTime, Duration, Utc};
use grove_common::{
    db::{calls, entities::call},
    ledger::CallStatus,
};
use sea_orm::{
    ColumnTrait, Condition, DbErr, EntityTrait, ExprTrait, QueryFilter, QueryOrder, QuerySelect,
    sea_query::{Alias, Expr},
};

/// Settled calls whose job is lost: still `pending` well past the time their job should have
/// started (with the embedded worker: pending since before this process started), or `running`
/// under a time lease that lapsed. Push them again.
pub(super) async fn stranded(
    state: &AppState,
    now: DateTime<Utc>,
    started_at: DateTime<Utc>,
) -> Result<usize, DbErr> {
    // A job starts within moments of its push (a failed push is retried at once, `push`); a
    // whole call deadline of quiet is a lost one.
    let quiet = Duration::from_std(state.config.call_deadline).unwrap_or(Duration::seconds(60));
    let mut lost_before = now - quiet;
    if state.queue.in_process() {
        // The in-process queue died with the process that ran before this one.
        lost_before = Ord::max(lost_before, started_at);
    }
    let lease_until = Expr::col(Alias::new("lease_until"));
    let lost = Condition::any()
        .add(
            Condition::all()
                .add(call::Column::Status.eq(CallStatus::Pending))
                .add(call::Column::UpdatedAt.lt(lost_before)),
        )
        .add(
            Condition::all()
                .add(call::Column::Status.eq(CallStatus::Running))
                .add(lease_until.lt(now))
                // Once per lease period, not once per pass.
                .add(call::Column::UpdatedAt.lt(now - calls::LEASE)),
        );
    let stale = call::Entity::find()
        .filter(lost)
        .order_by_asc(call::Column::UpdatedAt)
        .limit(BATCH)
        .all(&state.db)
        .await?;
    let mut pushed = 0;
    for c in stale {
        // Take it for this period: touch `updated_at` only if no one else did.
        let taken = call::Entity::update_many()
            .col_expr(call::Column::UpdatedAt, Expr::value(now))
            .filter(call::Column::Id.eq(c.id))
            .filter(call::Column::Status.eq(c.status))
            .filter(call::Column::UpdatedAt.eq(c.updated_at))
            .exec(&state.db)
            .await?;
        if taken.rows_affected != 1 {
            continue;
        }
        tracing::warn!(call_id = %c.id, status = %c.status, "settled call's job is lost; pushing it again");
        // Records what was bought if the crash came before it (idempotently), then pushes.
        if fulfil::after_settled_stored(state, &c).await? {
            pushed += 1;
        }
    }
    Ok(pushed)
}
