//! On PostgreSQL, a result and a model answer are kept as the JSON text they were written as
//! (`json`, not `jsonb`), and large JSON columns are compressed with lz4 where the server has it
//! (issue 12). SQLite keeps JSON as text already; nothing changes there.
//!
//! Why: these documents are written once and returned whole, never queried inside. `jsonb` parsed
//! each into a tree on the way in and printed it back on the way out (together about a tenth of
//! PostgreSQL's time per paid call), and printed its keys in its own order, not the order first
//! returned; `json` stores and returns the text as given. pglz compression of the result was
//! another twelfth; lz4 does the same job at a fraction of the cost.
//!
//! Changing a column's type rewrites its table under an exclusive lock: on a large existing
//! deployment, run `migrate` in a quiet moment.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261125_000009_json_as_written"
    }
}

/// The columns whose type changes: (table, column).
const AS_TEXT: [(&str, &str); 2] = [("results", "body"), ("model_calls", "outcome")];

/// The columns compressed with lz4 when the server supports it.
const LZ4: [(&str, &str); 4] = [
    ("results", "body"),
    ("model_calls", "outcome"),
    ("calls", "request"),
    ("payments", "settle_request"),
];

/// Sets lz4 (or back to the default) on `LZ4`, only if this server was built with lz4.
fn compression(method: &str) -> String {
    let alters: String = LZ4
        .iter()
        .map(|(t, c)| format!(r#"ALTER TABLE "{t}" ALTER COLUMN "{c}" SET COMPRESSION {method}; "#))
        .collect();
    format!(
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' \
         AND 'lz4' = ANY(enumvals)) THEN {alters}END IF; END $$"
    )
}

fn retype(to: &str) -> Vec<String> {
    AS_TEXT
        .iter()
        .map(|(t, c)| {
            format!(r#"ALTER TABLE "{t}" ALTER COLUMN "{c}" TYPE {to} USING "{c}"::{to}"#)
        })
        .collect()
}

async fn run(m: &SchemaManager<'_>, statements: Vec<String>) -> Result<(), DbErr> {
    let db = m.get_connection();
    if db.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    for sql in statements {
        db.execute_unprepared(&sql).await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let mut statements = retype("json");
        statements.push(compression("lz4"));
        run(m, statements).await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let mut statements = vec![compression("DEFAULT")];
        statements.extend(retype("jsonb"));
        run(m, statements).await
    }
}
