//! Slow slides: a trend over the last nights that no single change point explains, reported as a
//! warning while it stays under the gate's threshold. Pure.
//!
//! The test is Mann-Kendall's (Kendall, "Rank Correlation Methods", 1975): S counts rising minus
//! falling pairs; with the tie-corrected variance `n(n-1)(2n+5)/18 - Σ t(t-1)(2t+5)/18` and a
//! continuity correction, `Z = (S ∓ 1)/√Var` is normal under "no trend". The slope is Theil-Sen's
//! (the median of pairwise slopes, Sen 1968), robust to a single bad night; the total change is
//! that slope over the window, in percent of the window's fitted starting level.

use serde::Serialize;

/// A monotonic trend over a window of nights.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Trend {
    pub nights: usize,
    /// Theil-Sen slope per night, in percent of the fitted starting level.
    pub slope_pct_per_night: f64,
    /// The slope over the whole window (`slope × (nights − 1)`), in percent.
    pub total_pct: f64,
    /// Two-sided Mann-Kendall p-value.
    pub pvalue: f64,
}

/// The trend of `series` (oldest first) when Mann-Kendall finds one at `max_pvalue`; `None` for
/// fewer than 4 values (no p-value below 0.08 is possible), non-finite values or no trend.
#[must_use]
pub fn trend(series: &[f64], max_pvalue: f64) -> Option<Trend> {
    let n = series.len();
    if n < 4 || series.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut s = 0i64;
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let d = series[j] - series[i];
            s += i64::from(d > 0.0) - i64::from(d < 0.0);
            slopes.push(d / (j - i) as f64);
        }
    }
    let var = mann_kendall_variance(series);
    if var <= 0.0 {
        return None;
    }
    let s = s as f64;
    let z = if s > 0.0 {
        (s - 1.0) / var.sqrt()
    } else if s < 0.0 {
        (s + 1.0) / var.sqrt()
    } else {
        0.0
    };
    let pvalue = statrs::function::erf::erfc(z.abs() / std::f64::consts::SQRT_2);
    if pvalue > max_pvalue {
        return None;
    }
    let slope = crate::stats::median(&slopes)?;
    // Intercept: the median of value - slope * index (Theil-Sen's usual companion).
    let residual: Vec<f64> = series
        .iter()
        .enumerate()
        .map(|(i, v)| v - slope * i as f64)
        .collect();
    let start = crate::stats::median(&residual)?;
    if start == 0.0 {
        return None;
    }
    let per_night = 100.0 * slope / start.abs();
    Some(Trend {
        nights: n,
        slope_pct_per_night: per_night,
        total_pct: per_night * (n - 1) as f64,
        pvalue,
    })
}

fn mann_kendall_variance(series: &[f64]) -> f64 {
    let n = series.len() as f64;
    let mut sorted = series.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut run = 1.0;
    for w in sorted.windows(2) {
        if w[0].total_cmp(&w[1]).is_eq() {
            run += 1.0;
        } else {
            ties += run * (run - 1.0) * (2.0 * run + 5.0);
            run = 1.0;
        }
    }
    ties += run * (run - 1.0) * (2.0 * run + 5.0);
    (n * (n - 1.0) * (2.0 * n + 5.0) - ties) / 18.0
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use rand_distr::{Distribution, Normal};

    use super::*;

    fn noisy(len: usize, slope_pct: f64, noise: f64, seed: u64) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        let normal = Normal::new(0.0, noise).expect("normal");
        (0..len)
            .map(|i| 100.0 * (1.0 + slope_pct / 100.0 * i as f64) + 100.0 * normal.sample(&mut rng))
            .collect()
    }

    #[test]
    fn finds_a_generated_slide_with_its_slope() {
        // 0.3% a night for 15 nights under 0.5% noise: 4.2% in all.
        for seed in 0..20 {
            let t = trend(&noisy(15, -0.3, 0.005, seed), 0.01).expect("a slide");
            assert!(
                (t.slope_pct_per_night - -0.3).abs() < 0.15,
                "seed {seed}: {t:?}"
            );
            assert!(t.total_pct < 0.0 && t.nights == 15, "{t:?}");
        }
    }

    #[test]
    fn noise_rarely_looks_like_a_trend() {
        let alarms = (0..400)
            .filter(|&seed| trend(&noisy(14, 0.0, 0.02, seed), 0.05).is_some())
            .count();
        // Level 0.05: three binomial standard errors over 400 trials is 0.033.
        assert!(alarms as f64 / 400.0 <= 0.05 + 0.033, "{alarms} of 400");
    }

    #[test]
    fn edge_cases() {
        assert_eq!(trend(&[], 0.05), None);
        assert_eq!(trend(&[1.0, 2.0, 3.0], 0.05), None);
        assert_eq!(trend(&[5.0; 10], 0.05), None);
        assert_eq!(trend(&[1.0, 2.0, f64::NAN, 4.0, 5.0], 0.05), None);
        let rising: Vec<f64> = (0..10).map(f64::from).map(|v| 10.0 + v).collect();
        let t = trend(&rising, 0.05).expect("a rise");
        assert!((t.slope_pct_per_night - 10.0).abs() < 1e-9 && (t.total_pct - 90.0).abs() < 1e-9);
    }
}
