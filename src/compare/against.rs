//! Judging a case against its [`Reference`] (the pinned baseline and the nights pooled with
//! it, weighted per process), on every gated statistic, with the machine canary. Pure.
//!
//! The two-level rule itself is [`super::decide`]'s (its module documentation); this file adds
//! what a real machine needs on top:
//! * **Weights**: the reference level is the weighted Huber location of the pooled processes
//!   (a re-measured night's processes weigh `repeats / processes` each), and its variance uses
//!   the effective number of processes `(sum w)^2 / sum w^2`. The noise is pooled over every
//!   process unweighted: each is a full draw of the process-to-process noise.
//! * **Statistics**: each statistic of `Policy::gate_on` is tested with its own threshold at
//!   the level `family_alpha / (cases x statistics)`, so adding a tail statistic keeps the
//!   grid's false-alarm rate. The first statistic supplies the figures; another one can only
//!   make the verdict worse (a stall that leaves the median alone still fails).
//! * **Canary**: when this run's canary moved beyond its noise against the reference's runs
//!   (see [`super::canary_shift`]), a regression is re-tested with the host's shift taken off
//!   and its uncertainty added; if that no longer clears both levels it is `inconclusive`,
//!   with the shift quoted, never `regressed`. A drop well beyond the shift still fails. Either
//!   way the night is marked untrusted: it never pools into a later reference nor promotes.

use super::canary::CanaryShift;
use super::decide::{Reach, Run, Sides, Test, apply_guard, drop_of, judge, noise_variance};
use super::gate_stat::GateStat;
use super::stat::units;
use super::{Canary, Decision, Evidence, Policy, Reference, canary_shift, decide};
use crate::case::Verdict;

/// Huber's tuning constant (noise deviations), as in `decide`.
const HUBER_K: f64 = 1.5;
/// Asymptotic variance of the Huber location at k = 1.5 relative to the mean's.
const HUBER_VAR: f64 = 1.0371;

/// Weighted Huber location of `units` with a known scale, started from the weighted median.
fn weighted_level(units: &[(f64, f64)], policy: &Policy, scale: f64) -> f64 {
    use super::Estimator;
    let total: f64 = units.iter().map(|u| u.1).sum();
    let mean = units.iter().map(|u| u.0 * u.1).sum::<f64>() / total;
    let mut sorted = units.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut acc = 0.0;
    let mut median = sorted[sorted.len() - 1].0;
    for (u, w) in &sorted {
        acc += w;
        if acc >= total / 2.0 {
            median = *u;
            break;
        }
    }
    match policy.estimator {
        Estimator::Mean => mean,
        Estimator::Median => median,
        Estimator::Huber => {
            if scale <= 0.0 || units.len() <= 2 {
                return if units.len() <= 2 { mean } else { median };
            }
            let bound = HUBER_K * scale;
            let mut centre = median;
            for _ in 0..100 {
                let next = centre
                    + units
                        .iter()
                        .map(|(u, w)| w * (u - centre).clamp(-bound, bound))
                        .sum::<f64>()
                        / total;
                let settled = (next - centre).abs() <= 1e-9 * scale;
                centre = next;
                if settled {
                    break;
                }
            }
            centre
        }
    }
}

/// Variance of a weighted level in units of the per-process variance.
fn weighted_var_factor(units: &[(f64, f64)], policy: &Policy) -> f64 {
    use super::Estimator;
    let total: f64 = units.iter().map(|u| u.1).sum();
    let squares: f64 = units.iter().map(|u| u.1 * u.1).sum();
    let n_eff = total * total / squares;
    match policy.estimator {
        Estimator::Mean => 1.0 / n_eff,
        Estimator::Median => (std::f64::consts::PI / (2.0 * n_eff)).min(1.0),
        Estimator::Huber if units.len() <= 2 => 1.0 / n_eff,
        Estimator::Huber => HUBER_VAR / n_eff,
    }
}

/// The variance the nights of the reference add to its level, beyond their processes' noise
/// (log scale): whole nights differ (a quiet host, a lucky first night), and a reference of
/// few nights carries its nights' own offsets. `nights` are the reference's runs with the
/// weight of each of their processes, `var` the per-process noise variance.
///
/// The night-to-night variance `tau^2` is the nights' levels' spread beyond what their
/// processes explain (method of moments, `nights - 1` degrees of freedom), combined with a
/// prior of [`Policy::night_prior`] nights' weight that nights differ as much as processes
/// do (`tau^2 = var`): one night cannot show how much nights differ, so a reference of one
/// night is taken to be one night off by a process's noise, and the prior fades as nights
/// accumulate. The reference level averages its nights with weights `W_j` (the sum of their
/// processes' weights), so their offsets add `tau^2 sum W_j^2 / (sum W_j)^2` (`tau^2 / N` for
/// N equal nights). Tonight's own night offset is left to the machine canary.
fn night_variance(nights: &[(&Run, f64)], var: f64, policy: &Policy) -> f64 {
    let prior = policy.night_prior.max(0.0);
    let n = nights.len();
    if n == 0 || prior + (n as f64 - 1.0) <= 0.0 {
        return 0.0;
    }
    let scale = var.sqrt();
    let levels: Vec<(f64, f64, f64)> = nights
        .iter()
        .map(|(run, w)| {
            let k = run.units.len();
            (
                super::decide::level(&run.units, policy.estimator, scale),
                super::decide::var_factor(k, policy.estimator),
                w * k as f64,
            )
        })
        .collect();
    let measured = if n >= 2 {
        let mean = levels.iter().map(|l| l.0).sum::<f64>() / n as f64;
        let spread = levels.iter().map(|l| (l.0 - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
        let explained = var * levels.iter().map(|l| l.1).sum::<f64>() / n as f64;
        (spread - explained).max(0.0)
    } else {
        0.0
    };
    let tau2 = (prior * var + (n as f64 - 1.0) * measured) / (prior + n as f64 - 1.0);
    let total: f64 = levels.iter().map(|l| l.2).sum();
    let squares: f64 = levels.iter().map(|l| l.2 * l.2).sum();
    if total <= 0.0 {
        return 0.0;
    }
    tau2 * squares / (total * total)
}

/// One statistic's comparison: the test and the decision it yields alone.
struct StatCase {
    stat: GateStat,
    decision: Decision,
}

fn per_stat(
    stat: GateStat,
    r: &Reference<'_>,
    current: &Evidence<'_>,
    shift: Option<&CanaryShift>,
    policy: &Policy,
    tests: usize,
) -> Option<StatCase> {
    let now = units(current, stat).ok()?;
    let base = units(&r.baseline.evidence, stat).ok()?;
    let hist: Vec<(Run, f64)> = r
        .history
        .iter()
        .filter_map(|p| units(&p.evidence, stat).ok().map(|u| (u, p.weight)))
        .collect();
    let mut reference: Vec<(f64, f64)> =
        base.units.iter().map(|&u| (u, r.baseline.weight)).collect();
    if policy.history_for_level {
        for (h, w) in &hist {
            reference.extend(h.units.iter().map(|&u| (u, *w)));
        }
    }
    let mut runs: Vec<&Run> = vec![&now, &base];
    runs.extend(hist.iter().map(|(h, _)| h));
    let (var, df) = noise_variance(&runs, policy);
    let scale = var.sqrt();
    let now_w: Vec<(f64, f64)> = now.units.iter().map(|&u| (u, 1.0)).collect();
    let level_now = weighted_level(&now_w, policy, scale);
    let level_then = weighted_level(&reference, policy, scale);
    let est = level_now - level_then;
    let nights: Vec<(&Run, f64)> = std::iter::once((&base, r.baseline.weight))
        .chain(
            hist.iter()
                .filter(|_| policy.history_for_level)
                .map(|(h, w)| (h, *w)),
        )
        .collect();
    let reference_var =
        var * weighted_var_factor(&reference, policy) + night_variance(&nights, var, policy);
    let se = (var * weighted_var_factor(&now_w, policy) + reference_var).sqrt();
    let t = Test::new(est, se, df, scale, policy.family_alpha, tests);
    let mut d = Decision::bare(Verdict::Pass);
    d.gated_on = stat;
    let (step_then, step_now) = (level_then.exp(), level_now.exp());
    d.step_now_ms = Some(step_now);
    d.step_then_ms = Some(step_then);
    d.util_now = Some(now.floor_ms / step_now);
    d.util_then = Some(base.floor_ms / step_then);
    d.n_now = now.samples;
    d.repeats_now = now.units.len();
    d.n_then = base.samples
        + if policy.history_for_level {
            hist.iter().map(|(h, _)| h.samples).sum()
        } else {
            0
        };
    d.repeats_then = reference.len();
    t.record(&mut d);
    d.floor_changed =
        (now.floor_ms / base.floor_ms - 1.0).abs() * 100.0 > policy.floor_tolerance_pct;
    let stat_policy = stat_threshold(stat, policy);
    let noise = Noise {
        var,
        df,
        reference_var,
    };
    d.reach = reach(&t, noise, now.units.len(), &reference, &stat_policy, tests);
    judge(&mut d, &t, &stat_policy, tests, Sides::Night);
    d.suspect = matches!(d.verdict, Verdict::Regressed | Verdict::Inconclusive)
        || (est > 0.0 && t.p_slower.is_some_and(|p| p <= policy.confirm_alpha));
    if let Some(shift) = shift.filter(|s| s.beyond_noise) {
        if stat == GateStat::Stall {
            // The stall figure is a share of each process's own typical step: a host that is
            // faster or slower throughout moves the steps, not their share lost to stalls.
            d.untrusted = true;
        } else {
            apply_canary(&mut d, &t, shift, &stat_policy, tests);
        }
    }
    if d.floor_changed {
        d.reasons.push(format!(
            "The floor changed from {:.4} ms to {:.4} ms since the baseline (the model or GPU \
             spec was edited), so utilisation then and now are not comparable; the verdict \
             compares step times instead ({step_then:.4} ms then, {step_now:.4} ms now).",
            base.floor_ms, now.floor_ms,
        ));
    }
    if !hist.is_empty() {
        d.reasons.push(format!(
            "Reference: the baseline's {} processes and {} processes from {} earlier nights \
             of the baseline branch (a re-measured night weighs as much as a normal one).",
            base.units.len(),
            reference.len() - base.units.len(),
            hist.len()
        ));
    }
    Some(StatCase { stat, decision: d })
}

/// The policy for one gated statistic (its own threshold).
fn stat_threshold(stat: GateStat, policy: &Policy) -> Policy {
    Policy {
        max_drop_pct: policy.threshold_for(stat),
        ..policy.clone()
    }
}

/// What the deciding processes could resolve (see [`Reach`]): the confirm step's processes
/// when there is one (a confirmed verdict rests on them alone), else tonight's, at the level
/// and degrees of freedom that verdict would have. `reference_var` is the variance of the
/// reference's level, which no number of processes tonight reduces.
fn reach(
    t: &Test,
    noise: Noise,
    now: usize,
    reference: &[(f64, f64)],
    policy: &Policy,
    tests: usize,
) -> Option<Reach> {
    let Noise {
        var,
        df,
        reference_var,
    } = noise;
    if !t.q.is_finite() || var <= 0.0 {
        return None;
    }
    let by_confirm = policy.confirm_repeats > 0;
    let deciding = if by_confirm {
        policy.confirm_repeats
    } else {
        now
    }
    .max(1);
    let equal = |n: usize| vec![(0.0, 1.0); n];
    let factor = |n: usize| var * weighted_var_factor(&equal(n), policy);
    let se = (factor(deciding) + reference_var).sqrt();
    let df = (df + deciding).saturating_sub(now);
    let q = Test::new(0.0, se, df, var.sqrt(), policy.family_alpha, tests).q;
    if !q.is_finite() {
        return None;
    }
    // The standard error at which a drop of the threshold is just beyond the noise.
    let threshold = policy.max_drop_pct.clamp(0.0, 99.9);
    let se_needed = -(-threshold / 100.0).ln_1p() / q;
    let room = se_needed * se_needed - reference_var;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive count of processes, far below usize::MAX"
    )]
    let processes_needed = (room > 0.0).then(|| {
        // The processes' share falls as 1/n: the least n that fits in the room left.
        let n = deciding.max(3);
        ((factor(n) * n as f64 / room).ceil().min(1e9) as usize).max(2)
    });
    Some(Reach {
        confirmed_pct: drop_of(q * se),
        deciding_processes: deciding,
        by_confirm,
        reference_processes: reference.len(),
        processes_needed,
        sized_at_most: policy.confirm_sized_at_most.filter(|_| by_confirm),
    })
}

/// The noise figures a test was made with: the per-process variance and its degrees of
/// freedom, and the variance of the reference's level.
#[derive(Debug, Clone, Copy)]
struct Noise {
    var: f64,
    df: usize,
    reference_var: f64,
}

/// Re-tests the verdict with the host's shift taken off. A host that moved beyond the canary's
/// noise allows two readings of the night: the step time as measured, and the step time scaled
/// by the host's shift. When they agree the verdict stands (with a note); when they do not, the
/// night cannot tell what the code did and the case is `inconclusive`, in either direction: a
/// slower host must not fail good code, and a faster host must not hide slower code. The
/// verdict is never replaced by the corrected reading, because the canary times a memory stream
/// and a spin loop, and a case's sensitivity to the host is not the canary's (a GPU-bound case
/// barely moves when the host does).
fn apply_canary(d: &mut Decision, t: &Test, shift: &CanaryShift, policy: &Policy, tests: usize) {
    d.untrusted = true;
    let host = shift.describe();
    let adjusted = Test {
        est: t.est - shift.shift,
        se: (t.se * t.se + shift.se * shift.se).sqrt(),
        ..*t
    };
    let mut again = d.clone();
    again.reasons.clear();
    judge(&mut again, &adjusted, policy, tests, Sides::Night);
    let beyond = drop_of(adjusted.est);
    d.host_adjusted_drop_pct = Some(beyond);
    let change = if beyond >= 0.0 {
        format!("a drop of {beyond:.1}%")
    } else {
        format!("a rise of {:.1}%", -beyond)
    };
    if again.verdict == d.verdict {
        if d.verdict == Verdict::Pass {
            d.reasons.push(format!(
                "The machine moved ({host}); with the host's shift taken off the change is \
                 {change}, still a pass. This night is not pooled into later references."
            ));
        } else {
            d.reasons.insert(
                1,
                format!(
                    "The machine moved ({host}), but the change is well beyond that: {change} \
                     remains after taking the host's shift off, beyond the threshold and the \
                     noise."
                ),
            );
        }
        return;
    }
    let was = d.verdict;
    d.verdict = Verdict::Inconclusive;
    d.suspect = false;
    d.reasons.insert(
        0,
        format!(
            "Host changed: {host}. As measured the case is {was}; with the host's shift taken \
             off the change is {change}, which would be {}. This night cannot tell which the \
             code did: re-run it on a steady host.",
            again.verdict
        ),
    );
}

fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Improved => 0,
        Verdict::Pass => 1,
        Verdict::Inconclusive => 2,
        Verdict::Regressed => 3,
        _ => 4,
    }
}

/// Decide one case against its reference; `canary` is this run's machine canary, compared with
/// the reference's runs' canaries. See [`decide`] for the rule and the other arguments.
#[must_use]
pub fn decide_against(
    reference: Option<&Reference<'_>>,
    current: &Evidence<'_>,
    canary: Option<&Canary>,
    policy: &Policy,
    cases_in_grid: usize,
    gpu_guard: Option<&str>,
) -> Decision {
    // The checks that need no reference (error, invalid, new) are `decide`'s.
    let alone = decide(None, current, &[], policy, cases_in_grid, gpu_guard);
    let Some(r) = reference else { return alone };
    if matches!(alone.verdict, Verdict::Invalid | Verdict::Error) {
        return alone;
    }
    if let Err(problem) = units(&r.baseline.evidence, GateStat::Median) {
        let mut d = alone;
        d.reasons.insert(
            0,
            format!(
                "The baseline cannot be used ({}), so this result is judged as new.",
                problem.message()
            ),
        );
        return d;
    }
    let shift = canary.and_then(|c| canary_shift(c, &r.canaries));
    let stats = policy.stats();
    let tests = cases_in_grid.max(1) * stats.len();
    let mut cases: Vec<StatCase> = stats
        .iter()
        .filter_map(|&s| per_stat(s, r, current, shift.as_ref(), policy, tests))
        .collect();
    if cases.is_empty() {
        return alone;
    }
    let primary = cases.remove(0);
    let mut d = primary.decision;
    d.gated_on = primary.stat;
    for other in cases {
        let o = other.decision;
        d.suspect |= o.suspect;
        d.untrusted |= o.untrusted;
        // Worse only: a tail statistic that did not move (`pass`) leaves an improvement of
        // the first one standing.
        if rank(o.verdict) > rank(d.verdict) && rank(o.verdict) > rank(Verdict::Pass) {
            d.verdict = o.verdict;
            d.decided_by = Some(other.stat);
            if let Some(first) = o.reasons.first() {
                let which = if other.stat == GateStat::Stall {
                    "stall figure".to_owned()
                } else {
                    format!("{} step", other.stat)
                };
                d.reasons.insert(0, format!("The {which} decides: {first}"));
            }
        }
        d.tails.push(super::TailDecision {
            stat: other.stat,
            verdict: o.verdict,
            threshold_pct: policy.threshold_for(other.stat),
            // The stall figure is a share of the typical step, not a step time.
            step_then_ms: o.step_then_ms.filter(|_| other.stat != GateStat::Stall),
            step_now_ms: o.step_now_ms.filter(|_| other.stat != GateStat::Stall),
            drop_pct: o.drop_pct,
            interval_pct: o.interval_pct,
            p_value: o.p_value,
        });
    }
    d.canary = shift;
    apply_guard(&mut d, gpu_guard);
    d
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on a missing figure"
)]
mod tests {
    use super::*;
    use crate::compare::{Night, reference};

    /// `n` processes at the given levels (ms), 100 steps each with a small wobble; every
    /// `stall`-th step takes 4x when `stall` is above zero.
    fn procs(levels: &[f64], stall: usize) -> Vec<Vec<f64>> {
        levels
            .iter()
            .map(|&l| {
                (0..100)
                    .map(|j| {
                        let v = l * (1.0 + 0.002 * ((j * 7 % 5) as f64 - 2.0));
                        if stall > 0 && j % stall == 0 {
                            4.0 * v
                        } else {
                            v
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn night(r: &[Vec<f64>]) -> Night<'_> {
        Night {
            evidence: Evidence {
                repeats_ms: r,
                floor_ms: 3.0,
            },
            eligible: true,
            nominal_repeats: 3,
            canary: None,
        }
    }

    fn ev(r: &[Vec<f64>]) -> Evidence<'_> {
        Evidence {
            repeats_ms: r,
            floor_ms: 3.0,
        }
    }

    #[test]
    fn a_lucky_first_baseline_stops_deciding_once_unchanged_nights_pool_in() {
        let lucky = procs(&[5.80, 5.82, 5.78], 0);
        let nights: Vec<Vec<Vec<f64>>> = (0..8)
            .map(|i| procs(&[6.0 + 0.01 * f64::from(i % 3), 6.03, 5.97], 0))
            .collect();
        let now = procs(&[6.02, 5.99, 6.01], 0);
        let policy = Policy::default();
        let alone = reference(night(&lucky), &[], 10);
        let d = decide_against(Some(&alone), &ev(&now), None, &policy, 100, None);
        assert!(d.drop_pct.unwrap() > 3.0, "{:?}", d.reasons);
        let since: Vec<Night<'_>> = nights.iter().map(|n| night(n)).collect();
        let pooled = reference(night(&lucky), &since, 10);
        let d = decide_against(Some(&pooled), &ev(&now), None, &policy, 100, None);
        assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
        assert!(d.drop_pct.unwrap() < 1.0, "{:?}", d.drop_pct);
        assert_eq!(d.repeats_then, 27);
    }

    #[test]
    fn one_lucky_night_alone_cannot_fail_a_case_but_a_converged_reference_can() {
        // The pinned first night happened to be 3.5% fast; tonight's 9 fresh processes agree
        // with each other to 1.2%. Against that one night the difference is "beyond the
        // processes' noise", yet nothing shows how much whole nights differ.
        let lucky = procs(&[5.80, 5.87, 5.73], 0);
        let spread = [-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0];
        let now: Vec<f64> = spread.iter().map(|s| 6.02 * (1.0 + 0.0085 * s)).collect();
        let now = procs(&now, 0);
        let pinned = reference(night(&lucky), &[], 10);
        let nights_equal = Policy {
            night_prior: 0.0,
            ..Policy::default()
        };
        let d = decide_against(Some(&pinned), &ev(&now), None, &nights_equal, 1, None);
        assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
        let d = decide_against(Some(&pinned), &ev(&now), None, &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        // Ten more nights that agree with one another: the prior has faded, and a 5% drop
        // against them fails.
        let agreeing: Vec<Vec<Vec<f64>>> = (0..10)
            .map(|i| procs(&[6.0 + 0.02 * f64::from(i % 3 - 1), 6.07, 5.93], 0))
            .collect();
        let since: Vec<Night<'_>> = agreeing.iter().map(|n| night(n)).collect();
        let converged = reference(night(&lucky), &since, 10);
        let slower: Vec<f64> = spread.iter().map(|s| 6.32 * (1.0 + 0.0085 * s)).collect();
        let slower = procs(&slower, 0);
        let d = decide_against(
            Some(&converged),
            &ev(&slower),
            None,
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
    }

    #[test]
    fn a_re_measured_night_weighs_as_much_as_a_normal_one() {
        let base = procs(&[6.0, 6.0, 6.0], 0);
        // One slow-looking night re-measured to 12 processes at +6%.
        let confirmed = procs(&[6.36; 12], 0);
        let normal = procs(&[6.0, 6.01, 5.99], 0);
        let since = [night(&confirmed), night(&normal)];
        let r = reference(night(&base), &since, 10);
        let now = procs(&[6.0, 6.0, 6.0], 0);
        let d = decide_against(Some(&r), &ev(&now), None, &Policy::default(), 1, None);
        // Three nights of equal weight: the reference sits about 2% above 6.0, not 4.4%.
        let then = d.step_then_ms.unwrap();
        assert!((then / 6.0 - 1.0) < 0.03, "reference {then}");
    }

    #[test]
    fn a_tail_stall_fails_through_the_stall_figure_while_the_median_passes() {
        let base = procs(&[6.0, 6.01, 5.99], 0);
        let history: Vec<Vec<Vec<f64>>> = (0..5).map(|_| procs(&[6.0, 6.02, 5.98], 0)).collect();
        let since: Vec<Night<'_>> = history.iter().map(|n| night(n)).collect();
        let r = reference(night(&base), &since, 10);
        let stalled = procs(&[6.0, 6.01, 5.99], 20);
        let median_only = Policy {
            gate_on: vec![GateStat::Median],
            ..Policy::default()
        };
        let d = decide_against(Some(&r), &ev(&stalled), None, &median_only, 100, None);
        assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
        let d = decide_against(Some(&r), &ev(&stalled), None, &Policy::default(), 100, None);
        assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
        assert!(
            d.reasons[0].starts_with("The stall figure decides: The time lost to stalls"),
            "{:?}",
            d.reasons
        );
        assert_eq!(d.tails[0].stat, GateStat::Stall);
        // Five stalls of three medians each per 100 steps: 15% of the throughput.
        assert!(d.tails[0].drop_pct.unwrap() > 12.0, "{:?}", d.tails[0]);
        assert_eq!(d.tails[0].step_now_ms, None, "not a step time");
        // The mean sees it too, with less of it (its trim leaves out two of the stalls).
        let with_mean = Policy {
            gate_on: vec![GateStat::Median, GateStat::Mean],
            ..Policy::default()
        };
        let m = decide_against(Some(&r), &ev(&stalled), None, &with_mean, 100, None);
        assert_eq!(m.verdict, Verdict::Regressed, "{:?}", m.reasons);
        assert!(m.reasons[0].starts_with("The mean step decides"));
        assert!(m.tails[0].drop_pct.unwrap() < d.tails[0].drop_pct.unwrap());
        // The figures shown stay the median's.
        assert_eq!(d.gated_on, GateStat::Median);
        assert!(d.drop_pct.unwrap().abs() < 1.0);
    }

    fn canary(scale: f64) -> Canary {
        Canary {
            figures: [(
                "stream_ms".to_owned(),
                [1.0, 1.004, 0.996, 1.002, 0.998]
                    .iter()
                    .map(|f| 12.0 * scale * f)
                    .collect(),
            )]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn a_slower_host_turns_a_drop_of_its_size_inconclusive_but_not_a_larger_one() {
        let base = procs(&[6.0, 6.01, 5.99], 0);
        let then_canary = canary(1.0);
        let mut pinned = night(&base);
        pinned.canary = Some(&then_canary);
        let r = reference(pinned, &[], 10);
        let busy = canary(1.11);
        let slow = procs(&[6.66, 6.67, 6.65], 0);
        let d = decide_against(
            Some(&r),
            &ev(&slow),
            Some(&busy),
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        assert!(d.untrusted && !d.suspect);
        assert!(
            d.reasons[0].contains("host 11.0% slower"),
            "{:?}",
            d.reasons
        );
        assert!(d.canary.as_ref().is_some_and(|c| c.beyond_noise));
        assert!(!crate::compare::promotable(&d) && !crate::compare::eligible(&d));
        // Without the canary the same numbers regress.
        let d = decide_against(Some(&r), &ev(&slow), None, &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::Regressed);
        // 40% slower on an 11% slower host: the code lost far more than the machine.
        let far = procs(&[8.4, 8.41, 8.39], 0);
        let d = decide_against(
            Some(&r),
            &ev(&far),
            Some(&busy),
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
        assert!(d.reasons.iter().any(|r| r.contains("well beyond that")));
    }

    #[test]
    fn a_faster_host_that_hides_a_slower_code_makes_the_verdict_inconclusive_not_a_pass() {
        let base = procs(&[6.0, 6.01, 5.99], 0);
        let then_canary = canary(1.0);
        let mut pinned = night(&base);
        pinned.canary = Some(&then_canary);
        let r = reference(pinned, &[], 10);
        // The host is 40% faster tonight and the code does 60% more work: the step time
        // barely moves (6.0 -> 5.88 ms), so alone it passes.
        let quick = canary(0.6);
        let masked = procs(&[5.88, 5.89, 5.87], 0);
        let alone = decide_against(Some(&r), &ev(&masked), None, &Policy::default(), 1, None);
        assert_eq!(alone.verdict, Verdict::Pass, "{:?}", alone.reasons);
        let d = decide_against(
            Some(&r),
            &ev(&masked),
            Some(&quick),
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        assert!(d.untrusted && !d.suspect);
        assert!(
            d.reasons[0].starts_with("Host changed: host 40.0% faster"),
            "{:?}",
            d.reasons
        );
        assert!(d.reasons[0].contains("a drop of 38.8%"), "{:?}", d.reasons);
        assert!((d.host_adjusted_drop_pct.unwrap() - 38.8).abs() < 0.1);
        // A host that moved while the verdict holds with its shift taken off keeps the verdict.
        let steady = procs(&[3.6, 3.61, 3.59], 0);
        let d = decide_against(
            Some(&r),
            &ev(&steady),
            Some(&quick),
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        let same = procs(&[3.3, 3.31, 3.29], 0);
        let d = decide_against(
            Some(&r),
            &ev(&same),
            Some(&quick),
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Improved, "{:?}", d.reasons);
        assert!(
            d.reasons.iter().any(|r| r.contains("well beyond that")),
            "{:?}",
            d.reasons
        );
    }

    /// `n` processes at 6 ms with a per-process noise of about 2% (fixed normal scores,
    /// starting at `from`).
    fn noisy(n: usize, from: usize) -> Vec<Vec<f64>> {
        const Z: [f64; 8] = [-1.15, 0.32, 0.89, -0.49, 1.53, -0.16, 0.0, -0.89];
        let levels: Vec<f64> = (0..n)
            .map(|i| 6.0 * (1.0 + 0.02 * Z[(from + i) % Z.len()]))
            .collect();
        procs(&levels, 0)
    }

    #[test]
    fn a_thin_reference_says_it_cannot_resolve_the_threshold_and_a_pooled_one_does_not() {
        // After `baseline accept`: the reference is one night of 3 processes at 2% noise, in a
        // grid of 100 cases.
        let base = noisy(3, 0);
        let r = reference(night(&base), &[], 10);
        let now = noisy(3, 3);
        let d = decide_against(Some(&r), &ev(&now), None, &Policy::default(), 100, None);
        let reach = d.reach.clone().unwrap();
        assert!(
            reach.by_confirm && reach.deciding_processes == 12,
            "{reach:?}"
        );
        assert_eq!(reach.reference_processes, 3);
        let threshold = Policy::default().max_drop_pct;
        let limit = reach
            .limit(threshold)
            .expect("a 3-process reference cannot resolve the threshold");
        assert!(reach.confirmed_pct > threshold, "{reach:?}");
        assert!(
            limit.contains("the reference is too thin (3 processes)")
                || limit.contains("[gate] confirm_repeats = "),
            "{limit}"
        );
        assert!(
            d.reasons
                .iter()
                .any(|r| r.starts_with("This case cannot resolve its 3% threshold")),
            "{:?}",
            d.reasons
        );
        // Thirty nights pooled: the confirm step's 12 processes resolve 5%, so nothing is
        // said, although tonight's first 3 processes alone could not confirm a 5% drop.
        let nights: Vec<Vec<Vec<f64>>> = (0..30).map(|i| noisy(3, i * 3)).collect();
        let since: Vec<Night<'_>> = nights.iter().map(|n| night(n)).collect();
        let r = reference(night(&base), &since, 30);
        let d = decide_against(Some(&r), &ev(&now), None, &Policy::default(), 100, None);
        let reach = d.reach.clone().unwrap();
        assert!(d.resolution_pct.unwrap() > threshold, "{d:?}");
        assert!(reach.confirmed_pct < threshold, "{reach:?}");
        assert_eq!(reach.limit(threshold), None);
        assert!(
            !d.reasons.iter().any(|r| r.contains("cannot resolve")),
            "{:?}",
            d.reasons
        );
    }

    #[test]
    fn a_confirm_step_a_budgeted_night_sized_is_named_with_its_size_not_confirm_repeats() {
        // Ten nights of 3 processes at 2% noise; the night asked this case for 4 fresh
        // processes (its stored noise), at most 30 of any case.
        let nights: Vec<Vec<Vec<f64>>> = (0..10).map(|i| noisy(3, i * 3)).collect();
        let since: Vec<Night<'_>> = nights[1..].iter().map(|n| night(n)).collect();
        let r = reference(night(&nights[0]), &since, 10);
        let policy = Policy {
            confirm_repeats: 4,
            confirm_sized_at_most: Some(30),
            ..Policy::default()
        };
        let d = decide_against(Some(&r), &ev(&noisy(3, 5)), None, &policy, 100, None);
        let reach = d.reach.clone().expect("reach");
        assert_eq!(
            (reach.deciding_processes, reach.sized_at_most),
            (4, Some(30))
        );
        let limit = reach.limit(3.0).expect("4 processes cannot resolve 3%");
        assert!(
            limit.contains("with the confirm step's 4 processes against the reference's 30")
                && limit.contains(
                    "fresh processes would resolve it (a budgeted night sizes its confirm step \
                     from the case's stored noise, and asked for 4)"
                )
                && !limit.contains("[gate] confirm_repeats"),
            "{limit}"
        );
        // More than the night ever asks: the configured confirm step is what would do it.
        let capped = Reach {
            deciding_processes: 30,
            processes_needed: Some(41),
            ..reach
        };
        let limit = capped.limit(3.0).expect("limit");
        assert!(
            limit.starts_with(
                "cannot resolve its 3% threshold: with the confirm step's 30 processes against \
                 the reference's 30 only a drop above "
            ) && limit.ends_with(
                "% can be confirmed; 41 fresh processes would resolve it, more than the 30 a \
                 budgeted night's confirm step takes (it sizes the step from the case's stored \
                 noise); a night without a budget takes [gate] confirm_repeats = 41"
            ),
            "{limit}"
        );
        // The figure reads above the threshold it is above: 3.04%, not 3.0%.
        for (pct, shown) in [
            (3.04, "above 3.04%"),
            (3.4, "above 3.4%"),
            (3.0004, "above 3.000%"),
        ] {
            let r = Reach {
                confirmed_pct: pct,
                ..capped.clone()
            };
            let limit = r.limit(3.0).expect("limit");
            assert!(limit.contains(shown), "{limit}");
        }
    }

    #[test]
    fn no_reference_is_new_and_bad_input_is_judged_as_decide_does() {
        let now = procs(&[6.0, 6.0], 0);
        let d = decide_against(None, &ev(&now), None, &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::New);
        let empty: Vec<Vec<f64>> = vec![vec![]];
        let base = procs(&[6.0], 0);
        let r = reference(night(&base), &[], 10);
        let d = decide_against(Some(&r), &ev(&empty), None, &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::Error);
        let bad_base: Vec<Vec<f64>> = vec![vec![f64::NAN]];
        let r = reference(night(&bad_base), &[], 10);
        let d = decide_against(Some(&r), &ev(&now), None, &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::New);
        assert!(d.reasons[0].contains("baseline cannot be used"));
    }
}
