//! The only writes of a review request's state and of its log (issue 26): every statement that
//! sets `review_requests.status` or inserts into `review_events` is in this file. Each move is a
//! compare-and-set on the state it was decided from, so two writers (two runs of a job, a
//! webhook and the sweeper) never both move one request: the loser sees nothing changed and the
//! service decides again from what the winner left.

use super::event::EventKind;
use crate::{
    db::entities::{link_click, review_event, review_request},
    review::ReviewStatus,
};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter,
    sea_query::Expr,
};
use serde_json::Value;
use uuid::Uuid;

/// Columns a move sets in the same statement as the state.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Cols {
    pub send_at: Option<DateTime<Utc>>,
    pub follow_up_due_at: Option<DateTime<Utc>>,
}

impl Cols {
    pub fn send_at(at: DateTime<Utc>) -> Self {
        Self {
            send_at: Some(at),
            ..Self::default()
        }
    }

    pub fn follow_up_due(at: DateTime<Utc>) -> Self {
        Self {
            follow_up_due_at: Some(at),
            ..Self::default()
        }
    }
}

/// Reads a request inside the caller's transaction.
pub(super) async fn load(
    db: &impl ConnectionTrait,
    id: &str,
) -> Result<Option<review_request::Model>, DbErr> {
    review_request::Entity::find_by_id(id.to_owned())
        .one(db)
        .await
}

/// Records a paid request in its first state, with the log's first entry.
pub(super) async fn insert(
    db: &impl ConnectionTrait,
    mut row: review_request::ActiveModel,
    detail: Value,
    now: DateTime<Utc>,
) -> Result<review_request::Model, DbErr> {
    row.status = Set(ReviewStatus::INITIAL);
    let model = review_request::Entity::insert(row)
        .exec_with_returning(db)
        .await?;
    log(db, &model.id, ReviewStatus::INITIAL.into(), detail, now).await?;
    Ok(model)
}

/// One move of a request's state: from one of `from` to `to`, setting `cols`, logged as `kind`.
pub(super) struct Move {
    pub from: Vec<ReviewStatus>,
    pub to: ReviewStatus,
    pub kind: EventKind,
    pub detail: Value,
    pub cols: Cols,
}

impl Move {
    /// A move logged under the state it enters.
    pub fn new(from: &[ReviewStatus], to: ReviewStatus, detail: Value) -> Self {
        Self {
            from: from.to_vec(),
            to,
            kind: to.into(),
            detail,
            cols: Cols::default(),
        }
    }

    pub fn logged_as(mut self, kind: EventKind) -> Self {
        self.kind = kind;
        self
    }

    pub fn with(mut self, cols: Cols) -> Self {
        self.cols = cols;
        self
    }
}

/// Makes the move on request `id`; false, with nothing written, when it is no longer in one of
/// the move's `from`.
pub(super) async fn move_to(
    db: &impl ConnectionTrait,
    id: &str,
    m: Move,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let mut update = review_request::Entity::update_many()
        .col_expr(review_request::Column::Status, Expr::value(m.to))
        .col_expr(review_request::Column::UpdatedAt, Expr::value(now));
    if let Some(at) = m.cols.send_at {
        update = update.col_expr(review_request::Column::SendAt, Expr::value(at));
    }
    if let Some(at) = m.cols.follow_up_due_at {
        update = update.col_expr(review_request::Column::FollowUpDueAt, Expr::value(Some(at)));
    }
    let moved = update
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::Status.is_in(m.from))
        .exec(db)
        .await?
        .rows_affected
        == 1;
    if moved {
        log(db, id, m.kind, m.detail, now).await?;
    }
    Ok(moved)
}

/// Leaves request `id` at `at` but sets `cols` and its `updated_at` (the sweeper reads it),
/// logging `kind` when given; false when it is no longer at `at`.
pub(super) async fn stay(
    db: &impl ConnectionTrait,
    id: &str,
    at: ReviewStatus,
    entry: Option<(EventKind, Value)>,
    cols: Cols,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let mut update = review_request::Entity::update_many()
        .col_expr(review_request::Column::UpdatedAt, Expr::value(now));
    if let Some(t) = cols.send_at {
        update = update.col_expr(review_request::Column::SendAt, Expr::value(t));
    }
    if let Some(t) = cols.follow_up_due_at {
        update = update.col_expr(review_request::Column::FollowUpDueAt, Expr::value(Some(t)));
    }
    let kept = update
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::Status.eq(at))
        .exec(db)
        .await?
        .rows_affected
        == 1;
    if kept && let Some((kind, detail)) = entry {
        log(db, id, kind, detail, now).await?;
    }
    Ok(kept)
}

/// Appends an entry to a request's log.
pub(super) async fn log(
    db: &impl ConnectionTrait,
    id: &str,
    kind: EventKind,
    detail: Value,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let row = review_event::ActiveModel {
        id: Set(Uuid::now_v7()),
        request_id: Set(id.to_owned()),
        kind: Set(kind),
        detail: Set(detail),
        created_at: Set(now),
    };
    review_event::Entity::insert(row).exec(db).await?;
    Ok(())
}

/// Records a click on the request's link; true for its first click (`clicked_at` set now).
pub(super) async fn click(
    db: &impl ConnectionTrait,
    id: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    link_click::Entity::insert(link_click::ActiveModel {
        id: Set(Uuid::now_v7()),
        request_id: Set(id.to_owned()),
        clicked_at: Set(now),
    })
    .exec(db)
    .await?;
    let first = review_request::Entity::update_many()
        .col_expr(review_request::Column::ClickedAt, Expr::value(Some(now)))
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::ClickedAt.is_null())
        .exec(db)
        .await?
        .rows_affected
        == 1;
    if first {
        log(db, id, EventKind::Clicked, serde_json::json!({}), now).await?;
    }
    Ok(first)
}
