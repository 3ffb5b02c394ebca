//! `utilgate store copy`: the whole history of one store into another (`SQLite` or `PostgreSQL`,
//! either way round), every table row for row with its ids, in one writing transaction on the
//! destination, then verified by row counts and checksums read back after the commit. Rerun, it
//! copies only what the destination lacks; a destination holding a different history is refused
//! before anything is written. Does I/O on the two stores' connections.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::db::Store;
use super::error::StoreError;
use super::sql::{self, Conn, TransactionBehavior, Value, params_from_iter};

/// Every table of the schema, parents before children (foreign keys hold at every insert),
/// with the columns that identify a row. A migration that adds a table adds it here (a test
/// checks that this list and a fresh store's tables agree).
pub(crate) const TABLES: &[(&str, &[&str])] = &[
    ("runs", &["id"]),
    ("series", &["id"]),
    ("results", &["id"]),
    ("baseline_moves", &["id"]),
    ("probes", &["id"]),
    ("evidence_blobs", &["sha256"]),
    ("evidence", &["id"]),
    ("serve_series", &["id"]),
    ("serve_results", &["id"]),
    ("serve_repeats", &["result_id", "repeat"]),
    ("serve_metrics", &["result_id", "repeat", "metric"]),
    ("serve_baseline_moves", &["id"]),
    ("serve_sweep_points", &["result_id", "repeat"]),
    ("run_canaries", &["run_id"]),
    ("run_groups", &["run_id"]),
    ("run_budgets", &["run_id"]),
    ("run_budget_unstarted", &["run_id", "ordinal"]),
    ("result_budgets", &["result_id"]),
    ("result_repeat_costs", &["result_id", "repeat"]),
    ("result_quality", &["result_id", "metric"]),
    ("result_speculation", &["result_id"]),
    ("result_energy", &["result_id", "repeat"]),
];

/// Raw traces are pruned by retention (`Store::add_evidence`): a destination may keep blobs
/// that its source has since pruned. Every other table only ever grows.
const PRUNED_TABLE: &str = "evidence_blobs";

/// What one table's copy did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TableCopy {
    pub table: &'static str,
    /// Rows in the source (read in one snapshot).
    pub rows: u64,
    /// Rows this copy wrote (0 on a rerun).
    pub copied: u64,
    /// Rows the destination kept that the source no longer has (pruned traces only).
    pub kept: u64,
    /// SHA-256 over the source's rows in key order; the destination's rows with the same keys,
    /// read back after the commit, hash the same.
    pub sha256: String,
}

/// What a whole copy did, table by table in [`TABLES`] order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CopyReport {
    pub tables: Vec<TableCopy>,
}

impl CopyReport {
    /// Rows written by this copy, over all tables.
    #[must_use]
    pub fn copied(&self) -> u64 {
        self.tables.iter().map(|t| t.copied).sum()
    }

    /// Rows in the source, over all tables.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }
}

/// One table's rows: each row's key and whole-row encodings, in key order.
type Encoded = BTreeMap<Vec<u8>, Vec<u8>>;

impl Store {
    /// Copies this store's whole history into `to` (see the module's comment). `self` is read
    /// in one snapshot; `to` is written in one transaction and read back to verify.
    pub fn copy_history_to(&mut self, to: &mut Store) -> Result<CopyReport, StoreError> {
        let from_path = self.path.clone();
        let to_path = to.path.clone();
        check_tables(&self.conn, &from_path)?;
        check_tables(&to.conn, &to_path)?;
        let read = |action| {
            let p = from_path.clone();
            move |e| StoreError::query(&p, action, e)
        };
        let write = |action| {
            let p = to_path.clone();
            move |e| StoreError::query(&p, action, e)
        };
        let snapshot = self
            .conn
            .transaction()
            .map_err(read("begin reading the history"))?;
        if snapshot.is_pg() {
            snapshot
                .execute_batch("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                .map_err(read("begin reading the history"))?;
        }
        let tx = to
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(write("begin the copy"))?;
        let mut report = CopyReport { tables: Vec::new() };
        let mut sources = Vec::new();
        for &(table, key) in TABLES {
            let columns = columns_of(&snapshot, table).map_err(read("read the tables' columns"))?;
            let dest_columns = columns_of(&tx, table).map_err(write("read the tables' columns"))?;
            if dest_columns != columns {
                return Err(StoreError::CopySchemaDiffers {
                    path: to_path.clone(),
                    table,
                });
            }
            let source = read_rows(&snapshot, table, &columns, key)
                .map_err(read("read the history to copy"))?;
            let dest = encode_all(
                &read_rows(&tx, table, &columns, key).map_err(write("read the history"))?,
                &columns,
                key,
            );
            let missing = plan_table(&to_path, table, &columns, key, &source, &dest)?;
            insert_rows(&tx, table, &columns, &missing).map_err(write("copy the history"))?;
            let encoded = encode_all(&source, &columns, key);
            report.tables.push(TableCopy {
                table,
                rows: encoded.len() as u64,
                copied: missing.len() as u64,
                kept: dest.keys().filter(|k| !encoded.contains_key(*k)).count() as u64,
                sha256: checksum(encoded.values()),
            });
            sources.push(encoded);
        }
        if tx.is_pg() {
            reset_identities(&tx).map_err(write("advance the id sequences"))?;
        }
        tx.commit().map_err(write("commit the copy"))?;
        snapshot.commit().map_err(read("end reading the history"))?;
        verify(to, &report, &sources)?;
        Ok(report)
    }
}

/// The rows of `source` that `dest` lacks; a row present in both that differs, or a row of the
/// destination that the source never had, is a different history.
fn plan_table<'s>(
    to: &Path,
    table: &'static str,
    columns: &[String],
    key: &[&str],
    source: &'s [Vec<Value>],
    dest: &Encoded,
) -> Result<Vec<&'s Vec<Value>>, StoreError> {
    let mut missing = Vec::new();
    let mut matched = 0;
    for row in source {
        let (k, whole) = encode_row(row, columns, key);
        match dest.get(&k) {
            Some(d) if *d == whole => matched += 1,
            Some(_) => {
                return Err(StoreError::DifferentHistory {
                    path: to.to_owned(),
                    table,
                    detail: format!(
                        "its row {} differs from the source's",
                        show_key(row, columns, key)
                    ),
                });
            }
            None => missing.push(row),
        }
    }
    let extra = dest.len() - matched;
    if extra > 0 && table != PRUNED_TABLE {
        return Err(StoreError::DifferentHistory {
            path: to.to_owned(),
            table,
            detail: format!("it holds {extra} row(s) the source does not have"),
        });
    }
    Ok(missing)
}

/// Reads the destination back after the commit: every table holds exactly the source's rows
/// (plus pruned traces it kept), with the same checksums.
fn verify(to: &Store, report: &CopyReport, sources: &[Encoded]) -> Result<(), StoreError> {
    let fail = to.fail("read the copy back");
    for (t, source) in report.tables.iter().zip(sources) {
        let key = key_of(t.table);
        let columns = columns_of(&to.conn, t.table).map_err(&fail)?;
        let rows = read_rows(&to.conn, t.table, &columns, key).map_err(&fail)?;
        let dest = encode_all(&rows, &columns, key);
        let same: Vec<&Vec<u8>> = dest
            .iter()
            .filter(|(k, _)| source.contains_key(*k))
            .map(|(_, v)| v)
            .collect();
        let got = checksum(same.iter().copied());
        let extra = (dest.len() - same.len()) as u64;
        if same.len() as u64 != t.rows || got != t.sha256 || extra != t.kept {
            return Err(StoreError::CopyMismatch {
                path: to.path.clone(),
                table: t.table,
                detail: format!(
                    "{} rows with checksum {got} read back, {} rows with checksum {} copied",
                    same.len(),
                    t.rows,
                    t.sha256
                ),
            });
        }
    }
    Ok(())
}

fn key_of(table: &str) -> &'static [&'static str] {
    TABLES
        .iter()
        .find(|(t, _)| *t == table)
        .map_or(&[], |(_, k)| k)
}

/// Refuses a store holding a table this build cannot copy (written by a newer utilgate).
fn check_tables(conn: &Conn, path: &Path) -> Result<(), StoreError> {
    let names = table_names(conn).map_err(|e| StoreError::query(path, "list the tables", e))?;
    match names
        .into_iter()
        .find(|n| !TABLES.iter().any(|(t, _)| t == n))
    {
        Some(table) => Err(StoreError::CopyUnknownTable {
            path: path.to_owned(),
            table,
        }),
        None => Ok(()),
    }
}

/// The store's own tables (not the schema-version table, not `SQLite`'s).
pub(crate) fn table_names(conn: &Conn) -> sql::Result<Vec<String>> {
    let q = if conn.is_pg() {
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' \
           AND table_name <> 'utilgate_schema' ORDER BY 1"
    } else {
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         ORDER BY 1"
    };
    conn.prepare(q)?.query_map([], |r| r.get(0))?.collect()
}

/// A table's columns in their declared order.
fn columns_of(conn: &Conn, table: &str) -> sql::Result<Vec<String>> {
    let q = if conn.is_pg() {
        "SELECT column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name::text = ?1 \
         ORDER BY ordinal_position"
    } else {
        "SELECT name FROM pragma_table_info(?1) ORDER BY cid"
    };
    conn.prepare(q)?.query_map([table], |r| r.get(0))?.collect()
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_rows(
    conn: &Conn,
    table: &str,
    columns: &[String],
    key: &[&str],
) -> sql::Result<Vec<Vec<Value>>> {
    let order = key
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let q = format!(
        "SELECT {} FROM \"{table}\" ORDER BY {order}",
        quoted(columns)
    );
    conn.prepare(&q)?
        .query_map([], |r| {
            (0..columns.len()).map(|i| r.get::<_, Value>(i)).collect()
        })?
        .collect()
}

fn insert_rows(
    conn: &Conn,
    table: &str,
    columns: &[String],
    rows: &[&Vec<Value>],
) -> sql::Result<()> {
    let marks = (1..=columns.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let q = format!(
        "INSERT INTO \"{table}\" ({}) VALUES ({marks})",
        quoted(columns)
    );
    let mut stmt = conn.prepare_cached(&q)?;
    for row in rows {
        stmt.execute(params_from_iter(row.iter().cloned()))?;
    }
    Ok(())
}

/// Rows inserted with their ids leave `PostgreSQL`'s identity sequences behind: the next run
/// would draw an id already taken. Each sequence moves to its table's largest id.
fn reset_identities(conn: &Conn) -> sql::Result<()> {
    for (table, key) in TABLES {
        if *key == ["id"] {
            conn.execute_batch(&format!(
                "SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM \"{table}\" \
                 HAVING max(id) IS NOT NULL"
            ))?;
        }
    }
    Ok(())
}

fn encode_all(rows: &[Vec<Value>], columns: &[String], key: &[&str]) -> Encoded {
    rows.iter().map(|r| encode_row(r, columns, key)).collect()
}

/// A row's key and whole-row encodings: each value tagged with its storage class, reals by
/// their bits, so that equal encodings are equal rows in every stored figure.
fn encode_row(row: &[Value], columns: &[String], key: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let mut k = Vec::new();
    for name in key {
        if let Some(i) = columns.iter().position(|c| c == name) {
            encode_value(&row[i], &mut k);
        }
    }
    let mut whole = Vec::new();
    for v in row {
        encode_value(v, &mut whole);
    }
    (k, whole)
}

fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0),
        Value::Int(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_be_bytes());
        }
        Value::Real(f) => {
            out.push(2);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        Value::Text(s) => {
            out.push(3);
            out.extend_from_slice(&(s.len() as u64).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::Blob(b) => {
            out.push(4);
            out.extend_from_slice(&(b.len() as u64).to_be_bytes());
            out.extend_from_slice(b);
        }
    }
}

fn checksum<'a>(rows: impl Iterator<Item = &'a Vec<u8>>) -> String {
    let mut h = Sha256::new();
    for r in rows {
        h.update((r.len() as u64).to_be_bytes());
        h.update(r);
    }
    format!("{:x}", h.finalize())
}

fn show_key(row: &[Value], columns: &[String], key: &[&str]) -> String {
    key.iter()
        .filter_map(|name| {
            let i = columns.iter().position(|c| c == name)?;
            let v = match &row[i] {
                Value::Int(n) => n.to_string(),
                Value::Text(s) => s.clone(),
                other => format!("{other:?}"),
            };
            Some(format!("{name}={v}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_table_of_a_fresh_store_is_copied() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("s.db"), Duration::from_secs(5)).expect("opens");
        let mut have = table_names(&store.conn).expect("tables");
        have.sort();
        let mut want: Vec<String> = TABLES.iter().map(|(t, _)| (*t).to_owned()).collect();
        want.sort();
        assert_eq!(have, want, "store/copy.rs TABLES must list every table");
    }

    #[test]
    fn encodings_tell_storage_classes_and_bits_apart() {
        let cols = ["a".to_owned()];
        let enc = |v: Value| encode_row(&[v], &cols, &["a"]).1;
        assert_ne!(enc(Value::Int(1)), enc(Value::Real(1.0)));
        assert_ne!(enc(Value::Real(0.0)), enc(Value::Real(-0.0)));
        assert_ne!(
            enc(Value::Text("x".into())),
            enc(Value::Blob(b"x".to_vec()))
        );
        assert_ne!(enc(Value::Null), enc(Value::Text(String::new())));
    }
}
