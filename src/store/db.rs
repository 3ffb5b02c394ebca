//! Opening the store: the `SQLite` file, its pragmas (WAL, foreign keys, busy timeout) and its
//! migrations; plus the value conversions every query shares. Does file I/O.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use super::error::StoreError;
use super::schema;

const PAGE_SIZE: i64 = 16_384;

/// The utilgate history database. One `Store` per process (or thread); `SQLite`'s locks and the
/// busy timeout let several of them share one file.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

impl Store {
    /// Opens the store for reading and writing, creating the file and its parent directory
    /// when absent and upgrading an older schema. A store locked by another writer for longer
    /// than `busy_timeout` is [`StoreError::Locked`]; a file that is not a database is
    /// [`StoreError::Corrupt`] and is left exactly as it was.
    pub fn open(path: &Path, busy_timeout: Duration) -> Result<Store, StoreError> {
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
        let mut conn = connect(path, flags, busy_timeout)?;
        // Read before anything writes: a file that is not a database fails here, untouched.
        schema::version(&conn).map_err(|e| StoreError::open(path, e))?;
        // Results are about 1.6 KB each; on the default 4 KiB pages two fit per page and a
        // quarter of the file is slack. 16 KiB pages hold ten. Only a new file takes this.
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(|e| StoreError::open(path, e))?;
        // The mode it reports is not checked: a file system without shared memory keeps the
        // rollback journal, which is slower but just as safe.
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(|e| StoreError::open(path, e))?;
        // NORMAL is the usual pairing with WAL: a power cut may lose the last run, never
        // corrupt the file.
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(|e| StoreError::open(path, e))?;
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
        match path.try_exists() {
            Ok(true) => {}
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
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = connect(path, flags, busy_timeout)?;
        // A store read from a pull-request check's artifact is data from untrusted code:
        // SQLite's defensive mode, and no trust in functions its schema names.
        for (setting, on) in [
            (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
            (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
        ] {
            conn.set_db_config(setting, on)
                .map_err(|e| StoreError::open(path, e))?;
        }
        let found = schema::version(&conn).map_err(|e| StoreError::open(path, e))?;
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

    /// The file this store reads and writes.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn fail(&self, action: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
        let path = self.path.clone();
        move |e| StoreError::query(&path, action, e)
    }
}

fn connect(
    path: &Path,
    flags: OpenFlags,
    busy_timeout: Duration,
) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags).map_err(|e| StoreError::open(path, e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| StoreError::open(path, e))?;
    Ok(conn)
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
