//! `power_eval --diag`: where the misses and the false alarms of a scenario come from, for the
//! default rule. Prints, per scenario, the false-alarm case-nights by night index and the
//! figures of each one, and for the detection trials the final verdicts with the noise, the
//! resolution and the drop the decision saw. No I/O but stdout.

use std::collections::BTreeMap;
use std::io::Write;

use utilgate::case::Verdict;

use crate::gate::{self, CaseState, HISTORY, Rule};
use crate::noise::{Change, night_host, rng, seed};
use crate::{CASES, Scenario, projects, trials};

fn q(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a share of a length is a valid index"
    )]
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i]
}

/// False alarms of one scenario's projects, by night.
fn alarms(out: &mut impl Write, sc_id: u64, sc: &Scenario, rule: &Rule) -> std::io::Result<()> {
    let mut by_night: BTreeMap<usize, usize> = BTreeMap::new();
    let mut shown = 0;
    for p in 0..projects() {
        crate::run_project(sc_id, sc, rule, p, |night, shifted, outcomes| {
            if shifted {
                return Ok(());
            }
            let failed: Vec<&gate::Outcome> = outcomes
                .iter()
                .filter(|o| o.stored.verdict == Verdict::Regressed)
                .collect();
            if night > 0 && !failed.is_empty() {
                *by_night.entry(night).or_default() += 1;
                for o in failed.iter().take(2) {
                    if shown < 12 {
                        shown += 1;
                        let d = &o.decision;
                        let tail = d.tails.first();
                        writeln!(
                            out,
                            "  FA p{p} night {night}: ref {} procs, now {}, noise {:.2}%, drop {:.2}% {:?}, res {:.2}%, p {:?}; {}: {:?} drop {:?} {:?}",
                            d.repeats_then,
                            d.repeats_now,
                            d.noise_pct.unwrap_or(f64::NAN),
                            d.drop_pct.unwrap_or(f64::NAN),
                            d.interval_pct,
                            d.resolution_pct.unwrap_or(f64::NAN),
                            d.p_value,
                            tail.map_or("-", |t| t.stat.as_str()),
                            tail.map(|t| t.verdict),
                            tail.and_then(|t| t.drop_pct),
                            tail.and_then(|t| t.interval_pct),
                        )?;
                    }
                }
            }
            Ok(())
        })?;
    }
    writeln!(out, "  false-alarm nights by night index: {by_night:?}")
}

/// The detection trials of one cell: final verdicts and figures.
fn misses(
    out: &mut impl Write,
    sc_id: u64,
    sc: &Scenario,
    rule: &Rule,
    d: usize,
) -> std::io::Result<()> {
    let (name, change, host_factor) = &sc.detect[d];
    let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
    let (mut noise, mut res, mut drop, mut tdrop, mut tres) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut unconfirmed = 0;
    for i in 0..trials() {
        let mut state = CaseState::default();
        for night in 0..=HISTORY + 1 {
            let mut r = rng(seed(sc_id, 3 + d as u64, (i << 8 | night) as u64));
            let last = night == HISTORY + 1;
            let host = night_host(&mut r, &sc.noise, if last { *host_factor } else { 1.0 });
            let canary = gate::canary(&mut r, host);
            let ch = if last {
                *change
            } else if night == 0 {
                Change {
                    factor: sc.first_factor,
                    ..Change::NONE
                }
            } else {
                Change::NONE
            };
            let mut o = gate::night(rule, &state, &mut r, &sc.noise, host, &canary, &ch, CASES);
            if last {
                let dd = &o.decision;
                let key = std::iter::once(dd.verdict.to_string())
                    .chain(
                        dd.tails
                            .iter()
                            .map(|t| format!("/{}:{}", t.stat, t.verdict)),
                    )
                    .collect::<Vec<String>>()
                    .concat();
                *verdicts.entry(key).or_default() += 1;
                unconfirmed += usize::from(!o.confirmed);
                noise.push(dd.noise_pct.unwrap_or(f64::NAN));
                res.push(dd.resolution_pct.unwrap_or(f64::NAN));
                drop.push(dd.drop_pct.unwrap_or(f64::NAN));
                if let Some(t) = dd.tails.first() {
                    tdrop.push(t.drop_pct.unwrap_or(f64::NAN));
                    tres.push(t.interval_pct.map_or(f64::NAN, |(lo, hi)| (hi - lo) / 2.0));
                }
                break;
            }
            o.stored.promoted = o.stored.promotable && o.stored.verdict != Verdict::Regressed;
            state.nights.push(o.stored);
        }
    }
    writeln!(
        out,
        "  {name}: verdicts {verdicts:?}; not re-measured {unconfirmed}"
    )?;
    for (label, v) in [
        ("noise %", &mut noise),
        ("resolution %", &mut res),
        ("drop %", &mut drop),
        ("tail drop %", &mut tdrop),
        ("tail half-width %", &mut tres),
    ] {
        writeln!(
            out,
            "    {label}: q10 {:.2} q50 {:.2} q90 {:.2}",
            q(v, 0.1),
            q(v, 0.5),
            q(v, 0.9)
        )?;
    }
    Ok(())
}

pub fn report(
    out: &mut impl Write,
    scenarios: &[Scenario],
    only: &[usize],
    rule: &Rule,
) -> std::io::Result<()> {
    for (i, sc) in scenarios.iter().enumerate() {
        if !only.is_empty() && !only.contains(&i) {
            continue;
        }
        writeln!(out, "\n## {} ({})", sc.name, rule.label())?;
        if sc.shift.is_none() {
            alarms(out, i as u64, sc, rule)?;
        }
        for d in 0..sc.detect.len() {
            misses(out, i as u64, sc, rule, d)?;
        }
        out.flush()?;
    }
    Ok(())
}
