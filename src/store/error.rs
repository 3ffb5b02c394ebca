//! The store's error type: every variant names the store file, and [`StoreError::hint`] says
//! what the user can do about it. No I/O.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

use super::sql;
use thiserror::Error;

use super::samples::SampleError;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("failed to create the directory for the store {}", .path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to open the store {}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: sql::Error,
    },
    #[error("no store at {}; run `utilgate run` first", .path.display())]
    Missing { path: PathBuf },
    #[error("the store {} stayed locked by another writer past the busy timeout", .path.display())]
    Locked { path: PathBuf },
    #[error("the store {} is corrupt or not an SQLite database", .path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: sql::Error,
    },
    #[error("the store {} has schema version {}, newer than the {} this utilgate knows", .path.display(), .found, .known)]
    NewerSchema {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("the store {} has schema version {}, older than the {} this utilgate reads", .path.display(), .found, .known)]
    OutdatedSchema {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("failed to {} in the store {}", .action, .path.display())]
    Query {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: sql::Error,
    },
    #[error("the store {} holds unreadable JSON in results.{} of row {}", .path.display(), .column, .row)]
    Json {
        path: PathBuf,
        column: &'static str,
        row: i64,
        #[source]
        source: serde_json::Error,
    },
    #[error("the store {} holds an unreadable value in {} of row {}: {}", .path.display(), .column, .row, .detail)]
    BadValue {
        path: PathBuf,
        column: &'static str,
        row: i64,
        detail: String,
    },
    #[error("the store {} holds unreadable raw samples in result {}", .path.display(), .result_id)]
    Samples {
        path: PathBuf,
        result_id: i64,
        #[source]
        source: SampleError,
    },
    #[error("no result {} in the store {}", .result_id, .path.display())]
    UnknownResult { path: PathBuf, result_id: i64 },
    #[error("{} is a directory, not a store file", .path.display())]
    IsDirectory { path: PathBuf },
    #[error("store is empty but exists: {} is 0 bytes", .path.display())]
    EmptyFile { path: PathBuf },
    #[error("the store {} cannot be written (a read-only file, directory or file system)", .path.display())]
    ReadOnly {
        path: PathBuf,
        #[source]
        source: Option<sql::Error>,
    },
    #[error("the disk holding the store {} is full", .path.display())]
    Full {
        path: PathBuf,
        #[source]
        source: sql::Error,
    },
    #[error("the store {} holds no runs yet: it is being created by another utilgate, or was never written", .path.display())]
    NoSchemaYet { path: PathBuf },
    #[error("lost the connection to the store {} (nothing of this write was stored)", .path.display())]
    Lost {
        path: PathBuf,
        #[source]
        source: sql::Error,
    },
    #[error("could not connect to the store {}", .path.display())]
    Connect {
        path: PathBuf,
        #[source]
        source: sql::Error,
    },
    #[error("refused the TLS connection to the store {}: {}", .path.display(), .detail)]
    Tls { path: PathBuf, detail: String },
    #[error("{} is not a usable PostgreSQL URL: {}", .url, .detail)]
    BadUrl { url: String, detail: String },
    #[error("the store {} refused the login", .path.display())]
    Login {
        path: PathBuf,
        #[source]
        source: sql::Error,
    },
    #[error("the store {} holds a different history than the source: in table {}, {}; nothing was copied", .path.display(), .table, .detail)]
    DifferentHistory {
        path: PathBuf,
        table: &'static str,
        detail: String,
    },
    #[error("the copy in {} does not read back as copied: table {}: {}", .path.display(), .table, .detail)]
    CopyMismatch {
        path: PathBuf,
        table: &'static str,
        detail: String,
    },
    #[error("the table {} of the store {} has other columns than the source's", .table, .path.display())]
    CopySchemaDiffers { path: PathBuf, table: &'static str },
    #[error("the store {} holds a table {} that this utilgate does not know", .path.display(), .table)]
    CopyUnknownTable { path: PathBuf, table: String },
    #[error("the run {} is stored already in {} as run #{}: not stored again", .uid, .path.display(), .run_id)]
    AlreadyStored {
        path: PathBuf,
        uid: String,
        run_id: i64,
    },
    #[error("{} {} cannot be stored in {}: it is out of range", .what, .value, .path.display())]
    OutOfRange {
        path: PathBuf,
        what: &'static str,
        value: String,
    },
}

impl StoreError {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        let hint = match self {
            StoreError::CreateDir { .. } | StoreError::Open { .. } => {
                "set `[store] path` in utilgate.toml or pass `--db PATH` to use a writable location"
            }
            StoreError::Missing { .. } => {
                "point `--db` or `[store] path` at an existing store, or run `utilgate run` to create one"
            }
            StoreError::Locked { .. } => {
                "another utilgate process holds the store; wait for it to finish or raise the busy timeout"
            }
            StoreError::Corrupt { .. } => {
                "utilgate never overwrites it: move it aside and import baselines from baselines/ with `utilgate baseline import`"
            }
            StoreError::NewerSchema { .. } => {
                "it was written by a newer utilgate and is never downgraded: upgrade utilgate"
            }
            StoreError::OutdatedSchema { .. } => {
                "run `utilgate run` once with this version to upgrade the store"
            }
            StoreError::Json { .. } | StoreError::BadValue { .. } | StoreError::Samples { .. } => {
                "the store file may be damaged; keep a copy and report it"
            }
            StoreError::UnknownResult { .. } => "list result ids with `utilgate runs show RUN`",
            StoreError::IsDirectory { .. } => {
                "point `--db` or `[store] path` at a file inside that directory, e.g. DIR/utilgate.db"
            }
            StoreError::EmptyFile { .. } => {
                "restore it or delete it to start a new history (or pass `--init` to start one in it)"
            }
            StoreError::ReadOnly { .. } => {
                "make the store and its directory writable for this user, or point `--db` at a writable copy; readers (`runs`, `report`, `compare`) work as they are"
            }
            StoreError::Full { .. } => {
                "free space on that disk (or point `--db` elsewhere); nothing half-written was kept"
            }
            StoreError::NoSchemaYet { .. } => {
                "wait for the `utilgate run` that creates it to finish, then try again"
            }
            StoreError::Lost { .. } => {
                "check that the PostgreSQL server is up and reachable, then run again; the history holds everything stored before this write"
            }
            StoreError::Connect { .. } => {
                "check the host and port in the URL and that the server is running; add `connect_timeout=SECONDS` to the URL to wait longer"
            }
            StoreError::Tls { .. } => {
                "point sslrootcert=PATH at the CA that signed the server's certificate and use the host name it names (sslmode=verify-full), or sslmode=require to encrypt without checking it"
            }
            StoreError::BadUrl { .. } => {
                "write it as postgres://USER@HOST:PORT/DATABASE (the password in PGPASSWORD)"
            }
            StoreError::Login { .. } => {
                "check the user and password (in the URL or PGPASSWORD) and the server's pg_hba.conf"
            }
            StoreError::DifferentHistory { .. } => {
                "copy into a new, empty store, or into the one an earlier `store copy` from this source wrote"
            }
            StoreError::CopyMismatch { .. } => {
                "keep both stores as they are and report it; the source was never changed"
            }
            StoreError::CopySchemaDiffers { .. } | StoreError::CopyUnknownTable { .. } => {
                "copy with the utilgate that wrote the newer store (both stores must be at one schema version)"
            }
            StoreError::AlreadyStored { run_id, .. } => {
                return Some(format!(
                    "nothing is lost: `utilgate runs show {run_id}` shows it (a rescue file or journal is replayed once)"
                ));
            }
            StoreError::Query { .. } | StoreError::OutOfRange { .. } => return None,
        };
        Some(hint.to_owned())
    }

    /// Classifies an `SQLite` failure during a query: busy becomes [`StoreError::Locked`],
    /// corruption becomes [`StoreError::Corrupt`], anything else [`StoreError::Query`].
    pub(crate) fn query(path: &Path, action: &'static str, source: impl Into<sql::Error>) -> Self {
        let source = source.into();
        let code = match &source {
            sql::Error::Sqlite(e) => e.sqlite_error_code(),
            sql::Error::Pg(e) => {
                let kind = source_pg(e);
                return Self::pg(path, action, &kind, source);
            }
            _ => None,
        };
        match code {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
                path: path.to_owned(),
            },
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
                path: path.to_owned(),
                source,
            },
            Some(ErrorCode::DiskFull) => StoreError::Full {
                path: path.to_owned(),
                source,
            },
            Some(ErrorCode::ReadOnly) => StoreError::ReadOnly {
                path: path.to_owned(),
                source: Some(source),
            },

            _ => StoreError::Query {
                path: path.to_owned(),
                action,
                source,
            },
        }
    }

    /// A `PostgreSQL` failure: a lost connection, a refused login, or a failed statement.
    fn pg(path: &Path, action: &'static str, kind: &PgKind, source: sql::Error) -> Self {
        let path = path.to_owned();
        match kind {
            PgKind::Lost => StoreError::Lost { path, source },
            PgKind::Login => StoreError::Login { path, source },
            PgKind::Full => StoreError::Full { path, source },
            PgKind::ReadOnly => StoreError::ReadOnly {
                path,
                source: Some(source),
            },
            PgKind::Other => StoreError::Query {
                path,
                action,
                source,
            },
        }
    }

    /// Classifies an `SQLite` failure while opening: like [`StoreError::query`], but anything
    /// else is [`StoreError::Open`].
    pub(crate) fn open(path: &Path, source: impl Into<sql::Error>) -> Self {
        match StoreError::query(path, "open", source) {
            StoreError::Query { path, source, .. } => StoreError::Open { path, source },
            other => other,
        }
    }
}

/// What a `PostgreSQL` error means for the user.
enum PgKind {
    Lost,
    Login,
    Full,
    ReadOnly,
    Other,
}

fn source_pg(e: &postgres::Error) -> PgKind {
    let code = e.code().map(postgres::error::SqlState::code);
    match code {
        // 28: invalid authorisation; 3D000: no such database.
        Some(c) if c.starts_with("28") || c == "3D000" => PgKind::Login,
        Some("53100") => PgKind::Full,
        Some("25006") => PgKind::ReadOnly,
        _ if sql::is_lost(e) => PgKind::Lost,
        _ => PgKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn sqlite_codes_are_classified() {
        let path = Path::new("x.db");
        let cases = [
            (rusqlite::ffi::SQLITE_BUSY, "locked"),
            (rusqlite::ffi::SQLITE_LOCKED, "locked"),
            (rusqlite::ffi::SQLITE_CORRUPT, "corrupt"),
            (rusqlite::ffi::SQLITE_NOTADB, "corrupt"),
            (rusqlite::ffi::SQLITE_CANTOPEN, "open"),
            (rusqlite::ffi::SQLITE_PERM, "open"),
            (rusqlite::ffi::SQLITE_FULL, "full"),
            (rusqlite::ffi::SQLITE_READONLY, "read-only"),
        ];
        for (code, want) in cases {
            let got = match StoreError::open(path, sqlite(code)) {
                StoreError::Locked { .. } => "locked",
                StoreError::Corrupt { .. } => "corrupt",
                StoreError::Open { .. } => "open",
                StoreError::Full { .. } => "full",
                StoreError::ReadOnly { .. } => "read-only",
                other => panic!("unexpected {other:?}"),
            };
            assert_eq!(got, want, "code {code}");
        }
        assert!(matches!(
            StoreError::query(path, "read runs", sqlite(rusqlite::ffi::SQLITE_CONSTRAINT)),
            StoreError::Query {
                action: "read runs",
                ..
            }
        ));
    }

    #[test]
    fn messages_name_the_path_and_hints_exist() {
        let path = PathBuf::from("/tmp/u/utilgate.db");
        let errors = [
            StoreError::Locked { path: path.clone() },
            StoreError::Missing { path: path.clone() },
            StoreError::NewerSchema {
                path: path.clone(),
                found: 9,
                known: 2,
            },
            StoreError::Corrupt {
                path: path.clone(),
                source: sqlite(rusqlite::ffi::SQLITE_NOTADB).into(),
            },
        ];
        for e in errors {
            assert!(e.to_string().contains("/tmp/u/utilgate.db"), "{e}");
            assert!(e.hint().is_some(), "{e}");
        }
        assert_eq!(
            StoreError::Missing { path }.to_string(),
            "no store at /tmp/u/utilgate.db; run `utilgate run` first"
        );
    }
}
