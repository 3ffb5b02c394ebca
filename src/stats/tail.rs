//! How high a percentile a number of samples can honestly state (#32 item 3): the binomial
//! confidence bound on a percentile, as `MLPerf` `LoadGen`'s early-stopping estimate uses it.
//! Pure.
//!
//! Of `n` independent samples, the count `X` that fall at or below the true `q`-quantile is
//! Binomial(n, q). The `k`-th smallest sample lies at or above the true quantile exactly when
//! fewer than `k` samples lie below it, so it bounds the quantile from above with confidence
//! `P(X <= k - 1)`. The smallest such `k` with confidence `c` is the upper bound's order
//! statistic; when even the largest sample (`k = n`, confidence `1 - q^n`) falls short, the
//! samples cannot bound that percentile at all: its point estimate (the file's `p99`) would be
//! a guess. The largest percentile `n` samples support at confidence `c` solves `1 - q^n = c`:
//! `q = (1 - c)^(1/n)`.

use statrs::distribution::{Binomial, DiscreteCDF};

/// The confidence a stated tail percentile must be bounded with.
pub const TAIL_CONFIDENCE: f64 = 0.95;

/// The 1-based order statistic of `n` samples that bounds the `q`-quantile (0 < q < 1) from
/// above with confidence `confidence`; `None` when no sample does (too few samples).
#[must_use]
pub fn upper_bound_rank(n: u64, q: f64, confidence: f64) -> Option<u64> {
    if n == 0 || !(q > 0.0 && q < 1.0) {
        return None;
    }
    let below = Binomial::new(q, n).ok()?;
    // P(X <= k - 1) grows with k: the first k reaching the confidence, by bisection.
    let (mut lo, mut hi) = (1_u64, n);
    if below.cdf(n - 1) < confidence {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below.cdf(mid - 1) >= confidence {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The largest percentile (0-100) that `n` samples bound from above at `confidence`.
#[must_use]
pub fn max_supported_percentile(n: u64, confidence: f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    100.0 * (1.0 - confidence).powf(1.0 / n as f64)
}

/// The fewest samples that bound the `q`-quantile at `confidence` (`1 - q^n >= c`).
#[must_use]
pub fn samples_needed(q: f64, confidence: f64) -> u64 {
    if !(q > 0.0 && q < 1.0) {
        return u64::MAX;
    }
    let n = ((1.0 - confidence).ln() / q.ln()).ceil();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive count, finite for 0 < q < 1"
    )]
    let n = n.max(1.0) as u64;
    n
}

/// Whether `n` samples can state the `percentile` (0-100) at [`TAIL_CONFIDENCE`], and if not,
/// the sentence that says so: how many there are, the highest percentile they support, and how
/// many the percentile needs.
#[must_use]
pub fn unsupported(metric: &str, percentile: f64, n: u64, what: &str) -> Option<String> {
    let q = percentile / 100.0;
    if upper_bound_rank(n, q, TAIL_CONFIDENCE).is_some() {
        return None;
    }
    Some(format!(
        "{metric} is not gated: {n} {what} cannot bound a p{percentile} at {:.0}% confidence (they \
         support at most p{:.1}; a p{percentile} needs at least {}), so its figure is a point \
         estimate the gate does not judge. Send more requests (num_prompts) or gate a lower \
         percentile.",
        TAIL_CONFIDENCE * 100.0,
        (max_supported_percentile(n, TAIL_CONFIDENCE) * 10.0).floor() / 10.0,
        samples_needed(q, TAIL_CONFIDENCE),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(Binomial(n, q) <= k), summed term by term in log space.
    fn direct_cdf(n: u64, q: f64, k: u64) -> f64 {
        let ln_choose = |n: u64, i: u64| -> f64 {
            (1..=i)
                .map(|j| ((n - i + j) as f64).ln() - (j as f64).ln())
                .sum()
        };
        (0..=k.min(n))
            .map(|i| (ln_choose(n, i) + i as f64 * q.ln() + (n - i) as f64 * (1.0 - q).ln()).exp())
            .sum()
    }

    #[test]
    fn the_bound_matches_a_direct_binomial_computation() {
        for (n, q, c) in [
            (1000, 0.99, 0.95),
            (1000, 0.99, 0.99),
            (662, 0.99, 0.99),
            (300, 0.99, 0.95),
            (500, 0.9, 0.95),
            (200, 0.5, 0.95),
        ] {
            let k = upper_bound_rank(n, q, c).unwrap_or_else(|| panic!("{n} bound p{q}"));
            assert!(
                direct_cdf(n, q, k - 1) >= c - 1e-12,
                "{n} {q}: rank {k} reaches {c}"
            );
            if k > 1 {
                assert!(
                    direct_cdf(n, q, k - 2) < c,
                    "{n} {q}: rank {k} is the smallest"
                );
            }
        }
    }

    #[test]
    fn a_hundred_requests_cannot_state_their_p99() {
        assert_eq!(upper_bound_rank(100, 0.99, TAIL_CONFIDENCE), None);
        assert!(
            direct_cdf(100, 0.99, 99) < TAIL_CONFIDENCE,
            "the direct sum agrees"
        );
        let max = max_supported_percentile(100, TAIL_CONFIDENCE);
        assert!((97.0..97.1).contains(&max), "{max}");
        assert!(upper_bound_rank(100, max / 100.0 - 1e-6, TAIL_CONFIDENCE).is_some());
        let text = unsupported("p99_ttft_ms", 99.0, 100, "requests").expect("not supported");
        assert!(text.contains("support at most p97.0"), "{text}");
        assert!(text.contains("needs at least 299"), "{text}");
        assert!(unsupported("p99_ttft_ms", 99.0, 299, "requests").is_none());
        assert!(unsupported("p99_ttft_ms", 99.0, 298, "requests").is_some());
    }

    #[test]
    fn a_p99_at_99_percent_needs_the_samples_the_largest_one_bounds() {
        // 1 - 0.99^n >= 0.99 first holds at n = 459 (ln 0.01 / ln 0.99 = 458.2).
        assert_eq!(samples_needed(0.99, 0.99), 459);
        assert!(direct_cdf(459, 0.99, 458) >= 0.99 && direct_cdf(458, 0.99, 457) < 0.99);
        assert_eq!(upper_bound_rank(458, 0.99, 0.99), None);
        assert_eq!(upper_bound_rank(459, 0.99, 0.99), Some(459));
    }
}
