//! A/B on one runner: the base and the head of a pull request measured interleaved in one
//! session, judged on their paired difference. Pure.
//!
//! # The rule (DESIGN.md §7; docs/verdict.md "A/B mode")
//! * **Pairs.** Repeat `i` of the base and repeat `i` of the head are fresh processes started
//!   next to each other, in ABBA order (`AB`, `BA`, `AB`, ...), so both saw the same state of
//!   the host: a night-to-night shift (another runner of the same SKU, a noisy neighbour)
//!   moves both alike, and a slow drift inside the session cancels over each ABBA quadruple.
//! * **Difference.** Each process is reduced to the log of its median step, as in
//!   [`super::decide`]; the evidence is the pairs' differences `head - base`, their level the
//!   Huber M-estimate (a pair with one slow start counts at most 1.5 noise deviations), their
//!   noise Huber's Proposal 2 with `pairs - 1` degrees of freedom, never below the step
//!   jitter's share or `min_noise_pct`.
//! * **The same two levels**: `regressed` needs the drop beyond `max_drop_pct` *and* a
//!   one-sided Student t beyond the per-case level `family_alpha / cases` (grid correction);
//!   a suspect is re-measured in more pairs ([`AbPlan::confirm_pairs`]) before the final call.
//! * **The final call rests on every pair**, the screening pairs too. A case can be
//!   `regressed` only at that last look (every suspect is confirmed), so screening only ever
//!   stops a case early for lack of a suspicion; the false-alarm level stays that of one test
//!   on all the pairs. Unlike the nightly's confirm step (fresh processes only, since its
//!   screening processes share the night's offset with nothing in the reference), the pairs
//!   of one session are alike and independent. Judging the fresh pairs alone threw the
//!   screening pairs away: 55% of 5% drops caught at 4% noise against 95% now
//!   (docs/verdict.md, "A/B mode").

use serde::{Deserialize, Serialize};

use super::decide::{
    AB_MOST_PAIRS, AbPairs, Run, RunProblem, Sides, Test, apply_guard, judge, level,
    noise_variance, pct, summarise, var_factor,
};
use super::{Decision, Evidence, Policy, error_decision};
use crate::case::Verdict;

/// How many pairs an A/B session measures (`[ab]` in the config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AbPlan {
    /// ABBA pairs of fresh processes per case before any confirmation.
    pub pairs: usize,
    /// Further pairs a suspect case gets before its final verdict.
    pub confirm_pairs: usize,
    /// One-sided per-case p-value below which a slower case is a suspect.
    pub confirm_alpha: f64,
}

impl Default for AbPlan {
    /// The plan whose power docs/verdict.md reports (at per-process noise 4%, with drift):
    /// 16 pairs, 50 more for a suspect (one case in ten when nothing changed), so 21 pairs a
    /// case on average; 95% of 5% drops caught, 0.1% false-alarm sessions of 100 cases.
    fn default() -> Self {
        AbPlan {
            pairs: 16,
            confirm_pairs: 50,
            confirm_alpha: 0.1,
        }
    }
}

fn usable(e: &Evidence<'_>) -> Result<Run, Box<Decision>> {
    summarise(e).map_err(|problem| match problem {
        RunProblem::Floor(m) => {
            let mut d = Decision::bare(Verdict::Invalid);
            d.reasons
                .push(format!("This result cannot be judged: {m}."));
            Box::new(d)
        }
        RunProblem::Steps(m) => Box::new(error_decision(&m)),
    })
}

/// The least number of pairs at which a drop of `policy.max_drop_pct` would be beyond the
/// noise at the per-case level, the measured per-pair variance `var` (with `df` degrees of
/// freedom from `n` pairs) held: the standard error falls with the pairs and the t quantile
/// with their degrees of freedom, so the test's reach shrinks monotonically and a bisection
/// finds it. `None` when not even [`AB_MOST_PAIRS`] would.
fn pairs_needed(var: f64, df: usize, n: usize, policy: &Policy, tests: usize) -> Option<usize> {
    let threshold = -(-policy.max_drop_pct.clamp(0.0, 99.9) / 100.0).ln_1p();
    let resolves = |pairs: usize| {
        let se = (var * var_factor(pairs, policy.estimator)).sqrt();
        let df = (df + pairs).saturating_sub(n);
        let q = Test::new(0.0, se, df, se, policy.family_alpha, tests).q;
        q.is_finite() && q * se <= threshold
    };
    if !resolves(AB_MOST_PAIRS) {
        return None;
    }
    let (mut lo, mut hi) = (2, AB_MOST_PAIRS);
    if resolves(lo) {
        return Some(lo);
    }
    // Invariant: `lo` does not resolve the threshold, `hi` does.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if resolves(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Decide an A/B comparison of one case: `base` and `head` hold the same number of repeats in
/// the order they ran (repeat `i` of each forms pair `i`); `screening_pairs` is how many of
/// them the session measured before a suspect's confirming pairs (its `--pairs`), which the
/// reasons' remedy names; `cases_in_grid` sets the per-case level; `gpu_guard` is a reason the
/// GPU state cannot be trusted.
#[must_use]
#[expect(
    clippy::many_single_char_names,
    reason = "the symbols of the paired t test: a, b, n, q, t"
)]
pub fn decide_ab(
    base: &Evidence<'_>,
    head: &Evidence<'_>,
    policy: &Policy,
    screening_pairs: usize,
    cases_in_grid: usize,
    gpu_guard: Option<&str>,
) -> Decision {
    let (a, b) = match (usable(base), usable(head)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(d), _) | (_, Err(d)) => return *d,
    };
    let n = a.units.len().min(b.units.len());
    let diffs = Run {
        units: (0..n).map(|i| b.units[i] - a.units[i]).collect(),
        jitter_var: a.jitter_var + b.jitter_var,
        samples: a.samples + b.samples,
        floor_ms: b.floor_ms,
    };
    let (var, df) = noise_variance(&[&diffs], policy);
    let scale = var.sqrt();
    let est = level(&diffs.units, policy.estimator, scale);
    let se = (var * var_factor(n, policy.estimator)).sqrt();
    // The per-process noise: a difference of two processes has twice its variance.
    let t = Test::new(
        est,
        se,
        df,
        (var / 2.0).sqrt(),
        policy.family_alpha,
        cases_in_grid,
    );
    let base_level = level(&a.units, policy.estimator, t.noise);
    let step_then = base_level.exp();
    let step_now = (base_level + est).exp();
    let mut d = Decision::bare(Verdict::Pass);
    d.step_then_ms = Some(step_then);
    d.step_now_ms = Some(step_now);
    d.util_then = Some(a.floor_ms / step_then);
    d.util_now = Some(b.floor_ms / step_now);
    d.n_then = a.samples;
    d.n_now = b.samples;
    d.repeats_then = a.units.len();
    d.repeats_now = b.units.len();
    t.record(&mut d);
    d.floor_changed = (b.floor_ms / a.floor_ms - 1.0).abs() * 100.0 > policy.floor_tolerance_pct;
    if d.util_now.is_some_and(|u| u > 1.0) {
        d.verdict = Verdict::Invalid;
        d.reasons.push(format!(
            "Utilisation {:.1}% is above 100%: the head's step ({step_now:.4} ms) is faster than \
             the roofline floor ({:.4} ms), which is physically impossible.",
            pct(b.floor_ms / step_now),
            b.floor_ms
        ));
        return d;
    }
    let sides = Sides::Ab(AbPairs {
        pairs: n,
        screening: screening_pairs.min(n),
        needed: pairs_needed(var, df, n, policy, cases_in_grid),
    });
    judge(&mut d, &t, policy, cases_in_grid, sides);
    d.reasons.push(format!(
        "A/B on one runner: {n} pairs of base and head processes interleaved (ABBA); the \
         verdict is on their paired difference, so a host that drifted between or during \
         sessions moves both sides alike."
    ));
    d.suspect = matches!(d.verdict, Verdict::Regressed | Verdict::Inconclusive)
        || (est > 0.0 && t.p_slower.is_some_and(|p| p <= policy.confirm_alpha));
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

    /// `n` processes whose typical steps follow `level(i)`, 20 steps each with a small wobble.
    fn procs(n: usize, level: impl Fn(usize) -> f64) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| {
                (0..20)
                    .map(|j| level(i) * (1.0 + 0.001 * (f64::from(j % 5) - 2.0)))
                    .collect()
            })
            .collect()
    }

    fn ev(r: &[Vec<f64>]) -> Evidence<'_> {
        Evidence {
            repeats_ms: r,
            floor_ms: 3.0,
        }
    }

    /// A host that drifts by +-10% from pair to pair, shared by both processes of a pair.
    fn drift(i: usize) -> f64 {
        6.0 * (1.0 + 0.10 * ((i * 37 % 7) as f64 - 3.0) / 3.0)
    }

    #[test]
    fn host_drift_shared_by_the_pairs_cancels() {
        let base = procs(10, drift);
        let same = procs(10, |i| drift(i) * (1.0 + 0.003 * ((i % 3) as f64 - 1.0)));
        let d = decide_ab(&ev(&base), &ev(&same), &Policy::default(), 10, 10, None);
        assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
        let slow = procs(10, |i| {
            drift(i) * 1.10 * (1.0 + 0.003 * ((i % 3) as f64 - 1.0))
        });
        let d = decide_ab(&ev(&base), &ev(&slow), &Policy::default(), 10, 10, None);
        assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
        assert!((d.drop_pct.unwrap() - 9.09).abs() < 0.5);
        assert!(d.reasons.iter().any(|r| r.contains("A/B on one runner")));
        // Unpaired, the same drift would hide the slowdown in the noise.
        let unpaired = crate::compare::decide(
            Some(&ev(&base)),
            &ev(&slow),
            &[],
            &Policy::default(),
            10,
            None,
        );
        assert_ne!(unpaired.verdict, Verdict::Regressed);
    }

    #[test]
    fn pairs_needed_is_the_least_count_that_resolves_the_threshold() {
        let policy = Policy::default();
        let threshold = -(-policy.max_drop_pct / 100.0).ln_1p();
        // A pair's difference with 10% noise (log), measured over 8 pairs, 100 cases.
        let (var, df, n) = (0.01, 7, 8);
        let needed = pairs_needed(var, df, n, &policy, 100).unwrap();
        let reach = |pairs: usize| {
            let se = (var * var_factor(pairs, policy.estimator)).sqrt();
            Test::new(0.0, se, df + pairs - n, se, policy.family_alpha, 100).q * se
        };
        assert!(reach(needed) <= threshold, "{needed}");
        assert!(reach(needed - 1) > threshold, "{needed}");
        // A host this noisy is beyond any number of pairs.
        assert_eq!(pairs_needed(100.0, df, n, &policy, 100), None);
    }

    #[test]
    fn a_faster_head_is_improved_and_bad_input_is_an_error() {
        let base = procs(6, |_| 6.0);
        let fast = procs(6, |_| 5.4);
        let d = decide_ab(&ev(&base), &ev(&fast), &Policy::default(), 6, 1, None);
        assert_eq!(d.verdict, Verdict::Improved, "{:?}", d.reasons);
        let empty: Vec<Vec<f64>> = vec![vec![]];
        assert_eq!(
            decide_ab(&ev(&base), &ev(&empty), &Policy::default(), 6, 1, None).verdict,
            Verdict::Error
        );
        let guarded = decide_ab(
            &ev(&base),
            &ev(&fast),
            &Policy::default(),
            6,
            1,
            Some("throttled"),
        );
        assert_eq!(guarded.verdict, Verdict::Inconclusive);
    }
}
