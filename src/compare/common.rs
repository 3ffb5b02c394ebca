//! A common-mode shift: most cases of a grid moved together by a similar factor, which points
//! at the machine (a slower runner, a noisy neighbour, thermal limits) rather than the code. It
//! works without a canary, from the decisions alone, and only informs: a dependency upgrade that
//! slows every case alike is exactly what the gate must still fail. Pure.

use super::Decision;
use crate::case::Verdict;

/// Cases a grid needs before a shared shift can be told from chance.
const MIN_CASES: usize = 4;
/// The share of judged cases that must have moved beyond their threshold, the same way.
const MIN_SHARE: f64 = 2.0 / 3.0;

/// Most cases moved together.
#[derive(Debug, Clone, PartialEq)]
pub struct CommonMode {
    /// Cases that moved beyond their threshold in the shared direction, of those judged.
    pub moved: usize,
    pub judged: usize,
    /// The median drop of the moved cases (percent; negative: they got faster).
    pub median_drop_pct: f64,
}

impl CommonMode {
    /// The summary's sentence.
    #[must_use]
    pub fn describe(&self) -> String {
        let way = if self.median_drop_pct >= 0.0 {
            format!("dropped by a median {:.1}%", self.median_drop_pct)
        } else {
            format!("rose by a median {:.1}%", -self.median_drop_pct)
        };
        format!(
            "{} of {} cases {way} together: a shift shared by the whole grid is more likely the \
             machine than the code (compare the machine canary, or rerun on a quiet runner)",
            self.moved, self.judged
        )
    }
}

/// Whether the judged cases (each decision with its threshold, percent) moved together: at
/// least 4 judged, two thirds of them beyond their threshold in the same direction, and those
/// within a factor of two of their median drop (a similar factor, not a few large outliers).
#[must_use]
pub fn common_mode(cases: &[(&Decision, f64)]) -> Option<CommonMode> {
    let judged: Vec<(f64, f64)> = cases
        .iter()
        .filter(|(d, _)| {
            matches!(
                d.verdict,
                Verdict::Pass | Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive
            )
        })
        .filter_map(|(d, t)| d.drop_pct.filter(|x| x.is_finite()).map(|x| (x, *t)))
        .collect();
    if judged.len() < MIN_CASES {
        return None;
    }
    let best = [1.0, -1.0]
        .into_iter()
        .map(|sign: f64| {
            let mut moved: Vec<f64> = judged
                .iter()
                .filter(|(x, t)| sign * x > *t)
                .map(|(x, _)| *x)
                .collect();
            moved.sort_by(f64::total_cmp);
            moved
        })
        .max_by_key(Vec::len)?;
    if (best.len() as f64) < MIN_SHARE * judged.len() as f64 {
        return None;
    }
    let median = crate::stats::quantile(&best, 0.5);
    let similar = best
        .iter()
        .filter(|x| (**x / median) >= 0.5 && (**x / median) <= 2.0)
        .count();
    ((similar as f64) >= MIN_SHARE * judged.len() as f64).then_some(CommonMode {
        moved: similar,
        judged: judged.len(),
        median_drop_pct: median,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::error_decision;

    fn d(verdict: Verdict, drop: f64) -> Decision {
        let mut d = error_decision("x");
        d.verdict = verdict;
        d.drop_pct = Some(drop);
        d
    }

    #[test]
    fn a_whole_grid_ten_percent_slower_is_flagged() {
        let ds: Vec<Decision> = [9.1, 8.7, 9.6, 10.2, 8.9, 0.5]
            .iter()
            .map(|x| d(Verdict::Regressed, *x))
            .collect();
        let cases: Vec<(&Decision, f64)> = ds.iter().map(|d| (d, 3.0)).collect();
        let c = common_mode(&cases).expect("flagged");
        assert_eq!((c.moved, c.judged), (5, 6));
        assert!(
            c.describe()
                .starts_with("5 of 6 cases dropped by a median 9.1%"),
            "{}",
            c.describe()
        );
    }

    #[test]
    fn one_regression_or_a_small_grid_is_not_common_mode() {
        let mut ds: Vec<Decision> = (0..10).map(|_| d(Verdict::Pass, 0.4)).collect();
        ds.push(d(Verdict::Regressed, 12.0));
        let cases: Vec<(&Decision, f64)> = ds.iter().map(|d| (d, 3.0)).collect();
        assert!(common_mode(&cases).is_none());
        let few: Vec<Decision> = (0..3).map(|_| d(Verdict::Regressed, 9.0)).collect();
        let cases: Vec<(&Decision, f64)> = few.iter().map(|d| (d, 3.0)).collect();
        assert!(common_mode(&cases).is_none());
        // Errors are not judged cases.
        let errs: Vec<Decision> = (0..6).map(|_| error_decision("boom")).collect();
        let cases: Vec<(&Decision, f64)> = errs.iter().map(|d| (d, 3.0)).collect();
        assert!(common_mode(&cases).is_none());
    }
}
