//! Write transactions that run together (issue 12). On a SQLite file they share one COMMIT
//! (`grove_common::db::write`'s group commit); on PostgreSQL and in-memory SQLite each commits
//! alone. Either way each keeps or undoes only its own writes, returns only once what it wrote
//! (and what it saw of the others) is committed, and two that race for one key see one winner.

use chrono::Utc;
use grove_common::{
    db::{
        entities::suppression,
        write::{Done, Exec, Inserted},
    },
    transaction,
};
use grove_tests::TestDb;
use sea_orm::{ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, Insert};

fn suppress(phone: &str) -> Insert<suppression::ActiveModel> {
    suppression::Entity::insert(suppression::ActiveModel {
        phone: Set(phone.into()),
        active: Set(true),
        reason: Set("test".into()),
        updated_at: Set(Utc::now()),
    })
}

/// Seen from sqlx's connection, which sees only what is committed.
async fn stored(db: &DatabaseConnection, phone: &str) -> bool {
    suppression::Entity::find_by_id(phone.to_owned())
        .one(db)
        .await
        .expect("read")
        .is_some()
}

#[tokio::test]
async fn transactions_that_run_together_each_keep_or_undo_only_their_own_writes() {
    let (_test_db, db) = TestDb::migrated().await;
    let members = (0..24).map(|i| {
        let db = db.clone();
        async move {
            let phone = format!("+1555010{i:04}");
            let insert = suppress(&phone);
            let done = transaction!(&db, async move |e| {
                e.exec(&insert).await?;
                match i % 3 {
                    0 => Ok(Done::Commit(())),
                    1 => Ok(Done::Rollback(())),
                    _ => Err(DbErr::Custom("the body failed".into())),
                }
            });
            (i, done.is_ok(), stored(&db, &phone).await)
        }
    });
    for (i, ok, seen) in futures::future::join_all(members).await {
        let expected = match i % 3 {
            0 => (true, true),
            1 => (true, false),
            _ => (false, false),
        };
        assert_eq!((ok, seen), expected, "transaction {i}");
    }
}

/// The second of two transactions that insert one key loses, and when it says so the winner's
/// row is committed: a loser's answer never rests on writes that could still vanish.
#[tokio::test]
async fn of_two_transactions_racing_for_one_key_the_loser_returns_after_the_winner_committed() {
    let (_test_db, db) = TestDb::migrated().await;
    let phone = "+15550200000";
    let race = |db: DatabaseConnection| async move {
        let insert = suppress(phone);
        let won = transaction!(&db, async move |e| match e.insert(&insert).await? {
            Inserted::Rows(1) => Ok(Done::Commit(true)),
            Inserted::Rows(_) | Inserted::Duplicate => Ok(Done::Rollback(false)),
        })
        .expect("transaction");
        (won, stored(&db, phone).await)
    };
    let (first, second) = tokio::join!(race(db.clone()), race(db.clone()));
    assert_eq!(
        [first, second].iter().filter(|(won, _)| *won).count(),
        1,
        "one winner: {first:?} {second:?}"
    );
    assert!(
        first.1 && second.1,
        "both returned after the winner's commit"
    );
}
