//! What every verb reads from the outside before its stages start: the clock, the environment
//! (as a lookup function, so pure code takes it as an argument), the suites it runs and the store
//! it opens. The edge of the pipeline: I/O only, no decision.

#![expect(
    clippy::disallowed_methods,
    reason = "the edge: atomic writes and the clock live here"
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::ConfigArgs;
use crate::config::{Config, DEFAULT_STORE_PATH, StoreConfig};
use crate::error::Error;
use crate::store::Store;

/// The current time: commands read the clock here and pass it on.
#[must_use]
pub fn now() -> jiff::Timestamp {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: the one place commands read the clock"
    )]
    jiff::Timestamp::now()
}

/// A new run's unique id: 128 random bits in hex, drawn from the OS-seeded generator when the
/// run starts (`runs.uid`, its journal's name, its rescue file).
#[must_use]
pub fn new_run_uid() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The process environment as a lookup function, so pure code can take it as an argument.
pub fn env_lookup() -> impl Fn(&str) -> Option<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: the one place commands read the environment"
    )]
    |name: &str| std::env::var(name).ok()
}

/// The suites a command runs: all of them, or those `wanted` names (each must exist, with a
/// did-you-mean otherwise); a config without suites is an error naming the file.
pub fn select_suites<'a>(
    loaded: &'a crate::config::LoadedConfig,
    wanted: &[String],
) -> Result<Vec<&'a crate::config::SuiteConfig>, Error> {
    let suites = &loaded.config.suites;
    if suites.is_empty() {
        return Err(Error::NoSuites {
            path: loaded.path.clone(),
        });
    }
    for name in wanted {
        if !suites.iter().any(|s| &s.name == name) {
            let names: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::UnknownSuite {
                name: name.clone(),
                path: loaded.path.clone(),
                known: names.iter().map(|n| (*n).to_owned()).collect(),
                suggestion: crate::suggest::did_you_mean(name, names).map(str::to_owned),
            });
        }
    }
    Ok(suites
        .iter()
        .filter(|s| wanted.is_empty() || wanted.contains(&s.name))
        .collect())
}

/// What a command that writes the store `location` does, for [`refuse_shared_store_in_pull_request`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedWrite<'a> {
    /// The verb (`run`, `import run`, `store copy`).
    pub(crate) verb: &'a str,
    /// Where the location came from: `--db`, `--to`, or the config's `[store] url`.
    pub(crate) origin: &'a str,
    /// The fix for this verb.
    pub(crate) fix: &'a str,
}

/// The fix for `run` and `import` in a pull request's job.
pub(crate) const MEASURE_LOCALLY: &str = "in a pull request's job write the job's own SQLite file (`--db .utilgate/pr.db`, or `run --baselines baselines/`) and upload it; a job that runs no pull-request code (a `workflow_run` workflow) stores it in the shared store with `utilgate store copy` or `utilgate import run` (docs/github.md, the one pattern)";

/// Where the store of `--db`/`UTILGATE_DB`, else the config at `config`, comes from.
pub(crate) fn store_origin(db_flag: bool, config: &Path) -> String {
    if db_flag {
        "--db (or UTILGATE_DB)".to_owned()
    } else {
        format!("[store] url in {}", config.display())
    }
}

/// Refuses to write a `PostgreSQL` store from a job that a `pull_request*` event started: such
/// a job runs the pull request's code (its checkout, its build, its harness), so nothing it
/// holds may write the shared store, `--trusted` or not (#28 item 3, docs/github.md's threat
/// model). A local `SQLite` file is the job's own. Never prints the location (it may hold a
/// password): names where it came from.
pub(crate) fn refuse_shared_store_in_pull_request(
    location: &Path,
    write: SharedWrite<'_>,
) -> Result<(), Error> {
    let event = env_lookup()(crate::pipeline::publish::env::GITHUB_EVENT_NAME)
        .filter(|e| e.starts_with(crate::store::meta::PULL_REQUEST_TRIGGER));
    match event {
        Some(event) if is_pg_url(location) => Err(Error::SharedStoreInPullRequest {
            origin: write.origin.to_owned(),
            verb: write.verb.to_owned(),
            event,
            fix: write.fix.to_owned(),
        }),
        _ => Ok(()),
    }
}

pub fn open_store(path: &Path, busy_timeout_s: f64) -> Result<Store, Error> {
    Ok(Store::open(path, Duration::from_secs_f64(busy_timeout_s))?)
}

/// The config when its file exists (thresholds, store path); read-only commands work without.
pub fn optional_config(args: &ConfigArgs) -> Result<Option<crate::config::LoadedConfig>, Error> {
    if args.config.exists() {
        crate::config::load(&args.config)
            .map(Some)
            .map_err(Error::from)
    } else {
        Ok(None)
    }
}

/// Open the store named by `--db`, the config, or the default path.
pub fn store_from(args: &ConfigArgs) -> Result<(Store, Option<Config>), Error> {
    store_with(args, StoreMode::Read)
}

/// How a command opens the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    /// Reading only: the store must exist, and is never created or migrated.
    Read,
    /// Moving baselines: the store must exist.
    Write,
    /// Importing: the store is created when absent.
    Create,
}

/// Open the store named by `--db`, else the config's `[store] path`, else the default path.
pub fn store_with(args: &ConfigArgs, mode: StoreMode) -> Result<(Store, Option<Config>), Error> {
    let loaded = optional_config(args)?;
    let timeout = loaded
        .as_ref()
        .map_or(StoreConfig::default().busy_timeout_s, |l| {
            l.config.store.busy_timeout_s
        });
    let path: PathBuf = match (&args.db, &loaded) {
        (Some(db), _) => db.clone(),
        (None, Some(l)) => l.store_path(None),
        (None, None) => Path::new(DEFAULT_STORE_PATH).to_path_buf(),
    };
    let timeout = std::time::Duration::from_secs_f64(timeout);
    if mode != StoreMode::Read {
        let origin = store_origin(args.db.is_some(), &args.config);
        refuse_shared_store_in_pull_request(
            &path,
            SharedWrite {
                verb: if mode == StoreMode::Write {
                    "baseline"
                } else {
                    "import"
                },
                origin: &origin,
                fix: if mode == StoreMode::Write {
                    "move baselines from a job that runs no pull-request code (a scheduled or `workflow_run` workflow, or your own machine)"
                } else {
                    MEASURE_LOCALLY
                },
            },
        )?;
    }
    let store = match mode {
        StoreMode::Read => Store::open_existing_read_only(&path, timeout)?,
        // A `postgres://` store is a server's database, never a file here.
        StoreMode::Write if !is_pg_url(&path) && !path.exists() => {
            return Err(Error::Store(crate::store::StoreError::Missing { path }));
        }
        StoreMode::Write | StoreMode::Create => Store::open(&path, timeout)?,
    };
    Ok((store, loaded.map(|l| l.config)))
}

fn is_pg_url(path: &Path) -> bool {
    path.to_str().is_some_and(crate::store::sql::is_url)
}

/// Ask git about the checkout the config lives in; silence when it is not one.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Option<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: reading the checkout's commit"
    )]
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty() && text != "HEAD").then_some(text)
}

/// Commit ranges with their subjects from the checkout a command runs in, each range asked of
/// git once: a change the whole grid shares names the same range in every case, and `changes`
/// over 500 cases would otherwise start git three times per case for it.
#[derive(Debug, Default)]
pub(crate) struct CommitLog {
    seen: std::collections::HashMap<(String, String), Vec<crate::compare::history::Commit>>,
}

impl CommitLog {
    /// The commits after `good` up to `bad` (see [`commit_range`]); empty where git does not
    /// know both.
    pub(crate) fn range(&mut self, good: &str, bad: &str) -> Vec<crate::compare::history::Commit> {
        self.seen
            .entry((good.to_owned(), bad.to_owned()))
            .or_insert_with(|| commit_range(&[Path::new(".")], good, bad).unwrap_or_default())
            .clone()
    }
}

/// The commits after `good` up to `bad`, oldest first, with their subjects (redacted), from
/// the first of `dirs` whose git knows both commits; `None` when none does.
pub(crate) fn commit_range(
    dirs: &[&Path],
    good: &str,
    bad: &str,
) -> Option<Vec<crate::compare::history::Commit>> {
    dirs.iter().find_map(|dir| {
        // An empty range is an answer too: git prints nothing and `git` returns None, so ask
        // first whether both commits exist.
        for sha in [good, bad] {
            git(
                dir,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    &format!("{sha}^{{commit}}"),
                ],
            )?;
        }
        let range = format!("{good}..{bad}");
        let text = git(dir, &["log", "--reverse", "--format=%H%x09%s", &range]).unwrap_or_default();
        Some(
            text.lines()
                .filter_map(|l| l.split_once('\t'))
                .map(|(sha, subject)| crate::compare::history::Commit {
                    sha: sha.to_owned(),
                    subject: crate::redact::redact(subject),
                })
                .collect(),
        )
    })
}

/// Write beside and rename (creating the directory), so a failed write never leaves half a
/// file.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
}
