//! Judging results against baselines: fetches each case's baseline and history from the store
//! and hands them to the pure verdict engine (`compare`). Shared by `run` and `compare`, so a
//! stored run is always judged the same way as it was when it ran. Reads the store; decides
//! nothing itself.

use std::collections::{BTreeMap, BTreeSet};

use crate::case::{CaseKey, Verdict};
use crate::compare::{self, Canary, Decision, Evidence, Night, Reference};
use crate::config::{Config, GateConfig};
use crate::error::Error;
use crate::store::{BranchWindow, Store, StoredResult, StoredRun, Take};

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
    /// Repeats measured before a confirm step, when not the suite's `repeats` (a budgeted
    /// night plans its own): a confirmed case is judged on the repeats after these.
    pub first_repeats: Option<usize>,
    /// The fresh processes a budgeted night's confirm step asks of this case where it sized
    /// them from the case's stored noise, and the most it asks of any case; `None` where
    /// `[gate] confirm_repeats` sets them.
    pub confirm_sized: Option<ConfirmSized>,
    /// The quality metrics its harness scored (the accuracy guard); empty when none.
    pub quality: crate::compare::quality::QualityCounts,
    /// A speculative case's drafted and accepted tokens, as its harness reported them.
    pub speculative: Option<crate::compare::speculation::DraftCounts>,
    /// Each timed repeat's energy, or why it has none; empty without NVML.
    pub energy: Vec<crate::compare::energy::RepeatEnergy>,
}

pub use crate::report::{BaselineRef, Judgement};

/// A budgeted night's confirm step for one case, sized from its stored noise
/// (`compare::budget::confirm_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfirmSized {
    /// The fresh processes it asks of this case.
    pub processes: usize,
    /// The most it asks of any case (`PlanPolicy::max_repeats`).
    pub at_most: usize,
}

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

/// The suite's repeats: the weight one night of a case carries in a reference at most.
fn nominal_repeats(config: Option<&Config>, key: &CaseKey) -> usize {
    config
        .and_then(|c| c.suites.iter().find(|s| s.name == key.suite))
        .map_or(3, |s| s.repeats as usize)
}

/// Judge every case. `suites` limits which baselines count as missing when absent from `cases`;
/// `canary` is the machine canary of the run being judged, if it had one.
pub fn judge(
    store: &Store,
    gpu_sku: &str,
    cases: &[CaseInput],
    suites: &BTreeSet<String>,
    config: Option<&Config>,
    against: &Against<'_>,
    canary: Option<&Canary>,
) -> Result<Vec<Judgement>, Error> {
    let mut out = cases
        .iter()
        .map(|case| judge_case(store, gpu_sku, case, cases.len(), config, against, canary))
        .collect::<Result<Vec<_>, _>>()?;
    let run_keys: Vec<CaseKey> = cases.iter().map(|c| c.key.clone()).collect();
    out.extend(missing(store, gpu_sku, &run_keys, suites, config, against)?);
    Ok(out)
}

/// The whole grid a shard's cases belong to (`run --shard K/N`).
pub struct ShardGrid<'a> {
    /// Every case of the grid, this shard's and the others'.
    pub keys: &'a [CaseKey],
    /// The suites the grid covers (for missing cases).
    pub suites: &'a BTreeSet<String>,
    /// Whether this shard reports the baselines no case of the grid measured (the first does,
    /// so a merged group lists each missing case once).
    pub reports_missing: bool,
}

/// Judge one shard's cases against the pinned baselines: each at the test level of the whole
/// grid (the per-case correction counts every shard's cases), missing cases only from the
/// shard that reports them, and never another shard's cases as missing.
pub fn judge_shard(
    store: &Store,
    gpu_sku: &str,
    cases: &[CaseInput],
    grid: &ShardGrid<'_>,
    config: Option<&Config>,
    canary: Option<&Canary>,
) -> Result<Vec<Judgement>, Error> {
    let against = Against::Pinned;
    let mut out = cases
        .iter()
        .map(|case| {
            judge_case(
                store,
                gpu_sku,
                case,
                grid.keys.len(),
                config,
                &against,
                canary,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    if grid.reports_missing {
        out.extend(missing(
            store,
            gpu_sku,
            grid.keys,
            grid.suites,
            config,
            &against,
        )?);
    }
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
    canary: Option<&Canary>,
) -> Result<Judgement, Error> {
    let history_runs = config.map_or(GateConfig::default().history_runs, |c| c.gate.history_runs);
    let m = cases_in_grid.max(1);
    let mut policy = crate::config::policy_for(config, &case.key);
    if let Some(sized) = case.confirm_sized {
        policy.confirm_repeats = sized.processes;
        policy.confirm_sized_at_most = Some(sized.at_most);
    }
    let lineage = match against {
        Against::Pinned => pinned_and_since(store, &case.key, gpu_sku, None, config)?,
        Against::PinnedAsOf(t) => pinned_and_since(store, &case.key, gpu_sku, Some(*t), config)?,
        Against::Run(run) => Lineage {
            baseline: run.results.iter().find(|r| r.key == case.key).cloned(),
            ..Lineage::default()
        },
    };
    let Lineage {
        baseline,
        since,
        founding,
    } = lineage;
    let fail_on_slide = config.is_none_or(|c| c.gate.fail_on_slide);
    let decision = if let Some(message) = &case.error {
        compare::error_decision(message)
    } else {
        let nominal = nominal_repeats(config, &case.key);
        let first = case.first_repeats.unwrap_or(nominal);
        let current = Evidence {
            repeats_ms: compare::confirm_evidence(&case.repeats_ms, first),
            floor_ms: case.floor_ms.unwrap_or(f64::NAN),
        };
        let canaries = run_canaries(
            store,
            baseline.iter().chain(since.iter()).chain(founding.iter()),
        )?;
        let since_nights: Vec<Night<'_>> = since
            .iter()
            .filter_map(|r| night(r, &canaries, nominal))
            .collect();
        let reference: Option<Reference<'_>> = baseline
            .as_ref()
            .and_then(|r| night(r, &canaries, nominal))
            .map(|pinned| compare::reference(pinned, &since_nights, history_runs));
        let guard = gpu_guard(case, baseline.as_ref());
        let nightly = compare::decide_against(
            reference.as_ref(),
            &current,
            canary,
            &policy,
            m,
            guard.as_deref(),
        );
        // The same evidence against where the lineage began: each passing night promotes, so
        // the nightly reference walks with a slow slide and never sees it add up.
        let slid = founding.split_first().and_then(|(start, first_nights)| {
            let pinned = night(start, &canaries, nominal)?;
            let nights: Vec<Night<'_>> = first_nights
                .iter()
                .filter_map(|r| night(r, &canaries, nominal))
                .collect();
            let from = compare::reference(pinned, &nights, history_runs);
            // Its own share of the grid's false-alarm level: a second test of every case.
            let d = compare::decide_against(
                Some(&from),
                &current,
                canary,
                &policy,
                2 * m,
                guard.as_deref(),
            );
            (d.verdict == Verdict::Regressed).then_some((start, d))
        });
        match slid {
            Some((start, d))
                if !matches!(nightly.verdict, Verdict::Regressed | Verdict::Invalid) =>
            {
                slide_decision(nightly, d, start, policy.max_drop_pct, fail_on_slide)
            }
            _ => nightly,
        }
    };
    let env_changes = baseline
        .as_ref()
        .map(|b| compare::env_diff(&b.env, &case.env))
        .unwrap_or_default();
    let mut decision = compare::with_env_causes(decision, &env_changes);
    if case.error.is_none() {
        judge_beside_speed(
            store,
            config,
            case,
            baseline.as_ref(),
            &policy,
            m,
            &mut decision,
        )?;
    }
    Ok(Judgement {
        key: case.key.clone(),
        decision,
        baseline: baseline.as_ref().map(baseline_ref),
        env_changes,
        threshold_pct: policy.max_drop_pct,
    })
}

/// What a measured case is judged on beside its step time: its answers, its drafts' acceptance
/// and its energy, each folded into `decision`.
fn judge_beside_speed(
    store: &Store,
    config: Option<&Config>,
    case: &CaseInput,
    baseline: Option<&StoredResult>,
    policy: &compare::Policy,
    m: usize,
    decision: &mut Decision,
) -> Result<(), Error> {
    if !case.quality.is_empty() {
        judge_quality(store, config, case, baseline, m, decision)?;
    }
    if let Some(spec) = case.key.speculation() {
        judge_speculation(store, config, case, &spec, baseline, m, decision)?;
    }
    if !case.energy.is_empty() {
        judge_energy(store, case, baseline, policy, m, decision)?;
    }
    Ok(())
}

/// The accuracy guard: `case`'s quality metrics against the baseline's (`Store::result_quality`),
/// each at its share of the grid's (`m` cases) one-sided false-alarm level, folded into its
/// decision (`compare::quality::apply_quality`).
fn judge_quality(
    store: &Store,
    config: Option<&Config>,
    case: &CaseInput,
    baseline: Option<&StoredResult>,
    m: usize,
    decision: &mut Decision,
) -> Result<(), Error> {
    let then = match baseline {
        Some(b) => store.result_quality(b.id)?,
        None => compare::quality::QualityCounts::new(),
    };
    let default_gate;
    let gate = if let Some(c) = config {
        &c.gate
    } else {
        default_gate = GateConfig::default();
        &default_gate
    };
    let policy = compare::quality::QualityPolicy {
        threshold_pts: gate.quality_max_drop_pts,
        // Each metric its own share of the grid's one-sided false-alarm level.
        alpha: gate.family_alpha / (m * case.quality.len()) as f64,
    };
    let checks = compare::quality::judge_quality(&then, &case.quality, &policy);
    compare::quality::apply_quality(decision, checks);
    Ok(())
}

/// Speculative decoding's acceptance: `case`'s drafted and accepted tokens against the
/// baseline's (`Store::result_speculation`) at its share of the grid's false-alarm level,
/// folded into its decision; a case whose harness reported none, or more drafts than its
/// rounds allow, is `invalid` (`compare::speculation`).
fn judge_speculation(
    store: &Store,
    config: Option<&Config>,
    case: &CaseInput,
    spec: &crate::case::Speculation,
    baseline: Option<&StoredResult>,
    m: usize,
    decision: &mut Decision,
) -> Result<(), Error> {
    let steps: usize = case.repeats_ms.iter().map(Vec::len).sum();
    let counts = match compare::speculation::check_counts(
        case.speculative,
        spec.k,
        case.key.batch,
        steps as u64,
    ) {
        Ok(counts) => counts,
        Err(why) => {
            compare::speculation::refuse(decision, why);
            return Ok(());
        }
    };
    let then = match baseline {
        Some(b) => store.result_speculation(b.id)?,
        None => None,
    };
    let gate = config.map(|c| &c.gate);
    let default_gate = GateConfig::default();
    let gate = gate.unwrap_or(&default_gate);
    let policy = compare::quality::QualityPolicy {
        threshold_pts: gate.acceptance_max_drop_pts,
        alpha: gate.family_alpha / m as f64,
    };
    let check = compare::speculation::judge_acceptance(then, counts, spec.k, &policy);
    compare::speculation::apply_acceptance(decision, check);
    Ok(())
}

/// Energy per token: `case`'s repeats against the baseline's (`Store::result_energy`), at the
/// per-case level of the grid's `m` cases times the gated statistics, kept in its decision and
/// folded into its verdict when `gate_on` lists `joules_per_token`
/// (`compare::energy::apply_energy`). A case without a figure is judged on its steps alone.
fn judge_energy(
    store: &Store,
    case: &CaseInput,
    baseline: Option<&StoredResult>,
    policy: &compare::Policy,
    m: usize,
    decision: &mut Decision,
) -> Result<(), Error> {
    let then = match baseline {
        Some(b) => store.result_energy(b.id)?,
        None => Vec::new(),
    };
    let gated = policy.gates_energy();
    let tests = m * (policy.stats().len() + usize::from(gated));
    let tokens = compare::energy::tokens_per_step(&case.key);
    if let Some(check) =
        compare::energy::judge_energy(&then, &case.energy, tokens, policy, tests, gated)
    {
        compare::energy::apply_energy(decision, check);
    }
    Ok(())
}

/// A stored result as a candidate for a reference (`None` without a floor).
fn night<'a>(
    r: &'a StoredResult,
    canaries: &'a BTreeMap<i64, Canary>,
    nominal_repeats: usize,
) -> Option<Night<'a>> {
    Some(Night {
        evidence: Evidence {
            repeats_ms: &r.repeats_ms,
            floor_ms: r.floor_ms?,
        },
        eligible: stored_eligible(r),
        nominal_repeats,
        canary: canaries.get(&r.run_id.0),
    })
}

/// Whether a stored result may pool into a reference: by its stored decision when it has one,
/// else (a result stored before decisions said so) by its verdict.
fn stored_eligible(r: &StoredResult) -> bool {
    if r.error.is_some() {
        return false;
    }
    r.decision_json
        .as_ref()
        .and_then(|j| serde_json::from_value::<compare::Decision>(j.clone()).ok())
        .map_or_else(
            || {
                matches!(
                    r.verdict,
                    Some(crate::case::Verdict::Pass | crate::case::Verdict::Improved)
                )
            },
            |d| compare::eligible(&d),
        )
}

/// The stored canaries of the runs these results came from, by run id.
fn run_canaries<'a>(
    store: &Store,
    results: impl Iterator<Item = &'a StoredResult>,
) -> Result<BTreeMap<i64, Canary>, Error> {
    let mut out = BTreeMap::new();
    for r in results {
        if out.contains_key(&r.run_id.0) {
            continue;
        }
        if let Some(c) = store
            .run_canary(r.run_id)?
            .and_then(|j| serde_json::from_value::<Canary>(j).ok())
        {
            out.insert(r.run_id.0, c);
        }
    }
    Ok(out)
}

/// The verdict of a case whose nightly reference found no regression but whose lineage's
/// first nights show one (`slid`, against them): `regressed` with the slide's figures, or
/// (`fail_on_slide = false`) the nightly verdict with the slide as its first reason.
fn slide_decision(
    nightly: Decision,
    slid: Decision,
    start: &StoredResult,
    threshold_pct: f64,
    fail_on_slide: bool,
) -> Decision {
    let pct = |u: Option<f64>| u.map_or_else(|| "?".to_owned(), |u| format!("{:.1}%", 100.0 * u));
    let sentence = format!(
        "Slid {:.1}% since this case's lineage began (run {}, {}{}): utilisation {} then, {} now, \
         beyond the {threshold_pct}% threshold in total while each night stayed within the noise \
         of the nights before it. `utilgate baseline accept` takes the new level.",
        slid.drop_pct.unwrap_or(0.0) + 0.0,
        start.run_id.0,
        start.started_at.strftime("%Y-%m-%d"),
        start
            .git_sha
            .as_deref()
            .map_or_else(String::new, |s| format!(
                " @ {}",
                crate::report::format::short_sha(s)
            )),
        pct(slid.util_then),
        pct(slid.util_now),
    );
    let lineage = compare::LineageStart {
        run_id: start.run_id.0,
        started_at: start.started_at.to_string(),
        git_sha: start.git_sha.clone(),
    };
    if fail_on_slide {
        let mut d = slid;
        d.reasons.insert(0, sentence);
        d.slide = Some(lineage);
        d
    } else {
        let mut d = nightly;
        d.reasons.insert(
            0,
            format!("{sentence} (a warning: `fail_on_slide = false`)"),
        );
        d
    }
}

/// Whether two results were measured against the same floor (within 0.1%): only those pool.
fn same_floor(a: &StoredResult, b: &StoredResult) -> bool {
    match (a.floor_ms, b.floor_ms) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-3 * y.abs(),
        _ => false,
    }
}

/// What a case is judged against: its pinned baseline, the nights since to pool with it, and
/// the nights its lineage began with.
#[derive(Debug, Default)]
struct Lineage {
    baseline: Option<StoredResult>,
    /// Results on the baseline branch since the lineage began, newest first, without the
    /// baseline itself, with its floor.
    since: Vec<StoredResult>,
    /// The result the lineage began with, then the nights after it on the baseline branch,
    /// oldest first: the level a slide is measured from. Empty while those nights are still
    /// in the nightly reference (a young lineage has no slide to find).
    founding: Vec<StoredResult>,
}

/// A case's pinned baseline (as of `as_of`, or now) and the candidates to pool with it: the
/// case's results on the baseline branch since its lineage began (the last accept or import,
/// else the first baseline), newest first, without the baseline itself, with its floor, at
/// most a few times `history_runs` of them (`compare::reference` picks the eligible ones).
fn pinned_and_since(
    store: &Store,
    key: &CaseKey,
    gpu_sku: &str,
    as_of: Option<jiff::Timestamp>,
    config: Option<&Config>,
) -> Result<Lineage, Error> {
    let gate = config.map_or_else(GateConfig::default, |c| c.gate.clone());
    let Some(baseline) = pinned(store, key, gpu_sku, as_of)? else {
        return Ok(Lineage::default());
    };
    // Where the lineage began (its last accept or import, else its first baseline): nothing
    // measured before it is pooled.
    let start_id = store
        .lineage_start(key, gpu_sku, as_of)?
        .map_or(baseline.id, |e| e.result_id);
    let start_result = store.results_by_id(&[start_id])?.into_iter().next();
    let start = start_result.as_ref().map_or(baseline.started_at, |r| {
        r.started_at.min(baseline.started_at)
    });
    // The window is bounded in SQL by the baseline branch: results of other branches (pull
    // requests) never crowd the baseline branch's nights out of it.
    let window = BranchWindow {
        branch: &gate.baseline_branch,
        from: start,
        before: as_of,
    };
    let since: Vec<StoredResult> = store
        .branch_history(
            key,
            gpu_sku,
            &window,
            Take::Newest(gate.history_runs.saturating_mul(4).max(8) + 8),
        )?
        .into_iter()
        .filter(|r| r.id != baseline.id && same_floor(r, &baseline))
        .collect();
    let founding = founding_nights(
        store,
        key,
        gpu_sku,
        &window,
        start_result,
        &baseline,
        &since,
        gate.history_runs,
    )?;
    Ok(Lineage {
        baseline: Some(baseline),
        since,
        founding,
    })
}

/// The nights a lineage began with: its start result and the next `history_runs` results on
/// the baseline branch with the same floor, oldest first. Empty when any of them is still
/// pooled by the nightly reference (the baseline or one of the newest `history_runs` since),
/// where the two references would overlap.
#[expect(
    clippy::too_many_arguments,
    reason = "the lineage's parts as pinned_and_since read them"
)]
fn founding_nights(
    store: &Store,
    key: &CaseKey,
    gpu_sku: &str,
    window: &BranchWindow<'_>,
    start: Option<StoredResult>,
    baseline: &StoredResult,
    since: &[StoredResult],
    history_runs: usize,
) -> Result<Vec<StoredResult>, Error> {
    let Some(start) = start else {
        return Ok(Vec::new());
    };
    let mut out = vec![start.clone()];
    out.extend(
        store
            .branch_history(key, gpu_sku, window, Take::Oldest(history_runs + 1))?
            .into_iter()
            .filter(|r| r.id != start.id && same_floor(r, &start))
            .take(history_runs),
    );
    let recent: Vec<i64> = std::iter::once(baseline.id)
        .chain(since.iter().take(history_runs).map(|r| r.id))
        .collect();
    if out.iter().any(|r| recent.contains(&r.id)) || !same_floor(baseline, &start) {
        return Ok(Vec::new());
    }
    Ok(out)
}

/// Judgements for the cases with a baseline that this run did not measure.
fn missing(
    store: &Store,
    gpu_sku: &str,
    run_keys: &[CaseKey],
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
    for key in compare::missing_keys(&baseline_keys, run_keys) {
        let baseline = match against {
            Against::Pinned => store.baseline_for(&key, gpu_sku)?,
            Against::PinnedAsOf(t) => pinned(store, &key, gpu_sku, Some(*t))?,
            Against::Run(run) => run.results.iter().find(|r| r.key == key).cloned(),
        };
        if baseline.is_none() {
            continue;
        }
        out.push(Judgement {
            threshold_pct: crate::config::policy_for(config, &key).max_drop_pct,
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
        started_at: Some(b.started_at.to_string()),
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
    pinned(store, key, gpu_sku, Some(t))
}

/// A case's baseline as of `as_of` (the result its newest move before then points at), or now.
/// Reads one move and one result, however long the case's history.
fn pinned(
    store: &Store,
    key: &CaseKey,
    gpu_sku: &str,
    as_of: Option<jiff::Timestamp>,
) -> Result<Option<StoredResult>, Error> {
    let Some(current) = store.baseline_move(key, gpu_sku, as_of)? else {
        return Ok(None);
    };
    Ok(store.results_by_id(&[current.result_id])?.pop())
}
