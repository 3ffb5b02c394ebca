//! Per-case statistics over step times: the pooled summary of all counted samples (median,
//! quantiles, spread), and warnings when a case does not look steady (a slow start inside a
//! repeat, or repeats that disagree more than their own noise explains). Pure.
//!
//! Samples are step times in milliseconds, finite and above zero (the protocol parser rejects
//! anything else); they are ordered with `f64::total_cmp`, so a stray NaN sorts last rather than
//! panicking.

use std::fmt;

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
mod tests {
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use rand_distr::{Distribution, Normal};

    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// Normal noise around `center` with relative standard deviation `rel_sd`, seeded.
    fn noisy(seed: u64, n: usize, center: f64, rel_sd: f64) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        let dist = Normal::new(center, center * rel_sd).expect("valid normal");
        (0..n).map(|_| dist.sample(&mut rng).max(1e-6)).collect()
    }

    #[test]
    fn median_table() {
        let cases: [(&[f64], Option<f64>); 6] = [
            (&[], None),
            (&[5.0], Some(5.0)),
            (&[1.0, 3.0], Some(2.0)),
            (&[3.0, 1.0, 2.0], Some(2.0)),
            (&[4.0, 1.0, 3.0, 2.0], Some(2.5)),
            (&[7.0, 7.0, 7.0], Some(7.0)),
        ];
        for (xs, expected) in cases {
            assert_eq!(median(xs), expected, "{xs:?}");
        }
    }

    #[test]
    fn quantile_is_hyndman_fan_type_7() {
        // Reference values from numpy.percentile (linear), which is type 7.
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let cases: [(&[f64], f64, f64); 9] = [
            (&ten, 0.9, 9.1),
            (&ten, 0.5, 5.5),
            (&ten, 0.0, 1.0),
            (&ten, 1.0, 10.0),
            (&ten, 0.99, 9.91),
            (&[1.0, 2.0, 3.0, 4.0], 0.25, 1.75),
            (&[5.0], 0.9, 5.0),
            (&ten, -1.0, 1.0),
            (&ten, 2.0, 10.0),
        ];
        for (xs, q, expected) in cases {
            assert!(close(quantile(xs, q), expected), "q{q} of {xs:?}");
        }
        assert!(quantile(&[], 0.5).is_nan());
        assert!(quantile(&ten, f64::NAN).is_nan());
    }

    #[test]
    fn summarise_known_values() {
        let s = summarise(&[vec![3.0, 1.0, 5.0, 2.0, 4.0]]).expect("samples");
        assert_eq!((s.n, s.repeats), (5, 1));
        assert!(close(s.median_ms, 3.0));
        assert!(close(s.mean_ms, 3.0));
        assert!(close(s.p90_ms, 4.6));
        assert!(close(s.p99_ms, 4.96));
        assert_eq!((s.min_ms, s.max_ms), (1.0, 5.0));
        assert!(close(s.mad_ms, 1.0));
        assert!(close(s.cv, 2.5f64.sqrt() / 3.0));
        assert_eq!(s.repeat_medians_ms, vec![3.0]);
        assert!(close(s.repeat_spread_pct, 0.0));
    }

    #[test]
    fn summarise_pools_repeats_and_skips_empty_ones() {
        let s = summarise(&[vec![10.0, 10.0], vec![], vec![11.0, 11.0, 11.0], vec![12.0]])
            .expect("samples");
        assert_eq!((s.n, s.repeats), (6, 3));
        assert_eq!(s.repeat_medians_ms, vec![10.0, 11.0, 12.0]);
        assert!(close(s.median_ms, 11.0));
        assert!(close(s.repeat_spread_pct, 2.0 / 11.0 * 100.0));
    }

    #[test]
    fn summarise_edge_cases() {
        assert_eq!(summarise(&[]), None);
        assert_eq!(summarise(&[vec![], vec![]]), None);

        let one = summarise(&[vec![6.02]]).expect("one sample");
        assert_eq!(one.n, 1);
        for v in [
            one.median_ms,
            one.p90_ms,
            one.p99_ms,
            one.mean_ms,
            one.min_ms,
            one.max_ms,
        ] {
            assert!(close(v, 6.02));
        }
        assert_eq!((one.mad_ms, one.cv, one.repeat_spread_pct), (0.0, 0.0, 0.0));

        let flat = summarise(&[vec![2.5; 50], vec![2.5; 50]]).expect("samples");
        assert_eq!(
            (flat.mad_ms, flat.cv, flat.repeat_spread_pct),
            (0.0, 0.0, 0.0)
        );
        assert_eq!((flat.median_ms, flat.p99_ms), (2.5, 2.5));
    }

    #[test]
    fn summary_serialises_with_unit_names() {
        let s = summarise(&[vec![1.0, 2.0]]).expect("samples");
        let json = serde_json::to_value(&s).expect("serialise");
        assert!(json.get("median_ms").is_some() && json.get("repeat_spread_pct").is_some());
        let back: Summary = serde_json::from_value(json).expect("deserialise");
        assert_eq!(back, s);
    }

    #[test]
    fn slow_start_is_flagged() {
        // 100 steady steps around 6 ms (0.5% noise) after 10 steps at 7 ms.
        let mut steps = vec![7.0; 10];
        steps.extend(noisy(1, 90, 6.0, 0.005));
        let warnings = steady_state_warnings(&[noisy(2, 100, 6.0, 0.005), steps]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        match &warnings[0] {
            SteadyStateWarning::SlowStart {
                repeat,
                first_median_ms,
                rest_median_ms,
            } => {
                assert_eq!(*repeat, 2);
                assert!(close(*first_median_ms, 7.0));
                assert!((rest_median_ms - 6.0).abs() < 0.05);
            }
            other @ SteadyStateWarning::ProcessVariance { .. } => {
                panic!("expected SlowStart, got {other:?}")
            }
        }
        let text = warnings[0].to_string();
        assert!(
            text.contains("repeat 2") && text.contains("warmup_steps"),
            "{text}"
        );
    }

    #[test]
    fn slow_start_table() {
        let steady = |n: usize| vec![6.0; n];
        let with_head = |head: &[f64], n: usize| {
            let mut v = head.to_vec();
            v.extend(vec![6.0; n - head.len()]);
            v
        };
        let cases: Vec<(&str, Vec<f64>, bool)> = vec![
            ("steady, zero variance", steady(100), false),
            (
                "too few steps to judge",
                with_head(&[9.0, 9.0, 9.0], 9),
                false,
            ),
            (
                "zero variance, 10% slow head",
                with_head(&[6.6; 10], 100),
                true,
            ),
            (
                "zero variance, 3% slow head",
                with_head(&[6.18; 10], 100),
                false,
            ),
            (
                "one hiccup in the head",
                with_head(&[9.0, 6.0, 6.0], 20),
                false,
            ),
            ("two of three slow", with_head(&[9.0, 9.0, 6.0], 20), true),
            (
                "slow steps later, not at the start",
                {
                    let mut v = steady(50);
                    v.extend([9.0; 5]);
                    v
                },
                false,
            ),
        ];
        for (name, steps, expected) in cases {
            assert_eq!(slow_start(&steps).is_some(), expected, "{name}");
        }
    }

    #[test]
    fn slow_start_stays_quiet_within_the_noise() {
        // 10% relative noise: a 6% slow head is not distinguishable from it.
        let mut steps: Vec<f64> = noisy(7, 10, 6.36, 0.10);
        steps.extend(noisy(8, 90, 6.0, 0.10));
        assert_eq!(slow_start(&steps), None);
    }

    #[test]
    fn process_variance_is_flagged_when_repeats_disagree() {
        // Medians 6.0, 6.18, 6.0 with 0.3% noise inside each repeat.
        let repeats = vec![
            noisy(10, 100, 6.0, 0.003),
            noisy(11, 100, 6.18, 0.003),
            noisy(12, 100, 6.0, 0.003),
        ];
        let warnings = steady_state_warnings(&repeats);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        match &warnings[0] {
            SteadyStateWarning::ProcessVariance {
                between_pct,
                within_pct,
            } => {
                assert!((between_pct - 3.0).abs() < 0.5, "{between_pct}");
                assert!(*within_pct < 0.2, "{within_pct}");
            }
            other @ SteadyStateWarning::SlowStart { .. } => {
                panic!("expected ProcessVariance, got {other:?}")
            }
        }
        assert!(warnings[0].to_string().contains("repeats"));
    }

    #[test]
    fn process_variance_table() {
        let cases: Vec<(&str, Vec<Vec<f64>>, bool)> = vec![
            ("single repeat", vec![vec![6.0; 100]], false),
            ("all equal", vec![vec![6.0; 100]; 3], false),
            (
                "zero within noise, 2% apart",
                vec![vec![6.0; 50], vec![6.12; 50]],
                true,
            ),
            (
                "zero within noise, 0.5% apart (below the 1% floor)",
                vec![vec![6.0; 50], vec![6.03; 50]],
                false,
            ),
            (
                "repeats too short to judge",
                vec![vec![6.0, 6.0], vec![7.0, 7.0]],
                false,
            ),
            (
                "5% noise explains a 2% spread",
                vec![
                    noisy(20, 30, 6.0, 0.05),
                    noisy(21, 30, 6.12, 0.05),
                    noisy(22, 30, 6.06, 0.05),
                ],
                false,
            ),
            ("no repeats", vec![], false),
        ];
        for (name, repeats, expected) in cases {
            assert_eq!(process_variance(&repeats).is_some(), expected, "{name}");
        }
    }

    #[test]
    fn noise_alone_rarely_warns() {
        // 300 cases of 3 repeats x 100 steps from one distribution (2% noise): the false-alarm
        // rate must stay near zero, or a grid of cases would warn every night.
        let mut false_alarms = 0;
        for seed in 0..300 {
            let repeats: Vec<Vec<f64>> = (0..3)
                .map(|r| noisy(1000 + seed * 3 + r, 100, 6.0, 0.02))
                .collect();
            false_alarms += steady_state_warnings(&repeats).len();
        }
        assert!(false_alarms <= 1, "{false_alarms} false alarms");
    }

    #[test]
    fn d2_matches_the_table_ends() {
        assert!(close(d2(1), 0.0));
        assert!(close(d2(2), 1.128));
        assert!(close(d2(3), 1.693));
        assert!(close(d2(25), 3.931));
        assert!(close(d2(100), 3.931));
    }

    fn samples() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(1e-3f64..1e4, 1..60)
    }

    proptest! {
        #[test]
        fn median_and_quantiles_lie_within_min_and_max(xs in samples(), q in 0.0f64..=1.0) {
            let sorted = sorted_copy(&xs);
            let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
            let m = median(&xs).expect("non-empty");
            prop_assert!(lo <= m && m <= hi);
            let v = quantile(&sorted, q);
            prop_assert!(lo <= v && v <= hi);
        }

        #[test]
        fn quantile_is_monotone_in_q(xs in samples(), a in 0.0f64..=1.0, b in 0.0f64..=1.0) {
            let sorted = sorted_copy(&xs);
            let (q1, q2) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(quantile(&sorted, q1) <= quantile(&sorted, q2));
        }

        #[test]
        fn summary_is_ordered_and_bounded(repeats in prop::collection::vec(samples(), 1..5)) {
            let s = summarise(&repeats).expect("samples");
            prop_assert!(s.min_ms <= s.median_ms && s.median_ms <= s.p90_ms);
            prop_assert!(s.p90_ms <= s.p99_ms && s.p99_ms <= s.max_ms);
            prop_assert!(s.min_ms <= s.mean_ms * (1.0 + 1e-12) && s.mean_ms <= s.max_ms * (1.0 + 1e-12));
            prop_assert!(s.mad_ms >= 0.0 && s.cv >= 0.0 && s.repeat_spread_pct >= 0.0);
            prop_assert_eq!(s.n, repeats.iter().map(Vec::len).sum::<usize>());
        }

        #[test]
        fn summarise_ignores_sample_order_within_a_repeat(
            (original, shuffled) in prop::collection::vec(samples(), 1..4)
                .prop_flat_map(|repeats| {
                    let shuffled: Vec<_> =
                        repeats.iter().map(|r| Just(r.clone()).prop_shuffle()).collect();
                    (Just(repeats), shuffled)
                })
        ) {
            prop_assert_eq!(summarise(&original), summarise(&shuffled));
        }
    }
}
