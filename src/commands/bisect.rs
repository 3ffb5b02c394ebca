//! `utilgate bisect --good RUN --bad RUN`: what arrived between two stored runs (the commits,
//! from git when in a checkout; the environment and GPU fingerprint diff; each case's step
//! time), and with `--run`, one step of `git bisect run`: re-measure a case at the checked-out
//! commit and exit 0 (good), 1 (bad) or 125 (skip). Sequences I/O (the store, git, the
//! harness); the call is `compare::bisect`'s.
//!
//! Exit codes in `--run` mode follow git-bisect-run: 0 good, 1 bad, 125 this commit cannot be
//! tested (the harness failed, the config does not load, the measurement straddles the line),
//! 128 abort the bisection (the runs or the case do not exist: a usage error that no other
//! commit would fix). Nothing is stored.

use std::collections::BTreeMap;
use std::path::Path;

use crate::case::CaseKey;
use crate::cli::{BisectArgs, Format};
use crate::compare::bisect::{self, BisectVerdict};
use crate::compare::history::gpu_env;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context::store_from;
use crate::pipeline::report::load_run;
use crate::report::bisect::{BisectReport, CaseChange};
use crate::store::{StoredResult, StoredRun};

/// The environment a run measured in: the harness's versions and the GPU fingerprint of
/// `case`'s result, or of every result (later results overriding earlier ones).
fn run_env(run: &StoredRun, case: Option<&CaseKey>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for r in run
        .results
        .iter()
        .filter(|r| case.is_none_or(|k| &r.key == k))
    {
        env.extend(r.env.clone());
        env.extend(gpu_env(r.gpu_state_json.as_ref()));
    }
    env
}

fn median(r: &StoredResult) -> Option<f64> {
    r.median_ms
}

/// The case `--case` names among a run's results (whole name, else a unique substring).
fn find_case(run: &StoredRun, wanted: &str) -> Result<CaseKey, Error> {
    let names: Vec<&CaseKey> = run.results.iter().map(|r| &r.key).collect();
    if let Some(k) = names.iter().find(|k| k.to_string() == wanted) {
        return Ok((*k).clone());
    }
    let hits: Vec<&&CaseKey> = names
        .iter()
        .filter(|k| k.to_string().contains(wanted))
        .collect();
    match hits.as_slice() {
        [one] => Ok((**one).clone()),
        _ => Err(Error::CaseMatch {
            wanted: wanted.to_owned(),
            within: format!("run {}", run.summary.id.0),
            matches: hits.iter().map(ToString::to_string).collect(),
            known: names.iter().map(ToString::to_string).collect(),
        }),
    }
}

fn report(
    good: &StoredRun,
    bad: &StoredRun,
    case: Option<&CaseKey>,
    dirs: &[&Path],
) -> BisectReport {
    let cases = bad
        .results
        .iter()
        .filter(|r| case.is_none_or(|k| &r.key == k))
        .filter_map(|b| {
            let g = good.results.iter().find(|g| g.key == b.key)?;
            let (gm, bm) = (median(g), median(b));
            Some(CaseChange {
                case: b.key.to_string(),
                good_ms: gm,
                bad_ms: bm,
                slower_pct: gm
                    .zip(bm)
                    .filter(|(g, _)| *g > 0.0)
                    .map(|(g, b)| (b / g - 1.0) * 100.0),
            })
        })
        .collect();
    BisectReport {
        schema_version: 1,
        good_run: good.summary.id.0,
        bad_run: bad.summary.id.0,
        good_sha: good.summary.git_sha.clone(),
        bad_sha: bad.summary.git_sha.clone(),
        commits: good
            .summary
            .git_sha
            .as_deref()
            .zip(bad.summary.git_sha.as_deref())
            .and_then(|(g, b)| crate::pipeline::context::commit_range(dirs, g, b)),
        env_changes: crate::compare::env_diff(&run_env(good, case), &run_env(bad, case)),
        cases,
    }
}

pub fn bisect(args: &BisectArgs) -> Result<Outcome, Error> {
    if !args.run {
        let (store, _) = store_from(&args.config)?;
        let good = load_run(&store, Some(args.good))?;
        let bad = load_run(&store, Some(args.bad))?;
        let case = args
            .case
            .as_deref()
            .map(|c| find_case(&bad, c))
            .transpose()?;
        // The working directory is where a user runs `utilgate bisect` from inside their
        // checkout; the config's directory is asked only when the working directory's git
        // does not know both commits (a config kept outside the checkout, say).
        let config_dir = args
            .config
            .config
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let r = report(&good, &bad, case.as_ref(), &[Path::new("."), config_dir]);
        match args.format.format {
            Format::Human => output::emit(&crate::report::bisect::render_human(&r))?,
            Format::Json => output::emit(&format!("{}\n", serde_json::to_string_pretty(&r)?))?,
        }
        return Ok(Outcome::Passed);
    }
    // `git bisect run` mode: a usage error aborts (128), a commit that cannot be measured is
    // skipped (125).
    let (store, _) = match store_from(&args.config) {
        Ok(s) => s,
        Err(e) => return Ok(abort(&e)),
    };
    let runs =
        load_run(&store, Some(args.good)).and_then(|g| Ok((g, load_run(&store, Some(args.bad))?)));
    let (good, bad) = match runs {
        Ok(r) => r,
        Err(e) => return Ok(abort(&e)),
    };
    let Some(wanted) = args.case.as_deref() else {
        return Ok(abort(&Error::BisectNeedsCase));
    };
    let key = match find_case(&bad, wanted) {
        Ok(k) => k,
        Err(e) => return Ok(abort(&e)),
    };
    let result_of = |run: &StoredRun| run.results.iter().find(|r| r.key == key).cloned();
    let (Some(g), Some(b)) = (result_of(&good), result_of(&bad)) else {
        return Ok(abort(&Error::BisectNotMeasured {
            case: wanted.to_owned(),
            run: args.good,
        }));
    };
    let now = match measure_case(&args.config.config, &key, args.trusted) {
        Ok(m) => m,
        Err(e) => {
            output::warn(&format!("this commit cannot be measured: {e}"));
            Vec::new()
        }
    };
    let Some(call) = bisect::call(&g.repeats_ms, &b.repeats_ms, &now, 0.25) else {
        return Ok(abort(&Error::BisectNotSlower {
            case: key.to_string(),
            good: args.good,
            bad: args.bad,
        }));
    };
    let sha = crate::pipeline::context::git(Path::new("."), &["rev-parse", "HEAD"]);
    output::note(&crate::report::bisect::render_call(
        &key.to_string(),
        sha.as_deref(),
        &call,
    ));
    Ok(match call.verdict {
        BisectVerdict::Good => Outcome::Passed,
        BisectVerdict::Bad => Outcome::GateFailed,
        BisectVerdict::Skip => Outcome::BisectSkip,
    })
}

/// Print the error and tell `git bisect run` to stop.
fn abort(err: &Error) -> Outcome {
    let _ = output::report_error(err);
    output::note("utilgate bisect --run: aborting the bisection (exit 128)");
    Outcome::BisectAbort
}

/// Measure `key` at this checkout, as its config describes it now: the suite's repeats, in
/// fresh processes, nothing stored. Returns each repeat's counted step times.
fn measure_case(config: &Path, key: &CaseKey, trusted: bool) -> Result<Vec<Vec<f64>>, Error> {
    use crate::pipeline::measure::runner::{CasePlan, Measured, Runner};
    let loaded = crate::config::load(config)?;
    if !trusted {
        crate::pipeline::credentials::refuse_near_harness(&loaded, None)?;
    }
    let suites =
        crate::pipeline::context::select_suites(&loaded, std::slice::from_ref(&key.suite))?;
    let Some(suite) = suites.into_iter().find(|s| s.case_keys().contains(key)) else {
        return Err(Error::BisectUntestable {
            case: key.to_string(),
            reason: format!(
                "the config at this commit has no such case ({})",
                loaded.path.display()
            ),
        });
    };
    let precision = crate::catalog::Precision::parse(&key.precision, suite.kv_dtype.as_deref())?;
    let plan = CasePlan {
        suite,
        key: key.clone(),
        floor: Err("not needed to bisect".to_owned()),
        kv_dtype: precision.kv.as_str().to_owned(),
    };
    let tmp = std::env::temp_dir();
    let run_dir = crate::measure::workdir::RunDir::create(&tmp).map_err(|source| Error::Io {
        path: tmp.clone(),
        source,
    })?;
    let progress = output::Progress::new(1, true);
    let runner = Runner {
        loaded: &loaded,
        exe: crate::pipeline::measure::runner::this_exe(),
        cancel: crate::pipeline::measure::runner::cancel_on_ctrl_c(),
        watch: None,
        run_dir: std::cell::RefCell::new(run_dir),
        progress: &progress,
    };
    let mut measured = Measured::default();
    runner.measure(&plan, 0..suite.repeats, &mut measured)?;
    if let Some(err) = measured.error {
        return Err(Error::BisectUntestable {
            case: key.to_string(),
            reason: err,
        });
    }
    Ok(measured.repeats_ms)
}
