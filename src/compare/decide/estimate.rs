//! The statistics under [`decide`](super::decide): one run reduced to per-repeat log medians,
//! the location estimators (median, Huber) and the pooled noise variance. Pure.

use super::Estimator;
use super::Evidence;
use super::Policy;
use std::f64::consts::FRAC_PI_2;
use std::f64::consts::PI;

/// One run reduced to what the test needs.
pub(in crate::compare) struct Run {
    /// Natural log of each non-empty repeat's median step time.
    pub(in crate::compare) units: Vec<f64>,
    /// Mean over repeats of the variance of a repeat's log median implied by its step jitter.
    pub(in crate::compare) jitter_var: f64,
    pub(in crate::compare) samples: usize,
    pub(in crate::compare) floor_ms: f64,
}

pub(in crate::compare) enum RunProblem {
    /// The floor is not a positive number: the result is invalid.
    Floor(String),
    /// No usable steps: the harness failed.
    Steps(String),
}

impl RunProblem {
    pub(in crate::compare) fn message(&self) -> &str {
        match self {
            RunProblem::Floor(m) | RunProblem::Steps(m) => m,
        }
    }
}

/// Median of a non-empty slice, reordering it.
pub(in crate::compare) fn median_mut(xs: &mut [f64]) -> f64 {
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

pub(in crate::compare) fn summarise(e: &Evidence<'_>) -> Result<Run, RunProblem> {
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
pub(in crate::compare) const HUBER_K: f64 = 1.5;
/// `E[psi_k(Z)^2]` for a standard normal Z: `(2 Phi(k) - 1) - 2 k phi(k) + 2 k^2 (1 - Phi(k))`.
/// Dividing by it makes the Proposal 2 scale consistent for Gaussian noise (Huber, Robust
/// Statistics, 1981, §6.4).
pub(in crate::compare) fn huber_beta(k: f64) -> f64 {
    let phi = (-0.5 * k * k).exp() / (2.0 * PI).sqrt();
    let upper = 0.5 * statrs::function::erf::erfc(k / std::f64::consts::SQRT_2);
    (1.0 - 2.0 * upper) - 2.0 * k * phi + 2.0 * k * k * upper
}

/// The expected clipped square residual of one run of `n` repeats, in units of the noise
/// variance: its `n - 1` degrees of freedom, each a residual of variance `(n - 1) / n`, clipped
/// at `HUBER_K` noise deviations, i.e. at `HUBER_K * sqrt(n / (n - 1))` residual deviations.
/// Without this small-run correction three repeats would overstate the noise by about 13%.
pub(in crate::compare) fn huber_expected_psi2(n: usize) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let nf = n as f64;
    (nf - 1.0) * huber_beta(HUBER_K * (nf / (nf - 1.0)).sqrt())
}
/// Asymptotic variance of the Huber location at k = 1.5 relative to the mean's:
/// E[psi^2] / P(|Z| < k)^2 = 0.77848 / 0.86639^2.
pub(in crate::compare) const HUBER_VAR: f64 = 1.0371;

/// Huber location of `units` with a known scale, started from the median.
pub(in crate::compare) fn huber_location(units: &[f64], scale: f64) -> f64 {
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
pub(in crate::compare) fn level(units: &[f64], estimator: Estimator, scale: f64) -> f64 {
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
pub(in crate::compare) fn var_factor(n: usize, estimator: Estimator) -> f64 {
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
pub(in crate::compare) fn pooled_variance(runs: &[&Run], estimator: Estimator) -> (f64, usize) {
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
pub(in crate::compare) fn noise_variance(runs: &[&Run], policy: &Policy) -> (f64, usize) {
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
