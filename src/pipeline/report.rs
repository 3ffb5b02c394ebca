//! The report stage: a stored run read back with the verdicts it stored (never re-judged), as the
//! one report model (`report::RunReport`) that every renderer reads. Reads the store.

use std::collections::{BTreeMap, BTreeSet};

use crate::case::CaseKey;
use crate::cli::{Format, RunArgs};
use crate::compare;
use crate::config::{Config, GateConfig, ReportConfig};
use crate::error::Error;
use crate::output;
use crate::pipeline::judge;
use crate::report::{self, Judgement, RunReport, TrendPoint};
use crate::store::{RunId, Store, StoredResult, StoredRun};

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
    // The baselines the run was judged against: those in place before it started, read for
    // the whole run at once (a case at a time, a run of 500 cases made 1,000 queries).
    let pointers = store.baselines_as_of(&run.summary.gpu_sku, run.summary.started_at)?;
    let wanted: BTreeSet<&CaseKey> = run.results.iter().map(|r| &r.key).collect();
    let ids: Vec<i64> = pointers
        .iter()
        .filter(|p| wanted.contains(&p.key))
        .map(|p| p.result_id)
        .collect();
    let baselines: BTreeMap<CaseKey, StoredResult> = store
        .results_by_id(&ids)?
        .into_iter()
        .map(|b| (b.key.clone(), b))
        .collect();
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
            let baseline = baselines.get(&r.key);
            Ok(Judgement {
                key: r.key.clone(),
                decision,
                env_changes: baseline
                    .as_ref()
                    .map(|b| compare::env_diff(&b.env, &r.env))
                    .unwrap_or_default(),
                baseline: baseline.map(judge::baseline_ref),
                threshold_pct: crate::config::policy_for(config, &r.key).max_drop_pct,
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

/// Whether the run is now some case's baseline: what "baselines promoted" says.
fn promoted(store: &Store, run: &StoredRun) -> Result<bool, Error> {
    let step = store
        .baselines(Some(&run.summary.gpu_sku))?
        .iter()
        .any(|b| b.run_id == run.summary.id);
    Ok(step || store.serve_run_is_baseline(run.summary.id)?)
}

/// Reads the stored run back and prints its report in the chosen format: the step cases with
/// this run's judgements, the service cases as every verb reads them from the store.
pub(crate) fn report_run(
    store: &Store,
    run_id: crate::store::RunId,
    judgements: &[Judgement],
    config: &Config,
    args: &RunArgs,
) -> Result<report::RunReport, Error> {
    let fail_on = &config.gate.fail_on;
    let stored = store.run(run_id)?.ok_or(Error::NoSuchRun(run_id.0))?;
    // What moved, not what the run was allowed to move: a run on the baseline branch whose
    // cases could not be trusted (the host moved) may promote and still move nothing.
    let promoted = promoted(store, &stored)?;
    let mut report = report::RunReport::build(&stored, judgements, fail_on, promoted);
    crate::pipeline::evidence::attach(store, &mut report);
    let report = crate::pipeline::serve_stored::with_stored_service(store, report)?;
    let report = with_site(report, Some(config));
    print_report(&report, args.format.format)?;
    Ok(report)
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
    let run_started = report.run.started_at.parse::<jiff::Timestamp>().ok();
    for case in &report.cases {
        // Bounded in SQL: this run's result and the `limit` before it on the branch.
        let history = store.case_trend(
            &case.key,
            &report.run.gpu_sku,
            (RunId(report.run.id), run_started),
            baseline_branch,
            limit + 1,
        )?;
        let mut points: Vec<TrendPoint> = Vec::new();
        let mut earlier = 0;
        for r in &history {
            let current = r.run_id.0 == report.run.id;
            if !current {
                if earlier >= limit {
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
    stored_report_with(store, run, config, true)
}

/// [`stored_report`], reading each case's trend only when `with_trends` (a summary page draws
/// no per-case chart, and a 500-case run's trends are 500 reads).
pub(crate) fn stored_report_with(
    store: &Store,
    run: &StoredRun,
    config: Option<&Config>,
    with_trends: bool,
) -> Result<RunReport, Error> {
    let facts = store.publish_facts(run.summary.id)?;
    let mut judgements = stored_judgements(store, run, config)?;
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
        .map_or_else(|| fail_on(config), |f| f.fail_on.clone());
    let promoted = promoted(store, run)?;
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
    let trends = if with_trends {
        trends(store, &report, report_config.trend_runs, Some(&branch))?
    } else {
        BTreeMap::new()
    };
    let report = crate::pipeline::serve_stored::with_stored_service(store, report)?;
    let history =
        crate::pipeline::serve_stored::service_history(store, &report, report_config.trend_runs)?;
    Ok(with_site(
        report.with_trends(&trends).with_service_history(&history),
        config,
    ))
}

/// The report linked to the published site where `[site] url` is set.
fn with_site(report: RunReport, config: Option<&Config>) -> RunReport {
    match config.and_then(|c| c.site.url.as_deref()) {
        Some(url) => report.with_site_url(url),
        None => report,
    }
}
