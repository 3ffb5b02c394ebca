//! The `SQLite` side of the connection interface: statements through rusqlite's statement
//! cache, values converted to and from [`Value`]. Does I/O on the connection it is given.

use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};

use super::Result;
use super::value::{Row, Value};

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Real(x) => ToSqlOutput::Borrowed(ValueRef::Real(*x)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

fn from_ref(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

pub(super) fn rows<T>(
    conn: &Connection,
    sql: &str,
    params: &[Value],
    mut f: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let n = stmt.column_count();
    let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut out = Vec::new();
    let mut values = Vec::with_capacity(n);
    while let Some(row) = rows.next()? {
        values.clear();
        for i in 0..n {
            values.push(from_ref(row.get_ref(i)?));
        }
        out.push(f(&Row {
            names: &names,
            values: &values,
        })?);
    }
    Ok(out)
}

pub(super) fn execute(conn: &Connection, sql: &str, params: &[Value]) -> Result<usize> {
    let mut stmt = conn.prepare_cached(sql)?;
    Ok(stmt.execute(rusqlite::params_from_iter(params))?)
}
