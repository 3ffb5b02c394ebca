//! The per-case verdict: is this run's step time worse than the baseline's, by more than the
//! practical threshold and by more than the measured noise allows? Pure.
//!
//! # The rule (DESIGN.md §7; the long form with its measured power is README "How the gate decides")
//!
//! * **Unit of evidence: the process.** Each repeat is a fresh harness process. Steps inside one
//!   process share its offset (allocation luck, clocks at start, autotuning choices), so the
//!   steps are summarised per repeat by their median (robust to outlier steps) and the repeats
//!   are the independent observations. Treating 300 correlated steps as independent would give
//!   absurd confidence.
//! * **Scale: log step time.** Process offsets are multiplicative, and utilisation is
//!   `floor / step`, so with an unchanged floor the utilisation drop is
//!   `1 - step_then / step_now = 1 - exp(-d)` where `d` is the difference of log levels.
//! * **Level of a run**: the mean (or, by policy, the median) of its repeats' log medians. The
//!   reference level is the baseline's, pooled by default with the history the caller passes:
//!   the recent good results of the same case on the same GPU SKU since the last accepted
//!   change (pass up to 10: the measured power assumes 10). The baseline pointer already moves on every passing run of the baseline branch, so
//!   averaging over a few of those good results makes the reference steadier (the limit of a
//!   3-against-3 comparison is the baseline's own three processes) without letting a regression
//!   roll in: a failed or inconclusive result is never history.
//! * **Noise**: the between-process variance is pooled over every run at hand (now, baseline,
//!   history: each contributes its repeats minus one degrees of freedom), because three repeats
//!   alone give two degrees of freedom and a useless interval at a grid-corrected level. It is
//!   never taken below what the within-process step jitter implies for a repeat's median
//!   (`pi/2 * (1.4826 MAD)^2 / n`, the asymptotic variance of a median) nor below
//!   [`Policy::min_noise_pct`], so zero variance neither disables the gate (the test stays
//!   defined) nor makes it trigger on a rounding error.
//! * **Test**: one-sided Student t on the difference of levels with the pooled degrees of
//!   freedom, at the per-case level `family_alpha / cases_in_grid` (Bonferroni: over a grid of
//!   `m` unchanged cases the chance of any false alarm in a night stays at most `family_alpha`).
//! * **Verdict**: `regressed` needs both levels: the estimated drop exceeds
//!   [`Policy::max_drop_pct`] *and* the test rejects "no slowdown". A drop beyond the threshold
//!   that the noise cannot confirm is `inconclusive`, with the numbers. `improved` is the mirror
//!   image (informational). A GPU-state guard reason makes the case `inconclusive` whatever the
//!   numbers; utilisation above 100% is `invalid` whatever the baseline.
//! * **Confirm**: [`super::should_confirm`] marks a suspect (a drop beyond the threshold, or a
//!   one-sided p below [`Policy::confirm_alpha`]); the caller re-measures it in
//!   [`Policy::confirm_repeats`] fresh processes, appends them to the case's repeats and calls
//!   [`decide`] again. The second call's verdict is final.
//! * **Floor changed** (the model or GPU spec was edited): utilisation then and now are not
//!   comparable, so the decision compares step times (the same log-ratio) and says so.

use std::f64::consts::{FRAC_PI_2, PI};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::canary::CanaryShift;
use super::stat::{GateStat, TailDecision};
use crate::case::Verdict;

/// How a run's level is computed from its repeats' median step times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Estimator {
    /// Geometric mean of the repeat medians: the most efficient under Gaussian process offsets.
    Mean,
    /// Median of the repeat medians: a minority of processes that started slow and stayed slow
    /// (a bimodal start) does not move it, at a cost in power.
    Median,
    /// Huber M-estimate of the repeat medians (k = 1.5 noise standard deviations around the
    /// median): the mean where repeats agree, while a process far off the others (a bimodal
    /// start) counts at most 1.5 standard deviations. The noise is estimated the same robust way
    /// (Huber's Proposal 2), so a slow start neither moves the level nor inflates the noise.
    Huber,
}

/// The knobs of the verdict. `Default` is the documented policy whose power README "How the gate decides"
/// reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Practical threshold: a utilisation drop (percent of the old utilisation) at or below this
    /// never fails, however certain.
    pub max_drop_pct: f64,
    /// Chance of any false alarm in one run over the whole grid when nothing changed.
    pub family_alpha: f64,
    /// The per-process noise (standard deviation of a repeat's log step time, in percent) is
    /// never taken below this, so identical samples keep the test defined.
    pub min_noise_pct: f64,
    /// One-sided per-case p-value below which a slower case is worth re-measuring.
    pub confirm_alpha: f64,
    /// Fresh processes the caller adds to a suspect case before the final verdict; 0 disables
    /// confirmation.
    pub confirm_repeats: usize,
    /// Pool the history's repeats into the reference level (not only into the noise).
    pub history_for_level: bool,
    /// How a run's level is computed from its repeats.
    pub estimator: Estimator,
    /// A floor that differs by more than this (percent) between baseline and now counts as
    /// changed.
    pub floor_tolerance_pct: f64,
    /// The statistics gated, each with the same two-level rule (`super::decide_against`); the
    /// first supplies the decision's figures. Empty: the median alone.
    pub gate_on: Vec<GateStat>,
    /// Thresholds per statistic (percent); a statistic not listed uses
    /// [`Policy::threshold_for`]'s default.
    pub stat_max_drop_pct: BTreeMap<GateStat, f64>,
}

impl Policy {
    /// The gated statistics, first the one whose figures the decision shows, without repeats.
    #[must_use]
    pub fn stats(&self) -> Vec<GateStat> {
        let mut out: Vec<GateStat> = Vec::new();
        for s in &self.gate_on {
            if !out.contains(s) {
                out.push(*s);
            }
        }
        if out.is_empty() {
            out.push(GateStat::Median);
        }
        out
    }

    /// The practical threshold of one statistic: as configured, else `max_drop_pct` for the
    /// median and the mean, and three times it for the p99 (a tail is noisier).
    #[must_use]
    pub fn threshold_for(&self, stat: GateStat) -> f64 {
        self.stat_max_drop_pct
            .get(&stat)
            .copied()
            .unwrap_or(match stat {
                GateStat::Median | GateStat::Mean => self.max_drop_pct,
                GateStat::P99 => 3.0 * self.max_drop_pct,
            })
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_drop_pct: 3.0,
            family_alpha: 0.01,
            min_noise_pct: 0.25,
            confirm_alpha: 0.1,
            confirm_repeats: 9,
            history_for_level: true,
            estimator: Estimator::Huber,
            floor_tolerance_pct: 0.1,
            gate_on: vec![GateStat::Median, GateStat::Mean],
            stat_max_drop_pct: BTreeMap::new(),
        }
    }
}

/// One result of one case: the counted step times of each repeat (one inner vector per
/// process, in order) and the roofline floor it was measured against.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub repeats_ms: &'a [Vec<f64>],
    pub floor_ms: f64,
}

/// The verdict for one case with the figures that justify it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// Utilisation (floor / typical step), as a fraction.
    pub util_now: Option<f64>,
    pub util_then: Option<f64>,
    /// The typical step of the run: the level of its repeats' medians (see [`Estimator`]).
    pub step_now_ms: Option<f64>,
    /// The reference step: the baseline's level, pooled with history when the policy says so.
    pub step_then_ms: Option<f64>,
    /// Utilisation drop in percent of the old utilisation; positive = slower. With a changed
    /// floor, the drop implied by step times alone.
    pub drop_pct: Option<f64>,
    /// The range of the drop the noise allows, at the grid-corrected per-case level
    /// (two-sided, each bound at `family_alpha / cases`).
    pub interval_pct: Option<(f64, f64)>,
    /// One-sided per-case p-value in the direction of the change (before the grid correction).
    pub p_value: Option<f64>,
    /// Counted steps now and in the reference.
    pub n_now: usize,
    pub n_then: usize,
    /// Processes now and in the reference.
    pub repeats_now: usize,
    pub repeats_then: usize,
    pub floor_changed: bool,
    /// Estimated per-process noise (standard deviation of a repeat's level), percent.
    #[serde(default)]
    pub noise_pct: Option<f64>,
    /// The smallest drop this evidence could have confirmed, percent.
    #[serde(default)]
    pub resolution_pct: Option<f64>,
    /// Worth re-measuring in fresh processes before the verdict is final.
    #[serde(default)]
    pub suspect: bool,
    /// The measurement itself could not be trusted (the GPU state, or the machine canary moved):
    /// such a result never pools into a later reference.
    #[serde(default)]
    pub untrusted: bool,
    /// The statistic whose figures this decision shows.
    #[serde(default)]
    pub gated_on: GateStat,
    /// The other gated statistics' results (a worse one decides the verdict).
    #[serde(default)]
    pub tails: Vec<TailDecision>,
    /// How the machine canary moved against the reference's runs, when both had one.
    #[serde(default)]
    pub canary: Option<CanaryShift>,
    /// Plain-language sentences, most important first.
    pub reasons: Vec<String>,
}

impl Decision {
    pub(super) fn bare(verdict: Verdict) -> Self {
        Decision {
            verdict,
            util_now: None,
            util_then: None,
            step_now_ms: None,
            step_then_ms: None,
            drop_pct: None,
            interval_pct: None,
            p_value: None,
            n_now: 0,
            n_then: 0,
            repeats_now: 0,
            repeats_then: 0,
            floor_changed: false,
            noise_pct: None,
            resolution_pct: None,
            suspect: false,
            untrusted: false,
            gated_on: GateStat::Median,
            tails: Vec::new(),
            canary: None,
            reasons: Vec::new(),
        }
    }
}

/// The decision for a case whose harness failed: never compared, never a baseline.
#[must_use]
pub fn error_decision(message: &str) -> Decision {
    let mut d = Decision::bare(Verdict::Error);
    d.reasons.push(format!("The case failed to run: {message}"));
    d
}

/// The decision for a case that has a baseline but is absent from this run. The baseline's
/// figures are shown so the reader knows what went unchecked.
#[must_use]
pub fn missing_decision(baseline: Option<&Evidence<'_>>) -> Decision {
    let mut d = Decision::bare(Verdict::Missing);
    if let Some(run) = baseline.and_then(|b| summarise(b).ok()) {
        let lvl = level(&run.units, Estimator::Mean, 0.0);
        d.step_then_ms = Some(lvl.exp());
        d.util_then = Some(run.floor_ms / lvl.exp());
        d.n_then = run.samples;
        d.repeats_then = run.units.len();
    }
    d.reasons
        .push("The case has a baseline but was not in this run, so it was not checked.".to_owned());
    d
}

/// One run reduced to what the test needs.
pub(super) struct Run {
    /// Natural log of each non-empty repeat's median step time.
    pub(super) units: Vec<f64>,
    /// Mean over repeats of the variance of a repeat's log median implied by its step jitter.
    pub(super) jitter_var: f64,
    pub(super) samples: usize,
    pub(super) floor_ms: f64,
}

pub(super) enum RunProblem {
    /// The floor is not a positive number: the result is invalid.
    Floor(String),
    /// No usable steps: the harness failed.
    Steps(String),
}

impl RunProblem {
    pub(super) fn message(&self) -> &str {
        match self {
            RunProblem::Floor(m) | RunProblem::Steps(m) => m,
        }
    }
}

/// Median of a non-empty slice, reordering it.
fn median_mut(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    let mid = n / 2;
    let (lower, upper_mid, _) = xs.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *upper_mid;
    if n % 2 == 1 {
        upper
    } else {
        let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (below + upper)
    }
}

pub(super) fn summarise(e: &Evidence<'_>) -> Result<Run, RunProblem> {
    if !(e.floor_ms.is_finite() && e.floor_ms > 0.0) {
        return Err(RunProblem::Floor(format!(
            "the floor is {} ms; a floor must be a positive number (check the model and GPU spec)",
            e.floor_ms
        )));
    }
    let mut units = Vec::with_capacity(e.repeats_ms.len());
    let mut jitter = 0.0;
    let mut samples = 0;
    let mut scratch = Vec::new();
    for (i, rep) in e.repeats_ms.iter().enumerate() {
        if let Some((j, v)) = rep
            .iter()
            .enumerate()
            .find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(RunProblem::Steps(format!(
                "step {} of repeat {} is {v} ms; step times must be positive and finite",
                j + 1,
                i + 1
            )));
        }
        if rep.is_empty() {
            continue;
        }
        // The median commutes with the logarithm, so it is taken on the raw times (no
        // logarithm per step); the relative MAD |x - m| / m is the log-scale MAD to first order.
        scratch.clear();
        scratch.extend_from_slice(rep);
        let med_ms = median_mut(&mut scratch);
        for x in &mut scratch {
            *x = (*x - med_ms).abs() / med_ms;
        }
        // 1.4826 MAD estimates a normal standard deviation; the median of n draws has variance
        // about pi/2 sigma^2 / n (Laplace's asymptotic result for the sample median).
        let sd = 1.4826 * median_mut(&mut scratch);
        jitter += FRAC_PI_2 * sd * sd / rep.len() as f64;
        let med = med_ms.ln();
        units.push(med);
        samples += rep.len();
    }
    if units.is_empty() {
        return Err(RunProblem::Steps("no counted steps".to_owned()));
    }
    jitter /= units.len() as f64;
    Ok(Run {
        units,
        jitter_var: jitter,
        samples,
        floor_ms: e.floor_ms,
    })
}

/// Huber's tuning constant in noise standard deviations: 95% efficient for Gaussian noise.
const HUBER_K: f64 = 1.5;
/// `E[psi_k(Z)^2]` for a standard normal Z: `(2 Phi(k) - 1) - 2 k phi(k) + 2 k^2 (1 - Phi(k))`.
/// Dividing by it makes the Proposal 2 scale consistent for Gaussian noise (Huber, Robust
/// Statistics, 1981, §6.4).
fn huber_beta(k: f64) -> f64 {
    let phi = (-0.5 * k * k).exp() / (2.0 * PI).sqrt();
    let upper = 0.5 * statrs::function::erf::erfc(k / std::f64::consts::SQRT_2);
    (1.0 - 2.0 * upper) - 2.0 * k * phi + 2.0 * k * k * upper
}

/// The expected clipped square residual of one run of `n` repeats, in units of the noise
/// variance: its `n - 1` degrees of freedom, each a residual of variance `(n - 1) / n`, clipped
/// at `HUBER_K` noise deviations, i.e. at `HUBER_K * sqrt(n / (n - 1))` residual deviations.
/// Without this small-run correction three repeats would overstate the noise by about 13%.
fn huber_expected_psi2(n: usize) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let nf = n as f64;
    (nf - 1.0) * huber_beta(HUBER_K * (nf / (nf - 1.0)).sqrt())
}
/// Asymptotic variance of the Huber location at k = 1.5 relative to the mean's:
/// E[psi^2] / P(|Z| < k)^2 = 0.77848 / 0.86639^2.
const HUBER_VAR: f64 = 1.0371;

/// Huber location of `units` with a known scale, started from the median.
fn huber_location(units: &[f64], scale: f64) -> f64 {
    let mut v = units.to_vec();
    let mut centre = median_mut(&mut v);
    if scale <= 0.0 {
        return centre;
    }
    let bound = HUBER_K * scale;
    for _ in 0..100 {
        let next = centre
            + units
                .iter()
                .map(|u| (u - centre).clamp(-bound, bound))
                .sum::<f64>()
                / units.len() as f64;
        let settled = (next - centre).abs() <= 1e-9 * scale;
        centre = next;
        if settled {
            break;
        }
    }
    centre
}

/// The level of a run (log step time). `scale` is the per-process noise (log standard
/// deviation); only the Huber estimate uses it.
pub(super) fn level(units: &[f64], estimator: Estimator, scale: f64) -> f64 {
    match estimator {
        Estimator::Mean => units.iter().sum::<f64>() / units.len() as f64,
        Estimator::Median => {
            let mut v = units.to_vec();
            median_mut(&mut v)
        }
        Estimator::Huber => huber_location(units, scale),
    }
}

/// Variance of the level of `n` repeats in units of the per-process variance.
pub(super) fn var_factor(n: usize, estimator: Estimator) -> f64 {
    let nf = n as f64;
    match estimator {
        Estimator::Mean => 1.0 / nf,
        // Exact variances of the median of n standard normals for small n (order-statistic
        // tables); above that Laplace's pi/(2n), which slightly overstates them (conservative).
        Estimator::Median => match n {
            1 => 1.0,
            2 => 0.5,
            3 => 0.4487,
            4 => 0.3433,
            5 => 0.2868,
            _ => PI / (2.0 * nf),
        },
        // With one or two repeats the Huber location is their mean.
        Estimator::Huber if n <= 2 => 1.0 / nf,
        Estimator::Huber => HUBER_VAR / nf,
    }
}

/// Between-process variance pooled over runs (each run its own level), with its degrees of
/// freedom: the classical pooled variance, or Huber's Proposal 2 for the Huber estimator.
fn pooled_variance(runs: &[&Run], estimator: Estimator) -> (f64, usize) {
    let mut ss = 0.0;
    let mut df = 0;
    for run in runs {
        let mean = run.units.iter().sum::<f64>() / run.units.len() as f64;
        ss += run.units.iter().map(|u| (u - mean).powi(2)).sum::<f64>();
        df += run.units.len() - 1;
    }
    if df == 0 {
        return (0.0, 0);
    }
    let mut var = ss / df as f64;
    if estimator != Estimator::Huber || var <= 0.0 {
        return (var, df);
    }
    // Proposal 2: alternate Huber locations per run and the scale from clipped residuals,
    // starting from the classical estimate (an over-estimate when a process is far off).
    let expected: f64 = runs
        .iter()
        .map(|r| huber_expected_psi2(r.units.len()))
        .sum();
    let mut centres: Vec<f64> = runs
        .iter()
        .map(|r| {
            let mut v = r.units.clone();
            median_mut(&mut v)
        })
        .collect();
    for _ in 0..100 {
        let bound = HUBER_K * var.sqrt();
        let mut psi2 = 0.0;
        for (centre, run) in centres.iter_mut().zip(runs) {
            let shift = run
                .units
                .iter()
                .map(|u| (u - *centre).clamp(-bound, bound))
                .sum::<f64>();
            *centre += shift / run.units.len() as f64;
            psi2 += run
                .units
                .iter()
                .map(|u| (u - *centre).clamp(-bound, bound).powi(2))
                .sum::<f64>();
        }
        let next = psi2 / expected;
        let settled = (next - var).abs() <= 1e-9 * var;
        var = next;
        if settled || var <= 0.0 {
            break;
        }
    }
    (var, df)
}

/// The per-process noise variance actually used: the pooled estimate, never below the step
/// jitter's share or the policy's floor.
pub(super) fn noise_variance(runs: &[&Run], policy: &Policy) -> (f64, usize) {
    let (measured, df) = pooled_variance(runs, policy.estimator);
    let units: usize = runs.iter().map(|r| r.units.len()).sum();
    let jitter = runs
        .iter()
        .map(|r| r.jitter_var * r.units.len() as f64)
        .sum::<f64>()
        / units as f64;
    // ln(1 + x) is the log-scale standard deviation of an x-fraction multiplicative noise.
    let floor = (policy.min_noise_pct / 100.0).ln_1p();
    (measured.max(jitter).max(floor * floor), df)
}

pub(super) fn pct(fraction: f64) -> f64 {
    100.0 * fraction
}

/// A log step-time difference as a utilisation drop in percent (positive = slower).
pub(super) fn drop_of(log_diff: f64) -> f64 {
    pct(1.0 - (-log_diff).exp())
}

pub(super) fn fmt_p(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

/// The statistics of one comparison, before the verdict.
pub(super) struct Test {
    /// Level now minus reference level, log step time.
    pub(super) est: f64,
    pub(super) se: f64,
    /// Pooled degrees of freedom of the noise; 0 when it could not be measured.
    pub(super) df: usize,
    /// Critical value at the per-case level; infinite without degrees of freedom.
    pub(super) q: f64,
    pub(super) alpha_case: f64,
    pub(super) p_slower: Option<f64>,
    pub(super) p_faster: Option<f64>,
    pub(super) noise: f64,
}

fn test(now: &Run, reference: &[f64], runs: &[&Run], policy: &Policy, cases: usize) -> Test {
    let (var, df) = noise_variance(runs, policy);
    let scale = var.sqrt();
    let est =
        level(&now.units, policy.estimator, scale) - level(reference, policy.estimator, scale);
    let se = (var
        * (var_factor(now.units.len(), policy.estimator)
            + var_factor(reference.len(), policy.estimator)))
    .sqrt();
    let alpha_case = (policy.family_alpha / cases.max(1) as f64).clamp(f64::MIN_POSITIVE, 0.5);
    let t = (df > 0).then(|| StudentsT::new(0.0, 1.0, df as f64));
    let (q, p_slower, p_faster) = match t {
        Some(Ok(dist)) => (
            -dist.inverse_cdf(alpha_case),
            Some(dist.sf(est / se)),
            Some(dist.cdf(est / se)),
        ),
        _ => (f64::INFINITY, None, None),
    };
    Test {
        est,
        se,
        df,
        q,
        alpha_case,
        p_slower,
        p_faster,
        noise: scale,
    }
}

/// Decide one case. `baseline` is the pinned good result (None: the case is `new`); `history`
/// holds older good results of the same case and GPU SKU since the last accepted change (may be
/// empty); `cases_in_grid` is the number of cases judged together in this run, for the grid
/// correction; `gpu_guard` is a reason the GPU state cannot be trusted (throttled, power-capped).
#[must_use]
pub fn decide(
    baseline: Option<&Evidence<'_>>,
    current: &Evidence<'_>,
    history: &[Evidence<'_>],
    policy: &Policy,
    cases_in_grid: usize,
    gpu_guard: Option<&str>,
) -> Decision {
    let now = match summarise(current) {
        Ok(run) => run,
        Err(RunProblem::Floor(m)) => {
            let mut d = Decision::bare(Verdict::Invalid);
            d.reasons
                .push(format!("This result cannot be judged: {m}."));
            return d;
        }
        Err(RunProblem::Steps(m)) => return error_decision(&m),
    };
    let mut d = Decision::bare(Verdict::Pass);
    let (own_var, _) = noise_variance(&[&now], policy);
    let lvl_now = level(&now.units, policy.estimator, own_var.sqrt());
    let step_now = lvl_now.exp();
    let util_now = now.floor_ms / step_now;
    d.step_now_ms = Some(step_now);
    d.util_now = Some(util_now);
    d.n_now = now.samples;
    d.repeats_now = now.units.len();

    if util_now > 1.0 {
        d.verdict = Verdict::Invalid;
        d.reasons.push(format!(
            "Utilisation {:.1}% is above 100%: the step ({step_now:.4} ms) is faster than the \
             roofline floor ({:.4} ms), which is physically impossible. Check that the harness \
             synchronises before reading its timer, and the model and GPU spec.",
            pct(util_now),
            now.floor_ms
        ));
        return d;
    }

    let base = match baseline.map(summarise) {
        None => None,
        Some(Ok(run)) => Some(run),
        Some(Err(problem)) => {
            d.reasons.push(format!(
                "The baseline cannot be used ({}), so this result is judged as new.",
                problem.message()
            ));
            None
        }
    };
    let Some(base) = base else {
        d.verdict = Verdict::New;
        d.reasons.push(format!(
            "No baseline for this case yet: utilisation {:.1}% (step {step_now:.4} ms, {} repeats, \
             {} steps) is recorded.",
            pct(util_now),
            d.repeats_now,
            d.n_now
        ));
        apply_guard(&mut d, gpu_guard);
        return d;
    };

    let hist: Vec<Run> = history.iter().filter_map(|h| summarise(h).ok()).collect();
    let t = compare_runs(&mut d, &now, &base, &hist, policy, cases_in_grid);
    d.suspect = matches!(d.verdict, Verdict::Regressed | Verdict::Inconclusive)
        || (t.est > 0.0 && t.p_slower.is_some_and(|p| p <= policy.confirm_alpha));
    apply_guard(&mut d, gpu_guard);
    d
}

/// Fills the figures of a comparison against the baseline (and history), sets the verdict and
/// its sentences, and returns the test for the confirm decision.
fn compare_runs(
    d: &mut Decision,
    now: &Run,
    base: &Run,
    hist: &[Run],
    policy: &Policy,
    cases_in_grid: usize,
) -> Test {
    let mut reference = base.units.clone();
    if policy.history_for_level {
        for h in hist {
            reference.extend_from_slice(&h.units);
        }
    }
    let mut runs: Vec<&Run> = vec![now, base];
    runs.extend(hist.iter());
    let t = test(now, &reference, &runs, policy, cases_in_grid);

    let step_then = level(&reference, policy.estimator, t.noise).exp();
    let step_now = level(&now.units, policy.estimator, t.noise).exp();
    let util_now = now.floor_ms / step_now;
    d.step_now_ms = Some(step_now);
    d.util_now = Some(util_now);
    d.step_then_ms = Some(step_then);
    d.util_then = Some(base.floor_ms / step_then);
    d.n_then = base.samples
        + if policy.history_for_level {
            hist.iter().map(|h| h.samples).sum()
        } else {
            0
        };
    d.repeats_then = reference.len();
    d.drop_pct = Some(drop_of(t.est));
    d.noise_pct = Some(pct(t.noise.exp_m1()));
    if t.q.is_finite() {
        d.interval_pct = Some((drop_of(t.est - t.q * t.se), drop_of(t.est + t.q * t.se)));
        d.resolution_pct = Some(drop_of(t.q * t.se));
    }
    d.p_value = if t.est >= 0.0 { t.p_slower } else { t.p_faster };
    d.floor_changed =
        (now.floor_ms / base.floor_ms - 1.0).abs() * 100.0 > policy.floor_tolerance_pct;

    judge(d, &t, policy, cases_in_grid);
    if d.floor_changed {
        d.reasons.push(format!(
            "The floor changed from {:.4} ms to {:.4} ms since the baseline (the model or GPU \
             spec was edited), so utilisation then ({:.1}%) and now ({:.1}%) are not comparable; \
             the verdict compares step times instead ({step_then:.4} ms then, {step_now:.4} ms \
             now).",
            base.floor_ms,
            now.floor_ms,
            pct(base.floor_ms / step_then),
            pct(util_now)
        ));
    }
    if policy.history_for_level && !hist.is_empty() {
        d.reasons.push(format!(
            "Reference: the baseline's {} repeats and {} repeats from {} earlier good results.",
            base.units.len(),
            reference.len() - base.units.len(),
            hist.len()
        ));
    } else if !hist.is_empty() {
        d.reasons.push(format!(
            "{} earlier good results sharpened the noise estimate.",
            hist.len()
        ));
    }
    t
}

pub(super) fn apply_guard(d: &mut Decision, gpu_guard: Option<&str>) {
    if let Some(reason) = gpu_guard {
        d.verdict = Verdict::Inconclusive;
        d.suspect = false;
        d.untrusted = true;
        d.reasons.insert(
            0,
            format!("The GPU state cannot be trusted for this measurement: {reason}."),
        );
    }
}

/// Sets the verdict and its main sentences from the test.
pub(super) fn judge(d: &mut Decision, t: &Test, policy: &Policy, cases: usize) {
    let threshold = policy.max_drop_pct.clamp(0.0, 99.9);
    let slower_than_threshold = t.est > -(-threshold / 100.0).ln_1p();
    let faster_than_threshold = -t.est > (threshold / 100.0).ln_1p();
    let beyond_noise_slower = t.est - t.q * t.se > 0.0;
    let beyond_noise_faster = t.est + t.q * t.se < 0.0;
    let (util_then, util_now) = (d.util_then.unwrap_or(0.0), d.util_now.unwrap_or(0.0));
    let (step_then, step_now) = (d.step_then_ms.unwrap_or(0.0), d.step_now_ms.unwrap_or(0.0));
    let drop = drop_of(t.est);
    let change = if d.floor_changed {
        // Utilisations against different floors are not comparable: speak of step times.
        format!(
            "The step took {:.1}% {} ({step_then:.4} ms then, {step_now:.4} ms now)",
            pct(t.est.abs().exp_m1()),
            if t.est >= 0.0 { "longer" } else { "less time" }
        )
    } else if t.est >= 0.0 {
        format!(
            "Utilisation fell {drop:.1}% (from {:.1}% to {:.1}%; step {step_then:.4} ms then, \
             {step_now:.4} ms now)",
            pct(util_then),
            pct(util_now)
        )
    } else {
        format!(
            "Utilisation rose {:.1}% (from {:.1}% to {:.1}%; step {step_then:.4} ms then, \
             {step_now:.4} ms now)",
            pct((-t.est).exp_m1()),
            pct(util_then),
            pct(util_now)
        )
    };
    let evidence = if t.q.is_finite() {
        let p = if t.est >= 0.0 { t.p_slower } else { t.p_faster };
        format!(
            "With {} repeats now, {} in the reference and a per-process noise of {:.2}% \
             ({} degrees of freedom), the change lies between a drop of {:.1}% and {:.1}% at \
             the per-case level {} (= {} / {} cases; one-sided p = {}).",
            d.repeats_now,
            d.repeats_then,
            pct(t.noise.exp_m1()),
            t.df,
            drop_of(t.est - t.q * t.se),
            drop_of(t.est + t.q * t.se),
            fmt_p(t.alpha_case),
            policy.family_alpha,
            cases.max(1),
            p.map_or_else(|| "n/a".to_owned(), fmt_p)
        )
    } else {
        "With one repeat on each side and no history, the process-to-process noise cannot be \
         measured, so no change can be told from an unlucky process; run at least 2 repeats."
            .to_owned()
    };
    if slower_than_threshold && beyond_noise_slower {
        d.verdict = Verdict::Regressed;
        d.reasons.push(format!(
            "{change}: more than the {threshold}% threshold and beyond the measured noise."
        ));
        d.reasons.push(evidence);
    } else if slower_than_threshold {
        d.verdict = Verdict::Inconclusive;
        d.reasons.push(format!(
            "{change}: more than the {threshold}% threshold, but not beyond the measured noise."
        ));
        d.reasons.push(evidence);
        if let Some(r) = d.resolution_pct {
            d.reasons.push(format!(
                "Only a drop above {r:.1}% could be confirmed with this evidence; re-measure in \
                 fresh processes (confirm) or add repeats."
            ));
        }
    } else if faster_than_threshold && beyond_noise_faster {
        d.verdict = Verdict::Improved;
        d.reasons.push(format!(
            "{change}: more than the {threshold}% threshold and beyond the measured noise. \
             Informational: an improvement never fails the gate."
        ));
        d.reasons.push(evidence);
    } else {
        d.verdict = Verdict::Pass;
        let within = if slower_than_threshold || faster_than_threshold {
            format!(
                "beyond the {threshold}% threshold but within the measured noise (per-process \
                 noise {:.2}%)",
                pct(t.noise.exp_m1())
            )
        } else {
            format!("within the {threshold}% threshold")
        };
        d.reasons.push(format!("{change}: {within}."));
        if let Some(r) = d.resolution_pct.filter(|r| *r > threshold) {
            let way = if t.est >= 0.0 { "drop" } else { "rise" };
            d.reasons.push(format!(
                "With this noise only a {way} above {r:.1}% could have been confirmed."
            ));
        }
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on a missing figure"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Repeats at the given typical step times (ms), `steps` each, with a small deterministic
    /// step-to-step wobble (+-0.2%) so medians and MADs are non-trivial.
    fn repeats(levels: &[f64], steps: usize) -> Vec<Vec<f64>> {
        levels
            .iter()
            .map(|&l| {
                (0..steps)
                    .map(|j| l * (1.0 + 0.002 * (((j * 7919) % 11) as f64 - 5.0) / 5.0))
                    .collect()
            })
            .collect()
    }

    fn ev(r: &[Vec<f64>], floor_ms: f64) -> Evidence<'_> {
        Evidence {
            repeats_ms: r,
            floor_ms,
        }
    }

    fn judge_pair(base: &[Vec<f64>], cur: &[Vec<f64>], history: &[Vec<Vec<f64>>]) -> Decision {
        let history: Vec<Evidence<'_>> = history.iter().map(|h| ev(h, 3.0)).collect();
        decide(
            Some(&ev(base, 3.0)),
            &ev(cur, 3.0),
            &history,
            &Policy::default(),
            100,
            None,
        )
    }

    fn scaled(r: &[Vec<f64>], factor: f64) -> Vec<Vec<f64>> {
        r.iter()
            .map(|rep| rep.iter().map(|v| v * factor).collect())
            .collect()
    }

    #[test]
    fn zero_variance_identical_samples_pass() {
        let same = vec![vec![6.0; 100]; 3];
        let d = judge_pair(&same, &same, &[]);
        assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
        assert_eq!(d.drop_pct, Some(0.0));
        // The noise floor keeps the test defined: a finite resolution, not NaN.
        assert!(d.resolution_pct.is_some_and(|r| r.is_finite() && r > 0.0));
        assert!((d.noise_pct.unwrap() - 0.25).abs() < 1e-9);
    }

    #[test]
    fn zero_variance_ten_percent_slower_regresses_and_faster_improves() {
        let base = vec![vec![6.0; 100]; 3];
        let slow = scaled(&base, 1.1);
        let d = judge_pair(&base, &slow, &[]);
        assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
        assert!((d.drop_pct.unwrap() - 100.0 * (1.0 - 1.0 / 1.1)).abs() < 1e-9);
        assert!(d.interval_pct.unwrap().0 > 0.0);
        assert!(d.p_value.unwrap() < 1e-4);
        assert!(d.suspect);
        let fast = scaled(&base, 1.0 / 1.1);
        let d = judge_pair(&base, &fast, &[]);
        assert_eq!(d.verdict, Verdict::Improved, "{:?}", d.reasons);
        assert!(d.drop_pct.unwrap() < -3.0);
        assert!(!d.suspect);
    }

    #[test]
    fn verdicts_from_noisy_repeats() {
        // Per-process offsets of about 1%; history gives the noise estimate its degrees of
        // freedom. Table: (current levels, expected verdict).
        let base = repeats(&[6.00, 6.06, 5.95], 100);
        let history: Vec<Vec<Vec<f64>>> = [
            [6.03, 5.97, 6.01],
            [5.94, 6.05, 6.00],
            [6.02, 6.07, 5.96],
            [5.99, 5.93, 6.04],
        ]
        .iter()
        .map(|l| repeats(l, 100))
        .collect();
        let table: [(&[f64], Verdict); 4] = [
            (&[6.02, 5.98, 6.05], Verdict::Pass),
            (&[6.60, 6.66, 6.55], Verdict::Regressed),
            (&[5.40, 5.45, 5.36], Verdict::Improved),
            // One process that started slow and stayed slow is not a regression of the code.
            (&[6.01, 6.48, 5.97], Verdict::Pass),
        ];
        for (levels, want) in table {
            let d = judge_pair(&base, &repeats(levels, 100), &history);
            assert_eq!(d.verdict, want, "{levels:?}: {:?}", d.reasons);
            assert_eq!(d.repeats_then, 15);
            assert_eq!(d.n_now, 300);
        }
    }

    #[test]
    fn a_drop_within_large_noise_is_inconclusive_with_numbers() {
        let base = repeats(&[6.0, 6.6, 5.5], 100);
        let cur = repeats(&[6.5, 7.1, 6.0], 100);
        let d = judge_pair(&base, &cur, &[]);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        assert!(d.drop_pct.unwrap() > 3.0);
        assert!(d.resolution_pct.unwrap() > d.drop_pct.unwrap());
        assert!(d.reasons.iter().any(|r| r.contains("could be confirmed")));
        assert!(d.suspect, "a drop beyond the threshold is worth confirming");
    }

    #[test]
    fn one_repeat_each_side_cannot_measure_process_noise() {
        let base = vec![vec![6.0]];
        let cur = vec![vec![6.6]];
        let d = judge_pair(&base, &cur, &[]);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        assert!(d.p_value.is_none() && d.interval_pct.is_none());
        assert!(d.reasons.iter().any(|r| r.contains("one repeat")));
        assert_eq!((d.n_now, d.repeats_now), (1, 1));
        // Unchanged with n = 1: a pass (the practical level alone clears it).
        assert_eq!(judge_pair(&base, &base, &[]).verdict, Verdict::Pass);
        // History supplies the degrees of freedom a single repeat lacks.
        let history = vec![
            repeats(&[6.01, 5.99, 6.0], 20),
            repeats(&[5.98, 6.02, 6.0], 20),
        ];
        let d = judge_pair(&base, &cur, &history);
        assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
    }

    #[test]
    fn changed_floor_compares_step_times_and_says_so() {
        let base = repeats(&[6.0, 6.01, 5.99], 50);
        let history: Vec<Evidence<'_>> = Vec::new();
        let policy = Policy::default();
        let d = decide(
            Some(&ev(&base, 3.0)),
            &ev(&base, 3.3),
            &history,
            &policy,
            10,
            None,
        );
        assert!(d.floor_changed);
        assert_eq!(
            d.verdict,
            Verdict::Pass,
            "same step times pass despite a 10% floor change"
        );
        assert!(d.reasons.iter().any(|r| r.contains("floor changed")));
        let slow = scaled(&base, 1.1);
        let d = decide(
            Some(&ev(&base, 3.0)),
            &ev(&slow, 3.3),
            &history,
            &policy,
            10,
            None,
        );
        assert!(d.floor_changed);
        assert_eq!(d.verdict, Verdict::Regressed);
        // A floor within the tolerance is not a change.
        let d = decide(
            Some(&ev(&base, 3.0)),
            &ev(&base, 3.002),
            &history,
            &policy,
            10,
            None,
        );
        assert!(!d.floor_changed);
    }

    #[test]
    fn utilisation_above_one_is_invalid_regardless_of_baseline() {
        let cur = repeats(&[2.0, 2.0, 2.0], 10);
        let base = repeats(&[6.0, 6.0, 6.0], 10);
        for baseline in [None, Some(ev(&base, 3.0))] {
            let d = decide(
                baseline.as_ref(),
                &ev(&cur, 3.0),
                &[],
                &Policy::default(),
                1,
                None,
            );
            assert_eq!(d.verdict, Verdict::Invalid);
            assert!(d.util_now.unwrap() > 1.0);
        }
        for floor in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let d = decide(None, &ev(&base, floor), &[], &Policy::default(), 1, None);
            assert_eq!(d.verdict, Verdict::Invalid, "floor {floor}");
        }
    }

    #[test]
    fn unusable_samples_are_errors() {
        let table: [Vec<Vec<f64>>; 4] = [
            vec![],
            vec![vec![]],
            vec![vec![6.0, f64::NAN]],
            vec![vec![6.0], vec![0.0]],
        ];
        for cur in table {
            let d = decide(None, &ev(&cur, 3.0), &[], &Policy::default(), 1, None);
            assert_eq!(d.verdict, Verdict::Error, "{cur:?}");
        }
        let d = error_decision("harness exited with status 1");
        assert_eq!(d.verdict, Verdict::Error);
        assert!(d.reasons[0].contains("status 1"));
    }

    #[test]
    fn gpu_guard_makes_any_case_inconclusive() {
        let base = vec![vec![6.0; 100]; 3];
        let slow = scaled(&base, 1.2);
        let guard = Some("power cap 450 W of 700 W");
        for baseline in [None, Some(ev(&base, 3.0))] {
            let d = decide(
                baseline.as_ref(),
                &ev(&slow, 3.0),
                &[],
                &Policy::default(),
                1,
                guard,
            );
            assert_eq!(d.verdict, Verdict::Inconclusive);
            assert!(d.reasons[0].contains("power cap 450 W"));
            assert!(!d.suspect);
        }
    }

    #[test]
    fn new_and_missing() {
        let cur = repeats(&[6.0, 6.1, 5.9], 10);
        let d = decide(None, &ev(&cur, 3.0), &[], &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::New);
        assert!((d.util_now.unwrap() - 0.5).abs() < 0.01);
        let m = missing_decision(Some(&ev(&cur, 3.0)));
        assert_eq!(m.verdict, Verdict::Missing);
        assert_eq!(m.repeats_then, 3);
        assert_eq!(missing_decision(None).verdict, Verdict::Missing);
    }

    #[test]
    fn decisions_round_trip_through_json() {
        let base = vec![vec![6.0; 10]; 3];
        let d = judge_pair(&base, &scaled(&base, 1.1), &[]);
        let text = serde_json::to_string(&d).unwrap();
        let back: Decision = serde_json::from_str(&text).unwrap();
        // serde_json may differ in the last bit of a float; everything else is exact.
        assert_eq!(
            (back.verdict, &back.reasons, back.suspect),
            (d.verdict, &d.reasons, d.suspect)
        );
        assert!((back.drop_pct.unwrap() - d.drop_pct.unwrap()).abs() < 1e-12);
        assert!(text.contains(r#""verdict":"regressed""#));
    }

    #[test]
    fn huber_beta_matches_the_gaussian_constant() {
        assert!((huber_beta(1.5) - 0.778_48).abs() < 1e-4);
        assert!((huber_beta(40.0) - 1.0).abs() < 1e-12);
    }

    fn rank(v: Verdict) -> u8 {
        match v {
            Verdict::Improved => 0,
            Verdict::Pass => 1,
            Verdict::Inconclusive => 2,
            Verdict::Regressed => 3,
            other => panic!("unexpected verdict {other}"),
        }
    }

    proptest! {
        #[test]
        fn a_larger_slowdown_never_yields_a_better_verdict(
            levels in prop::collection::vec(5.0f64..7.0, 1..5),
            offsets in prop::collection::vec(-0.05f64..0.05, 1..5),
            a in 0.8f64..1.3,
            b in 0.8f64..1.3,
        ) {
            let base = repeats(&levels, 7);
            let cur: Vec<f64> = offsets.iter().map(|o| 6.0 * (1.0 + o)).collect();
            let cur = repeats(&cur, 7);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let d_lo = judge_pair(&base, &scaled(&cur, lo), &[]);
            let d_hi = judge_pair(&base, &scaled(&cur, hi), &[]);
            prop_assert!(rank(d_lo.verdict) <= rank(d_hi.verdict), "{:?} then {:?}", d_lo, d_hi);
            prop_assert!(d_lo.drop_pct <= d_hi.drop_pct);
        }

        #[test]
        fn a_regression_read_backwards_is_an_improvement(
            base in prop::collection::vec(5.0f64..7.0, 2..5),
            factor in 0.7f64..1.4,
        ) {
            let a = repeats(&base, 9);
            let shifted: Vec<f64> = base.iter().rev().map(|l| l * factor).collect();
            let b = repeats(&shifted, 9);
            let forward = judge_pair(&a, &b, &[]);
            let backward = judge_pair(&b, &a, &[]);
            if forward.verdict == Verdict::Regressed {
                prop_assert_eq!(backward.verdict, Verdict::Improved);
            }
            prop_assert!((forward.p_value.unwrap() - backward.p_value.unwrap()).abs() < 1e-9);
        }
    }
}
