//! `utilgate history CASE` and `utilgate changes`: read each case's nightly history (results on
//! the baseline branch) from the store and hand it to the change-point reading
//! (`compare::history`). Also the check `utilgate run` makes after a nightly. Reads the store;
//! writes nothing.

use std::collections::BTreeMap;

use crate::case::{CaseKey, Verdict};
use crate::cli::{ChangesArgs, DetectorArgs, Format, HistoryArgs};
use crate::commands::Outcome;
use crate::commands::runs::store_from;
use crate::compare::history::{HistoryPolicy, Night, gpu_env, read_history};
use crate::compare::{Detector, Significance};
use crate::config::{Config, GateConfig};
use crate::error::Error;
use crate::output;
use crate::report::history::{CaseHistoryReport, render_changes, render_history, render_json};
use crate::store::{Store, StoredResult};

fn detector(args: &DetectorArgs) -> Result<Detector, Error> {
    if !(args.max_pvalue > 0.0 && args.max_pvalue < 1.0) {
        return Err(Error::Argument {
            arg: format!("--max-pvalue {}", args.max_pvalue),
            problem: "must be between 0 and 1".into(),
            fix: "write --max-pvalue 0.01".into(),
        });
    }
    if args.permutations == 0 {
        return Err(Error::Argument {
            arg: "--permutations 0".into(),
            problem: "no permutation test can run".into(),
            fix: "use at least 19, e.g. --permutations 199".into(),
        });
    }
    Ok(Detector {
        significance: Significance::Permutation {
            permutations: args.permutations,
            seed: args.seed,
        },
        max_pvalue: args.max_pvalue,
    })
}

/// The case's threshold: its suite's (with case overrides) when the config has the suite.
fn threshold(config: Option<&Config>, key: &CaseKey) -> f64 {
    let gate = config.map_or_else(GateConfig::default, |c| c.gate.clone());
    config
        .and_then(|c| c.suites.iter().find(|s| s.name == key.suite))
        .map_or(gate.max_drop_pct, |s| s.max_drop_pct_for(key, &gate))
}

fn baseline_branch(config: Option<&Config>) -> String {
    config.map_or_else(
        || GateConfig::default().baseline_branch,
        |c| c.gate.baseline_branch.clone(),
    )
}

/// A stored result as a night of history: measured, judged (not `error`/`invalid`), on the
/// baseline branch.
fn night(r: &StoredResult, branch: &str) -> Option<Night> {
    let util = r.utilisation.filter(|u| u.is_finite() && *u > 0.0)?;
    if r.branch.as_deref() != Some(branch)
        || matches!(r.verdict, Some(Verdict::Error | Verdict::Invalid))
    {
        return None;
    }
    let mut env: BTreeMap<String, String> = r.env.clone();
    env.extend(gpu_env(r.gpu_state_json.as_ref()));
    Some(Night {
        run_id: r.run_id.0,
        started_at: r.started_at.to_string(),
        git_sha: r.git_sha.clone(),
        utilisation: util,
        median_ms: r.median_ms,
        env,
    })
}

/// Read one case's history on one GPU.
pub fn case_report(
    store: &Store,
    config: Option<&Config>,
    key: &CaseKey,
    gpu_sku: &str,
    nights: usize,
    detector: Detector,
) -> Result<CaseHistoryReport, Error> {
    let branch = baseline_branch(config);
    // Results of other branches share the table; read enough to find `nights` of the branch.
    let stored = store.case_history(key, gpu_sku, nights.saturating_mul(8).max(64))?;
    let mut series: Vec<Night> = stored
        .iter()
        .filter_map(|r| night(r, &branch))
        .take(nights)
        .collect();
    series.reverse();
    let max_drop_pct = threshold(config, key);
    let mut policy = HistoryPolicy::new(max_drop_pct);
    policy.detector = detector;
    let read = read_history(&series, &policy).map_err(|e| Error::Argument {
        arg: format!("history of {key} on {gpu_sku}"),
        problem: e.to_string(),
        fix: "check --nights, --max-pvalue and --permutations".into(),
    })?;
    Ok(CaseHistoryReport {
        case: key.clone(),
        gpu_sku: gpu_sku.to_owned(),
        baseline_branch: branch,
        max_drop_pct,
        first_night: series.first().map(|n| n.started_at.clone()),
        last_night: series.last().map(|n| n.started_at.clone()),
        read,
    })
}

pub fn history(args: &HistoryArgs) -> Result<Outcome, Error> {
    let detector = detector(&args.detector)?;
    let (store, config) = store_from(&args.config)?;
    let all = store.series()?;
    let wanted: Vec<&(CaseKey, String)> = all
        .iter()
        .filter(|(_, sku)| args.detector.gpu.as_ref().is_none_or(|g| g == sku))
        .collect();
    let exact: Vec<&&(CaseKey, String)> = wanted
        .iter()
        .filter(|(k, _)| k.to_string() == args.case)
        .collect();
    let matches = if exact.is_empty() {
        wanted
            .iter()
            .filter(|(k, _)| k.to_string().contains(&args.case))
            .collect()
    } else {
        exact
    };
    let (key, sku) = match matches.as_slice() {
        [one] => (&one.0, &one.1),
        [] => {
            let known: Vec<String> = wanted
                .iter()
                .take(5)
                .map(|(k, s)| format!("{k} ({s})"))
                .collect();
            return Err(Error::Argument {
                arg: format!("{:?}", args.case),
                problem: format!(
                    "no stored case matches; stored cases include: {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
                fix: "`utilgate runs show` prints case names".into(),
            });
        }
        many => {
            let names: Vec<String> = many.iter().map(|(k, s)| format!("{k} ({s})")).collect();
            return Err(Error::Argument {
                arg: format!("{:?}", args.case),
                problem: format!("matches {} cases: {}", many.len(), names.join(", ")),
                fix: "give the whole case name, or --gpu".into(),
            });
        }
    };
    let report = case_report(
        &store,
        config.as_ref(),
        key,
        sku,
        args.detector.nights,
        detector,
    )?;
    match args.format.format {
        Format::Human => output::emit(&render_history(&report, &detector))?,
        Format::Json => output::emit(&render_json(&[report], &detector)?)?,
    }
    Ok(Outcome::Passed)
}

/// `--since` as a timestamp: a UTC date or an RFC 3339 time.
fn since(text: &str) -> Result<jiff::Timestamp, Error> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    text.parse::<jiff::civil::Date>()
        .ok()
        .and_then(|d| jiff::tz::TimeZone::UTC.to_timestamp(d.at(0, 0, 0, 0)).ok())
        .ok_or_else(|| Error::Argument {
            arg: format!("--since {text}"),
            problem: "not a date".into(),
            fix: "write --since 2026-11-01 or --since 2026-11-01T03:00:00Z".into(),
        })
}

pub fn changes(args: &ChangesArgs) -> Result<Outcome, Error> {
    let detector = detector(&args.detector)?;
    let from = args.since.as_deref().map(since).transpose()?;
    let (store, config) = store_from(&args.config)?;
    let mut reports = Vec::new();
    for (key, sku) in store.series()? {
        if args.suite.as_ref().is_some_and(|s| *s != key.suite)
            || args.detector.gpu.as_ref().is_some_and(|g| *g != sku)
        {
            continue;
        }
        let mut report = case_report(
            &store,
            config.as_ref(),
            &key,
            &sku,
            args.detector.nights,
            detector,
        )?;
        if let Some(from) = from {
            report.read.changes.retain(|c| {
                c.night
                    .started_at
                    .parse::<jiff::Timestamp>()
                    .is_ok_and(|t| t >= from)
            });
        }
        reports.push(report);
    }
    match args.format.format {
        Format::Human => output::emit(&render_changes(&reports, &detector, args.since.as_deref()))?,
        Format::Json => output::emit(&render_json(&reports, &detector)?)?,
    }
    Ok(Outcome::Passed)
}

/// After a nightly on the baseline branch: warnings for each case of the run whose newest night
/// starts a change point or that is sliding. Never fails the run.
pub fn after_nightly(
    store: &Store,
    config: &Config,
    keys: &[CaseKey],
    gpu_sku: &str,
    run_id: i64,
) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    for key in keys {
        let r = case_report(store, Some(config), key, gpu_sku, 120, Detector::default())?;
        for c in r.read.changes.iter().filter(|c| c.night.run_id == run_id) {
            let lines = crate::report::history::change_lines(c, r.max_drop_pct);
            warnings.push(format!("{key}: change point tonight: {}", lines.join("; ")));
        }
        if let Some(s) = &r.read.slide {
            warnings.push(format!(
                "{key}: {}",
                crate::report::history::slide_line(s, r.max_drop_pct)
            ));
        }
    }
    Ok(warnings)
}
