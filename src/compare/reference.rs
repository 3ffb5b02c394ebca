//! The reference a case is judged against: the pinned baseline plus the nights since the pin
//! that may pool into it, so the level and the noise estimate converge to the truth as
//! unchanged nights accumulate (DESIGN.md §7, "a reference that converges"). Pure.
//!
//! # Why
//! The baseline pointer moves only by promotion or accept. A first baseline that happened to be
//! 3% fast made every later night look 3% slower: `inconclusive`, which never promotes, so the
//! reference stayed those three processes for good (utilgate 0.1 pooled only earlier
//! *baselines*, which a stuck pointer never produces). Pooling the baseline branch's
//! non-regressed nights since the pin lets the reference leave a lucky night behind while the
//! pointer itself stays where promotion put it.
//!
//! # The rule
//! * The pinned baseline is always part of the reference.
//! * Up to `limit` further nights, newest first: results of the same case and GPU SKU on the
//!   baseline branch since the lineage began (the last accept or import), whose decision was
//!   eligible (see [`eligible`]: `pass`, `improved`, `new`, or `inconclusive` for want of
//!   evidence only; never `regressed`, never a GPU-guarded or canary-shifted night, never an
//!   error).
//! * **Per process, not per night**: every process counts once, but a night never counts more
//!   than its nominal repeats (the suite's `repeats`): a night that was re-measured in 9 fresh
//!   processes has 12, and each of them then weighs 3/12, so confirmation runs never enter the
//!   reference at four times a normal night's weight. Their spread still feeds the noise
//!   estimate in full (each process is an independent draw of the noise).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Decision, Evidence};
use crate::case::Verdict;

/// The machine canary of one run: each figure's readings, in milliseconds of a fixed piece of
/// work (lower is faster), taken before and after the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Canary {
    pub figures: BTreeMap<String, Vec<f64>>,
}

/// One earlier result of a case, as a candidate for its reference.
#[derive(Debug, Clone, Copy)]
pub struct Night<'a> {
    pub evidence: Evidence<'a>,
    /// Whether its decision allows it into a reference ([`eligible`]).
    pub eligible: bool,
    /// The suite's repeats: the most processes-worth of weight one night can carry.
    pub nominal_repeats: usize,
    /// The canary of the run it came from, when one was measured.
    pub canary: Option<&'a Canary>,
}

/// A night of the reference with the weight of each of its processes (at most 1).
#[derive(Debug, Clone, Copy)]
pub struct Pooled<'a> {
    pub evidence: Evidence<'a>,
    pub weight: f64,
}

/// What a case is judged against.
#[derive(Debug, Clone)]
pub struct Reference<'a> {
    /// The pinned baseline (its figures and environment are what reports name).
    pub baseline: Pooled<'a>,
    /// Further nights pooled into the level and the noise, newest first.
    pub history: Vec<Pooled<'a>>,
    /// The canaries of the runs in the reference (the baseline's first).
    pub canaries: Vec<&'a Canary>,
}

impl<'a> Reference<'a> {
    /// A reference of the baseline and unweighted history (utilgate 0.1's lineage), no canary.
    #[must_use]
    pub fn plain(baseline: Evidence<'a>, history: &[Evidence<'a>]) -> Self {
        Reference {
            baseline: Pooled {
                evidence: baseline,
                weight: 1.0,
            },
            history: history
                .iter()
                .map(|&evidence| Pooled {
                    evidence,
                    weight: 1.0,
                })
                .collect(),
            canaries: Vec::new(),
        }
    }
}

/// The weight of each process of a night with `processes` processes and `nominal` repeats.
fn weight(processes: usize, nominal: usize) -> f64 {
    if processes == 0 || nominal == 0 || processes <= nominal {
        1.0
    } else {
        nominal as f64 / processes as f64
    }
}

fn pooled<'a>(night: &Night<'a>) -> Pooled<'a> {
    let processes = night
        .evidence
        .repeats_ms
        .iter()
        .filter(|r| !r.is_empty())
        .count();
    Pooled {
        evidence: night.evidence,
        weight: weight(processes, night.nominal_repeats),
    }
}

/// The reference of a case: the pinned `baseline` and up to `limit` eligible nights of `since`
/// (the baseline branch's results since the lineage began, newest first, without the baseline
/// itself).
#[must_use]
pub fn reference<'a>(baseline: Night<'a>, since: &[Night<'a>], limit: usize) -> Reference<'a> {
    let chosen: Vec<&Night<'a>> = since.iter().filter(|n| n.eligible).take(limit).collect();
    let mut canaries: Vec<&Canary> = baseline.canary.into_iter().collect();
    canaries.extend(chosen.iter().filter_map(|n| n.canary));
    Reference {
        baseline: pooled(&baseline),
        history: chosen.into_iter().map(pooled).collect(),
        canaries,
    }
}

/// The processes a confirmed result is judged on: only the fresh ones. The first `nominal`
/// processes made the case a suspect because they looked slow; counting them again in the
/// final test would carry that selection into it (at per-process noise 4% it turned a few
/// unlucky nights a month into false alarms). A result with no more than `nominal` processes
/// is judged on all of them.
#[must_use]
pub fn confirm_evidence(repeats_ms: &[Vec<f64>], nominal: usize) -> &[Vec<f64>] {
    if nominal > 0 && repeats_ms.len() > nominal {
        &repeats_ms[nominal..]
    } else {
        repeats_ms
    }
}

/// Whether a decision lets its result pool into later references: a result that measured the
/// code as it is, on a machine that could be trusted, and was not found slower. `pass`,
/// `improved` and `new`, and `inconclusive` only when the evidence was merely short (never when
/// the GPU state or the machine canary made it so).
#[must_use]
pub fn eligible(d: &Decision) -> bool {
    match d.verdict {
        Verdict::Pass | Verdict::Improved | Verdict::New => true,
        Verdict::Inconclusive => !d.untrusted,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn night(r: &[Vec<f64>], eligible: bool) -> Night<'_> {
        Night {
            evidence: Evidence {
                repeats_ms: r,
                floor_ms: 3.0,
            },
            eligible,
            nominal_repeats: 3,
            canary: None,
        }
    }

    #[test]
    fn pools_eligible_nights_newest_first_up_to_the_limit() {
        let three = vec![vec![6.0; 5]; 3];
        let twelve = vec![vec![6.1; 5]; 12];
        let base = night(&three, true);
        let since = [
            night(&twelve, true),
            night(&three, false),
            night(&three, true),
            night(&three, true),
        ];
        let r = reference(base, &since, 2);
        assert_eq!(r.history.len(), 2);
        // A re-measured night weighs as much as a normal one in total: 12 x 3/12.
        assert!((r.history[0].weight - 0.25).abs() < 1e-12);
        assert!((r.history[1].weight - 1.0).abs() < 1e-12);
        assert_eq!(r.history[0].evidence.repeats_ms.len(), 12);
        assert!(reference(base, &since, 0).history.is_empty());
    }

    #[test]
    fn a_confirmed_result_is_judged_on_its_fresh_processes() {
        let twelve: Vec<Vec<f64>> = (0..12).map(|i| vec![f64::from(i)]).collect();
        assert_eq!(confirm_evidence(&twelve, 3).len(), 9);
        assert_eq!(confirm_evidence(&twelve, 3)[0], vec![3.0]);
        assert_eq!(confirm_evidence(&twelve[..3], 3).len(), 3);
        assert_eq!(confirm_evidence(&twelve, 0).len(), 12);
    }

    #[test]
    fn weights_never_exceed_one() {
        assert!((weight(3, 3) - 1.0).abs() < 1e-12);
        assert!((weight(1, 3) - 1.0).abs() < 1e-12);
        assert!((weight(0, 3) - 1.0).abs() < 1e-12);
        assert!((weight(12, 3) - 0.25).abs() < 1e-12);
        assert!((weight(12, 0) - 1.0).abs() < 1e-12);
    }
}
