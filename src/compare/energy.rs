//! Energy per token (#33 item 4): each repeat's joules over its timed window (`gpu::energy`
//! measures it), the case's joules per step, joules per token and tokens per second per watt,
//! and the gate on joules per token (`gate_on = ["joules_per_token"]`), judged by the same
//! two-level rule as a step time ([`super::decide`]). Pure.
//!
//! # The figures
//!
//! * joules per step = the repeats' joules added / their steps added (each repeat's joules are
//!   those of its window, which holds a whole number of steps, see `gpu::energy`);
//! * joules per token = joules per step / tokens per step, where a decode step makes one token
//!   per sequence (`batch`) and a prefill step reads the whole prompt of each (`batch x
//!   context`);
//! * tokens per second per watt = (tokens / s) / (J / s) = tokens per joule = 1 / joules per
//!   token: the two are one figure, printed both ways because both are asked for.
//!
//! # The gate
//!
//! Each repeat (a fresh process, the unit of evidence as for step times) gives one joules per
//! token; the baseline's repeats and tonight's go through [`super::decide`] as one-step
//! processes, so the practical threshold (`max_drop_pct`, or `[gate.stat_max_drop_pct]
//! joules_per_token`), the noise floor, the pooled between-process variance and the grid's
//! false-alarm correction are the step time's. The drop is `1 - J_then / J_now`: the share of
//! tokens per joule lost, as a utilisation drop is the share of utilisation lost. Only the
//! pinned baseline is the reference (no history pooled): energy is a new record and the
//! lineage's older results have none.

use super::decide::{Decision, Evidence, Policy, decide};
pub use super::energy_record::{
    EnergyCheck, EnergyFigures, EnergySource, EnergyWindow, RepeatEnergy, joules,
};
use super::gate_stat::GateStat;
use crate::case::{CaseKey, Phase, Verdict};

/// Tokens one step of `key` processes: `batch` for decode (one new token per sequence),
/// `batch x context` for prefill (every prompt token of every sequence).
#[must_use]
pub fn tokens_per_step(key: &CaseKey) -> u64 {
    match key.phase {
        Phase::Decode => key.batch,
        Phase::Prefill => key.batch.saturating_mul(key.context),
    }
}

/// Each measured repeat's joules per token, in repeat order.
#[must_use]
pub fn per_repeat_joules_per_token(repeats: &[RepeatEnergy], tokens_per_step: u64) -> Vec<f64> {
    if tokens_per_step == 0 {
        return Vec::new();
    }
    repeats
        .iter()
        .filter_map(|r| r.measured.as_ref().ok())
        .filter(|w| w.steps > 0 && w.joules.is_finite() && w.joules > 0.0)
        .map(|w| w.joules_per_step() / tokens_per_step as f64)
        .collect()
}

/// The case's figures, `None` when no repeat measured one (or a step has no tokens).
#[must_use]
pub fn figures(repeats: &[RepeatEnergy], tokens_per_step: u64) -> Option<EnergyFigures> {
    let windows: Vec<&EnergyWindow> = repeats
        .iter()
        .filter_map(|r| r.measured.as_ref().ok())
        .filter(|w| w.steps > 0 && w.joules.is_finite() && w.joules > 0.0 && w.window_ms > 0.0)
        .collect();
    if windows.is_empty() || tokens_per_step == 0 {
        return None;
    }
    let joules: f64 = windows.iter().map(|w| w.joules).sum();
    let steps: u64 = windows.iter().map(|w| w.steps).sum();
    let seconds: f64 = windows.iter().map(|w| w.window_ms / 1e3).sum();
    let joules_per_step = joules / steps as f64;
    let joules_per_token = joules_per_step / tokens_per_step as f64;
    let counter = windows
        .iter()
        .filter(|w| w.source == EnergySource::Counter)
        .count();
    let source = if counter == windows.len() {
        "counter"
    } else if counter == 0 {
        "integral"
    } else {
        "counter and integral"
    };
    Some(EnergyFigures {
        joules_per_step,
        joules_per_token,
        tokens_per_s_per_w: 1.0 / joules_per_token,
        mean_power_w: joules / seconds,
        power_limit_w: windows
            .iter()
            .filter_map(|w| w.power_limit_w)
            .reduce(f64::min),
        source: source.to_owned(),
        repeats: windows.len(),
        repeats_of: repeats.len(),
        steps,
        refused: repeats
            .iter()
            .filter_map(|r| {
                r.measured
                    .as_ref()
                    .err()
                    .map(|why| format!("repeat {}: {why}", r.repeat))
            })
            .collect(),
    })
}

/// Judge tonight's energy per token against the baseline's, each repeat one process, at the
/// per-case level of `tests` tests (the grid's cases times the gated statistics); `gated`:
/// whether the verdict may follow it. `None` when tonight has no figure: a case without
/// energy is judged on its steps alone.
#[must_use]
pub fn judge_energy(
    then: &[RepeatEnergy],
    now: &[RepeatEnergy],
    tokens_per_step: u64,
    policy: &Policy,
    tests: usize,
    gated: bool,
) -> Option<EnergyCheck> {
    let now_figures = figures(now, tokens_per_step)?;
    let then_figures = figures(then, tokens_per_step);
    let threshold_pct = policy.threshold_for(GateStat::JoulesPerToken);
    let now_j = per_repeat_joules_per_token(now, tokens_per_step);
    let then_j = per_repeat_joules_per_token(then, tokens_per_step);
    let mut check = EnergyCheck {
        verdict: Verdict::New,
        now: now_figures,
        then: then_figures,
        level_now_j: None,
        level_then_j: None,
        drop_pct: None,
        interval_pct: None,
        p_value: None,
        threshold_pct,
        gated,
        decides: false,
    };
    if then_j.is_empty() {
        return Some(check);
    }
    // Each repeat a one-step process; the floor only has to be positive and below every step
    // (a utilisation over 100% would read as impossible), and is the same on both sides, so the
    // drop is the ratio of the levels alone.
    let floor = now_j
        .iter()
        .chain(&then_j)
        .copied()
        .fold(f64::INFINITY, f64::min)
        / 2.0;
    let as_processes = |j: &[f64]| -> Vec<Vec<f64>> { j.iter().map(|x| vec![*x]).collect() };
    let (now_p, then_p) = (as_processes(&now_j), as_processes(&then_j));
    let rule = Policy {
        max_drop_pct: threshold_pct,
        gate_on: vec![GateStat::Median],
        ..policy.clone()
    };
    let d: Decision = decide(
        Some(&Evidence {
            repeats_ms: &then_p,
            floor_ms: floor,
        }),
        &Evidence {
            repeats_ms: &now_p,
            floor_ms: floor,
        },
        &[],
        &rule,
        tests,
        None,
    );
    check.verdict = match d.verdict {
        v @ (Verdict::Pass | Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive) => v,
        // One-step processes with positive figures are always judged; anything else is no test.
        _ => Verdict::Inconclusive,
    };
    check.level_now_j = d.step_now_ms;
    check.level_then_j = d.step_then_ms;
    check.drop_pct = d.drop_pct;
    check.interval_pct = d.interval_pct;
    check.p_value = d.p_value;
    Some(check)
}

/// Folds the energy check into the case's decision: when gated, a regression of energy per
/// token makes a judged case `regressed`, one the noise cannot resolve makes a pass
/// `inconclusive`; the sentence carries the figures. Ungated, the check is kept and a change
/// beyond the threshold is a sentence that says it does not fail. The step-time figures stay
/// as they were.
pub fn apply_energy(d: &mut Decision, mut check: EnergyCheck) {
    if !check.gated {
        if matches!(check.verdict, Verdict::Regressed | Verdict::Improved) {
            let way = if check.verdict == Verdict::Regressed {
                "Energy regressed"
            } else {
                "Energy improved"
            };
            d.reasons.push(format!(
                "{way} (not gated): {}; add \"joules_per_token\" to gate_on to judge it.",
                check.change()
            ));
        }
        d.energy = Some(check);
        return;
    }
    let limit = check
        .now
        .power_limit_w
        .map(|w| format!(" at a {w:.0} W power limit"))
        .unwrap_or_default();
    let interval = check
        .interval_pct
        .map(|(lo, hi)| {
            format!(" (the noise allows a fall of tokens per joule from {lo:.1}% to {hi:.1}%)")
        })
        .unwrap_or_default();
    let sentence = match check.verdict {
        Verdict::Regressed => Some(format!(
            "Energy regressed: {}{limit}; the fall of tokens per joule is beyond the {}% \
             threshold{interval}.",
            check.change(),
            check.threshold_pct
        )),
        Verdict::Inconclusive => Some(format!(
            "Energy may have regressed: {}{limit}, but the noise cannot confirm it{interval}.",
            check.change()
        )),
        Verdict::Improved => Some(format!("Energy improved: {}{limit}.", check.change())),
        _ => None,
    };
    let before = d.verdict;
    match check.verdict {
        // An untrusted measurement (a throttled GPU, a moved canary) stays inconclusive: its
        // joules are as suspect as its steps.
        Verdict::Regressed
            if !d.untrusted
                && matches!(
                    d.verdict,
                    Verdict::Pass | Verdict::Improved | Verdict::Inconclusive
                ) =>
        {
            d.verdict = Verdict::Regressed;
        }
        Verdict::Inconclusive if matches!(d.verdict, Verdict::Pass | Verdict::Improved) => {
            d.verdict = Verdict::Inconclusive;
        }
        _ => {}
    }
    check.decides = d.verdict != before;
    if let Some(s) = sentence {
        if check.decides {
            d.reasons.insert(0, s);
        } else {
            d.reasons.push(s);
        }
    }
    d.energy = Some(check);
}

#[cfg(test)]
mod tests;
