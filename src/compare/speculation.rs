//! Speculative decoding's own metric: the share of drafted tokens the target accepted, judged
//! against the baseline's. A drop in acceptance is a regression even when the round time
//! holds: each round then emits fewer tokens, and what users feel (time per token) is worse.
//! Pure.
//!
//! The rule is the accuracy guard's ([`super::quality`]): **regressed** when the drop (in
//! percentage points) is larger than `[gate] acceptance_max_drop_pts` and the lower bound of
//! Newcombe's interval on it is above zero at the grid-corrected level; **inconclusive** when
//! the drop is larger but the rounds cannot tell it from chance. The trials are the rounds of
//! each sequence (`drafted / k`), each scored by its share accepted, not the drafted tokens:
//! a round's drafts are accepted as a prefix (the first rejection ends it), so its tokens are
//! not independent and counting them would overstate the evidence up to k-fold.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::Decision;
use super::quality::{QualityCount, QualityPolicy, QualityVerdict, drop_interval};
use crate::case::Verdict;

/// Drafted and accepted tokens over a case's counted rounds (every repeat's added).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftCounts {
    /// Tokens the draft proposed.
    pub drafted: u64,
    /// Of them, tokens the target accepted.
    pub accepted: u64,
}

impl DraftCounts {
    /// The share of drafted tokens accepted, 0 to 1 (0 when nothing was drafted).
    #[must_use]
    pub fn rate(self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }

    /// Tokens a round emits per sequence at draft length `k`: the accepted drafts plus the
    /// target's own next token, `1 + k x rate`.
    #[must_use]
    pub fn tokens_per_round(self, k: u64) -> f64 {
        1.0 + k as f64 * self.rate()
    }

    /// Two counts pooled.
    #[must_use]
    pub fn plus(self, other: DraftCounts) -> DraftCounts {
        DraftCounts {
            drafted: self.drafted.saturating_add(other.drafted),
            accepted: self.accepted.saturating_add(other.accepted),
        }
    }

    /// The rounds as binomial trials (one per sequence per round, `drafted / k`), each
    /// counting its share accepted.
    fn as_trials(self, k: u64) -> QualityCount {
        let rounds = self.drafted / k.max(1);
        // accepted / drafted of the rounds, rounded to the nearest, in integers.
        let correct = if self.drafted == 0 {
            0
        } else {
            let (a, r, d) = (
                u128::from(self.accepted),
                u128::from(rounds),
                u128::from(self.drafted),
            );
            u64::try_from((2 * a * r + d) / (2 * d)).unwrap_or(rounds)
        };
        QualityCount {
            correct,
            total: rounds,
        }
    }
}

/// How tonight's acceptance compares with the baseline's, with the figures that justify it
/// (stored in the decision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptanceCheck {
    pub verdict: QualityVerdict,
    /// The draft length.
    pub k: u64,
    pub now: DraftCounts,
    pub then: Option<DraftCounts>,
    /// The baseline's acceptance less tonight's, percentage points (positive: worse).
    pub drop_pts: Option<f64>,
    /// The drop's confidence interval, percentage points (one-sided bounds at the level).
    pub interval_pts: Option<(f64, f64)>,
    pub threshold_pts: f64,
}

/// Tonight's acceptance against the baseline's at draft length `k`.
#[must_use]
pub fn judge_acceptance(
    then: Option<DraftCounts>,
    now: DraftCounts,
    k: u64,
    policy: &QualityPolicy,
) -> AcceptanceCheck {
    let base = then.filter(|t| t.drafted >= k.max(1) && now.drafted >= k.max(1));
    let Some(base) = base else {
        return AcceptanceCheck {
            verdict: QualityVerdict::New,
            k,
            now,
            then,
            drop_pts: None,
            interval_pts: None,
            threshold_pts: policy.threshold_pts,
        };
    };
    let z = Normal::standard().inverse_cdf(1.0 - policy.alpha.clamp(1e-12, 0.5));
    let drop = 100.0 * (base.rate() - now.rate());
    let (lo, hi) = drop_interval(base.as_trials(k), now.as_trials(k), z);
    let (lo, hi) = (100.0 * lo, 100.0 * hi);
    let verdict = if drop <= policy.threshold_pts {
        QualityVerdict::Pass
    } else if lo > 0.0 {
        QualityVerdict::Regressed
    } else {
        QualityVerdict::Inconclusive
    };
    AcceptanceCheck {
        verdict,
        k,
        now,
        then: Some(base),
        drop_pts: Some(drop),
        interval_pts: Some((lo, hi)),
        threshold_pts: policy.threshold_pts,
    }
}

/// A speculative case's counts, checked against its rounds: present, and no more drafted
/// tokens than `steps` rounds of `batch` sequences at draft length `k` can propose. The
/// error is the sentence that makes the case `invalid`.
pub fn check_counts(
    counts: Option<DraftCounts>,
    k: u64,
    batch: u64,
    steps: u64,
) -> Result<DraftCounts, String> {
    let Some(counts) = counts else {
        return Err(format!(
            "The suite drafts k = {k} tokens per round, but the harness reported no \
             {{\"speculative\": {{\"drafted\": D, \"accepted\": A}}}} line: acceptance cannot \
             be judged, and a drop in it would pass unseen. Report the counted rounds' drafted \
             and accepted tokens."
        ));
    };
    let most = steps.saturating_mul(batch).saturating_mul(k);
    if counts.drafted > most {
        return Err(format!(
            "The harness reported {} drafted tokens, more than {steps} counted rounds x batch \
             {batch} x k = {k} can propose ({most}): the counts include warm-up rounds or \
             another case's; report the counted rounds only.",
            counts.drafted
        ));
    }
    if counts.drafted == 0 {
        return Err(
            "The harness reported no drafted tokens: the draft never ran, so this is not a \
             speculative measurement; check that the engine was started with its draft."
                .to_owned(),
        );
    }
    Ok(counts)
}

/// Makes the case `invalid` with `why` first (a failed case stays `error`).
pub fn refuse(d: &mut Decision, why: String) {
    if d.verdict != Verdict::Error {
        d.verdict = Verdict::Invalid;
        d.suspect = false;
    }
    d.reasons.insert(0, why);
}

/// Folds the check into the case's decision: regressed acceptance makes the case `regressed`
/// whatever its speed (and never a baseline), inconclusive acceptance makes a passing case
/// `inconclusive`, each with its sentence first; every case gets a sentence with its figures.
pub fn apply_acceptance(d: &mut Decision, check: AcceptanceCheck) {
    let k = check.k;
    let now = format!(
        "{:.1}% of {} drafted tokens accepted ({:.2} tokens per round per sequence at k = {k})",
        100.0 * check.now.rate(),
        check.now.drafted,
        check.now.tokens_per_round(k),
    );
    let sentence = match (
        check.verdict,
        check.then,
        check.drop_pts,
        check.interval_pts,
    ) {
        (QualityVerdict::Regressed, Some(then), Some(drop), Some((lo, _))) => {
            if !matches!(d.verdict, Verdict::Invalid | Verdict::Error) {
                d.verdict = Verdict::Regressed;
                d.suspect = false;
            }
            format!(
                "Speculation regressed whatever the step time: acceptance fell from {:.1}% \
                 ({:.2} tokens per round) to {now}, {drop:.1} points against a threshold of \
                 {:.1}; the drop is at least {lo:.1} points at the gate's confidence.",
                100.0 * then.rate(),
                then.tokens_per_round(k),
                check.threshold_pts,
            )
        }
        (QualityVerdict::Inconclusive, Some(then), Some(drop), Some((lo, _))) => {
            if matches!(d.verdict, Verdict::Pass | Verdict::Improved) {
                d.verdict = Verdict::Inconclusive;
            }
            format!(
                "Acceptance may have dropped: from {:.1}% to {now}, {drop:.1} points against a \
                 threshold of {:.1}, but these rounds cannot tell it from chance (the drop \
                 could be as small as {lo:.1} points); time more steps to resolve it.",
                100.0 * then.rate(),
                check.threshold_pts,
            )
        }
        (_, Some(then), _, _) => format!(
            "Speculation: {now}; the baseline accepted {:.1}%.",
            100.0 * then.rate()
        ),
        (_, None, _, _) => format!("Speculation: {now}; no baseline figure yet."),
    };
    match check.verdict {
        QualityVerdict::Regressed | QualityVerdict::Inconclusive => d.reasons.insert(0, sentence),
        QualityVerdict::Pass | QualityVerdict::New => d.reasons.push(sentence),
    }
    d.acceptance = Some(check);
}

#[cfg(test)]
mod tests;
