//! Each case's nightly history (results on the baseline branch) read from the store and handed
//! to the change-point reading (`compare::history`), for `history`, `changes` and the check a
//! nightly `run` makes. Reads the store; writes nothing.

use std::collections::BTreeMap;

use crate::case::{CaseKey, Verdict};
use crate::cli::DetectorArgs;
use crate::compare::history::{HistoryPolicy, Night, gpu_env, read_history};
use crate::compare::{Detector, Significance};
use crate::config::{Config, GateConfig};
use crate::error::Error;
use crate::pipeline::context::CommitLog;
use crate::report::history::{CaseHistoryReport, HistoryMeasure};
use crate::store::{Store, StoredSummary};

/// The change-point detector the flags ask for (their ranges are checked when they are parsed).
pub(crate) fn detector(args: &DetectorArgs) -> Detector {
    Detector {
        significance: Significance::Permutation {
            permutations: args.permutations,
            seed: args.seed,
        },
        max_pvalue: args.max_pvalue,
    }
}

/// The case's threshold: its suite's (with case overrides) when the config has the suite.
pub(crate) fn threshold(config: Option<&Config>, key: &CaseKey) -> f64 {
    let gate = config.map_or_else(GateConfig::default, |c| c.gate.clone());
    config
        .and_then(|c| c.suites.iter().find(|s| s.name == key.suite))
        .map_or(gate.max_drop_pct, |s| s.max_drop_pct_for(key, &gate))
}

pub(crate) fn baseline_branch(config: Option<&Config>) -> String {
    config.map_or_else(
        || GateConfig::default().baseline_branch,
        |c| c.gate.baseline_branch.clone(),
    )
}

/// A stored result's summary as a night of history (the store picked measured, judged results
/// on the baseline branch), its value on the history's measure.
fn night(r: &StoredSummary, measure: HistoryMeasure, first_ms: Option<f64>) -> Option<Night> {
    let value = match measure {
        HistoryMeasure::Utilisation => r.utilisation.filter(|u| u.is_finite() && *u > 0.0)?,
        // No floor on any night: the speed against the first night's step (the same relative
        // changes utilisation would show, since the floor is one figure per case).
        HistoryMeasure::SpeedVsFirstNight => {
            let m = r.median_ms.filter(|m| m.is_finite() && *m > 0.0)?;
            first_ms? / m
        }
    };
    if matches!(r.verdict, Some(Verdict::Error | Verdict::Invalid)) {
        return None;
    }
    let mut env: BTreeMap<String, String> = r.env.clone();
    env.extend(gpu_env(r.gpu_state_json.as_ref()));
    Some(Night {
        run_id: r.run_id.0,
        started_at: r.started_at.to_string(),
        git_sha: r.git_sha.clone(),
        utilisation: value,
        median_ms: r.median_ms,
        env,
    })
}

/// Read one case's history on one GPU, on the config's baseline branch.
pub(crate) fn case_report(
    store: &Store,
    config: Option<&Config>,
    key: &CaseKey,
    gpu_sku: &str,
    nights: usize,
    detector: Detector,
    commits: &mut CommitLog,
) -> Result<CaseHistoryReport, Error> {
    let branch = baseline_branch(config);
    case_report_on(
        store, config, key, gpu_sku, &branch, nights, detector, commits,
    )
}

/// Read one case's history on one GPU and `branch`.
#[expect(
    clippy::too_many_arguments,
    reason = "the case, its branch and the detector's settings: each a separate choice"
)]
pub(crate) fn case_report_on(
    store: &Store,
    config: Option<&Config>,
    key: &CaseKey,
    gpu_sku: &str,
    branch: &str,
    nights: usize,
    detector: Detector,
    commits: &mut CommitLog,
) -> Result<CaseHistoryReport, Error> {
    let branch = branch.to_owned();
    // The branch's nights only, bounded in SQL: pull requests never crowd them out.
    let stored = store.case_nights(key, gpu_sku, &branch, nights)?;
    // Utilisation where the case has a floor; a history with none (imported nights without a
    // floor) is read by its step times.
    let measure = if stored
        .iter()
        .any(|r| r.utilisation.is_some_and(|u| u.is_finite() && u > 0.0))
    {
        HistoryMeasure::Utilisation
    } else {
        HistoryMeasure::SpeedVsFirstNight
    };
    let first_ms = stored.last().and_then(|r| r.median_ms);
    let mut series: Vec<Night> = stored
        .iter()
        .filter_map(|r| night(r, measure, first_ms))
        .take(nights)
        .collect();
    series.reverse();
    let max_drop_pct = threshold(config, key);
    let mut policy = HistoryPolicy::new(max_drop_pct);
    policy.detector = detector;
    let mut read = read_history(&series, &policy).map_err(|e| Error::HistoryRead {
        case: key.to_string(),
        gpu: gpu_sku.to_owned(),
        problem: e.to_string(),
    })?;
    // Each change's commits by subject, from the checkout the command runs in: two hashes
    // alone send a reader to git.
    for change in &mut read.changes {
        if let Some((a, b)) = &change.commits {
            change.subjects = commits.range(a, b);
        }
    }
    Ok(CaseHistoryReport {
        case: key.clone(),
        gpu_sku: gpu_sku.to_owned(),
        baseline_branch: branch,
        max_drop_pct,
        measure,
        first_night: series.first().map(|n| n.started_at.clone()),
        last_night: series.last().map(|n| n.started_at.clone()),
        read,
    })
}

/// Keep only the change points from `from` on.
pub(crate) fn keep_since(report: &mut CaseHistoryReport, from: jiff::Timestamp) {
    report.read.changes.retain(|c| {
        c.night
            .started_at
            .parse::<jiff::Timestamp>()
            .is_ok_and(|t| t >= from)
    });
}
