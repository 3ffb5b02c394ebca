//! The gate as `utilgate run` applies it night after night to one case on the baseline branch:
//! pick the reference, decide, re-measure a suspect, and promote when the night passed. Every
//! decision goes through `utilgate::compare`, the code `utilgate run` calls. No I/O.

use rand::rngs::SmallRng;
use utilgate::case::Verdict;
use utilgate::compare::{
    Canary, Decision, Evidence, Night, Policy, confirm_evidence, decide, decide_against, eligible,
    promotable, reference, should_confirm,
};

use crate::noise::{self, Change, FLOOR_MS, Noise};

/// Processes per result before any confirmation.
pub const REPEATS: usize = 3;
/// Earlier results a reference may pool (`[gate] history_runs`).
pub const HISTORY: usize = 10;

/// How the reference of a case is chosen, and which code decides.
#[derive(Clone, Debug)]
pub enum Rule {
    /// utilgate 0.1: the pinned baseline and the baselines it replaced (its lineage), judged
    /// with `compare::decide`, no canary.
    Lineage { label: &'static str, policy: Policy },
    /// The converging reference (`compare::reference`): the pinned baseline and the
    /// non-regressed nights since the pin, weighted per process, judged by
    /// `compare::decide_against`, with or without the machine canary.
    Converging {
        label: &'static str,
        policy: Policy,
        canary: bool,
    },
}

impl Rule {
    pub fn label(&self) -> &'static str {
        match self {
            Rule::Lineage { label, .. } | Rule::Converging { label, .. } => label,
        }
    }

    fn policy(&self) -> &Policy {
        match self {
            Rule::Lineage { policy, .. } | Rule::Converging { policy, .. } => policy,
        }
    }
}

/// One stored result of a case on the baseline branch.
pub struct Stored {
    pub repeats: Vec<Vec<f64>>,
    pub verdict: Verdict,
    pub eligible: bool,
    /// `compare::promotable`: may move the pointer if the night passed.
    pub promotable: bool,
    pub promoted: bool,
    pub canary: Canary,
}

/// A case's history on the baseline branch, oldest first; the pinned baseline is the last
/// promoted result.
#[derive(Default)]
pub struct CaseState {
    pub nights: Vec<Stored>,
}

fn evidence(repeats: &[Vec<f64>]) -> Evidence<'_> {
    Evidence {
        repeats_ms: repeats,
        floor_ms: FLOOR_MS,
    }
}

fn as_night(s: &Stored) -> Night<'_> {
    Night {
        evidence: evidence(&s.repeats),
        eligible: s.eligible,
        nominal_repeats: REPEATS,
        canary: Some(&s.canary),
    }
}

/// What one night of one case produced: the stored result (not yet promoted) and whether it
/// was re-measured.
pub struct Outcome {
    pub stored: Stored,
    pub confirmed: bool,
    /// The final decision (after the confirm step when there was one).
    pub decision: Decision,
}

/// The night's canary reading, shared by every case of the night's run.
pub fn canary(rng: &mut SmallRng, host: f64) -> Canary {
    Canary {
        figures: noise::canary(rng, host).into_iter().collect(),
    }
}

/// Judges one night of a case: `host` is the night's host factor (it scales the case; the
/// night's `canary` saw the same host), `change` the code's change, `cases` the grid size.
#[expect(clippy::too_many_arguments, reason = "one night's whole situation")]
pub fn night(
    rule: &Rule,
    state: &CaseState,
    rng: &mut SmallRng,
    noise: &Noise,
    host: f64,
    canary: &Canary,
    change: &Change,
    cases: usize,
) -> Outcome {
    let policy = rule.policy();
    let mut repeats = noise::result(rng, noise, REPEATS, host, change);
    let canary = canary.clone();
    let Some(pin) = state.nights.iter().rposition(|s| s.promoted) else {
        let d = decide(None, &evidence(&repeats), &[], policy, cases, None);
        return Outcome {
            stored: Stored {
                repeats,
                verdict: d.verdict,
                eligible: eligible(&d),
                promotable: promotable(&d),
                promoted: false,
                canary,
            },
            confirmed: false,
            decision: d,
        };
    };
    let judge = |repeats: &[Vec<f64>]| match rule {
        Rule::Lineage { .. } => {
            let lineage: Vec<Evidence<'_>> = state.nights[..pin]
                .iter()
                .rev()
                .filter(|s| s.promoted)
                .take(HISTORY)
                .map(|s| evidence(&s.repeats))
                .collect();
            decide(
                Some(&evidence(&state.nights[pin].repeats)),
                &evidence(repeats),
                &lineage,
                policy,
                cases,
                None,
            )
        }
        Rule::Converging {
            canary: use_canary, ..
        } => {
            let since: Vec<Night<'_>> = state
                .nights
                .iter()
                .enumerate()
                .rev()
                .filter(|(i, _)| *i != pin)
                .map(|(_, s)| as_night(s))
                .collect();
            let mut pinned = as_night(&state.nights[pin]);
            if !use_canary {
                pinned.canary = None;
            }
            let since: Vec<Night<'_>> = since
                .into_iter()
                .map(|mut n| {
                    if !use_canary {
                        n.canary = None;
                    }
                    n
                })
                .collect();
            let r = reference(pinned, &since, HISTORY);
            decide_against(
                Some(&r),
                &evidence(repeats),
                use_canary.then_some(&canary),
                policy,
                cases,
                None,
            )
        }
    };
    let mut d = judge(&repeats);
    let mut confirmed = false;
    if policy.confirm_repeats > 0 && should_confirm(&d) {
        repeats.extend(noise::result(
            rng,
            noise,
            policy.confirm_repeats,
            host,
            change,
        ));
        // As `utilgate run` judges it: 0.1 on every process, now on the fresh ones only.
        d = match rule {
            Rule::Lineage { .. } => judge(&repeats),
            Rule::Converging { .. } if crate::judge_all() => judge(&repeats),
            Rule::Converging { .. } => judge(confirm_evidence(&repeats, REPEATS)),
        };
        confirmed = true;
    }
    Outcome {
        stored: Stored {
            repeats,
            verdict: d.verdict,
            eligible: eligible(&d),
            promotable: promotable(&d),
            promoted: false,
            canary,
        },
        confirmed,
        decision: d,
    }
}

/// The rules compared: utilgate 0.1's, and the converging reference with and without the
/// canary.
pub fn rules() -> Vec<Rule> {
    vec![
        Rule::Lineage {
            label: "0.1: pinned baseline + its lineage, median only",
            policy: Policy::default(),
        },
        Rule::Converging {
            label: "converging reference + canary, median only",
            policy: Policy {
                gate_on: vec![utilgate::compare::GateStat::Median],
                ..Policy::default()
            },
            canary: true,
        },
        Rule::Converging {
            label: "converging reference, no canary",
            policy: Policy::default(),
            canary: false,
        },
        Rule::Converging {
            label: "**default: converging reference + canary**",
            policy: Policy::default(),
            canary: true,
        },
    ]
}
