//! Service cases of a stored run for the reports that read the store (`utilgate publish`,
//! `utilgate report`, and the history `run --github` / `--report-dir` charts): each case's
//! stored decision, settings and mean metrics, and its earlier runs. Reads the store; decides
//! nothing (the verdicts are the ones stored).

use std::collections::BTreeMap;

use crate::compare::ServeDecision;
use crate::error::Error;
use crate::pipeline::serve::readings;
use crate::report::{RunReport, ServeCaseReport, ServeHistoryPoint, ServeRepeatReport};
use crate::serve::ServeKey;
use crate::store::{RunId, Store, StoredServeCase};

/// The mean over a stored case's repeats of every metric they hold.
fn stored_means(case: &StoredServeCase) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for r in &case.repeats {
        for (k, v) in &r.metrics {
            let e = sums.entry(k.clone()).or_default();
            e.0 += v;
            e.1 += 1.0;
        }
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}

/// A stored service case as reported, from its stored decision.
fn case_report(case: &StoredServeCase, baseline: Option<&StoredServeCase>) -> ServeCaseReport {
    let decision: ServeDecision = case
        .decision_json
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_else(|| ServeDecision {
            verdict: case.verdict.unwrap_or(crate::case::Verdict::Error),
            metrics: Vec::new(),
            reasons: case.error.iter().cloned().collect(),
            frontier: None,
        });
    let mut c = ServeCaseReport::new(case.key.clone(), &decision);
    c.settings = case
        .settings_json
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    c.estimate = case
        .estimate_json
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    // A sweep's files are its points, not repeats of one measurement: a mean over them would
    // describe no load at all, so a sweep shows its frontier instead.
    let sweep = case.key.sweep.is_some();
    if !sweep {
        c.means = stored_means(case);
    }
    c.repeats = case
        .repeats
        .iter()
        .map(|r| ServeRepeatReport {
            source: r.source.clone(),
            schema: r.schema.clone(),
            // Stored as the file's object, serialised: read back unchanged.
            fields: serde_json::from_str(&r.raw_json)
                .unwrap_or_else(|_| serde_json::Value::String(r.raw_json.clone())),
        })
        .collect();
    if let Some(baseline) = baseline {
        c.baseline_result = Some(baseline.result_id);
        if !sweep {
            c.baseline_means = stored_means(baseline);
        }
    }
    c
}

/// Adds the stored service cases of the report's run (none: the report unchanged), each with
/// the baseline it was judged against (the one in place when the run started). The one reading
/// of service cases: `run`, `import serve`, `runs show`, `report` and `publish` all show this.
pub fn with_stored_service(store: &Store, report: RunReport) -> Result<RunReport, Error> {
    let stored = store.serve_cases_of_run(RunId(report.run.id))?;
    if stored.is_empty() {
        return Ok(report);
    }
    let started = stored[0].run_started_at;
    let mut cases: Vec<ServeCaseReport> = Vec::with_capacity(stored.len());
    for case in &stored {
        let baseline = store.serve_baseline_as_of(&case.key, &case.gpu_sku, started)?;
        cases.push(case_report(case, baseline.as_ref()));
    }
    let readings = readings(&cases);
    Ok(report.with_service(cases, readings))
}

/// Each service case's stored runs on the report's GPU up to the report's run, oldest first,
/// at most `limit` before it.
pub fn service_history(
    store: &Store,
    report: &RunReport,
    limit: usize,
) -> Result<BTreeMap<ServeKey, Vec<ServeHistoryPoint>>, Error> {
    let mut out = BTreeMap::new();
    for case in &report.service {
        let mut history = store.serve_case_history(
            &case.key,
            &report.run.gpu_sku,
            RunId(report.run.id),
            limit + 1,
        )?;
        history.retain(|h| h.run_id.0 <= report.run.id && h.error.is_none());
        let points = history
            .iter()
            .map(|h| {
                let means = stored_means(h);
                ServeHistoryPoint {
                    run_id: h.run_id.0,
                    started_at: h.run_started_at.to_string(),
                    median_ttft_ms: means.get("median_ttft_ms").copied(),
                    p99_ttft_ms: means.get("p99_ttft_ms").copied(),
                    median_itl_ms: means.get("median_itl_ms").copied(),
                    p99_itl_ms: means.get("p99_itl_ms").copied(),
                    current: h.run_id.0 == report.run.id,
                }
            })
            .collect();
        out.insert(case.key.clone(), points);
    }
    Ok(out)
}
