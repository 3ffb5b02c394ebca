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

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::canary::CanaryShift;
use super::gate_stat::{GateStat, TailDecision};
use crate::case::Verdict;

mod estimate;
pub(super) use estimate::{Run, RunProblem, level, noise_variance, summarise, var_factor};

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
    /// Set where a budgeted night sized `confirm_repeats` from the case's stored noise
    /// (`budget::confirm_size`): the most it would ask. `[gate] confirm_repeats` then does not
    /// set the size, so the reach's advice says what does.
    pub confirm_sized_at_most: Option<usize>,
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
    /// The weight, in nights, of the prior that whole nights differ as much as processes do,
    /// before a reference's own nights show how much they differ (see
    /// `super::decide_against`); 0 treats nights as never differing.
    pub night_prior: f64,
}

impl Policy {
    /// The gated statistics of the steps, first the one whose figures the decision shows,
    /// without repeats (energy per token is judged apart, see [`Policy::gates_energy`]).
    #[must_use]
    pub fn stats(&self) -> Vec<GateStat> {
        let mut out: Vec<GateStat> = Vec::new();
        for s in &self.gate_on {
            if *s != GateStat::JoulesPerToken && !out.contains(s) {
                out.push(*s);
            }
        }
        if out.is_empty() {
            out.push(GateStat::Median);
        }
        out
    }

    /// Whether `gate_on` lists energy per token (`compare::energy`).
    #[must_use]
    pub fn gates_energy(&self) -> bool {
        self.gate_on.contains(&GateStat::JoulesPerToken)
    }

    /// The practical threshold of one statistic: as configured, else `max_drop_pct` for the
    /// median, the mean, the stall loss and energy per token (each a throughput fall, of tokens
    /// per second or per joule), and three times it for the p99 (a tail is noisier).
    #[must_use]
    pub fn threshold_for(&self, stat: GateStat) -> f64 {
        self.stat_max_drop_pct
            .get(&stat)
            .copied()
            .unwrap_or(match stat {
                GateStat::Median | GateStat::Mean | GateStat::Stall | GateStat::JoulesPerToken => {
                    self.max_drop_pct
                }
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
            confirm_repeats: 12,
            confirm_sized_at_most: None,
            history_for_level: true,
            estimator: Estimator::Huber,
            floor_tolerance_pct: 0.1,
            gate_on: vec![GateStat::Median, GateStat::Stall],
            stat_max_drop_pct: BTreeMap::new(),
            night_prior: 1.0,
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
    /// What the verdict could resolve once a suspect is re-measured (see [`Reach`]); set when
    /// the case has a reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<Reach>,
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
    /// The tail statistic that decided the verdict, when one did (a stall figure that failed
    /// while the median held); `None` when `gated_on`'s own figures decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<GateStat>,
    /// How the machine canary moved against the reference's runs, when both had one.
    #[serde(default)]
    pub canary: Option<CanaryShift>,
    /// The drop with the canary's shift taken off, when the canary moved beyond its noise
    /// (percent, negative for a rise): the other reading of the night a host change allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_adjusted_drop_pct: Option<f64>,
    /// Set when the verdict came from comparing with where the case's lineage began rather
    /// than with the reference of the last nights: a slow slide added up past the threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide: Option<LineageStart>,
    /// Plain-language sentences, most important first.
    pub reasons: Vec<String>,
    /// The quality metrics the harness reported, each against the baseline's (the accuracy
    /// guard, [`super::quality`]); empty when it reported none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quality: Vec<super::quality::QualityCheck>,
    /// A speculative case's acceptance against the baseline's ([`super::speculation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<super::speculation::AcceptanceCheck>,
    /// Energy per token against the baseline's, when the case measured it and `gate_on` lists
    /// `joules_per_token` ([`super::energy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<super::energy_record::EnergyCheck>,
}

/// What a case's verdict can resolve: the smallest drop it could confirm once a suspect is
/// re-measured (a confirmed verdict rests on the `confirm_repeats` fresh processes alone, so
/// their number, not tonight's first repeats, sets it), and, when that is above the threshold,
/// what would bring it under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reach {
    /// The smallest drop (percent) the deciding processes could confirm at the per-case level.
    pub confirmed_pct: f64,
    /// The processes that decide: `confirm_repeats`, or the suite's repeats without a confirm
    /// step.
    pub deciding_processes: usize,
    /// Whether the confirm step decides (else the first repeats do).
    pub by_confirm: bool,
    /// The reference's processes.
    pub reference_processes: usize,
    /// The deciding processes that would resolve the threshold; `None` when no number would,
    /// because the reference's own uncertainty is already beyond it (a thin reference).
    pub processes_needed: Option<usize>,
    /// Where a budgeted night sized the confirm step from the case's noise: the most it
    /// asks ([`Policy::confirm_sized_at_most`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sized_at_most: Option<usize>,
}

impl Reach {
    /// The sentence for a case whose verdict cannot resolve `threshold`, `None` when it can.
    #[must_use]
    pub fn limit(&self, threshold: f64) -> Option<String> {
        if self.confirmed_pct <= threshold {
            return None;
        }
        let which = if self.by_confirm {
            "the confirm step's"
        } else {
            "tonight's"
        };
        // Enough digits that the figure reads above the threshold it is above (3.04%, not 3.0%).
        let digits = (1u8..4)
            .find(|&d| {
                let scale = 10f64.powi(i32::from(d));
                (self.confirmed_pct * scale).round() / scale > threshold
            })
            .map_or(3, usize::from);
        let head = format!(
            "cannot resolve its {threshold}% threshold: with {which} {} processes against the \
             reference's {} only a drop above {:.digits$}% can be confirmed",
            self.deciding_processes, self.reference_processes, self.confirmed_pct
        );
        let fix = match (self.processes_needed, self.sized_at_most) {
            (Some(n), Some(most)) if self.by_confirm && n > most => format!(
                "{n} fresh processes would resolve it, more than the {most} a budgeted night's \
                 confirm step takes (it sizes the step from the case's stored noise); a night \
                 without a budget takes [gate] confirm_repeats = {n}"
            ),
            (Some(n), Some(_)) if self.by_confirm => format!(
                "{n} fresh processes would resolve it (a budgeted night sizes its confirm step \
                 from the case's stored noise, and asked for {})",
                self.deciding_processes
            ),
            (Some(n), _) if self.by_confirm => {
                format!("[gate] confirm_repeats = {n} would resolve it")
            }
            (Some(n), _) => format!("the suite's repeats = {n} would resolve it"),
            (None, _) => format!(
                "the reference is too thin ({} processes) for any number of processes tonight; \
                 the next nights add to it (or accept a baseline measured with more repeats)",
                self.reference_processes
            ),
        };
        Some(format!("{head}; {fix}"))
    }
}

/// Where a case's lineage began (its first baseline, or its last accept or import): the level a
/// slow slide is measured from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineageStart {
    pub run_id: i64,
    /// RFC 3339 time the run started.
    pub started_at: String,
    pub git_sha: Option<String>,
}

impl Decision {
    /// The drop of the statistic that decided the verdict, with that statistic: a tail's when
    /// one decided, else `gated_on`'s (`drop_pct`).
    #[must_use]
    pub fn deciding_drop(&self) -> (GateStat, Option<f64>) {
        if let Some(e) = self.energy.as_ref().filter(|e| e.decides) {
            return (GateStat::JoulesPerToken, e.drop_pct);
        }
        self.decided_by
            .and_then(|stat| self.tails.iter().find(|t| t.stat == stat))
            .map_or((self.gated_on, self.drop_pct), |t| (t.stat, t.drop_pct))
    }

    /// "utilisation fell 3.1%", "the stall figure: throughput fell 28.2%": the deciding
    /// statistic's change in words.
    #[must_use]
    pub fn deciding_change(&self) -> String {
        if let Some(e) = self.energy.as_ref().filter(|e| e.decides) {
            return e.change();
        }
        let (stat, drop) = self.deciding_drop();
        let Some(d) = drop else {
            return "noise".to_owned();
        };
        let (way, by) = if d >= 0.0 { ("fell", d) } else { ("rose", -d) };
        match (self.decided_by, stat) {
            (None, _) => format!("utilisation {way} {by:.1}%"),
            (Some(_), GateStat::Stall) => format!("the stall figure: throughput {way} {by:.1}%"),
            (Some(_), s) => format!("the {s} step: utilisation {way} {by:.1}%"),
        }
    }

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
            reach: None,
            suspect: false,
            untrusted: false,
            gated_on: GateStat::Median,
            tails: Vec::new(),
            decided_by: None,
            canary: None,
            host_adjusted_drop_pct: None,
            slide: None,
            reasons: Vec::new(),
            quality: Vec::new(),
            acceptance: None,
            energy: None,
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

pub(super) fn pct(fraction: f64) -> f64 {
    100.0 * fraction
}

/// A log step-time difference as a utilisation drop in percent (positive = slower).
pub(super) fn drop_of(log_diff: f64) -> f64 {
    pct(1.0 - (-log_diff).exp())
}

/// The interval of a utilisation drop (percent, `lo <= hi`, negative for a rise) in words a
/// reader does not have to negate: "between a drop of 2.1% and 7.9%", "between a rise of 3.0%
/// and a drop of 4.2%", "between a rise of 1.0% and 5.5%".
#[must_use]
pub fn change_range(lo: f64, hi: f64) -> String {
    let (lo, hi) = (lo + 0.0, hi + 0.0);
    if lo >= 0.0 {
        format!("between a drop of {lo:.1}% and {hi:.1}%")
    } else if hi <= 0.0 {
        format!("between a rise of {:.1}% and {:.1}%", -hi + 0.0, -lo)
    } else {
        format!("between a rise of {:.1}% and a drop of {hi:.1}%", -lo)
    }
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

impl Test {
    /// The one-sided Student t test of `est` (standard error `se`, `df` degrees of freedom)
    /// at the per-case level `family_alpha / tests` (the grid correction).
    pub(super) fn new(
        est: f64,
        se: f64,
        df: usize,
        noise: f64,
        family_alpha: f64,
        tests: usize,
    ) -> Test {
        let alpha_case = (family_alpha / tests.max(1) as f64).clamp(f64::MIN_POSITIVE, 0.5);
        let (q, p_slower, p_faster) = match (df > 0).then(|| StudentsT::new(0.0, 1.0, df as f64)) {
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
            noise,
        }
    }

    /// Writes the test's figures on `d`: the drop, the noise, the interval and resolution at
    /// the per-case level, and the one-sided p-value in the direction of the change.
    pub(super) fn record(&self, d: &mut Decision) {
        d.drop_pct = Some(drop_of(self.est));
        d.noise_pct = Some(pct(self.noise.exp_m1()));
        if self.q.is_finite() {
            d.interval_pct = Some((
                drop_of(self.est - self.q * self.se),
                drop_of(self.est + self.q * self.se),
            ));
            d.resolution_pct = Some(drop_of(self.q * self.se));
        }
        d.p_value = if self.est >= 0.0 {
            self.p_slower
        } else {
            self.p_faster
        };
    }
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
    Test::new(est, se, df, scale, policy.family_alpha, cases)
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
    t.record(d);
    d.floor_changed =
        (now.floor_ms / base.floor_ms - 1.0).abs() * 100.0 > policy.floor_tolerance_pct;

    judge(d, &t, policy, cases_in_grid, Sides::Night);
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

/// The change sentence of the stall figure, which is 1 + the time lost to stalls per typical
/// step, not a step time.
fn stall_change(t: &Test, then: f64, now: f64) -> String {
    let (way, by) = if t.est >= 0.0 {
        ("fell", drop_of(t.est))
    } else {
        ("rose", pct((-t.est).exp_m1()))
    };
    format!(
        "The time lost to stalls (steps over {}x their process's median) went from {:.1}% to \
         {:.1}% of the typical step: throughput {way} {by:.1}%",
        super::gate_stat::STALL_FACTOR,
        pct(then - 1.0),
        pct(now - 1.0),
    )
}

/// Which two sides a comparison weighs, for its sentences: tonight's processes against the
/// reference, or an A/B session's head against its base, pair by pair (whose remedy is more
/// pairs, `--pairs` and `--confirm-pairs`, never "add repeats" or "confirm").
#[derive(Debug, Clone, Copy)]
pub(super) enum Sides {
    Night,
    Ab(AbPairs),
}

/// An A/B verdict's pairs: how many it rests on, how many of them screened before a suspect's
/// confirming pairs, and how many in all would resolve the threshold at the measured noise
/// (`None`: not within [`AB_MOST_PAIRS`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct AbPairs {
    pub(super) pairs: usize,
    pub(super) screening: usize,
    pub(super) needed: Option<usize>,
}

/// The most pairs an A/B remedy names; beyond it the host, not the count, is the problem.
pub(super) const AB_MOST_PAIRS: usize = 10_000;

impl AbPairs {
    /// What would resolve `threshold` (percent), as the flags of `utilgate ab`. A confirmed
    /// suspect is judged on its screening pairs and its confirming pairs together, so raising
    /// `--confirm-pairs` to the difference is enough; `--pairs` alone also does it.
    fn remedy(&self, threshold: f64) -> String {
        match self.needed {
            Some(n) => format!(
                "about {n} pairs in all would resolve the {threshold}% threshold: `utilgate ab \
                 --confirm-pairs {}` (a suspect is judged on its {} screening pairs and these) or \
                 `--pairs {n}`",
                n.saturating_sub(self.screening).max(1),
                self.screening
            ),
            None => format!(
                "not even {AB_MOST_PAIRS} pairs would resolve the {threshold}% threshold at this \
                 noise: quieten the host (its per-process noise, not the number of pairs, is the \
                 limit)"
            ),
        }
    }
}

/// What limits a passing case, if anything: a suspect is re-measured before its verdict, so
/// what that could confirm is the limit (the first repeats' own resolution says nothing a
/// reader can act on); without a reach, the first repeats' resolution.
fn pass_limit(d: &Decision, t: &Test, threshold: f64, sides: Sides) -> Option<String> {
    if let Sides::Ab(ab) = sides {
        return d.resolution_pct.filter(|r| *r > threshold).map(|r| {
            let way = if t.est >= 0.0 { "drop" } else { "rise" };
            format!(
                "With these {} pairs only a {way} above {r:.1}% could have been confirmed; {}.",
                ab.pairs,
                ab.remedy(threshold)
            )
        });
    }
    match d.reach.as_ref() {
        Some(reach) => reach.limit(threshold).map(|l| format!("This case {l}.")),
        None => d.resolution_pct.filter(|r| *r > threshold).map(|r| {
            let way = if t.est >= 0.0 { "drop" } else { "rise" };
            format!("With this noise only a {way} above {r:.1}% could have been confirmed.")
        }),
    }
}

/// The sentence of the test's evidence: what it rests on (tonight's repeats and the
/// reference's, or an A/B session's pairs), the noise, the interval and the p-value.
fn evidence_sentence(
    d: &Decision,
    t: &Test,
    policy: &Policy,
    cases: usize,
    sides: Sides,
) -> String {
    let p = if t.est >= 0.0 { t.p_slower } else { t.p_faster };
    // The interval, the level and the p-value read the same for a nightly run and a session.
    let tail = |denominator: &str| {
        format!(
            "lies {} at the per-case level {} (= {} / {} {denominator}; one-sided p = {})",
            change_range(drop_of(t.est - t.q * t.se), drop_of(t.est + t.q * t.se)),
            fmt_p(t.alpha_case),
            policy.family_alpha,
            cases.max(1),
            p.map_or_else(|| "n/a".to_owned(), fmt_p)
        )
    };
    if let (true, Sides::Ab(ab)) = (t.q.is_finite(), sides) {
        format!(
            "With {} pairs and a per-process noise of {:.2}% ({} degrees of freedom), the \
             paired change {}.",
            ab.pairs,
            pct(t.noise.exp_m1()),
            t.df,
            tail("cases")
        )
    } else if t.q.is_finite() {
        format!(
            "With {} repeats now, {} in the reference and a per-process noise of {:.2}% \
             ({} degrees of freedom), the change {}.",
            d.repeats_now,
            d.repeats_then,
            pct(t.noise.exp_m1()),
            t.df,
            tail("comparisons, cases x gated statistics")
        )
    } else if let Sides::Ab(ab) = sides {
        format!(
            "With {} pair, the process-to-process noise cannot be measured, so no change can be \
             told from an unlucky process; use `--pairs 2` or more.",
            ab.pairs
        )
    } else {
        "With one repeat on each side and no history, the process-to-process noise cannot be \
         measured, so no change can be told from an unlucky process; run at least 2 repeats."
            .to_owned()
    }
}

/// Sets the verdict and its main sentences from the test.
pub(super) fn judge(d: &mut Decision, t: &Test, policy: &Policy, cases: usize, sides: Sides) {
    let threshold = policy.max_drop_pct.clamp(0.0, 99.9);
    let slower_than_threshold = t.est > -(-threshold / 100.0).ln_1p();
    let faster_than_threshold = -t.est > (threshold / 100.0).ln_1p();
    let beyond_noise_slower = t.est - t.q * t.se > 0.0;
    let beyond_noise_faster = t.est + t.q * t.se < 0.0;
    let (util_then, util_now) = (d.util_then.unwrap_or(0.0), d.util_now.unwrap_or(0.0));
    let (step_then, step_now) = (d.step_then_ms.unwrap_or(0.0), d.step_now_ms.unwrap_or(0.0));
    let drop = drop_of(t.est);
    // An A/B session's "then" is the base and its "now" the head, measured side by side.
    let (then, now, from_to) = match sides {
        Sides::Night => ("then", "now", ""),
        Sides::Ab(_) => ("on the base", "on the head", " from the base to the head"),
    };
    let change = if d.gated_on == GateStat::Stall {
        stall_change(t, step_then, step_now)
    } else if d.floor_changed {
        // Utilisations against different floors are not comparable: speak of step times.
        format!(
            "The step took {:.1}% {}{from_to} ({step_then:.4} ms {then}, {step_now:.4} ms {now})",
            pct(t.est.abs().exp_m1()),
            if t.est >= 0.0 { "longer" } else { "less time" }
        )
    } else if t.est >= 0.0 {
        format!(
            "Utilisation fell {drop:.1}%{from_to} (from {:.1}% to {:.1}%; step {step_then:.4} ms \
             {then}, {step_now:.4} ms {now})",
            pct(util_then),
            pct(util_now)
        )
    } else {
        format!(
            "Utilisation rose {:.1}%{from_to} (from {:.1}% to {:.1}%; step {step_then:.4} ms \
             {then}, {step_now:.4} ms {now})",
            pct((-t.est).exp_m1()),
            pct(util_then),
            pct(util_now)
        )
    };
    let evidence = evidence_sentence(d, t, policy, cases, sides);
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
        match (d.resolution_pct, sides) {
            (Some(r), Sides::Ab(ab)) => d.reasons.push(format!(
                "Only a drop above {r:.1}% could be confirmed with these {} pairs; {}.",
                ab.pairs,
                ab.remedy(threshold)
            )),
            (Some(r), Sides::Night) => d.reasons.push(format!(
                "Only a drop above {r:.1}% could be confirmed with this evidence; re-measure in \
                 fresh processes (confirm) or add repeats."
            )),
            (None, _) => {}
        }
        if let Some(limit) = d.reach.as_ref().and_then(|r| r.limit(threshold)) {
            d.reasons.push(format!("This case {limit}."));
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
        if let Some(limit) = pass_limit(d, t, threshold, sides) {
            d.reasons.push(limit);
        }
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on a missing figure"
)]
mod tests;
