//! The accuracy guard: quality metrics a harness reports beside its steps (protocol v1's
//! `quality` key, e.g. GSM8K's correct answers out of 500), judged against the baseline's with
//! a confidence bound on the difference of two binomial proportions. A case whose quality fell
//! beyond its threshold is `regressed` whatever its speed: fast but wrong is the failure FP4
//! paths made common. Pure.
//!
//! The rule mirrors the step-time gate's two levels: a metric **regressed** when its drop (in
//! percentage points of the share correct) is larger than the threshold and the lower bound
//! of the drop's confidence interval is above zero (Newcombe's hybrid score interval from two
//! Wilson intervals, one-sided at the grid-corrected level); **inconclusive** when the drop is
//! larger than the threshold but its samples cannot tell it from chance; otherwise it passes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::Decision;
use crate::case::Verdict;

/// One metric's answers: how many were right out of how many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QualityCount {
    pub correct: u64,
    pub total: u64,
}

impl QualityCount {
    /// The share correct, 0 to 1 (0 without answers).
    #[must_use]
    pub fn share(self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.correct as f64 / self.total as f64
        }
    }

    /// Two counts of the same metric pooled (repeats of one case, each scoring its own
    /// prompts, or the same prompts again: either way more answers).
    #[must_use]
    pub fn plus(self, other: QualityCount) -> QualityCount {
        QualityCount {
            correct: self.correct.saturating_add(other.correct),
            total: self.total.saturating_add(other.total),
        }
    }
}

/// A case's quality metrics by name.
pub type QualityCounts = BTreeMap<String, QualityCount>;

/// How one quality metric compares with the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QualityVerdict {
    Pass,
    Regressed,
    Inconclusive,
    /// No baseline figure to compare with.
    New,
}

/// One metric's judgement, with the figures that justify it (stored in the decision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityCheck {
    pub metric: String,
    pub verdict: QualityVerdict,
    pub now: QualityCount,
    pub then: Option<QualityCount>,
    /// The baseline's share correct less tonight's, in percentage points (positive: worse).
    pub drop_pts: Option<f64>,
    /// The drop's confidence interval, percentage points (one-sided bounds at the level).
    pub interval_pts: Option<(f64, f64)>,
    /// The practical threshold, percentage points.
    pub threshold_pts: f64,
}

/// How quality metrics are judged: the practical threshold and the one-sided level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityPolicy {
    /// A drop that matters, in percentage points of the share correct.
    pub threshold_pts: f64,
    /// The one-sided false-alarm level of each metric's test (already corrected for the grid).
    pub alpha: f64,
}

/// The Wilson score interval of `count`'s share at normal quantile `z`.
#[must_use]
pub fn wilson(count: QualityCount, z: f64) -> (f64, f64) {
    if count.total == 0 {
        return (0.0, 1.0);
    }
    let n = count.total as f64;
    let p = count.share();
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Newcombe's hybrid score interval for `then`'s share less `now`'s, at quantile `z` for each
/// bound.
#[must_use]
pub fn drop_interval(then: QualityCount, now: QualityCount, z: f64) -> (f64, f64) {
    let (p1, p2) = (then.share(), now.share());
    let (l1, u1) = wilson(then, z);
    let (l2, u2) = wilson(now, z);
    let d = p1 - p2;
    (
        d - ((p1 - l1).powi(2) + (u2 - p2).powi(2)).sqrt(),
        d + ((u1 - p1).powi(2) + (p2 - l2).powi(2)).sqrt(),
    )
}

/// Every metric tonight against the baseline's, in name order.
#[must_use]
pub fn judge_quality(
    then: &QualityCounts,
    now: &QualityCounts,
    policy: &QualityPolicy,
) -> Vec<QualityCheck> {
    let z = Normal::standard().inverse_cdf(1.0 - policy.alpha.clamp(1e-12, 0.5));
    now.iter()
        .map(|(metric, &now)| {
            let then = then.get(metric).copied().filter(|c| c.total > 0);
            let Some(base) = then.filter(|_| now.total > 0) else {
                return QualityCheck {
                    metric: metric.clone(),
                    verdict: QualityVerdict::New,
                    now,
                    then,
                    drop_pts: None,
                    interval_pts: None,
                    threshold_pts: policy.threshold_pts,
                };
            };
            let drop = 100.0 * (base.share() - now.share());
            let (lo, hi) = drop_interval(base, now, z);
            let (lo, hi) = (100.0 * lo, 100.0 * hi);
            let verdict = if drop <= policy.threshold_pts {
                QualityVerdict::Pass
            } else if lo > 0.0 {
                QualityVerdict::Regressed
            } else {
                QualityVerdict::Inconclusive
            };
            QualityCheck {
                metric: metric.clone(),
                verdict,
                now,
                then: Some(base),
                drop_pts: Some(drop),
                interval_pts: Some((lo, hi)),
                threshold_pts: policy.threshold_pts,
            }
        })
        .collect()
}

/// Folds the quality checks into the case's decision: a regressed metric makes the case
/// `regressed` whatever its speed (and never a baseline); an inconclusive one makes a passing
/// case `inconclusive`. Each failing metric gets its sentence first among the reasons.
pub fn apply_quality(d: &mut Decision, checks: Vec<QualityCheck>) {
    let mut sentences = Vec::new();
    for c in &checks {
        let (Some(then), Some(drop), Some((lo, _))) = (c.then, c.drop_pts, c.interval_pts) else {
            continue;
        };
        let figures = format!(
            "{} fell from {:.1}% ({}/{}) to {:.1}% ({}/{}), {drop:.1} points against a threshold \
             of {:.1}",
            c.metric,
            100.0 * then.share(),
            then.correct,
            then.total,
            100.0 * c.now.share(),
            c.now.correct,
            c.now.total,
            c.threshold_pts,
        );
        match c.verdict {
            QualityVerdict::Regressed => {
                sentences.push(format!(
                    "Quality regressed whatever the speed: {figures}; the drop is at least \
                     {lo:.1} points at the gate's confidence."
                ));
                // A measurement that is itself wrong (invalid, failed) stays what it is.
                if !matches!(d.verdict, Verdict::Invalid | Verdict::Error) {
                    d.verdict = Verdict::Regressed;
                    d.suspect = false;
                }
            }
            QualityVerdict::Inconclusive => {
                sentences.push(format!(
                    "Quality may have dropped: {figures}, but these answers cannot tell it from \
                     chance (the drop could be as small as {lo:.1} points); score more prompts \
                     to resolve it."
                ));
                if matches!(d.verdict, Verdict::Pass | Verdict::Improved) {
                    d.verdict = Verdict::Inconclusive;
                }
            }
            QualityVerdict::Pass | QualityVerdict::New => {}
        }
    }
    for (i, s) in sentences.into_iter().enumerate() {
        d.reasons.insert(i, s);
    }
    // The metrics that held, or have nothing to compare with yet, in one sentence last: the
    // report shows every figure the harness scored, not only the failing ones.
    let held: Vec<String> = checks
        .iter()
        .filter(|c| matches!(c.verdict, QualityVerdict::Pass | QualityVerdict::New))
        .map(|c| {
            let now = format!(
                "{} {:.1}% ({}/{})",
                c.metric,
                100.0 * c.now.share(),
                c.now.correct,
                c.now.total
            );
            match c.then {
                Some(then) if c.verdict == QualityVerdict::Pass => {
                    format!("{now} against the baseline's {:.1}%", 100.0 * then.share())
                }
                _ => format!("{now}, no baseline figure yet"),
            }
        })
        .collect();
    if !held.is_empty() {
        d.reasons
            .push(format!("Quality held: {}.", held.join("; ")));
    }
    d.quality = checks;
}

#[cfg(test)]
mod tests;
