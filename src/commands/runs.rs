//! `utilgate runs list|show`: read the store and print; shared read-only helpers for the other
//! store-reading commands. Never writes the store.

use std::path::{Path, PathBuf};

use crate::cli::{ConfigArgs, Format, RunsListArgs, RunsShowArgs};
use crate::commands::Outcome;
use crate::commands::judge;
use crate::compare;
use crate::config::{Config, DEFAULT_STORE_PATH, StoreConfig};
use crate::error::Error;
use crate::output;
use crate::report::{self, Judgement, RunReport};
use crate::store::{RunFilter, RunId, Store, StoredRun};

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
    let store = match mode {
        StoreMode::Read => Store::open_existing_read_only(&path, timeout)?,
        StoreMode::Write if !path.exists() => {
            return Err(Error::Store(crate::store::StoreError::Missing { path }));
        }
        StoreMode::Write | StoreMode::Create => Store::open(&path, timeout)?,
    };
    Ok((store, loaded.map(|l| l.config)))
}

pub fn list(args: &RunsListArgs) -> Result<Outcome, Error> {
    let (store, _) = store_from(&args.config)?;
    let runs = store.list_runs(&RunFilter {
        limit: args.limit,
        branch: args.branch.clone(),
        gpu_sku: args.gpu.clone(),
    })?;
    match args.format.format {
        Format::Json => {
            let value =
                serde_json::json!({ "schema_version": report::SCHEMA_VERSION, "runs": runs });
            output::emit(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        }
        Format::Human => output::emit(&report::render_runs(&runs, output::stdout_terminal()))?,
    }
    Ok(Outcome::Passed)
}

pub(crate) fn load_run(store: &Store, id: Option<i64>) -> Result<StoredRun, Error> {
    let id = match id {
        Some(id) => RunId(id),
        None => store.latest_run_id(None)?.ok_or(Error::NoRuns)?,
    };
    store.run(id)?.ok_or(Error::NoSuchRun(id.0))
}

/// The judgements a run stored when it ran.
pub(crate) fn stored_judgements(
    store: &Store,
    run: &StoredRun,
    config: Option<&Config>,
) -> Result<Vec<Judgement>, Error> {
    run.results
        .iter()
        .map(|r| {
            let decision = r
                .decision_json
                .as_ref()
                .and_then(|d| serde_json::from_value(d.clone()).ok())
                .unwrap_or_else(|| {
                    compare::error_decision(r.error.as_deref().unwrap_or("no stored decision"))
                });
            // The baseline the run was judged against: the one in place before it started.
            let baseline = judge::baseline_before(
                store,
                &r.key,
                &run.summary.gpu_sku,
                run.summary.started_at,
            )?;
            Ok(Judgement {
                key: r.key.clone(),
                decision,
                env_changes: baseline
                    .as_ref()
                    .map(|b| compare::env_diff(&b.env, &r.env))
                    .unwrap_or_default(),
                baseline: baseline.as_ref().map(judge::baseline_ref),
                threshold_pct: judge::policy_for(config, &r.key).max_drop_pct,
            })
        })
        .collect()
}

pub(crate) fn print_report(report: &RunReport, format: Format) -> Result<(), Error> {
    match format {
        Format::Human => output::emit(&report::render_human(report, output::stdout_terminal())),
        Format::Json => output::emit(&report::render_json(report)?),
    }
}

pub(crate) fn fail_on(config: Option<&Config>) -> Vec<crate::case::Verdict> {
    config.map_or_else(
        || crate::config::GateConfig::default().fail_on,
        |c| c.gate.fail_on.clone(),
    )
}

pub fn show(args: &RunsShowArgs) -> Result<Outcome, Error> {
    let (store, config) = store_from(&args.config)?;
    let run = load_run(&store, args.run)?;
    let judgements = stored_judgements(&store, &run, config.as_ref())?;
    let promoted = store
        .baselines(Some(&run.summary.gpu_sku))?
        .iter()
        .any(|b| b.run_id == run.summary.id);
    let mut report = RunReport::build(&run, &judgements, &fail_on(config.as_ref()), promoted);
    crate::commands::evidence::attach(&store, &mut report);
    print_report(&report, args.format.format)?;
    Ok(Outcome::Passed)
}
