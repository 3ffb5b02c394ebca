//! The time budget of a nightly: from each case's stored history (step time, noise, warm-up and
//! process start cost), plan steps and repeats so the grid fits the budget and each case gets
//! the evidence it needs to resolve the gate's threshold; and, while the run goes, decide when a
//! case's evidence is decisive. Pure: costs, noise and the clock's readings arrive as arguments.
//!
//! # The model
//! - **Cost** of one repeat (a fresh process): `start_s + warmup_steps × warmup_step_s + steps ×
//!   step_s`, each figure the median over the case's stored repeats (`start_s` is the process's
//!   wall time less the time of its steps: interpreter, model load, allocation).
//! - **Noise** of one repeat's level (log scale, as [`super::decide`] works): `σ_b² + (π/2)·σ_w²
//!   / steps`, the between-process variance `σ_b²` pooled over the stored results (each result
//!   gives its repeats − 1 degrees of freedom) and the within-process step jitter `σ_w` (1.4826
//!   MAD) that the median of `steps` steps reduces.
//! - **Resolved** means: a true drop of `detect_drop_pct` would be found with probability
//!   `power` at the grid-corrected level `family_alpha / cases`, and an unchanged case's drop
//!   estimate would stay under `max_drop_pct` with the same probability. With `z_a` and `z_p` the
//!   normal quantiles, the standard error of the difference must be at most
//!   `min((D − T)/z_p, D/(z_a + z_p), T/z_p)`; it is `sqrt(v/r + v_ref)` with `r` repeats now and
//!   `v_ref` the variance of the reference level (its repeats pooled). So `r = ceil(v / (SE² −
//!   v_ref))`: a case whose reference alone is too noisy is unresolvable at any budget.
//! - **Fitting**: every case gets `min_repeats`; the rest of the budget (less a reserve for
//!   suspects, which the confirm step draws from) goes to the cases in order of what it costs
//!   to resolve them, cheapest first, so as many cases as possible are resolved. The others are
//!   named in the plan with the budget that would resolve them.
//! - **Sequential**: after each repeat beyond the minimum, a case whose interval already lies
//!   under the threshold, or whose estimate is clearly under it ([`futile`]), stops as a pass;
//!   one whose drop estimate is beyond it stops as a suspect for the confirm step. The time
//!   saved stays in the pool for suspects.
//! - **Confirm**: each suspect asks for the fresh processes that resolve it at a high power
//!   ([`confirm_size`], from its own noise: few for a quiet case, up to `max_repeats` for a
//!   noisy one) and stops early once they are clearly passing ([`futile`]); suspects go in
//!   the order of the detections their confirm step is expected to buy per second
//!   ([`confirm_order`]), so the budget left after the grid goes first to a likely drop that
//!   the confirm step can settle.

use std::time::Duration;

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

/// A case's costs, measured by earlier runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CaseCost {
    /// Process start and teardown: wall time not spent in steps, seconds.
    pub start_s: f64,
    /// A counted step, seconds.
    pub step_s: f64,
    /// A warm-up step, seconds.
    pub warmup_step_s: f64,
}

/// What the store knows about a case's noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CaseNoise {
    /// Between-process standard deviation of a repeat's log level, as a fraction.
    pub between: f64,
    /// Within-process step jitter (robust standard deviation of a step, relative), a fraction.
    pub jitter: f64,
    /// Repeats in the reference the case will be compared with (baseline plus pooled history).
    pub reference_repeats: usize,
}

/// One case as the planner sees it: its configured sampling and, when it has history, costs
/// and noise.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseInput {
    pub name: String,
    pub steps: u64,
    pub warmup_steps: u64,
    pub repeats: u32,
    pub cost: Option<CaseCost>,
    pub noise: Option<CaseNoise>,
    /// The case's own threshold (percent) where it is not the policy's: a suite's or case's
    /// `max_drop_pct`. Its plan, early stops and confirm step are sized against it.
    pub max_drop_pct: Option<f64>,
}

/// The planner's settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanPolicy {
    pub budget_s: f64,
    pub max_drop_pct: f64,
    /// The drop a resolved case must be able to find.
    pub detect_drop_pct: f64,
    pub family_alpha: f64,
    pub power: f64,
    /// Repeats every case gets (two, so the noise of the night itself is seen).
    pub min_repeats: u32,
    /// Repeats no case gets more of.
    pub max_repeats: u32,
    /// Share of the budget kept for suspects (the confirm step draws from it).
    pub reserve_fraction: f64,
    /// The floor of the per-process noise, as [`super::Policy::min_noise_pct`] (percent).
    pub min_noise_pct: f64,
    /// How much longer than its estimate (a median) a repeat is allowed to take when checking
    /// whether it still fits in the budget (a fraction): process starts vary from night to
    /// night, and a repeat that fits only at its median time overruns half the time.
    pub cost_margin: f64,
    /// The power at which the confirm step sizes a suspect's fresh processes
    /// ([`confirm_size`]), in the module's noise model. Far above the plan's `power`: the
    /// confirm step's verdict is final, and the model is optimistic against the verdict itself
    /// (which tests two statistics at half the level each, with Student's t, a Huber level and
    /// a term for nights differing), so on the nightly bench 0.95 missed 7% of the drops on
    /// cases of 1-2.5% noise (most left inconclusive at 2-2.5%) and 0.999 finds them as 12
    /// fixed processes do.
    pub confirm_power: f64,
    /// Fewest fresh processes the confirm step asks of a suspect with known noise (a few
    /// processes give a poor estimate of the night's own noise).
    pub min_confirm: u32,
    /// A case stops early as clearly passing once its drop estimate plus this many standard
    /// errors lies under the threshold ([`futile`]): in the first pass and in the confirm step.
    /// Lower stops unchanged suspects sooner and leaves more of the budget to the others, at a
    /// small risk of stopping a true drop (see [`futile`]); the bench found 1.5 best of 1.25
    /// to 2.
    pub futility_z: f64,
}

impl PlanPolicy {
    /// The planner's defaults for a budget and the gate's threshold and false-alarm level.
    #[must_use]
    pub fn new(budget_s: f64, max_drop_pct: f64, family_alpha: f64) -> Self {
        PlanPolicy {
            budget_s,
            max_drop_pct,
            detect_drop_pct: detect_drop_pct(max_drop_pct),
            family_alpha,
            power: 0.8,
            min_repeats: 2,
            max_repeats: 30,
            reserve_fraction: 0.15,
            min_noise_pct: 0.25,
            cost_margin: 0.25,
            confirm_power: 0.999,
            min_confirm: 6,
            futility_z: 1.5,
        }
    }

    /// This policy for a case whose own threshold is `max_drop_pct` (a suite's or case's;
    /// `None` keeps this one's): the drop a resolved case must find moves with it.
    #[must_use]
    pub fn for_threshold(&self, max_drop_pct: Option<f64>) -> PlanPolicy {
        match max_drop_pct {
            Some(t) if (t - self.max_drop_pct).abs() > f64::EPSILON => PlanPolicy {
                max_drop_pct: t,
                detect_drop_pct: detect_drop_pct(t),
                ..*self
            },
            _ => *self,
        }
    }
}

/// The drop a resolved case must be able to find at a threshold: five thirds of it, at least
/// one point beyond it.
fn detect_drop_pct(max_drop_pct: f64) -> f64 {
    (max_drop_pct * 5.0 / 3.0).max(max_drop_pct + 1.0)
}

/// Why a case is planned as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanNote {
    /// Enough repeats to resolve the threshold.
    Resolved,
    /// No stored history: the configured steps and repeats; its costs are recorded tonight.
    NoHistory,
    /// The budget does not reach the repeats it needs.
    OverBudget,
    /// Too noisy to resolve tonight: it would need more than `max_repeats`, or its reference
    /// (baseline and history) is itself too noisy for any number of repeats.
    TooNoisy,
}

impl PlanNote {
    pub const ALL: [PlanNote; 4] = [
        PlanNote::Resolved,
        PlanNote::NoHistory,
        PlanNote::OverBudget,
        PlanNote::TooNoisy,
    ];

    /// Its name as stored (`result_budgets.note`) and serialised.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PlanNote::Resolved => "resolved",
            PlanNote::NoHistory => "no_history",
            PlanNote::OverBudget => "over_budget",
            PlanNote::TooNoisy => "too_noisy",
        }
    }
}

/// One case's plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CasePlan {
    pub name: String,
    pub steps: u64,
    pub warmup_steps: u64,
    /// Repeats planned (at least `min_repeats`; sequential sampling may stop sooner at
    /// `min_repeats`).
    pub repeats: u32,
    /// Repeats needed to resolve the threshold (`None`: unknown or unreachable).
    pub needed_repeats: Option<u32>,
    /// Estimated seconds for the planned repeats (`None` without history).
    pub estimate_s: Option<f64>,
    /// Estimated seconds to resolve the case.
    pub needed_s: Option<f64>,
    pub note: PlanNote,
}

/// The whole plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub budget_s: f64,
    /// Estimated time of the planned repeats over cases with history.
    pub planned_s: f64,
    /// Kept for suspects and the confirm step.
    pub reserve_s: f64,
    pub cases: Vec<CasePlan>,
    /// The budget that would resolve every resolvable case (`None` when all are resolved).
    pub budget_to_resolve_all_s: Option<f64>,
}

impl Plan {
    /// Cases the budget leaves unresolved (over budget or with a too-noisy reference).
    pub fn unresolved(&self) -> impl Iterator<Item = &CasePlan> {
        self.cases
            .iter()
            .filter(|c| matches!(c.note, PlanNote::OverBudget | PlanNote::TooNoisy))
    }
}

/// Seconds for `repeats` processes of a case.
#[must_use]
pub fn repeat_cost_s(cost: &CaseCost, steps: u64, warmup_steps: u64) -> f64 {
    cost.start_s + warmup_steps as f64 * cost.warmup_step_s + steps as f64 * cost.step_s
}

fn z(p: f64) -> f64 {
    Normal::standard().inverse_cdf(p)
}

/// The largest standard error of the drop estimate (a fraction) that resolves the threshold
/// with probability `power`.
fn target_se(policy: &PlanPolicy, cases: usize, power: f64) -> f64 {
    let (za, zp) = (z_case(policy, cases), z(power));
    let (d, t) = (policy.detect_drop_pct / 100.0, policy.max_drop_pct / 100.0);
    ((d - t) / zp).min(d / (za + zp)).min(t / zp)
}

/// The one-sided normal quantile of the grid-corrected level `family_alpha / cases`.
fn z_case(policy: &PlanPolicy, cases: usize) -> f64 {
    z(1.0 - policy.family_alpha / cases.max(1) as f64)
}

/// The variance of one repeat's log level at `steps` steps (the module's noise model).
fn repeat_var(noise: &CaseNoise, steps: u64, policy: &PlanPolicy) -> f64 {
    let floor = policy.min_noise_pct / 100.0;
    (noise.between.powi(2)
        + std::f64::consts::FRAC_PI_2 * noise.jitter.powi(2) / steps.max(1) as f64)
        .max(floor * floor)
}

/// The standard error of the drop estimate (log scale) from `repeats` processes tonight
/// against the case's reference.
fn drop_se(noise: &CaseNoise, steps: u64, repeats: u32, policy: &PlanPolicy) -> f64 {
    let v = repeat_var(noise, steps, policy);
    (v / f64::from(repeats.max(1)) + v / noise.reference_repeats.max(1) as f64).sqrt()
}

/// A drop in percent of utilisation as a difference of log levels (`drop = 1 − e^−d`);
/// `None` for a drop of 100% or more.
fn log_drop(drop_pct: f64) -> Option<f64> {
    (drop_pct < 100.0).then(|| -(1.0 - drop_pct / 100.0).ln())
}

/// Repeats that resolve a case at `steps` steps, or `None` when none do.
fn needed_repeats(noise: &CaseNoise, steps: u64, se: f64, policy: &PlanPolicy) -> Option<u32> {
    let v = repeat_var(noise, steps, policy);
    let v_ref = v / noise.reference_repeats.max(1) as f64;
    let room = se * se - v_ref;
    if room <= 0.0 {
        return None;
    }
    let r = (v / room).ceil();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "r is a positive count, capped below"
    )]
    let r = r.min(f64::from(u32::MAX)) as u32;
    Some(r.max(policy.min_repeats))
}

/// The cheapest (steps, repeats, seconds) that resolves a case: steps from a quarter to twice
/// the configured count (at least 20), since few steps suffice where process noise dominates.
fn cheapest(
    case: &CaseInput,
    cost: &CaseCost,
    noise: &CaseNoise,
    se: f64,
    policy: &PlanPolicy,
) -> Option<(u64, u32, f64)> {
    let s = case.steps.max(1);
    let mut options: Vec<u64> = [s / 4, s / 2, s, 2 * s]
        .into_iter()
        .map(|x| x.max(20.min(s)))
        .collect();
    options.dedup();
    options
        .into_iter()
        .filter_map(|steps| {
            let r = needed_repeats(noise, steps, se, policy)?;
            (r <= policy.max_repeats).then(|| {
                (
                    steps,
                    r,
                    f64::from(r) * repeat_cost_s(cost, steps, case.warmup_steps),
                )
            })
        })
        .min_by(|a, b| a.2.total_cmp(&b.2))
}

/// Plan the night: see the module documentation.
#[must_use]
pub fn plan(cases: &[CaseInput], policy: &PlanPolicy) -> Plan {
    let reserve_s = policy.budget_s * policy.reserve_fraction;
    let mut out: Vec<CasePlan> = Vec::with_capacity(cases.len());
    let mut spent = 0.0;
    // First pass: the minimum for everyone, the configured sampling without history.
    let mut wants: Vec<(usize, u64, u32, f64)> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let Some(cost) = case.cost else {
            out.push(CasePlan {
                name: case.name.clone(),
                steps: case.steps,
                warmup_steps: case.warmup_steps,
                repeats: case.repeats,
                needed_repeats: None,
                estimate_s: None,
                needed_s: None,
                note: PlanNote::NoHistory,
            });
            continue;
        };
        let min_r = policy.min_repeats;
        // Against its own threshold, at the grid's level.
        let own = policy.for_threshold(case.max_drop_pct);
        let se = target_se(&own, cases.len(), own.power);
        let resolve = case.noise.and_then(|n| cheapest(case, &cost, &n, se, &own));
        let (steps, note) = match resolve {
            Some((steps, _, _)) => (steps, PlanNote::OverBudget),
            None if case.noise.is_some() => (case.steps, PlanNote::TooNoisy),
            // Costs but no usable noise yet: the configured sampling counts as enough.
            None => (case.steps, PlanNote::Resolved),
        };
        let repeats = if case.noise.is_none() {
            case.repeats.max(min_r)
        } else {
            min_r
        };
        let estimate = f64::from(repeats) * repeat_cost_s(&cost, steps, case.warmup_steps);
        spent += estimate;
        if let Some((steps, r, s)) = resolve {
            wants.push((i, steps, r, s));
        }
        out.push(CasePlan {
            name: case.name.clone(),
            steps,
            warmup_steps: case.warmup_steps,
            repeats,
            needed_repeats: resolve.map(|r| r.1),
            estimate_s: Some(estimate),
            needed_s: resolve.map(|r| r.2),
            note,
        });
    }
    // Second pass: the rest of the budget to the cheapest cases to resolve.
    let available = policy.budget_s - reserve_s;
    wants.sort_by(|a, b| (a.3 - est(&out, a.0)).total_cmp(&(b.3 - est(&out, b.0))));
    for (i, steps, r, s) in wants {
        let extra = s - est(&out, i);
        if spent + extra <= available {
            spent += extra;
            let p = &mut out[i];
            p.steps = steps;
            p.repeats = r;
            p.estimate_s = Some(s);
            p.note = PlanNote::Resolved;
        }
    }
    let needed_all: f64 = out
        .iter()
        .map(|p| match p.note {
            PlanNote::TooNoisy => p.estimate_s.unwrap_or(0.0),
            _ => p.needed_s.or(p.estimate_s).unwrap_or(0.0),
        })
        .sum();
    let any_over = out.iter().any(|p| p.note == PlanNote::OverBudget);
    Plan {
        budget_s: policy.budget_s,
        planned_s: spent,
        reserve_s,
        cases: out,
        budget_to_resolve_all_s: any_over.then(|| needed_all / (1.0 - policy.reserve_fraction)),
    }
}

fn est(out: &[CasePlan], i: usize) -> f64 {
    out[i].estimate_s.unwrap_or(0.0)
}

/// Whether a case has seen enough after `repeats` processes: its drop interval (percent, from
/// [`super::Decision::interval_pct`]) lies wholly under the threshold (a decisive pass), or its
/// estimate is beyond it (a suspect: the confirm step takes over).
#[must_use]
pub fn decisive(
    repeats: u32,
    interval_pct: Option<(f64, f64)>,
    drop_pct: Option<f64>,
    policy: &PlanPolicy,
) -> bool {
    if repeats < policy.min_repeats {
        return false;
    }
    let under = interval_pct.is_some_and(|(_, hi)| hi < policy.max_drop_pct);
    let beyond = drop_pct.is_some_and(|d| d > policy.max_drop_pct);
    under || beyond
}

/// Whether the run is past its budget and grace: it then stops measuring and judges what it has.
#[must_use]
pub fn over_budget(elapsed_s: f64, budget_s: f64, grace_s: f64) -> bool {
    elapsed_s > budget_s + grace_s
}

/// Where a case stands when the run considers starting one more repeat of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextRepeat {
    /// Repeats of this case done so far tonight.
    pub done: u32,
    /// Its planned repeats.
    pub planned: u32,
    /// Confirm repeats a suspect may add beyond the plan.
    pub confirm: u32,
    /// The evidence so far is decisive ([`decisive`]).
    pub decisive: bool,
    /// The evidence so far makes it a suspect (a drop beyond the threshold, or a low p-value).
    pub suspect: bool,
    /// Estimated seconds of one more repeat (`None` without history).
    pub repeat_s: Option<f64>,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Estimated seconds of the minimum repeats of the cases not started yet.
    pub remaining_min_s: f64,
}

/// Whether to start one more repeat: the minimum always (until the budget and grace are
/// spent); beyond it, never for a decisive pass, up to the plan for an undecided case, and up
/// to the confirm repeats for a suspect, each only while the budget still holds the rest of the
/// grid's minimum.
#[must_use]
pub fn may_start(next: &NextRepeat, policy: &PlanPolicy, grace_s: f64) -> bool {
    if over_budget(next.elapsed_s, policy.budget_s, grace_s) {
        return false;
    }
    if next.done < policy.min_repeats {
        return true;
    }
    let fits = next.elapsed_s
        + next.repeat_s.unwrap_or(0.0) * (1.0 + policy.cost_margin.max(0.0))
        + next.remaining_min_s
        <= policy.budget_s;
    if next.suspect {
        return fits && next.done < next.planned.max(policy.min_repeats) + next.confirm;
    }
    !next.decisive && fits && next.done < next.planned
}

/// Whether a case is clearly passing after `repeats` processes (tonight's, or a confirm step's
/// fresh ones): its drop estimate plus `futility_z` standard errors of the module's noise
/// model lies under the threshold, so more processes would very likely not make it a
/// regression. [`decisive`]'s interval is at the grid-corrected level (about 3.6 standard
/// errors on a 30-case grid), which a few processes of a noisy case never reach; this bound
/// is looser but only ever ends sampling of a case whose estimate is under the threshold, so
/// it can turn a regression into a pass only for a true drop whose estimate fell well short
/// of it (a drop of 5% against 3%, two processes of 3% noise and `futility_z` 1.5: a chance
/// of 0.7%), and it never raises a false alarm (a verdict of `regressed` needs the estimate
/// beyond the threshold). Never before `min_repeats`, nor without the case's noise.
#[must_use]
pub fn futile(
    repeats: u32,
    drop_pct: Option<f64>,
    noise: Option<&CaseNoise>,
    steps: u64,
    policy: &PlanPolicy,
) -> bool {
    let (Some(d), Some(n)) = (drop_pct.and_then(log_drop), noise) else {
        return false;
    };
    let Some(t) = log_drop(policy.max_drop_pct) else {
        return false;
    };
    repeats >= policy.min_repeats && d + policy.futility_z * drop_se(n, steps, repeats, policy) < t
}

/// Fresh processes the confirm step asks of a suspect: as many as resolve it at
/// `confirm_power` ([`PlanPolicy::confirm_power`], fresh processes against the case's
/// reference), at least `min_confirm`, at most `max_repeats`; a case whose reference is too
/// noisy for any number gets `max_repeats`, and a case without known noise the configured
/// `confirm_repeats` (0 keeps the confirm step off). A fixed 12 spent 6 processes too many on
/// a case of 1% noise and half what one of 2.5% needs (26). The size never depends on
/// the fresh processes themselves, so judging on them keeps its false-alarm level; the budget
/// may cut it short, and [`futile`] may end it early (which only lowers it).
#[must_use]
pub fn confirm_size(
    noise: Option<&CaseNoise>,
    steps: u64,
    confirm_repeats: u32,
    policy: &PlanPolicy,
    cases: usize,
) -> u32 {
    let Some(n) = noise.filter(|_| confirm_repeats > 0) else {
        return confirm_repeats;
    };
    let se = target_se(policy, cases, policy.confirm_power);
    needed_repeats(n, steps, se, policy).map_or(policy.max_repeats, |r| {
        r.clamp(
            policy.min_confirm,
            policy.max_repeats.max(policy.min_confirm),
        )
    })
}

/// A suspect waiting for the confirm step of a budgeted night.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Suspect {
    /// Its position in the night's plan.
    pub index: usize,
    /// The one-sided p-value of a slowdown its first repeats gave (`None`: unknown).
    pub p_value: Option<f64>,
    /// Its first repeats' drop estimate, percent.
    pub drop_pct: Option<f64>,
    /// How many first repeats it had.
    pub repeats: u32,
    /// Its stored noise (`None`: no history).
    pub noise: Option<CaseNoise>,
    /// Its steps per process.
    pub steps: u64,
    /// Estimated seconds of one of its processes.
    pub repeat_s: Option<f64>,
    /// Fresh processes its confirm step asks for ([`confirm_size`]).
    pub confirm: u32,
    /// Its own threshold where it is not the policy's ([`CaseInput::max_drop_pct`]).
    pub max_drop_pct: Option<f64>,
}

impl Suspect {
    /// Expected detections per second of confirming it: the chance that it is a true drop of
    /// `detect_drop_pct` given its first repeats' estimate (likelihood ratio against no drop,
    /// one case in the grid slower a priori), times the chance its confirm step finds that
    /// drop, over the confirm step's time. `None` without noise, cost or estimate.
    #[must_use]
    pub fn value(&self, policy: &PlanPolicy, cases: usize) -> Option<f64> {
        let policy = &policy.for_threshold(self.max_drop_pct);
        let n = self.noise.as_ref()?;
        let est = self.drop_pct.and_then(log_drop)?;
        let repeat_s = self.repeat_s.filter(|s| *s > 0.0)?;
        let (d, t) = (
            log_drop(policy.detect_drop_pct)?,
            log_drop(policy.max_drop_pct)?,
        );
        let se = drop_se(n, self.steps, self.repeats, policy);
        // ln LR of N(d, se) against N(0, se) at the estimate; posterior with prior 1/cases.
        let log_lr = d * (est - d / 2.0) / (se * se);
        let others = cases.saturating_sub(1).max(1) as f64;
        let posterior = 1.0 / (1.0 + others * (-log_lr).exp());
        let k = self.confirm.max(1);
        let se_k = drop_se(n, self.steps, k, policy);
        let bar = t.max(z_case(policy, cases) * se_k);
        let power = Normal::standard().cdf((d - bar) / se_k);
        Some(posterior * power / (f64::from(k) * repeat_s))
    }
}

/// The order in which a budgeted night confirms its suspects. The confirm step draws on what
/// the grid left of the budget, which rarely covers every suspect; taking them in grid order
/// spent it on whichever came first (usually unchanged cases that merely looked slow at
/// `confirm_alpha`). Suspects with known noise and cost go first, by [`Suspect::value`] (the
/// detections their confirm step is expected to buy per second: a likely drop on a quiet,
/// cheap case first, a case too noisy for its confirm step to settle last); then the others,
/// lowest p-value of a slowdown first.
#[must_use]
pub fn confirm_order(suspects: &[Suspect], policy: &PlanPolicy, cases: usize) -> Vec<usize> {
    let mut order: Vec<(Option<f64>, &Suspect)> = suspects
        .iter()
        .map(|s| (s.value(policy, cases).filter(|v| v.is_finite()), s))
        .collect();
    order.sort_by(|(va, a), (vb, b)| match (va, vb) {
        (Some(x), Some(y)) => y.total_cmp(x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a
            .p_value
            .unwrap_or(1.0)
            .total_cmp(&b.p_value.unwrap_or(1.0)),
    });
    order.into_iter().map(|(_, s)| s.index).collect()
}

/// The time one repeat took, as the run records it with the result (`result_repeat_costs`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct RepeatCost {
    /// Wall time of the harness process, seconds.
    pub wall_s: f64,
    /// Sum of its counted steps, seconds.
    pub steps_s: f64,
    pub steps: u64,
    /// Sum of its warm-up steps, seconds.
    pub warmup_s: f64,
    pub warmup_steps: u64,
}

/// A case's costs from its recorded repeats (medians: one slow start does not move them).
///
/// The steps' times are the harness's own clock (CUDA events, or a figure it computed) and may
/// add up to more than the process's wall time: steps overlapped on the device, or a harness
/// that reports steps it did not spend (a replay, a simulation). Then a repeat's step times are
/// scaled down to its wall time, so the model never plans more time than the repeats took.
#[must_use]
pub fn cost_from_history(repeats: &[RepeatCost]) -> Option<CaseCost> {
    let med = |f: &dyn Fn(&RepeatCost) -> Option<f64>| {
        let xs: Vec<f64> = repeats
            .iter()
            .filter_map(f)
            .filter(|v| v.is_finite())
            .collect();
        crate::stats::median(&xs)
    };
    let step_s = med(&|r| (r.steps > 0).then(|| r.steps_s * r.wall_share() / r.steps as f64))?;
    let warmup_step_s =
        med(&|r| (r.warmup_steps > 0).then(|| r.warmup_s * r.wall_share() / r.warmup_steps as f64))
            .unwrap_or(step_s);
    let start_s = med(&|r| Some((r.wall_s - (r.steps_s + r.warmup_s) * r.wall_share()).max(0.0)))?;
    Some(CaseCost {
        start_s,
        step_s,
        warmup_step_s,
    })
}

impl RepeatCost {
    /// The factor that brings the steps' reported times within the process's wall time: 1 when
    /// they fit in it, else the wall time over their sum.
    fn wall_share(&self) -> f64 {
        let timed = self.steps_s + self.warmup_s;
        if timed > self.wall_s && timed > 0.0 && self.wall_s >= 0.0 {
            self.wall_s / timed
        } else {
            1.0
        }
    }
}

/// A case's noise from its stored results (each a list of repeats of step times, ms): the
/// between-process variance of log repeat medians pooled over results (repeats − 1 degrees of
/// freedom each), the step jitter the mean of the repeats' robust relative spreads.
#[must_use]
pub fn noise_from_history(results: &[&[Vec<f64>]], reference_repeats: usize) -> Option<CaseNoise> {
    let mut ss = 0.0;
    let mut df = 0usize;
    let mut jitters = Vec::new();
    for repeats in results {
        let mut logs = Vec::new();
        for rep in repeats.iter().filter(|r| !r.is_empty()) {
            let Some(m) = crate::stats::median(rep).filter(|m| *m > 0.0) else {
                continue;
            };
            let dev: Vec<f64> = rep.iter().map(|x| (x - m).abs() / m).collect();
            if let Some(mad) = crate::stats::median(&dev) {
                jitters.push(1.4826 * mad);
            }
            logs.push(m.ln());
        }
        if logs.len() > 1 {
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            ss += logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>();
            df += logs.len() - 1;
        }
    }
    if df == 0 {
        return None;
    }
    Some(CaseNoise {
        between: (ss / df as f64).sqrt(),
        jitter: jitters.iter().sum::<f64>() / jitters.len().max(1) as f64,
        reference_repeats,
    })
}

/// Why a case's sampling ended tonight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Its interval lay under the threshold: a decisive pass, stopped early.
    Decisive,
    /// Its drop estimate was beyond the threshold: handed to the confirm step.
    Suspect,
    /// It ran its planned repeats.
    Planned,
    /// The budget (or the budget plus grace) was spent before its sampling finished: it is
    /// judged on what it has and never moves its baseline.
    Budget,
    /// A repeat failed (the case is `error`).
    Error,
    /// The run's budget was spent before it started: it was not measured at all.
    NotStarted,
}

impl Stop {
    pub const ALL: [Stop; 6] = [
        Stop::Decisive,
        Stop::Suspect,
        Stop::Planned,
        Stop::Budget,
        Stop::Error,
        Stop::NotStarted,
    ];

    /// Its name as stored (`result_budgets.stop`) and serialised.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::Decisive => "decisive",
            Stop::Suspect => "suspect",
            Stop::Planned => "planned",
            Stop::Budget => "budget",
            Stop::Error => "error",
            Stop::NotStarted => "not_started",
        }
    }
}

/// What a budgeted night did with one case, stored with the result (`result_budgets`) so
/// reports re-read from the store can say it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CaseRecord {
    pub note: PlanNote,
    pub planned_repeats: u32,
    pub steps: u64,
    /// Repeats before the confirm step (what made it a suspect or a pass).
    pub first_repeats: u32,
    /// Fresh repeats the confirm step ran (may be fewer than asked when the budget ran out).
    pub confirm_repeats: u32,
    /// Wall seconds of its repeats tonight.
    pub time_s: f64,
    pub stop: Stop,
    /// The repeats and seconds that would resolve it (when known).
    pub needed_repeats: Option<u32>,
    pub needed_s: Option<f64>,
}

impl CaseRecord {
    /// Whether its sampling was complete: a result the budget cut short never promotes.
    #[must_use]
    pub fn complete(&self) -> bool {
        !matches!(self.stop, Stop::Budget | Stop::NotStarted)
    }
}

/// The night as a whole, kept with the run (`run_budgets`) so reports can state it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct NightRecord {
    pub budget_s: f64,
    pub grace_s: f64,
    /// The plan's estimate of its repeats over cases with history.
    pub planned_s: f64,
    pub reserve_s: f64,
    /// The budget that would resolve every resolvable case (`None`: all resolved).
    pub budget_to_resolve_all_s: Option<f64>,
    /// Cases the budget was spent before (not measured, not stored).
    pub not_started: Vec<String>,
    /// Seconds from the run's start to the end of measuring.
    pub used_s: f64,
    /// Whether the budget cut any case short or left any unstarted.
    pub stopped: bool,
}

/// Seconds still needed by the plan from now: the planned repeats of the cases not finished,
/// for the progress display's ETA (cases without history count their configured repeats at
/// the mean cost per repeat seen so far, `fallback_repeat_s`).
#[must_use]
pub fn eta_s(
    plans: &[CasePlan],
    done: &[u32],
    fallback_repeat_s: f64,
    costs: &[Option<f64>],
) -> f64 {
    plans
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let left = f64::from(p.repeats.saturating_sub(done.get(i).copied().unwrap_or(0)));
            left * costs.get(i).copied().flatten().unwrap_or(fallback_repeat_s)
        })
        .sum()
}

/// The recorded cost of one repeat, for the result's summary.
#[must_use]
pub(crate) fn repeat_cost(wall: Duration, steps_ms: &[f64], warmup_ms: &[f64]) -> RepeatCost {
    RepeatCost {
        wall_s: wall.as_secs_f64(),
        steps_s: steps_ms.iter().sum::<f64>() / 1e3,
        steps: steps_ms.len() as u64,
        warmup_s: warmup_ms.iter().sum::<f64>() / 1e3,
        warmup_steps: warmup_ms.len() as u64,
    }
}

#[cfg(test)]
mod tests;
