//! The report context: one pure data structure built from a stored run and its judgements, from
//! which every output (terminal table, JSON, and later templates) is rendered. Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::case::{CaseKey, Verdict};
use crate::compare::{Decision, EnvChange};
use crate::store::StoredRun;

/// The JSON schema version of reports; bump on any breaking change.
pub const SCHEMA_VERSION: u32 = 1;

/// The baseline a case was judged against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineRef {
    pub run_id: i64,
    pub git_sha: Option<String>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
}

/// A case's decision with what it was judged against.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Judgement {
    pub key: CaseKey,
    pub decision: Decision,
    pub baseline: Option<BaselineRef>,
    pub env_changes: Vec<EnvChange>,
    pub threshold_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: i64,
    pub started_at: String,
    pub finished_at: String,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub trigger: Option<String>,
    pub pr_number: Option<u64>,
    pub gpu_sku: String,
    pub host: Option<String>,
    pub utilgate_version: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GateInfo {
    pub passed: bool,
    pub fail_on: Vec<Verdict>,
    pub counts: BTreeMap<Verdict, usize>,
    pub baselines_promoted: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    pub case: String,
    pub key: CaseKey,
    pub verdict: Verdict,
    pub floor_ms: Option<f64>,
    /// "memory" or "compute": the resource that sets the floor.
    pub bound: Option<String>,
    pub median_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Spread of the per-process medians, percent of the median.
    pub repeat_spread_pct: Option<f64>,
    pub n: Option<usize>,
    pub repeats: Option<usize>,
    pub utilisation: Option<f64>,
    pub mbu: Option<f64>,
    pub mfu: Option<f64>,
    pub baseline: Option<BaselineRef>,
    pub drop_pct: Option<f64>,
    pub threshold_pct: f64,
    pub decision: Decision,
    pub env_changes: Vec<EnvChange>,
    pub error: Option<String>,
    pub stderr_tail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub run: RunInfo,
    pub gate: GateInfo,
    pub cases: Vec<CaseReport>,
}

/// How urgently a verdict needs a reader's eyes: reports list the worst first.
#[must_use]
pub fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Regressed => 0,
        Verdict::Invalid => 1,
        Verdict::Error => 2,
        Verdict::Inconclusive => 3,
        Verdict::Missing => 4,
        Verdict::Improved => 5,
        Verdict::New => 6,
        Verdict::Pass => 7,
    }
}

fn num(value: Option<&serde_json::Value>, field: &str) -> Option<f64> {
    value
        .and_then(|v| v.get(field))
        .and_then(serde_json::Value::as_f64)
}

impl RunReport {
    /// Build the report of `run` from its judgements (one per case, plus missing cases).
    #[must_use]
    pub fn build(
        run: &StoredRun,
        judgements: &[Judgement],
        fail_on: &[Verdict],
        baselines_promoted: bool,
    ) -> RunReport {
        let mut cases: Vec<CaseReport> = judgements
            .iter()
            .map(|j| {
                let result = run.results.iter().find(|r| r.key == j.key);
                let summary = result.and_then(|r| r.summary_json.as_ref());
                CaseReport {
                    case: j.key.to_string(),
                    key: j.key.clone(),
                    verdict: j.decision.verdict,
                    floor_ms: result.and_then(|r| r.floor_ms),
                    bound: result
                        .and_then(|r| r.floor_json.as_ref())
                        .and_then(|f| f.get("bound"))
                        .and_then(|b| b.as_str())
                        .map(str::to_owned),
                    median_ms: result.and_then(|r| r.median_ms),
                    p90_ms: num(summary, "p90_ms"),
                    p99_ms: num(summary, "p99_ms"),
                    repeat_spread_pct: num(summary, "repeat_spread_pct"),
                    n: summary
                        .and_then(|s| s.get("n"))
                        .and_then(serde_json::Value::as_u64)
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                    repeats: summary
                        .and_then(|s| s.get("repeats"))
                        .and_then(serde_json::Value::as_u64)
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                    utilisation: result.and_then(|r| r.utilisation),
                    mbu: result.and_then(|r| r.mbu),
                    mfu: result.and_then(|r| r.mfu),
                    baseline: j.baseline.clone(),
                    drop_pct: j.decision.drop_pct,
                    threshold_pct: j.threshold_pct,
                    decision: j.decision.clone(),
                    env_changes: j.env_changes.clone(),
                    error: result.and_then(|r| r.error.clone()),
                    stderr_tail: result.and_then(|r| r.stderr_tail.clone()),
                }
            })
            .collect();
        cases.sort_by(|a, b| {
            severity(a.verdict)
                .cmp(&severity(b.verdict))
                .then_with(|| a.key.cmp(&b.key))
        });
        let mut counts = BTreeMap::new();
        for c in &cases {
            *counts.entry(c.verdict).or_insert(0) += 1;
        }
        let verdicts: Vec<Verdict> = cases.iter().map(|c| c.verdict).collect();
        RunReport {
            schema_version: SCHEMA_VERSION,
            run: RunInfo {
                id: run.summary.id.0,
                started_at: run.summary.started_at.to_string(),
                finished_at: run.summary.finished_at.to_string(),
                git_sha: run.summary.git_sha.clone(),
                branch: run.summary.branch.clone(),
                trigger: run.summary.trigger.clone(),
                pr_number: run.summary.pr_number,
                gpu_sku: run.summary.gpu_sku.clone(),
                host: run.host.clone(),
                utilgate_version: run.utilgate_version.clone(),
            },
            gate: GateInfo {
                passed: !crate::compare::gate_failed(verdicts.iter().copied(), fail_on),
                fail_on: fail_on.to_vec(),
                counts,
                baselines_promoted,
            },
            cases,
        }
    }
}
