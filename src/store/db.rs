//! Opening the store: the `SQLite` file, its pragmas (WAL, foreign keys, busy timeout) and its
//! migrations; plus the value conversions every query shares. Does file I/O.

#![expect(clippy::disallowed_methods, reason = "the store is a file")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use super::error::StoreError;
use super::schema;
use super::sql::{self, Conn};

const PAGE_SIZE: i64 = 16_384;

/// Prepared statements a connection keeps. rusqlite keeps 16 by default, fewer than the
/// statements one run report or site page reads with (a run's page alone uses about 30), so
/// each was parsed and planned again for every case: a third of `utilgate site`'s time
/// building a run page went to `SQLite`'s parser and planner.
const STATEMENT_CACHE: usize = 256;

/// How much of the file a reader that walks much of it (`utilgate site`) maps into memory:
/// a case's nights lie one per run across the file, so reading them copies a page per night
/// through `read()`; mapped, the page cache is read in place. At most the file's size is
/// mapped.
const READ_MAP_BYTES: i64 = 1 << 40;

/// The utilgate history database. One `Store` per process (or thread); `SQLite`'s locks and the
/// busy timeout let several of them share one file.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Conn,
    pub(crate) path: PathBuf,
}

impl Store {
    /// Opens the store for reading and writing, creating the file and its parent directory
    /// when absent and upgrading an older schema. A store locked by another writer for longer
    /// than `busy_timeout` is [`StoreError::Locked`]; a file that is not a database is
    /// [`StoreError::Corrupt`] and is left exactly as it was.
    pub fn open(path: &Path, busy_timeout: Duration) -> Result<Store, StoreError> {
        Self::open_checked(path, busy_timeout, false)
    }

    /// Like [`Store::open`], but an existing empty (0-byte) file becomes a new store instead
    /// of [`StoreError::EmptyFile`] (`utilgate run --init`).
    pub fn open_init(path: &Path, busy_timeout: Duration) -> Result<Store, StoreError> {
        Self::open_checked(path, busy_timeout, true)
    }

    fn open_checked(path: &Path, busy_timeout: Duration, init: bool) -> Result<Store, StoreError> {
        if let Some(url) = path.to_str().filter(|p| sql::is_url(p)) {
            return Self::open_pg(url, true);
        }
        check_file(path, init, busy_timeout)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: path.to_owned(),
                source,
            })?;
        }
        // SQLite does not call the busy handler in every case of contention: switching a
        // fresh file to WAL while another process does the same answers SQLITE_BUSY at once.
        // Retry the whole opening sequence until the busy timeout has passed.
        let start = std::time::Instant::now();
        loop {
            match Self::open_once(path, busy_timeout) {
                Err(StoreError::Locked { .. }) if start.elapsed() < busy_timeout => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    fn open_once(path: &Path, busy_timeout: Duration) -> Result<Store, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = connect(path, flags, busy_timeout)?;
        // SQLite quietly opens a file it may not write read-only: a writer must know now.
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(StoreError::ReadOnly {
                path: path.to_owned(),
                source: None,
            });
        }
        // Read before anything writes: a file that is not a database fails here, untouched.
        let raw = conn;
        sqlite_version(&raw).map_err(|e| StoreError::open(path, e))?;
        // Results are about 1.6 KB each; on the default 4 KiB pages two fit per page and a
        // quarter of the file is slack. 16 KiB pages hold ten. Only a new file takes this.
        raw.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(|e| StoreError::open(path, e))?;
        // The mode it reports is not checked: a file system without shared memory keeps the
        // rollback journal, which is slower but just as safe.
        raw.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(|e| StoreError::open(path, e))?;
        // NORMAL is the usual pairing with WAL: a power cut may lose the last run, never
        // corrupt the file.
        raw.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(|e| StoreError::open(path, e))?;
        let mut conn = Conn::Sqlite(raw);
        schema::migrate(&mut conn, path, schema::LATEST)?;
        Ok(Store {
            conn,
            path: path.to_owned(),
        })
    }

    /// Opens an existing store for commands that only read. Never creates a file: a missing
    /// one is [`StoreError::Missing`]. Never migrates: an older schema is
    /// [`StoreError::OutdatedSchema`].
    pub fn open_existing_read_only(
        path: &Path,
        busy_timeout: Duration,
    ) -> Result<Store, StoreError> {
        if let Some(url) = path.to_str().filter(|p| sql::is_url(p)) {
            return Self::open_pg(url, false);
        }
        match path.try_exists() {
            Ok(true) => check_file(path, false, busy_timeout)?,
            Ok(false) => {
                return Err(StoreError::Missing {
                    path: path.to_owned(),
                });
            }
            Err(source) => {
                return Err(StoreError::CreateDir {
                    path: path.to_owned(),
                    source,
                });
            }
        }
        let conn = connect_read_only(path, busy_timeout)?;
        // A store read from a pull-request check's artifact is data from untrusted code:
        // SQLite's defensive mode, and no trust in functions its schema names.
        for (setting, on) in [
            (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
            (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
        ] {
            conn.set_db_config(setting, on)
                .map_err(|e| StoreError::open(path, e))?;
        }
        let conn = Conn::Sqlite(conn);
        let found = schema::version(&conn).map_err(|e| StoreError::open(path, e))?;
        if found == 0 {
            // Version 0 is a database without our schema: `run` is creating it right now (the
            // schema arrives in its first transaction), or nothing ever wrote it.
            return Err(StoreError::NoSchemaYet {
                path: path.to_owned(),
            });
        }
        if found > schema::LATEST {
            return Err(StoreError::NewerSchema {
                path: path.to_owned(),
                found,
                known: schema::LATEST,
            });
        }
        if found < schema::LATEST {
            return Err(StoreError::OutdatedSchema {
                path: path.to_owned(),
                found,
                known: schema::LATEST,
            });
        }
        Ok(Store {
            conn,
            path: path.to_owned(),
        })
    }

    /// Checks, before the first case, that a run can be written: a write transaction that is
    /// rolled back (a read-only file, a lock held too long or a damaged database fails here,
    /// not after an hour of measuring).
    pub fn preflight(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let fail = move |e| StoreError::query(&path, "check that the store can be written", e);
        let tx = self
            .conn
            .transaction_with_behavior(sql::TransactionBehavior::Immediate)
            .map_err(&fail)?;
        // A real write (the rollback discards it) and the last rows of the tables a run
        // appends to, so that a damaged b-tree or a read-only file fails now. On PostgreSQL
        // the table is a session's own (TEMP): a role that may only add rows to the history
        // (the ingest role of docs/postgres.md) creates no table in the shared schema.
        let create = if tx.is_pg() {
            "CREATE TEMP TABLE"
        } else {
            "CREATE TABLE"
        };
        tx.execute_batch(&format!(
            "{create} utilgate_preflight (x INTEGER); \
             INSERT INTO utilgate_preflight VALUES (1); \
             SELECT max(id) FROM runs; SELECT max(id) FROM results; \
             SELECT max(id) FROM baseline_moves;"
        ))
        .map_err(&fail)?;
        tx.rollback().map_err(&fail)
    }

    /// Reads the file through memory mapping ([`READ_MAP_BYTES`]), for a command that reads
    /// much of it (`utilgate site`); nothing changes on `PostgreSQL`.
    pub fn map_for_reading(&self) -> Result<(), StoreError> {
        match &self.conn {
            Conn::Sqlite(c) => c
                .query_row(&format!("PRAGMA mmap_size = {READ_MAP_BYTES}"), [], |_| {
                    Ok(())
                })
                .map_err(|e| StoreError::open(&self.path, e)),
            Conn::Pg(_) => Ok(()),
        }
    }

    /// The file this store reads and writes.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn fail(&self, action: &'static str) -> impl Fn(sql::Error) -> StoreError {
        let path = self.path.clone();
        move |e| StoreError::query(&path, action, e)
    }
}

/// How recently an empty store file must have been created to be taken for one that another
/// utilgate is creating right now (`SQLite` creates the file first and writes its header with the
/// first transaction, a few milliseconds later).
const CREATING_WINDOW: Duration = Duration::from_secs(30);

/// How long a fresh empty store with no rollback journal or WAL beside it is given to grow one:
/// the creator opens the file a moment before its first transaction makes either. Without
/// that sign of a creator, an empty file (`touch`ed, or left by a crash) is refused after this
/// rather than after the whole busy timeout (#28 item 9: it was 10 s).
const CREATOR_GRACE: Duration = Duration::from_millis(250);

/// Whether `SQLite` files beside `path` show a connection writing it (a rollback journal, or a
/// WAL and its index).
fn creator_evident(path: &Path) -> bool {
    ["-journal", "-wal", "-shm"].iter().any(|suffix| {
        let mut sibling = path.as_os_str().to_owned();
        sibling.push(suffix);
        Path::new(&sibling).exists()
    })
}

/// Refuses a store path that is a directory, and an existing empty file unless `init`: an
/// empty file where a history should be is a lost history, never a new one by accident. A
/// file created moments ago is given up to `busy_timeout` to receive its header first.
fn check_file(path: &Path, init: bool, busy_timeout: Duration) -> Result<(), StoreError> {
    let start = std::time::Instant::now();
    loop {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                return Err(StoreError::IsDirectory {
                    path: path.to_owned(),
                });
            }
            Ok(meta) if meta.len() == 0 && !init => {
                let fresh = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.elapsed().ok())
                    .is_some_and(|age| age < CREATING_WINDOW);
                let patience = if creator_evident(path) {
                    busy_timeout
                } else {
                    busy_timeout.min(CREATOR_GRACE)
                };
                if !fresh || start.elapsed() >= patience {
                    return Err(StoreError::EmptyFile {
                        path: path.to_owned(),
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => return Ok(()),
        }
    }
}

/// A read-only connection. In a directory this user cannot write, `SQLite` cannot create the
/// WAL index beside the file; the file is then opened immutable (nobody can be writing it
/// through this directory's permissions, and what WAL holds was checkpointed on the last close).
fn connect_read_only(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let first = connect(path, flags, busy_timeout).and_then(|conn| {
        sqlite_version(&conn)
            .map(|_| conn)
            .map_err(|e| StoreError::open(path, e))
    });
    match first {
        Err(StoreError::Open { .. } | StoreError::ReadOnly { .. }) if cannot_write_dir(path) => {
            let uri = format!("file:{}?mode=ro&immutable=1", uri_path(path));
            connect(
                Path::new(&uri),
                flags | OpenFlags::SQLITE_OPEN_URI,
                busy_timeout,
            )
            .map_err(|e| match e {
                StoreError::Open { source, .. } => StoreError::Open {
                    path: path.to_owned(),
                    source,
                },
                other => other,
            })
        }
        other => other,
    }
}

/// Whether this process cannot create a file beside `path` (permissions, a read-only mount).
fn cannot_write_dir(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    tempfile::tempfile_in(dir).is_err()
}

/// A path as the path part of an `SQLite` URI: `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

fn connect(
    path: &Path,
    flags: OpenFlags,
    busy_timeout: Duration,
) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags).map_err(|e| StoreError::open(path, e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| StoreError::open(path, e))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // The query planner's stability guarantee: a statement's plan never depends on the values
    // bound to it. Without it `SQLite` marks a cached statement whose plan read a bound value
    // (a column compared with a parameter, as most of ours are) to be compiled again each time
    // a new value is bound, which was nearly half of `utilgate site`'s time: a statement cache
    // that compiles every query again is no cache.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| StoreError::open(path, e))?;
    Ok(conn)
}

/// `PRAGMA user_version` of a raw `SQLite` connection (a file that is not a database fails here).
fn sqlite_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Nanoseconds since the epoch as stored; the range is 1677..2262, ample for a CI history.
pub(crate) fn timestamp_to_ns(path: &Path, t: Timestamp) -> Result<i64, StoreError> {
    i64::try_from(t.as_nanosecond()).map_err(|_| StoreError::OutOfRange {
        path: path.to_owned(),
        what: "timestamp",
        value: t.to_string(),
    })
}

pub(crate) fn ns_to_timestamp(
    path: &Path,
    column: &'static str,
    row: i64,
    ns: i64,
) -> Result<Timestamp, StoreError> {
    Timestamp::from_nanosecond(i128::from(ns)).map_err(|e| StoreError::BadValue {
        path: path.to_owned(),
        column,
        row,
        detail: e.to_string(),
    })
}

pub(crate) fn u64_to_i64(path: &Path, what: &'static str, v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::OutOfRange {
        path: path.to_owned(),
        what,
        value: v.to_string(),
    })
}

pub(crate) fn i64_to_u64(
    path: &Path,
    column: &'static str,
    row: i64,
    v: i64,
) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::BadValue {
        path: path.to_owned(),
        column,
        row,
        detail: format!("{v} is negative"),
    })
}

pub(crate) fn parse_json(
    path: &Path,
    column: &'static str,
    row: i64,
    text: Option<String>,
) -> Result<Option<serde_json::Value>, StoreError> {
    text.map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|source| StoreError::Json {
            path: path.to_owned(),
            column,
            row,
            source,
        })
}

pub(crate) fn parse_text<T: std::str::FromStr<Err = String>>(
    path: &Path,
    column: &'static str,
    row: i64,
    text: &str,
) -> Result<T, StoreError> {
    text.parse().map_err(|detail| StoreError::BadValue {
        path: path.to_owned(),
        column,
        row,
        detail,
    })
}
