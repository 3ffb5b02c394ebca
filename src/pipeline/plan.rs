//! The plan stage: which suites run (a service suite beside step suites), every case of the
//! grid with its floor on this device, this shard's share of it, the size check before
//! anything is measured, and the run's commit, branch and trigger. Reads the config, the
//! environment and git; measures nothing.

use std::collections::BTreeSet;

use crate::case::CaseKey;
use crate::catalog::{GpuSpec, Precision};
use crate::cli::RunArgs;
use crate::config::{Config, LoadedConfig, SuiteConfig};
use crate::error::Error;
use crate::pipeline::context::env_lookup;
use crate::pipeline::context::git;
use crate::pipeline::measure::runner::CasePlan;
use crate::shard::Shard;
use crate::store::Store;
use crate::store::meta::{MetaFlags, RunMeta, resolve_meta};

/// The grid the run's cases belong to: every case of every selected suite, and the shard of
/// it this run measures.
pub(crate) struct Grid {
    pub(crate) keys: Vec<CaseKey>,
    pub(crate) suites: BTreeSet<String>,
    pub(crate) shard: Option<Shard>,
}

/// Every step case's plan (its floor on this device), keeping this shard's share of the grid.
pub(crate) fn plan_cases<'a>(
    loaded: &LoadedConfig,
    suites: &[&'a SuiteConfig],
    gpu: Option<&GpuSpec>,
    shard: Option<Shard>,
) -> Result<(Vec<CasePlan<'a>>, Grid), Error> {
    let mut plans = Vec::new();
    for suite in suites {
        for key in suite.case_keys() {
            // A step case's floor needs the device's figures (`run_device` gives them for
            // every run with step cases).
            let gpu = gpu.ok_or(Error::NoDeviceSpec)?;
            let model = &loaded.models[&key.model];
            let precision = Precision::parse(&key.precision, suite.kv_dtype.as_deref())?;
            let floor =
                crate::floor::floor_of_case(model, loaded.draft_of(&key), gpu, &precision, &key)
                    .map_err(|e| e.to_string());
            plans.push(CasePlan {
                suite,
                kv_dtype: precision.kv.as_str().to_owned(),
                key,
                floor,
            });
        }
    }
    // A shard measures its share of the whole grid; the grid still sets the test level.
    let keys: Vec<CaseKey> = plans.iter().map(|p| p.key.clone()).collect();
    if let Some(shard) = shard {
        let refs: Vec<&CaseKey> = keys.iter().collect();
        let keep: BTreeSet<usize> = shard.select(&refs).into_iter().collect();
        let mut i = 0;
        plans.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
    }
    let grid = Grid {
        keys,
        suites: suites.iter().map(|s| s.name.clone()).collect(),
        shard,
    };
    Ok((plans, grid))
}

/// The run's commit, branch, trigger and pull request, from flags, the environment, git and
/// the pull-request event (a service-only run's too).
pub(crate) fn run_meta(
    args: &RunArgs,
    loaded: &LoadedConfig,
    pr_event: Option<crate::github::EventInfo>,
) -> RunMeta {
    let flags = MetaFlags {
        git_sha: args.git_sha.clone(),
        branch: args.branch.clone(),
        trigger: args.trigger.clone(),
        pr_number: args.pr,
    };
    let mut meta = meta_of(&flags, &loaded.dir);
    if let Some(event) = pr_event {
        meta.pr_number = meta.pr_number.or(event.pr_number);
        meta.head_sha = event.head_sha;
    }
    meta
}

/// A run's commit, branch, trigger and pull request from `flags`, the environment, and the
/// git checkout at `dir` (asked only for what the flags leave open).
pub(crate) fn meta_of(flags: &MetaFlags, dir: &std::path::Path) -> RunMeta {
    resolve_meta(
        flags,
        &env_lookup(),
        &|| git(dir, &["rev-parse", "HEAD"]),
        &|| git(dir, &["rev-parse", "--abbrev-ref", "HEAD"]),
    )
}

/// The selected suites as (service suites, step suites), once the harness environment is
/// known to hold no token (DESIGN.md §13) unless `--trusted`.
pub(crate) fn split_suites<'a>(
    loaded: &'a LoadedConfig,
    args: &RunArgs,
) -> Result<(Vec<&'a SuiteConfig>, Vec<&'a SuiteConfig>), Error> {
    let suites = crate::pipeline::context::select_suites(loaded, &args.suites)?;
    if !args.trusted {
        crate::pipeline::credentials::refuse_near_harness(loaded, args.config.db.as_deref())?;
    }
    // Suites of kind = "serve" (commands/serve_suite.rs): alone, a service run; beside step
    // suites, measured first and stored in the same run.
    Ok(suites
        .into_iter()
        .partition(|s| s.kind == crate::config::SuiteKind::Serve))
}

/// Refuses a grid larger than the run's case limit before anything is measured.
pub(crate) fn check_grid(
    store: &Store,
    suites: &[&SuiteConfig],
    cases: usize,
    args: &RunArgs,
    config: &Config,
) -> Result<(), Error> {
    let env = env_lookup();
    let in_ci = ["CI", "GITHUB_ACTIONS"]
        .iter()
        .any(|v| env(v).is_some_and(|x| x == "true" || x == "1"));
    let limits = crate::pipeline::journal::GridLimits {
        max_cases: config.limits.max_cases,
        yes: args.yes,
        in_ci,
        confirm_repeats: config.gate.confirm_repeats,
        budget_s: crate::pipeline::budget::budget_s(config, args.budget),
    };
    crate::pipeline::journal::check_grid(store, suites, cases, &limits)
}
