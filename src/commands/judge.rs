//! Judging results against baselines: fetches each case's baseline and history from the store
//! and hands them to the pure verdict engine (`compare`). Shared by `run` and `compare`, so a
//! stored run is always judged the same way as it was when it ran. Reads the store; decides
//! nothing itself.

use std::collections::{BTreeMap, BTreeSet};

use crate::case::CaseKey;
use crate::compare::{self, Evidence, Policy};
use crate::config::{Config, GateConfig};
use crate::error::Error;
use crate::store::{BaselineMoveKind, CaseFilter, Store, StoredResult, StoredRun};

/// One measured (or failed) case, as `run` holds it or the store returns it.
#[derive(Debug, Clone)]
pub struct CaseInput {
    pub key: CaseKey,
    pub repeats_ms: Vec<Vec<f64>>,
    pub floor_ms: Option<f64>,
    pub error: Option<String>,
    pub env: BTreeMap<String, String>,
    /// Why the GPU's state makes this case untrustworthy, if it does (decided by the caller).
    pub gpu_guard: Option<String>,
    /// The case's GPU-state summary (`gpu::GpuStateSummary` as JSON), when NVML sampled it;
    /// `judge` compares it with the baseline's through `gpu::guard_json`.
    pub gpu_state: Option<serde_json::Value>,
}

pub use crate::report::{BaselineRef, Judgement};

/// Where the baselines come from.
pub enum Against<'a> {
    /// The pinned baselines of the store for this GPU SKU, as they are now.
    Pinned,
    /// The pinned baselines as they were just before a moment (re-judging a stored run against
    /// what it was judged against when it ran, not against itself once it was promoted).
    PinnedAsOf(jiff::Timestamp),
    /// Every result of one stored run.
    Run(&'a StoredRun),
}

/// The gate policy for one case: thresholds resolved case, then suite, then gate.
#[must_use]
pub fn policy_for(config: Option<&Config>, key: &CaseKey) -> Policy {
    let default_gate = GateConfig::default();
    let gate = config.map_or(&default_gate, |c| &c.gate);
    let threshold = config
        .and_then(|c| c.suites.iter().find(|s| s.name == key.suite))
        .map_or(gate.max_drop_pct, |s| s.max_drop_pct_for(key, gate));
    Policy {
        max_drop_pct: threshold,
        family_alpha: gate.family_alpha,
        confirm_repeats: gate.confirm_repeats as usize,
        ..Policy::default()
    }
}

/// Judge every case. `suites` limits which baselines count as missing when absent from `cases`.
pub fn judge(
    store: &Store,
    gpu_sku: &str,
    cases: &[CaseInput],
    suites: &BTreeSet<String>,
    config: Option<&Config>,
    against: &Against<'_>,
) -> Result<Vec<Judgement>, Error> {
    let mut out = cases
        .iter()
        .map(|case| judge_case(store, gpu_sku, case, cases.len(), config, against))
        .collect::<Result<Vec<_>, _>>()?;
    out.extend(missing(store, gpu_sku, cases, suites, config, against)?);
    Ok(out)
}

/// Judge one case of a grid of `cases_in_grid` (the grid's size sets the per-case test level).
pub fn judge_case(
    store: &Store,
    gpu_sku: &str,
    case: &CaseInput,
    cases_in_grid: usize,
    config: Option<&Config>,
    against: &Against<'_>,
) -> Result<Judgement, Error> {
    let history_runs = config.map_or(GateConfig::default().history_runs, |c| c.gate.history_runs);
    let m = cases_in_grid.max(1);
    let policy = policy_for(config, &case.key);
    let (baseline, history) = match against {
        Against::Pinned => lineage(store, &case.key, gpu_sku, None, history_runs)?,
        Against::PinnedAsOf(t) => lineage(store, &case.key, gpu_sku, Some(*t), history_runs)?,
        Against::Run(run) => (
            run.results.iter().find(|r| r.key == case.key).cloned(),
            Vec::new(),
        ),
    };
    let decision = if let Some(message) = &case.error {
        compare::error_decision(message)
    } else {
        let floor_ms = case.floor_ms.unwrap_or(f64::NAN);
        let current = Evidence {
            repeats_ms: &case.repeats_ms,
            floor_ms,
        };
        let history_evidence: Vec<Evidence<'_>> = history
            .iter()
            .filter_map(|r| {
                r.floor_ms.map(|floor_ms| Evidence {
                    repeats_ms: &r.repeats_ms,
                    floor_ms,
                })
            })
            .collect();
        let base_evidence = baseline.as_ref().and_then(|b| {
            b.floor_ms.map(|floor_ms| Evidence {
                repeats_ms: &b.repeats_ms,
                floor_ms,
            })
        });
        compare::decide(
            base_evidence.as_ref(),
            &current,
            &history_evidence,
            &policy,
            m,
            gpu_guard(case, baseline.as_ref()).as_deref(),
        )
    };
    let env_changes = baseline
        .as_ref()
        .map(|b| compare::env_diff(&b.env, &case.env))
        .unwrap_or_default();
    let decision = compare::with_env_causes(decision, &env_changes);
    Ok(Judgement {
        key: case.key.clone(),
        decision,
        baseline: baseline.as_ref().map(baseline_ref),
        env_changes,
        threshold_pct: policy.max_drop_pct,
    })
}

/// Judgements for the cases with a baseline that this run did not measure.
fn missing(
    store: &Store,
    gpu_sku: &str,
    cases: &[CaseInput],
    suites: &BTreeSet<String>,
    config: Option<&Config>,
    against: &Against<'_>,
) -> Result<Vec<Judgement>, Error> {
    let mut out = Vec::new();
    let baseline_keys: Vec<CaseKey> = match against {
        Against::Pinned | Against::PinnedAsOf(_) => store
            .baselines(Some(gpu_sku))?
            .into_iter()
            .map(|b| b.key)
            .filter(|k| suites.contains(&k.suite))
            .collect(),
        Against::Run(run) => run
            .results
            .iter()
            .map(|r| r.key.clone())
            .filter(|k| suites.contains(&k.suite))
            .collect(),
    };
    let run_keys: Vec<CaseKey> = cases.iter().map(|c| c.key.clone()).collect();
    for key in compare::missing_keys(&baseline_keys, &run_keys) {
        let baseline = match against {
            Against::Pinned => store.baseline_for(&key, gpu_sku)?,
            Against::PinnedAsOf(t) => lineage(store, &key, gpu_sku, Some(*t), 0)?.0,
            Against::Run(run) => run.results.iter().find(|r| r.key == key).cloned(),
        };
        if baseline.is_none() {
            continue;
        }
        out.push(Judgement {
            threshold_pct: policy_for(config, &key).max_drop_pct,
            key,
            decision: compare::missing_decision(
                baseline
                    .as_ref()
                    .and_then(|b| {
                        b.floor_ms.map(|floor_ms| Evidence {
                            repeats_ms: &b.repeats_ms,
                            floor_ms,
                        })
                    })
                    .as_ref(),
            ),
            baseline: baseline.as_ref().map(baseline_ref),
            env_changes: Vec::new(),
        });
    }
    Ok(out)
}

/// The caller's guard reason, else the GPU-state guard of this case against its baseline.
fn gpu_guard(case: &CaseInput, baseline: Option<&StoredResult>) -> Option<String> {
    case.gpu_guard.clone().or_else(|| {
        crate::gpu::guard_json(
            case.gpu_state.as_ref(),
            baseline.and_then(|b| b.gpu_state_json.as_ref()),
        )
    })
}

/// The reference figures of a baseline result, for reports.
#[must_use]
pub fn baseline_ref(b: &StoredResult) -> BaselineRef {
    BaselineRef {
        run_id: b.run_id.0,
        git_sha: b.git_sha.clone(),
        median_ms: b.median_ms,
        utilisation: b.utilisation,
    }
}

/// The baseline a case had just before `t` (what a run that started at `t` was judged against).
pub fn baseline_before(
    store: &Store,
    key: &CaseKey,
    gpu_sku: &str,
    t: jiff::Timestamp,
) -> Result<Option<StoredResult>, Error> {
    Ok(lineage(store, key, gpu_sku, Some(t), 0)?.0)
}

/// A case's baseline (as of `as_of`, or now) and the earlier baselines of its lineage: the
/// results the pointer held before, newest first, back to (and including) the last accepted or
/// imported one. The lineage steadies the reference level and the noise estimate; an accepted
/// change starts a new lineage, so levels from before it never pull the reference back.
/// Results whose floor differs from the baseline's (an edited spec) are left out.
fn lineage(
    store: &Store,
    key: &CaseKey,
    gpu_sku: &str,
    as_of: Option<jiff::Timestamp>,
    limit: usize,
) -> Result<(Option<StoredResult>, Vec<StoredResult>), Error> {
    let events: Vec<_> = store
        .baseline_history(&CaseFilter::Key(key.clone()), Some(gpu_sku))?
        .into_iter()
        .filter(|e| as_of.is_none_or(|t| e.moved_at < t))
        .collect();
    let Some(current) = events.first() else {
        return Ok((None, Vec::new()));
    };
    let mut wanted = Vec::new();
    if current.kind == BaselineMoveKind::Promote {
        for event in &events[1..] {
            if wanted.len() >= limit {
                break;
            }
            if event.result_id != current.result_id && !wanted.contains(&event.result_id) {
                wanted.push(event.result_id);
            }
            if event.kind != BaselineMoveKind::Promote {
                break;
            }
        }
    }
    let Some(baseline) = store.results_by_id(&[current.result_id])?.pop() else {
        return Ok((None, Vec::new()));
    };
    let same_floor = |r: &StoredResult| match (r.floor_ms, baseline.floor_ms) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-3 * b.abs(),
        _ => false,
    };
    let history = store
        .results_by_id(&wanted)?
        .into_iter()
        .filter(|r| r.error.is_none() && same_floor(r))
        .collect();
    Ok((Some(baseline), history))
}
