//! Rows read back on SQLite through rusqlite, decoded as sqlx decodes them for sea-orm: the
//! inverse of `super::bind` (a UUID from its 16 bytes, a time from its RFC 3339 text, JSON from
//! its text). Only the calls a write reads back (`RETURNING`) come this way.

use crate::db::entities::call;
use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::{Row, types::FromSqlError};
use sea_orm::{ActiveEnum, Iterable};
use uuid::Uuid;

/// `RETURNING` these, in this order, for [`call`].
pub fn call_columns() -> impl Iterator<Item = call::Column> {
    call::Column::iter()
}

/// A call row whose columns are [`call_columns`].
pub fn call(row: &Row<'_>) -> Result<call::Model, rusqlite::Error> {
    let mut i = 0..;
    let mut next = || i.next().unwrap_or_default();
    // In the entity's column order; `call_columns` asks for exactly these.
    Ok(call::Model {
        id: uuid(row, next())?,
        kind: stored(row, next())?,
        agent: optional_id(row, next())?,
        mode: optional_id(row, next())?,
        payer: row.get(next())?,
        request_hash: row.get(next())?,
        request: json(row, next())?,
        status: stored(row, next())?,
        attempts: row.get(next())?,
        runs: row.get(next())?,
        error: row.get(next())?,
        receipt_id: row.get(next())?,
        request_id: row.get(next())?,
        created_at: time(row, next())?,
        updated_at: time(row, next())?,
        completed_at: optional_time(row, next())?,
    })
}

fn uuid(row: &Row<'_>, i: usize) -> Result<Uuid, rusqlite::Error> {
    let bytes: Vec<u8> = row.get(i)?;
    Uuid::from_slice(&bytes).map_err(|e| conversion(i, e))
}

/// A state or kind, from the text it is stored as.
fn stored<T: ActiveEnum<Value = String>>(row: &Row<'_>, i: usize) -> Result<T, rusqlite::Error> {
    let text: String = row.get(i)?;
    T::try_from_value(&text).map_err(|e| conversion(i, e))
}

/// A coach's or mode's id, from its text.
fn optional_id<T>(row: &Row<'_>, i: usize) -> Result<Option<T>, rusqlite::Error>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let text: Option<String> = row.get(i)?;
    text.map(|t| t.parse().map_err(|e| conversion(i, e)))
        .transpose()
}

fn json(row: &Row<'_>, i: usize) -> Result<serde_json::Value, rusqlite::Error> {
    let text: String = row.get(i)?;
    serde_json::from_str(&text).map_err(|e| conversion(i, e))
}

fn time(row: &Row<'_>, i: usize) -> Result<DateTime<Utc>, rusqlite::Error> {
    let text: String = row.get(i)?;
    parse_time(&text).ok_or_else(|| conversion(i, FromSqlError::InvalidType))
}

fn optional_time(row: &Row<'_>, i: usize) -> Result<Option<DateTime<Utc>>, rusqlite::Error> {
    let text: Option<String> = row.get(i)?;
    text.map(|t| parse_time(&t).ok_or_else(|| conversion(i, FromSqlError::InvalidType)))
        .transpose()
}

/// RFC 3339, as `bind` and sqlx write a time; or SQLite's own `YYYY-MM-DD HH:MM:SS[.fff]`, UTC
/// (a column default of `CURRENT_TIMESTAMP`), which sqlx reads too.
fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(text, "%F %T%.f")
                .ok()
                .map(|t| t.and_utc())
        })
}

fn conversion(i: usize, e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::parse_time;
    use chrono::{TimeZone, Utc};

    #[test]
    fn times_read_as_sqlx_and_sqlite_write_them() {
        let t = Utc.timestamp_opt(1_764_000_000, 123_000_000).unwrap();
        assert_eq!(parse_time("2025-11-24T16:00:00.123+00:00"), Some(t));
        assert_eq!(parse_time("2025-11-24 16:00:00.123"), Some(t));
        assert_eq!(
            parse_time("2025-11-24 16:00:00"),
            Some(Utc.timestamp_opt(1_764_000_000, 0).unwrap())
        );
        assert_eq!(parse_time("yesterday"), None);
    }
}
