//! `utilgate bisect`: whether a re-measured commit is on the good or the bad side of a
//! slowdown, in `git bisect run`'s terms (0 good, 1 bad, 125 skip). Pure: the step times of the
//! good run, the bad run and tonight's processes arrive as arguments.
//!
//! # The rule
//! Each level is the mean of the log medians of a result's processes. The dividing line is the
//! geometric midpoint of the good and the bad level. The commit is good when the upper end of
//! its ~95% interval (two standard errors of the mean of its processes' log medians, at least
//! the `min_noise_pct` floor) lies under the line, bad when the lower end lies over it, and
//! skipped (125: git tries a neighbour) when the interval straddles it, or when it could not
//! be measured.

use serde::Serialize;

/// What git bisect is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BisectVerdict {
    Good,
    Bad,
    Skip,
}

impl BisectVerdict {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BisectVerdict::Good => "good",
            BisectVerdict::Bad => "bad",
            BisectVerdict::Skip => "skip",
        }
    }

    /// `git bisect run`'s exit status: 0 good, 1 bad, 125 cannot be tested.
    #[must_use]
    pub fn exit_code(self) -> u8 {
        match self {
            BisectVerdict::Good => 0,
            BisectVerdict::Bad => 1,
            BisectVerdict::Skip => 125,
        }
    }
}

/// The decision with the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BisectCall {
    pub verdict: BisectVerdict,
    /// Median step time of the good run, of the bad run, of this commit (ms).
    pub good_ms: f64,
    pub bad_ms: f64,
    pub now_ms: Option<f64>,
    /// The line between good and bad (ms).
    pub midpoint_ms: f64,
    /// This commit's ~95% interval (ms).
    pub interval_ms: Option<(f64, f64)>,
    pub reason: String,
}

/// The log level of a result and its standard error (`None` without a counted step).
fn level(repeats_ms: &[Vec<f64>]) -> Option<(f64, f64)> {
    let logs: Vec<f64> = repeats_ms
        .iter()
        .filter_map(|r| crate::stats::median(r))
        .filter(|m| *m > 0.0 && m.is_finite())
        .map(f64::ln)
        .collect();
    if logs.is_empty() {
        return None;
    }
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let se = if logs.len() > 1 {
        (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt()
    } else {
        0.0
    };
    Some((mean, se))
}

/// Where tonight's processes lie between the good and the bad run. `None` when the two runs
/// do not differ in the slow direction (nothing to bisect).
#[must_use]
pub fn call(
    good: &[Vec<f64>],
    bad: &[Vec<f64>],
    now: &[Vec<f64>],
    min_noise_pct: f64,
) -> Option<BisectCall> {
    let (g, _) = level(good)?;
    let (b, _) = level(bad)?;
    if b <= g {
        return None;
    }
    let mid = f64::midpoint(g, b);
    let base = BisectCall {
        verdict: BisectVerdict::Skip,
        good_ms: g.exp(),
        bad_ms: b.exp(),
        now_ms: None,
        midpoint_ms: mid.exp(),
        interval_ms: None,
        reason: "this commit could not be measured".to_owned(),
    };
    let Some((m, se)) = level(now) else {
        return Some(base);
    };
    let half = 2.0 * se.max(min_noise_pct / 100.0 / (now.len().max(1) as f64).sqrt());
    let (lo, hi) = (m - half, m + half);
    let (verdict, reason) = if hi < mid {
        (
            BisectVerdict::Good,
            "its interval lies on the good side of the midpoint",
        )
    } else if lo > mid {
        (
            BisectVerdict::Bad,
            "its interval lies on the bad side of the midpoint",
        )
    } else {
        (
            BisectVerdict::Skip,
            "its interval straddles the midpoint: too noisy to tell (more repeats would decide)",
        )
    };
    Some(BisectCall {
        verdict,
        now_ms: Some(m.exp()),
        interval_ms: Some((lo.exp(), hi.exp())),
        reason: reason.to_owned(),
        ..base
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(ms: f64, spread: f64, n: usize) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| vec![ms * (1.0 + spread * (i as f64 - (n as f64 - 1.0) / 2.0)); 5])
            .collect()
    }

    #[test]
    fn commits_fall_on_the_side_they_are_measured_on() {
        let (good, bad) = (runs(10.0, 0.002, 3), runs(11.0, 0.002, 3));
        let at = |ms: f64| call(&good, &bad, &runs(ms, 0.002, 3), 0.25).expect("a slowdown");
        assert_eq!(at(10.05).verdict, BisectVerdict::Good);
        assert_eq!(at(10.95).verdict, BisectVerdict::Bad);
        assert_eq!(at(10.49).verdict, BisectVerdict::Skip);
        assert_eq!(at(10.0).verdict.exit_code(), 0);
        assert_eq!(at(11.0).verdict.exit_code(), 1);
        let c = at(10.0);
        // The midpoint is the geometric mean of the two levels; each level is the geometric
        // mean of its processes (0.998, 1 and 1.002 times the step), a hair under 10 and 11.
        let expected = (10.0f64 * 11.0).sqrt();
        assert!(
            (c.midpoint_ms / expected - 1.0).abs() < 1e-5,
            "{}",
            c.midpoint_ms
        );
        assert!(c.midpoint_ms < expected);
    }

    #[test]
    fn noise_and_missing_measurements_skip_and_no_slowdown_is_none() {
        let (good, bad) = (runs(10.0, 0.002, 3), runs(11.0, 0.002, 3));
        let noisy = runs(10.3, 0.15, 3);
        assert_eq!(
            call(&good, &bad, &noisy, 0.25).expect("slowdown").verdict,
            BisectVerdict::Skip
        );
        let none = call(&good, &bad, &[], 0.25).expect("slowdown");
        assert_eq!(none.verdict.exit_code(), 125);
        assert!(call(&bad, &good, &good, 0.25).is_none());
        assert!(call(&[], &bad, &good, 0.25).is_none());
    }
}
