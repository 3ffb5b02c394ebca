//! Files beside the store that keep measured work safe when the store cannot take it yet
//! (DESIGN.md §6). Does file I/O; decides nothing.
//!
//! - The **journal** (`<store>.cases-<run id>.jsonl`, one per run): each finished case of the
//!   run in progress, one JSON line, synced as soon as the case ends. It is never a run: nothing
//!   reads it but `utilgate run --resume`, which measures only the cases it lacks and then writes
//!   the whole run in one transaction. A run that is written removes it. Its owner holds an
//!   exclusive lock on it while it lives (released by the kernel however the owner dies), so
//!   concurrent runs on one store never touch each other's journal and `--resume` picks only
//!   an interrupted one. A last line cut short by a kill is ignored. Older versions wrote one
//!   journal per store (`<store>.cases.jsonl`); it is still read.
//! - The **rescue file** (`<store>.rescue-<time>.json`): the complete run, written when the
//!   final store write fails, so `utilgate import run FILE` can store it later.

#![expect(
    clippy::disallowed_methods,
    reason = "the resume journal is a file beside the store"
)]

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::case::CaseKey;

/// The journal format; a journal of another version is discarded, never misread.
pub const JOURNAL_VERSION: u32 = 1;
/// The rescue file format.
pub const RESCUE_VERSION: u32 = 1;

#[derive(Debug, Error)]
pub enum JournalError {
    #[error("failed to {action} {}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a utilgate rescue file: {source}", .path.display())]
    BadRescue {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} is a rescue file of version {found}; this utilgate reads version {RESCUE_VERSION}", .path.display())]
    RescueVersion { path: PathBuf, found: u32 },
    #[error("the run journal {} is in use by a live utilgate run", .path.display())]
    InUse { path: PathBuf },
    #[error("failed to encode the journal entry for {case}: {source}")]
    Encode {
        case: String,
        #[source]
        source: serde_json::Error,
    },
}

impl JournalError {
    /// A one-line suggestion printed after the error.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            JournalError::Io { source, .. } => Some(
                match source.kind() {
                    io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
                        "the disk holding the store is full: free space on it (or point `--db` at another disk); what was measured before this write is kept"
                    }
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                        "the journal and rescue files live beside the store: make its directory writable, or point `--db` elsewhere"
                    }
                    _ => {
                        "the journal and rescue files live beside the store: check that its directory exists and has room, or point `--db` elsewhere"
                    }
                }
                .to_owned(),
            ),
            JournalError::BadRescue { .. } | JournalError::RescueVersion { .. } => Some(
                "pass a file that `utilgate run` wrote when it could not store a run (it prints the path)"
                    .to_owned(),
            ),
            JournalError::InUse { .. } => Some(
                "wait for that run to finish; only an interrupted run's journal can be resumed"
                    .to_owned(),
            ),
            JournalError::Encode { .. } => None,
        }
    }
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> JournalError {
    let path = path.to_path_buf();
    move |source| JournalError::Io {
        action,
        path,
        source,
    }
}

/// The one journal of the store at `store` that versions before per-run journals wrote.
#[must_use]
pub fn journal_path(store: &Path) -> PathBuf {
    sibling(store, ".cases.jsonl")
}

/// The journal of run `uid` on the store at `store`.
#[must_use]
pub fn run_journal_path(store: &Path, uid: &str) -> PathBuf {
    sibling(store, &format!(".cases-{uid}.jsonl"))
}

/// Every journal beside the store at `store` (each run's, and the older per-store one), in
/// name order.
pub fn journals(store: &Path) -> Result<Vec<PathBuf>, JournalError> {
    let legacy = journal_path(store);
    let dir = match legacy.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = legacy
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = name.trim_end_matches(".jsonl").to_owned() + "-";
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(io_error("list the run journals in", &dir)(source)),
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n == name
                || (n.starts_with(&prefix)
                    && Path::new(&n).extension().is_some_and(|e| e == "jsonl"))
        })
        .map(|e| legacy.with_file_name(e.file_name()))
        .collect();
    found.sort();
    Ok(found)
}

/// Whether a live process holds the journal at `path` (its owner's lock); `false` when it is
/// gone or cannot be opened.
#[must_use]
pub fn is_live(path: &Path) -> bool {
    File::open(path).is_ok_and(|f| matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock)))
}

/// Takes the owner's lock on an open journal: refused when a live run holds it.
fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => Err(JournalError::InUse {
            path: path.to_path_buf(),
        }),
        Err(fs::TryLockError::Error(source)) => Err(io_error("lock the run journal", path)(source)),
    }
}

fn sibling(store: &Path, suffix: &str) -> PathBuf {
    // A PostgreSQL store has no directory of its own: its local files go in the working
    // directory, named after the URL without its password.
    if let Some(url) = store.to_str().filter(|s| super::sql::is_url(s)) {
        let name: String = super::pg_open::redact(url)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        return PathBuf::from(format!("utilgate-{name}{suffix}"));
    }
    let mut name = store.file_name().map(ToOwned::to_owned).unwrap_or_default();
    name.push(suffix);
    store.with_file_name(name)
}

/// The first line of a journal: what run it belongs to. A journal is resumed only by a run of
/// the same plan (same config, same cases, same GPU).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalHeader {
    pub journal: u32,
    /// Identifies the plan: the config as stored with runs, the GPU, the case keys.
    pub plan: serde_json::Value,
    pub started_at: String,
    /// The run's unique id (`runs.uid`); absent in journals of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The process that started the run, for the messages that name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// One finished case, as read back.
#[derive(Debug, Deserialize)]
struct Entry<T> {
    key: CaseKey,
    case: T,
}

/// One finished case, as written.
#[derive(Serialize)]
struct EntryRef<'a, T> {
    key: &'a CaseKey,
    case: &'a T,
}

/// What an existing journal holds.
#[derive(Debug)]
pub struct Recovered<T> {
    pub header: JournalHeader,
    pub cases: Vec<(CaseKey, T)>,
}

/// Reads the journal at `path`: `Ok(None)` when there is none or it is unreadable as a journal
/// (an unknown version, a damaged header); a damaged case line (a kill cut it short) is skipped.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Option<Recovered<T>>, JournalError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.kind() == io::ErrorKind::InvalidData => return Ok(None),
        Err(source) => return Err(io_error("read the run journal", path)(source)),
    };
    let mut lines = text.lines();
    let Some(header) = lines
        .next()
        .and_then(|l| serde_json::from_str::<JournalHeader>(l).ok())
        .filter(|h| h.journal == JOURNAL_VERSION)
    else {
        return Ok(None);
    };
    let cases = lines
        .filter_map(|l| serde_json::from_str::<Entry<T>>(l).ok())
        .map(|e| (e.key, e.case))
        .collect();
    Ok(Some(Recovered { header, cases }))
}

/// An open journal that finished cases are appended to.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Starts a fresh journal with its header (a file already there is another run's and is
    /// refused), or continues the one at `path` (`resume`), whose header the caller has
    /// checked. Either way this process holds the journal's lock until it is dropped.
    pub fn open(
        path: &Path,
        header: &JournalHeader,
        resume: bool,
    ) -> Result<Journal, JournalError> {
        if resume && path.exists() {
            let file = OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(io_error("open the run journal", path))?;
            lock(&file, path)?;
            let mut journal = Journal {
                path: path.to_path_buf(),
                file,
            };
            // A kill may have cut the last line short: start the next entry on a line of its own.
            journal.write_line("")?;
            return Ok(journal);
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io_error("create the run journal", path))?;
        lock(&file, path)?;
        let mut journal = Journal {
            path: path.to_path_buf(),
            file,
        };
        let line = serde_json::to_string(header).map_err(|source| JournalError::Encode {
            case: "the header".to_owned(),
            source,
        })?;
        journal.write_line(&line)?;
        Ok(journal)
    }

    /// Appends one finished case and syncs it to disk.
    pub fn append<T: Serialize>(&mut self, key: &CaseKey, case: &T) -> Result<(), JournalError> {
        let line = serde_json::to_string(&EntryRef { key, case }).map_err(|source| {
            JournalError::Encode {
                case: key.to_string(),
                source,
            }
        })?;
        self.write_line(&line)
    }

    fn write_line(&mut self, line: &str) -> Result<(), JournalError> {
        let path = self.path.clone();
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(io_error("write the run journal", &path))
    }

    /// The journal file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the journal: its run is stored.
    pub fn finish(self) -> Result<(), JournalError> {
        drop(self.file);
        remove(&self.path)
    }
}

/// Removes the journal at `path` if there is one.
pub fn remove(path: &Path) -> Result<(), JournalError> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => {
            Err(io_error("remove the run journal", path)(err))
        }
        _ => Ok(()),
    }
}

/// The rescue file's envelope.
#[derive(Debug, Serialize, Deserialize)]
struct Rescue<T> {
    rescue: u32,
    run: T,
}

/// Writes `run` to a new rescue file beside the store (`stamp` makes its name unique), or in
/// `fallback_dir` when the store's directory takes no file. Returns its path.
pub fn write_rescue<T: Serialize>(
    store: &Path,
    stamp: &str,
    fallback_dir: &Path,
    run: &T,
) -> Result<PathBuf, JournalError> {
    let text = serde_json::to_string(&Rescue {
        rescue: RESCUE_VERSION,
        run,
    })
    .map_err(|source| JournalError::Encode {
        case: "the run".to_owned(),
        source,
    })?;
    let beside = sibling(store, &format!(".rescue-{stamp}.json"));
    let elsewhere = fallback_dir.join(beside.file_name().map_or_else(
        || format!("utilgate.rescue-{stamp}.json").into(),
        ToOwned::to_owned,
    ));
    let mut last = None;
    for path in [beside, elsewhere] {
        match write_new(&path, &text) {
            Ok(()) => return Ok(path),
            Err(err) => last = Some(err),
        }
    }
    Err(last
        .unwrap_or_else(|| io_error("write the rescue file", store)(io::ErrorKind::Other.into())))
}

fn write_new(path: &Path, text: &str) -> Result<(), JournalError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_error("create the rescue file", path))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_error("write the rescue file", path))
}

/// Reads a rescue file written by [`write_rescue`].
pub fn read_rescue<T: DeserializeOwned>(path: &Path) -> Result<T, JournalError> {
    #[derive(Deserialize)]
    struct Version {
        rescue: u32,
    }
    let text = fs::read_to_string(path).map_err(io_error("read the rescue file", path))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let version: Version =
        serde_json::from_str(text).map_err(|source| JournalError::BadRescue {
            path: path.to_path_buf(),
            source,
        })?;
    if version.rescue != RESCUE_VERSION {
        return Err(JournalError::RescueVersion {
            path: path.to_path_buf(),
            found: version.rescue,
        });
    }
    let rescue: Rescue<T> =
        serde_json::from_str(text).map_err(|source| JournalError::BadRescue {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(rescue.run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Phase;

    /// #28 item 9: a full disk was told to "make its directory writable".
    #[test]
    fn the_hint_names_what_failed_a_full_disk_or_a_permission() {
        let hint = |source: io::Error| {
            JournalError::Io {
                action: "write",
                path: PathBuf::from("s.db.cases-1.jsonl"),
                source,
            }
            .hint()
            .expect("a hint")
        };
        // ENOSPC, as write(2) reports it on a full disk (the same as /dev/full).
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .and_then(|mut f| io::Write::write_all(&mut f, b"x").and_then(|()| f.sync_all()))
            .expect_err("/dev/full is full");
        let full = hint(full);
        assert!(full.contains("full: free space"), "{full}");
        assert!(!full.contains("writable"), "{full}");
        let denied = hint(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(denied.contains("make its directory writable"), "{denied}");
    }

    fn key(batch: u64) -> CaseKey {
        CaseKey {
            suite: "decode".into(),
            model: "m".into(),
            precision: "bf16".into(),
            phase: Phase::Decode,
            batch,
            context: 128,
            axes: crate::case::Axes::default(),
            tp: 1,
            ep: 1,
        }
    }

    fn header() -> JournalHeader {
        JournalHeader {
            journal: JOURNAL_VERSION,
            plan: serde_json::json!({"cases": 2}),
            started_at: "2026-01-01T00:00:00Z".into(),
            uid: Some("0f".into()),
            pid: Some(7),
        }
    }

    #[test]
    fn each_run_has_its_own_journal_locked_while_its_owner_lives() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("utilgate.db");
        let a = run_journal_path(&store, "aa");
        let b = run_journal_path(&store, "bb");
        assert_eq!(a, dir.path().join("utilgate.db.cases-aa.jsonl"));
        let ja = Journal::open(&a, &header(), false).expect("a");
        let jb = Journal::open(&b, &header(), false).expect("b");
        fs::write(dir.path().join("other.db.cases-cc.jsonl"), "x").expect("other store");
        fs::write(journal_path(&store), "x").expect("legacy");
        assert_eq!(
            journals(&store).expect("lists"),
            vec![a.clone(), b.clone(), journal_path(&store)]
        );
        assert!(is_live(&a) && is_live(&b));
        // A second run cannot take a live run's journal, fresh or resumed.
        assert!(matches!(
            Journal::open(&a, &header(), true),
            Err(JournalError::InUse { .. })
        ));
        assert!(Journal::open(&a, &header(), false).is_err());
        drop(ja);
        assert!(!is_live(&a) && is_live(&b));
        drop(jb);
        let resumed = Journal::open(&a, &header(), true).expect("resumes");
        assert!(is_live(&a));
        resumed.finish().expect("finish");
        assert_eq!(
            journals(&store).expect("lists"),
            vec![b, journal_path(&store)]
        );
    }

    #[test]
    fn journal_round_trips_and_survives_a_cut_last_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("utilgate.db");
        let path = journal_path(&store);
        assert_eq!(path, dir.path().join("utilgate.db.cases.jsonl"));
        assert!(read::<Vec<f64>>(&path).expect("reads").is_none());

        let mut journal = Journal::open(&path, &header(), false).expect("create");
        journal.append(&key(1), &vec![1.0, 2.0]).expect("append");
        drop(journal);
        // A kill in the middle of the next write.
        let mut text = fs::read_to_string(&path).expect("read");
        text.push_str("{\"key\": {\"suite\": \"dec");
        fs::write(&path, &text).expect("cut");

        let got = read::<Vec<f64>>(&path).expect("reads").expect("a journal");
        assert_eq!(got.header, header());
        assert_eq!(got.cases, vec![(key(1), vec![1.0, 2.0])]);

        let mut journal = Journal::open(&path, &header(), true).expect("resume");
        journal.append(&key(8), &vec![3.0]).expect("append");
        let got = read::<Vec<f64>>(&path).expect("reads").expect("a journal");
        assert_eq!(
            got.cases,
            vec![(key(1), vec![1.0, 2.0]), (key(8), vec![3.0])]
        );
        journal.finish().expect("finish");
        assert!(!path.exists());
    }

    #[test]
    fn an_unknown_header_is_no_journal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("j.jsonl");
        fs::write(
            &path,
            "{\"journal\": 99, \"plan\": null, \"started_at\": \"x\"}\n",
        )
        .expect("write");
        assert!(read::<Vec<f64>>(&path).expect("reads").is_none());
        fs::write(&path, "garbage").expect("write");
        assert!(read::<Vec<f64>>(&path).expect("reads").is_none());
    }

    #[test]
    fn rescue_files_round_trip_and_fall_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("db/utilgate.db");
        let fallback = dir.path().join("tmp");
        fs::create_dir_all(&fallback).expect("mkdir");
        // The store's directory does not exist: the file goes to the fallback directory.
        let path =
            write_rescue(&store, "20260101T000000Z", &fallback, &vec![1.5]).expect("rescued");
        assert_eq!(
            path,
            fallback.join("utilgate.db.rescue-20260101T000000Z.json")
        );
        let run: Vec<f64> = read_rescue(&path).expect("reads");
        assert_eq!(run, vec![1.5]);

        fs::write(&path, "{\"rescue\": 7, \"run\": []}").expect("write");
        assert!(matches!(
            read_rescue::<Vec<f64>>(&path),
            Err(JournalError::RescueVersion { found: 7, .. })
        ));
        fs::write(&path, "{}").expect("write");
        assert!(matches!(
            read_rescue::<Vec<f64>>(&path),
            Err(JournalError::BadRescue { .. })
        ));
    }
}
