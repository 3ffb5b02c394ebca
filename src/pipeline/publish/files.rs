//! The report of a stored run (with the verdicts stored with it, never re-judged), each case's
//! trend from the store, the template environment with the user's templates, and the files a
//! report becomes: the report directory and the Actions step summary. Reads the store and the
//! templates directory; writes files.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::case::CaseKey;
use crate::config::{Config, GateConfig, LoadedConfig, ReportConfig};
use crate::error::Error;
use crate::output;
use crate::pipeline::report as stored;
use crate::report::{
    self, BUILTIN_TEMPLATES, Judgement, Renderer, ReportFormat, RunReport, TrendPoint,
};
use crate::store::{Store, StoredRun};

use super::env::GithubEnv;

/// GitHub's limit on one step summary is 1 MiB; stay clear of it.
pub(super) const STEP_SUMMARY_LIMIT: usize = 1_000_000;

/// The template environment, with the user's templates from `[report] templates` when set.
pub fn renderer(loaded: Option<&LoadedConfig>) -> Result<Renderer, Error> {
    let mut overrides = BTreeMap::new();
    if let Some(loaded) = loaded
        && let Some(rel) = &loaded.config.report.templates
    {
        let dir = loaded.dir.join(rel);
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !BUILTIN_TEMPLATES.iter().any(|(n, _)| *n == name) {
                if Path::new(&name)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("j2"))
                {
                    let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|(n, _)| *n).collect();
                    output::warn(&format!(
                        "{}: replaces no built-in template (names: {})",
                        entry.path().display(),
                        names.join(", ")
                    ));
                }
                continue;
            }
            let path = entry.path();
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            overrides.insert(name, text);
        }
    }
    Ok(Renderer::new(&overrides)?)
}

/// Each case's recent results on the run's GPU, oldest first: earlier runs on the baseline
/// branch (the nightlies), up to `limit` of them, then the run itself.
pub fn trends(
    store: &Store,
    report: &RunReport,
    limit: usize,
    baseline_branch: Option<&str>,
) -> Result<BTreeMap<CaseKey, Vec<TrendPoint>>, Error> {
    let mut out = BTreeMap::new();
    for case in &report.cases {
        let history =
            store.case_history(&case.key, &report.run.gpu_sku, limit.saturating_mul(4) + 1)?;
        let mut points: Vec<TrendPoint> = Vec::new();
        let mut earlier = 0;
        for r in &history {
            let current = r.run_id.0 == report.run.id;
            if r.run_id.0 > report.run.id || r.median_ms.is_none() {
                continue;
            }
            if !current {
                if earlier >= limit
                    || baseline_branch.is_some_and(|b| r.branch.as_deref() != Some(b))
                {
                    continue;
                }
                earlier += 1;
            }
            points.push(TrendPoint {
                run_id: r.run_id.0,
                started_at: r.started_at.to_string(),
                git_sha: r.git_sha.clone(),
                median_ms: r.median_ms,
                utilisation: r.utilisation,
                current,
            });
        }
        points.reverse();
        out.insert(case.key.clone(), points);
    }
    Ok(out)
}

/// The report of a stored run with the verdicts and the gate stored with it (`fail_on`,
/// thresholds, missing cases, the baseline branch in force when it ran), never re-judged;
/// `config` (the publishing side's) only fills in for runs stored before these were kept,
/// and sets the trend length.
pub fn stored_report(
    store: &Store,
    run: &StoredRun,
    config: Option<&Config>,
) -> Result<RunReport, Error> {
    let facts = store.publish_facts(run.summary.id)?;
    let mut judgements = stored::stored_judgements(store, run, config)?;
    if let Some(facts) = &facts {
        for j in &mut judgements {
            if let Some(t) = facts.thresholds_pct.get(&j.key.to_string()) {
                j.threshold_pct = *t;
            }
        }
        for missing in &facts.missing {
            let baseline = crate::pipeline::judge::baseline_before(
                store,
                &missing.key,
                &run.summary.gpu_sku,
                run.summary.started_at,
            )?;
            judgements.push(Judgement {
                key: missing.key.clone(),
                decision: missing.decision.clone(),
                baseline: baseline.as_ref().map(crate::pipeline::judge::baseline_ref),
                env_changes: Vec::new(),
                threshold_pct: facts
                    .thresholds_pct
                    .get(&missing.key.to_string())
                    .copied()
                    .unwrap_or_else(|| GateConfig::default().max_drop_pct),
            });
        }
    }
    let fail_on = facts
        .as_ref()
        .map_or_else(|| stored::fail_on(config), |f| f.fail_on.clone());
    let promoted = store
        .baselines(Some(&run.summary.gpu_sku))?
        .iter()
        .any(|b| b.run_id == run.summary.id);
    let mut report = RunReport::build(run, &judgements, &fail_on, promoted);
    crate::pipeline::evidence::attach(store, &mut report);
    let report_config = config.map_or_else(ReportConfig::default, |c| c.report.clone());
    let branch = facts.as_ref().map_or_else(
        || {
            config.map_or_else(
                || GateConfig::default().baseline_branch,
                |c| c.gate.baseline_branch.clone(),
            )
        },
        |f| f.baseline_branch.clone(),
    );
    let trends = trends(store, &report, report_config.trend_runs, Some(&branch))?;
    let report = crate::pipeline::serve_stored::with_stored_service(store, report)?;
    let history =
        crate::pipeline::serve_stored::service_history(store, &report, report_config.trend_runs)?;
    Ok(report.with_trends(&trends).with_service_history(&history))
}

fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Create a report directory (early, before any measuring).
pub fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Write every format into `dir`.
pub fn write_report_dir(
    renderer: &Renderer,
    report: &RunReport,
    dir: &Path,
) -> Result<Vec<PathBuf>, Error> {
    create_dir(dir)?;
    let mut written = Vec::new();
    for format in ReportFormat::ALL {
        let path = dir.join(format.file_name());
        write_file(&path, &renderer.render(format, report)?)?;
        written.push(path);
    }
    Ok(written)
}

/// Append the step summary when Actions asks for one.
pub(super) fn write_step_summary(
    renderer: &Renderer,
    report: &RunReport,
    genv: &GithubEnv,
) -> Result<(), Error> {
    let Some(path) = &genv.step_summary else {
        return Ok(());
    };
    let text = report::fit_comment(
        &renderer.render(ReportFormat::Summary, report)?,
        STEP_SUMMARY_LIMIT,
    );
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()).map(|()| f))
        .map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
    file.flush().map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })
}
