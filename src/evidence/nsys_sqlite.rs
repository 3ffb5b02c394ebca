//! Reading an Nsight Systems `SQLite` export (I/O: opens the file read-only with rusqlite) into the
//! pure [`Export`](super::nsys::Export): kernels with names through `StringIds`, memcpy/memset,
//! CUDA runtime calls, synchronisation and NVTX ranges. A table nsys did not write (it writes
//! none for an activity it did not see) is noted and read as empty; a file that is not `SQLite`,
//! is cut short, or lacks the columns this reader needs is an error naming the file and a fix.
//! The path is a harness's to choose: it is opened once, checked on the open file, and `SQLite`
//! reads that open file, never the path again (#28 item 9).

use std::fs::File;
use std::io::Read as _;
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::nsys::{Export, Kernel, Span, memcpy_label};

/// The first bytes of every `SQLite` database file.
pub const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Why an Nsight Systems export could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NsysError {
    #[error("failed to read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to open Nsight Systems export {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{} is not an SQLite file: it {found}", path.display())]
    NotSqlite {
        path: PathBuf,
        /// What the file holds instead, in words ("is empty", "holds JSON text").
        found: &'static str,
    },
    #[error("{} is an SQLite file but not an Nsight Systems export (no StringIds table)", path.display())]
    NotNsys { path: PathBuf },
    #[error("{} is damaged or cut short: {source}", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{}: table {table} cannot be read as this nsys schema: {source}", path.display())]
    Schema {
        path: PathBuf,
        table: &'static str,
        #[source]
        source: rusqlite::Error,
    },
}

impl NsysError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            NsysError::Io { .. } => "check the path: the harness or `nsys export` should have written it".into(),
            NsysError::NotSqlite { found: GZIP, path } => format!(
                "decompress it first (`gunzip -k {}`), or export the report again with `nsys export --type sqlite --output report.sqlite report.nsys-rep`",
                path.display()
            ),
            NsysError::NotSqlite { found: JSON, .. } => "a torch.profiler trace is read under its own name (`.json` or `.json.gz`); an Nsight Systems export is made with `nsys export --type sqlite --output report.sqlite report.nsys-rep`".into(),
            NsysError::Open { .. } | NsysError::NotSqlite { .. } | NsysError::NotNsys { .. } => {
                "export the report with `nsys export --type sqlite --output report.sqlite report.nsys-rep`".into()
            }
            NsysError::Corrupt { .. } => "the export is incomplete (copied while written?): run `nsys export --type sqlite --force-overwrite true` again".into(),
            NsysError::Schema { .. } => "the export's schema differs from the one read here (Nsight Systems 2021-2024): export it with a 2021-2024 nsys, or report the version in META_DATA_EXPORT".into(),
        })
    }
}

const EMPTY: &str = "is empty";
const GZIP: &str = "holds gzip-compressed data";
const JSON: &str = "holds JSON text";
const TEXT: &str = "holds text";
const BINARY: &str = "holds other binary data";

/// What a file that is not `SQLite` holds, from its first bytes.
fn what_is(head: &[u8]) -> &'static str {
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None if head.is_empty() => EMPTY,
        _ if head.starts_with(&[0x1f, 0x8b]) => GZIP,
        Some(b'{' | b'[') => JSON,
        _ if std::str::from_utf8(head).is_ok() => TEXT,
        _ => BINARY,
    }
}

/// Whether `path` is named as an `SQLite` export (`nsys export --type sqlite` writes
/// `.sqlite`): such a file is read as an export whatever it holds, so that one that is not
/// gets the export's error and fix.
#[must_use]
pub fn named_as_export(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("sqlite" | "sqlite3")
    )
}

fn has_table(db: &Connection, name: &str) -> rusqlite::Result<bool> {
    db.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// The error for a failed query on `table`: corruption, or a schema this reader does not know.
fn query_error(path: &Path, table: &'static str, source: rusqlite::Error) -> NsysError {
    let corrupt = matches!(
        source.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    if corrupt {
        NsysError::Corrupt {
            path: path.to_owned(),
            source,
        }
    } else {
        NsysError::Schema {
            path: path.to_owned(),
            table,
            source,
        }
    }
}

/// Reads the export at `path`: opened once ([`open_export`]), then read through that open
/// file ([`read_open`]), never looked up by name again.
pub fn read(path: &Path) -> Result<Export, NsysError> {
    let file = open_export(path)?;
    read_open(&file, path)
}

/// The export at `path`, opened once without blocking and kept only when the open file is a
/// regular file that begins as `SQLite` does ([`super::file::open_regular`]).
pub(crate) fn open_export(path: &Path) -> Result<File, NsysError> {
    let file = super::file::open_regular(path).map_err(|source| NsysError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut head = Vec::with_capacity(64);
    (&file)
        .take(64)
        .read_to_end(&mut head)
        .map_err(|source| NsysError::Io {
            path: path.to_owned(),
            source,
        })?;
    if !head.starts_with(SQLITE_MAGIC) {
        return Err(NsysError::NotSqlite {
            path: path.to_owned(),
            found: what_is(&head),
        });
    }
    Ok(file)
}

/// `SQLite` opens the checked file through `/proc/self/fd/N`: the kernel resolves that to the
/// open file itself, so a harness that swaps `path` for a FIFO (a hang) or a link to
/// `/dev/zero` after the check changes nothing that is read. `immutable=1`: the export is
/// read as it is, with no locks and no journal or WAL looked up beside it (those would be
/// lookups by name). `path` names the file in errors only.
pub(crate) fn read_open(file: &File, path: &Path) -> Result<Export, NsysError> {
    let uri = format!("file:/proc/self/fd/{}?immutable=1", file.as_raw_fd());
    let db = Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|source| NsysError::Open {
        path: path.to_owned(),
        source,
    })?;
    let exists = |t: &'static str| has_table(&db, t).map_err(|e| query_error(path, t, e));
    if !exists("StringIds")? {
        return Err(NsysError::NotNsys {
            path: path.to_owned(),
        });
    }
    let mut e = Export::default();
    let tables: [(&'static str, &str); 6] = [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "kernels (trace with -t cuda)"),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpys"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "memsets"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA runtime calls"),
        ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "synchronisation"),
        ("NVTX_EVENTS", "NVTX ranges (trace with -t nvtx)"),
    ];
    for (table, what) in tables {
        if !exists(table)? {
            e.notes
                .push(format!("no {table} table: no {what} recorded"));
            continue;
        }
        read_table(&db, table, &mut e).map_err(|source| query_error(path, table, source))?;
    }
    Ok(e)
}

/// Runs `sql` and hands each row to `f`.
fn run(
    db: &Connection,
    sql: &str,
    f: &mut dyn FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let mut stmt = db.prepare(sql)?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        f(row)?;
    }
    Ok(())
}

/// Reads one activity table into `e`.
fn read_table(db: &Connection, table: &str, e: &mut Export) -> rusqlite::Result<()> {
    match table {
        "CUPTI_ACTIVITY_KIND_KERNEL" => run(
            db,
            "SELECT k.start, k.end, k.deviceId, k.streamId, s.value, d.value, k.correlationId
             FROM CUPTI_ACTIVITY_KIND_KERNEL k
             LEFT JOIN StringIds s ON s.id = k.shortName
             LEFT JOIN StringIds d ON d.id = k.demangledName
             ORDER BY k.start",
            &mut |r| {
                let short: Option<String> = r.get(4)?;
                let demangled: Option<String> = r.get(5)?;
                let short = short.unwrap_or_else(|| "(unnamed kernel)".into());
                e.kernels.push(Kernel {
                    demangled_name: demangled.unwrap_or_else(|| short.clone()),
                    short_name: short,
                    start_ns: r.get(0)?,
                    end_ns: r.get(1)?,
                    device: r.get(2)?,
                    stream: r.get(3)?,
                    correlation: r.get(6)?,
                });
                Ok(())
            },
        ),
        "CUPTI_ACTIVITY_KIND_MEMCPY" => run(
            db,
            "SELECT start, end, copyKind, bytes, streamId, correlationId, srcKind
             FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start",
            &mut |r| {
                e.memory.push(Span {
                    name: memcpy_label(r.get(2)?),
                    start_ns: r.get(0)?,
                    end_ns: r.get(1)?,
                    bytes: r.get(3)?,
                    stream: r.get(4)?,
                    correlation: r.get(5)?,
                    pageable: r.get::<_, Option<i64>>(6)? == Some(1),
                });
                Ok(())
            },
        ),
        "CUPTI_ACTIVITY_KIND_MEMSET" => run(
            db,
            "SELECT start, end, bytes, streamId, correlationId
             FROM CUPTI_ACTIVITY_KIND_MEMSET ORDER BY start",
            &mut |r| {
                e.memory.push(Span {
                    name: "[CUDA memset]".into(),
                    start_ns: r.get(0)?,
                    end_ns: r.get(1)?,
                    bytes: r.get(2)?,
                    stream: r.get(3)?,
                    correlation: r.get(4)?,
                    pageable: false,
                });
                Ok(())
            },
        ),
        "CUPTI_ACTIVITY_KIND_RUNTIME" => run(
            db,
            "SELECT r.start, r.end, s.value, r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r
             LEFT JOIN StringIds s ON s.id = r.nameId ORDER BY r.start",
            &mut |r| {
                let mut span = named_span(r, "(unnamed call)")?;
                span.correlation = r.get(3)?;
                e.runtime.push(span);
                Ok(())
            },
        ),
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION" => run(
            db,
            "SELECT start, end, syncType, streamId, correlationId
             FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ORDER BY start",
            &mut |r| {
                e.syncs.push(Span {
                    name: sync_label(r.get(2)?),
                    start_ns: r.get(0)?,
                    end_ns: r.get(1)?,
                    bytes: None,
                    stream: r.get(3)?,
                    correlation: r.get(4)?,
                    pageable: false,
                });
                Ok(())
            },
        ),
        _ => run(
            db,
            // Push/pop (59) and start/end (60) ranges; marks have no end.
            "SELECT n.start, n.end, coalesce(n.text, s.value) FROM NVTX_EVENTS n
             LEFT JOIN StringIds s ON s.id = n.textId
             WHERE n.end IS NOT NULL AND n.eventType IN (59, 60) ORDER BY n.start",
            &mut |r| {
                e.nvtx.push(named_span(r, "(unnamed range)")?);
                Ok(())
            },
        ),
    }
}

fn named_span(r: &rusqlite::Row<'_>, unnamed: &str) -> rusqlite::Result<Span> {
    let name: Option<String> = r.get(2)?;
    Ok(Span {
        name: name.unwrap_or_else(|| unnamed.to_owned()),
        start_ns: r.get(0)?,
        end_ns: r.get(1)?,
        bytes: None,
        stream: None,
        correlation: None,
        pageable: false,
    })
}

/// The name of a CUPTI synchronisation type.
fn sync_label(kind: i64) -> String {
    match kind {
        1 => "cudaEventSynchronize".into(),
        2 => "cudaStreamWaitEvent".into(),
        3 => "cudaStreamSynchronize".into(),
        4 => "cudaDeviceSynchronize".into(),
        k => format!("sync type {k}"),
    }
}
