//! On PostgreSQL, a result and a model answer are kept in their own rows, compressed, instead of
//! in TOAST chunks beside them (issue 31). SQLite has no TOAST; nothing changes there.
//!
//! Why: both are written once per paid call and are 3-4 KB of JSON, about 2.5 KB after lz4.
//! PostgreSQL's default storage (`EXTENDED`) moves a value out of its row once the compressed row
//! is still over about 2 KB, so each document became two chunks in its table's TOAST relation:
//! four more heap rows, four more index entries and their WAL records on every paid call, and
//! a read of the TOAST index to return the result. `MAIN` compresses the same way and moves a
//! value out only when its row still exceeds a page, so a document up to about 8 KB compressed
//! stays in its row; a larger one is stored out of line as before.
//!
//! Changing a column's storage changes only the catalog: no rewrite, rows already written stay
//! where they are, and the new storage applies to rows written after it.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261206_000024_documents_in_row"
    }
}

/// The documents written once per paid call: (table, column).
const DOCUMENTS: [(&str, &str); 2] = [("results", "body"), ("model_calls", "outcome")];

async fn storage(m: &SchemaManager<'_>, storage: &str) -> Result<(), DbErr> {
    let db = m.get_connection();
    if db.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    for (table, column) in DOCUMENTS {
        db.execute_unprepared(&format!(
            r#"ALTER TABLE "{table}" ALTER COLUMN "{column}" SET STORAGE {storage}"#
        ))
        .await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        storage(m, "MAIN").await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        storage(m, "EXTENDED").await
    }
}
