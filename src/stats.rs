//! Per-case statistics over step times: the pooled summary of all counted samples (median,
//! quantiles, spread), and warnings when a case does not look steady (a slow start inside a
//! repeat, or repeats that disagree more than their own noise explains). Pure.
//!
//! Samples are step times in milliseconds, finite and above zero (the protocol parser rejects
//! anything else); they are ordered with `f64::total_cmp`, so a stray NaN sorts last rather than
//! panicking.

use std::fmt;

pub mod tail;

use serde::{Deserialize, Serialize};

/// The statistics of one case over all its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Counted samples over all repeats.
    pub n: usize,
    /// Repeats that produced at least one sample.
    pub repeats: usize,
    /// Median of all counted samples pooled (type 7 quantile at 0.5).
    pub median_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Median absolute deviation from the pooled median, unscaled (multiply by 1.4826 for a
    /// normal-consistent estimate of the standard deviation).
    pub mad_ms: f64,
    /// Coefficient of variation: sample standard deviation (n - 1) / mean; 0 when n = 1.
    pub cv: f64,
    /// Median of each non-empty repeat, in order.
    pub repeat_medians_ms: Vec<f64>,
    /// (max - min) / median of the repeat medians, in percent; 0 with one repeat.
    pub repeat_spread_pct: f64,
}

/// Median of `xs` (any order); `None` when empty.
#[must_use]
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(quantile(&sorted, 0.5))
}

/// The `q` quantile of ascending `sorted` data, by linear interpolation between order statistics
/// (Hyndman & Fan 1996, definition 7; the default of R, `NumPy` and Excel's `PERCENTILE.INC`):
/// with h = (n - 1) q, the result is x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]),
/// 0-based. `q` is clamped to [0, 1]. Returns NaN for empty data or a NaN `q`. The result is
/// clamped between its two neighbours so rounding can never leave [min, max].
#[must_use]
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let Some(&last) = sorted.last() else {
        return f64::NAN;
    };
    if q.is_nan() {
        return f64::NAN;
    }
    let position = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let below = position.floor();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "the position is in [0, n - 1], so its floor is a valid index"
    )]
    let index = below as usize;
    if index + 1 >= sorted.len() {
        return last;
    }
    let (lower, upper) = (sorted[index], sorted[index + 1]);
    let fraction = position - below;
    if fraction == 0.0 {
        return lower;
    }
    (lower + fraction * (upper - lower)).clamp(lower.min(upper), lower.max(upper))
}

/// Sample standard deviation (n - 1) about `mean`; 0 for fewer than two samples.
fn std_dev(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// Unscaled median absolute deviation of ascending `sorted` about its median.
fn mad_sorted(sorted: &[f64]) -> f64 {
    let center = quantile(sorted, 0.5);
    let mut deviations: Vec<f64> = sorted.iter().map(|x| (x - center).abs()).collect();
    deviations.sort_by(f64::total_cmp);
    quantile(&deviations, 0.5)
}

fn sorted_copy(xs: &[f64]) -> Vec<f64> {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// Summarises a case from the counted samples of each repeat. Empty repeats are skipped;
/// `None` when there are no samples at all. Every figure is computed from sorted data, so the
/// result does not depend on the order of samples within a repeat.
#[must_use]
pub fn summarise(repeats_ms: &[Vec<f64>]) -> Option<Summary> {
    let repeats: Vec<&Vec<f64>> = repeats_ms.iter().filter(|r| !r.is_empty()).collect();
    let pooled = sorted_copy(
        &repeats
            .iter()
            .flat_map(|r| r.iter().copied())
            .collect::<Vec<_>>(),
    );
    let (&min_ms, &max_ms) = (pooled.first()?, pooled.last()?);
    let n = pooled.len();
    let mean_ms = pooled.iter().sum::<f64>() / n as f64;
    let sd = std_dev(&pooled, mean_ms);
    let cv = if mean_ms > 0.0 { sd / mean_ms } else { 0.0 };
    let repeat_medians_ms: Vec<f64> = repeats
        .iter()
        .map(|r| quantile(&sorted_copy(r), 0.5))
        .collect();
    let repeat_spread_pct = spread_pct(&repeat_medians_ms);
    Some(Summary {
        n,
        repeats: repeats.len(),
        median_ms: quantile(&pooled, 0.5),
        p90_ms: quantile(&pooled, 0.90),
        p99_ms: quantile(&pooled, 0.99),
        mean_ms,
        min_ms,
        max_ms,
        mad_ms: mad_sorted(&pooled),
        cv,
        repeat_medians_ms,
        repeat_spread_pct,
    })
}

/// (max - min) / median in percent; 0 for fewer than two values or a non-positive median.
fn spread_pct(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let sorted = sorted_copy(values);
    let center = quantile(&sorted, 0.5);
    if center <= 0.0 {
        return 0.0;
    }
    (sorted[sorted.len() - 1] - sorted[0]) / center * 100.0
}

/// A sign that the steps were not steady, with the fix. Advisory: it never changes a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SteadyStateWarning {
    /// The first counted steps of a repeat were clearly slower than the rest.
    SlowStart {
        /// 1-based position of the repeat in the input.
        repeat: u32,
        first_median_ms: f64,
        rest_median_ms: f64,
    },
    /// The repeat medians differ by more than the noise within the repeats explains.
    ProcessVariance {
        /// Spread of the repeat medians: (max - min) / median, percent.
        between_pct: f64,
        /// The spread the within-repeat noise alone would produce, percent of the median.
        within_pct: f64,
    },
}

impl fmt::Display for SteadyStateWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SteadyStateWarning::SlowStart {
                repeat,
                first_median_ms,
                rest_median_ms,
            } => write!(
                f,
                "repeat {repeat}: the first counted steps took {first_median_ms:.3} ms (median) \
                 against {rest_median_ms:.3} ms for the rest (+{:.1}%), so the harness was not \
                 yet steady; raise the suite's warmup_steps",
                (first_median_ms / rest_median_ms - 1.0) * 100.0
            ),
            SteadyStateWarning::ProcessVariance {
                between_pct,
                within_pct,
            } => write!(
                f,
                "the repeats' medians differ by {between_pct:.1}% while the noise within a repeat \
                 explains about {within_pct:.2}%: something fixed at process start varies \
                 (memory placement, kernel choice, clocks); raise the suite's repeats so the \
                 median over processes can be trusted"
            ),
        }
    }
}

/// Scales a MAD to a standard deviation for normal data: 1 / Φ⁻¹(3/4).
const MAD_TO_SIGMA: f64 = 1.4826;
/// Standard error of a sample median for normal data is sqrt(π/2) σ / sqrt(n) (asymptotic).
const MEDIAN_SE_FACTOR: f64 = 1.253_314;
/// A repeat needs this many counted steps before its first steps are judged.
const SLOW_START_MIN_STEPS: usize = 10;
/// The first tenth of a repeat's counted steps (at least `SLOW_START_MIN_HEAD`) is its head.
const SLOW_START_HEAD_FRACTION: f64 = 0.10;
const SLOW_START_MIN_HEAD: usize = 3;
/// The head must be this much slower than the rest (5%) ...
const SLOW_START_MIN_EXCESS: f64 = 0.05;
/// ... and beyond this many standard deviations of a single steady step.
const NOISE_SIGMAS: f64 = 3.0;
/// Repeat medians must spread over this many times the range the noise explains ...
const PROCESS_VARIANCE_FACTOR: f64 = 3.0;
/// ... and over this much in absolute terms (percent of the median).
const PROCESS_VARIANCE_MIN_PCT: f64 = 1.0;
/// A repeat needs this many steps to estimate its noise.
const PROCESS_VARIANCE_MIN_STEPS: usize = 3;

/// Expected range of `r` independent standard normal values (the d2 constant of control
/// charts; ASTM STP 15D / Montgomery, "Introduction to Statistical Quality Control", table VI).
/// Beyond 25 the value for 25 is used, which understates the range and so warns sooner.
fn d2(r: usize) -> f64 {
    const TABLE: [f64; 24] = [
        1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078, 3.173, 3.258, 3.336, 3.407,
        3.472, 3.532, 3.588, 3.640, 3.689, 3.735, 3.778, 3.819, 3.858, 3.895, 3.931,
    ];
    match r {
        0 | 1 => 0.0,
        r => TABLE[(r - 2).min(TABLE.len() - 1)],
    }
}

/// Checks whether the counted steps look steady. Two robust rules, both tuned to stay quiet on
/// noise (a warning that fires every night is ignored):
///
/// - **Slow start**, per repeat with at least 10 counted steps: the head is the first 10% of
///   the steps (at least 3), the rest is everything after. Warn when the head's median exceeds
///   the rest's median by more than 5% *and* by more than 3 standard deviations of a single
///   steady step (1.4826 x the rest's MAD). A median of at least 3 steps needs most of the head
///   to be slow, so one hiccup does not fire; with zero noise the 5% floor alone decides.
/// - **Process variance**, over the repeats with at least 3 steps (two or more of them): the
///   spread of their medians (max - min) is compared with what the within-repeat noise explains.
///   Each repeat's median has a standard error of about sqrt(π/2) σᵢ / sqrt(nᵢ) with
///   σᵢ = 1.4826 `MADᵢ`; their root-mean-square, times d2(r) (the expected range of r normal
///   values), is the expected spread. Warn when the observed spread is more than 3 times that
///   and more than 1% of the median of the repeat medians. Zero within-repeat noise does not
///   silence it: then any spread over 1% warns.
#[must_use]
pub fn steady_state_warnings(repeats_ms: &[Vec<f64>]) -> Vec<SteadyStateWarning> {
    let mut warnings = Vec::new();
    for (index, steps) in repeats_ms.iter().enumerate() {
        if let Some((first_median_ms, rest_median_ms)) = slow_start(steps) {
            warnings.push(SteadyStateWarning::SlowStart {
                repeat: u32::try_from(index + 1).unwrap_or(u32::MAX),
                first_median_ms,
                rest_median_ms,
            });
        }
    }
    if let Some((between_pct, within_pct)) = process_variance(repeats_ms) {
        warnings.push(SteadyStateWarning::ProcessVariance {
            between_pct,
            within_pct,
        });
    }
    warnings
}

/// `Some((head median, rest median))` when the repeat starts slow (rule above).
fn slow_start(steps: &[f64]) -> Option<(f64, f64)> {
    if steps.len() < SLOW_START_MIN_STEPS {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive fraction of a length is a valid length"
    )]
    let head_len =
        ((steps.len() as f64 * SLOW_START_HEAD_FRACTION).ceil() as usize).max(SLOW_START_MIN_HEAD);
    let head = sorted_copy(&steps[..head_len]);
    let rest = sorted_copy(&steps[head_len..]);
    let head_median = quantile(&head, 0.5);
    let rest_median = quantile(&rest, 0.5);
    let sigma = MAD_TO_SIGMA * mad_sorted(&rest);
    let excess = head_median - rest_median;
    (excess > SLOW_START_MIN_EXCESS * rest_median && excess > NOISE_SIGMAS * sigma)
        .then_some((head_median, rest_median))
}

/// `Some((between %, within %))` when the repeats disagree (rule above).
fn process_variance(repeats_ms: &[Vec<f64>]) -> Option<(f64, f64)> {
    let usable: Vec<Vec<f64>> = repeats_ms
        .iter()
        .filter(|r| r.len() >= PROCESS_VARIANCE_MIN_STEPS)
        .map(|r| sorted_copy(r))
        .collect();
    if usable.len() < 2 {
        return None;
    }
    let medians: Vec<f64> = usable.iter().map(|r| quantile(r, 0.5)).collect();
    let sorted_medians = sorted_copy(&medians);
    let center = quantile(&sorted_medians, 0.5);
    if center <= 0.0 {
        return None;
    }
    let range = sorted_medians[sorted_medians.len() - 1] - sorted_medians[0];
    let mean_square_se = usable
        .iter()
        .map(|r| {
            let se = MEDIAN_SE_FACTOR * MAD_TO_SIGMA * mad_sorted(r) / (r.len() as f64).sqrt();
            se * se
        })
        .sum::<f64>()
        / usable.len() as f64;
    let expected_range = d2(usable.len()) * mean_square_se.sqrt();
    let between_pct = range / center * 100.0;
    let within_pct = expected_range / center * 100.0;
    (between_pct > PROCESS_VARIANCE_MIN_PCT && range > PROCESS_VARIANCE_FACTOR * expected_range)
        .then_some((between_pct, within_pct))
}

#[cfg(test)]
mod tests;
