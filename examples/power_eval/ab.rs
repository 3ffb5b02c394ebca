//! A/B mode on one runner (`utilgate ab`): the base and the head of a pull request measured
//! interleaved in one session (ABBA over fresh processes) and judged on the paired difference
//! by `compare::decide_ab`, with the same two-level rule and grid correction. The host drifts
//! from night to night (every case of a session shares the night's factor) and slowly within a
//! session; neither moves the paired difference much. No I/O.

use std::io::Write;

use rand::rngs::SmallRng;
use utilgate::case::Verdict;
use utilgate::compare::{AbPlan, Evidence, Policy, decide_ab, should_confirm};

use crate::noise::{Change, FLOOR_MS, Noise, night_host, process, rng, seed};
use crate::{CASES, trials, wilson};

/// Sessions (nights) of a 100-case grid for the false-alarm count.
const SESSIONS: usize = 1000;

/// `--ab-plan JSON`: an `[ab]` plan other than the default (tuning only).
pub static PLAN: std::sync::OnceLock<AbPlan> = std::sync::OnceLock::new();

/// The plan evaluated: `utilgate ab`'s default (`[ab]` in the config) unless tuning.
fn plan() -> AbPlan {
    PLAN.get().cloned().unwrap_or_default()
}

/// The A/B policy `utilgate ab` uses with the plan.
pub fn policy() -> Policy {
    let ab = plan();
    Policy {
        confirm_repeats: ab.confirm_pairs,
        confirm_alpha: ab.confirm_alpha,
        ..Policy::default()
    }
}

/// `pairs` more pairs of one case in ABBA order, continuing from pair `first`: the host
/// factor moves by `trend` (log) over `total` pairs.
#[expect(clippy::too_many_arguments, reason = "one session's whole situation")]
fn pairs(
    r: &mut SmallRng,
    noise: &Noise,
    night: f64,
    head: &Change,
    first: usize,
    count: usize,
    total: usize,
    out: &mut (Vec<Vec<f64>>, Vec<Vec<f64>>),
) {
    for i in first..first + count {
        let at = |slot: f64| {
            let t = (i as f64 * 2.0 + slot) / (total as f64 * 2.0);
            night * (noise.session_trend * t).exp()
        };
        // ABBA: even pairs run base first, odd pairs head first.
        let (a_slot, b_slot) = if i % 2 == 0 { (0.0, 1.0) } else { (1.0, 0.0) };
        out.0.push(process(r, noise, at(a_slot), &Change::NONE));
        out.1.push(process(r, noise, at(b_slot), head));
    }
}

fn evidence(r: &[Vec<f64>]) -> Evidence<'_> {
    Evidence {
        repeats_ms: r,
        floor_ms: FLOOR_MS,
    }
}

/// One case of one session: regressed, and whether it was re-measured.
fn case(
    r: &mut SmallRng,
    noise: &Noise,
    night: f64,
    head: &Change,
    policy: &Policy,
) -> (bool, bool) {
    let plan = plan();
    let total = plan.pairs + policy.confirm_repeats;
    let mut both = (Vec::new(), Vec::new());
    pairs(r, noise, night, head, 0, plan.pairs, total, &mut both);
    let d = decide_ab(
        &evidence(&both.0),
        &evidence(&both.1),
        policy,
        plan.pairs,
        CASES,
        None,
    );
    if policy.confirm_repeats > 0 && should_confirm(&d) {
        pairs(
            r,
            noise,
            night,
            head,
            plan.pairs,
            policy.confirm_repeats,
            total,
            &mut both,
        );
        // The final call rests on every pair, as `utilgate ab` judges.
        let d = decide_ab(
            &evidence(&both.0),
            &evidence(&both.1),
            policy,
            plan.pairs,
            CASES,
            None,
        );
        return (d.verdict == Verdict::Regressed, true);
    }
    (d.verdict == Verdict::Regressed, false)
}

/// Writes the A/B table: false-alarm sessions of 100 unchanged cases, and detection.
pub fn report(out: &mut impl Write) -> std::io::Result<()> {
    let mut noise = Noise::with_process_sd(0.04);
    noise.night_sd = 0.05;
    noise.session_trend = 0.03;
    let policy = policy();
    let plan = plan();
    let threads = 2;
    let drops = [0.03, 0.05, 0.10];
    let parts: Vec<(usize, usize, Vec<usize>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|th| {
                let (noise, policy) = (&noise, &policy);
                s.spawn(move || {
                    let (mut alarms, mut confirms) = (0, 0);
                    for night in (th..SESSIONS).step_by(threads) {
                        let mut hr = rng(seed(90, 0, night as u64));
                        let host = night_host(&mut hr, noise, 1.0);
                        let mut any = false;
                        for c in 0..CASES {
                            let mut r = rng(seed(90, 1, (night << 8 | c) as u64));
                            let (failed, confirmed) =
                                case(&mut r, noise, host, &Change::NONE, policy);
                            any |= failed;
                            confirms += usize::from(confirmed);
                        }
                        alarms += usize::from(any);
                    }
                    let detected = drops
                        .iter()
                        .enumerate()
                        .map(|(d, drop)| {
                            (th..trials())
                                .step_by(threads)
                                .filter(|&i| {
                                    let mut r = rng(seed(91, d as u64, i as u64));
                                    let host = night_host(&mut r, noise, 1.0);
                                    case(&mut r, noise, host, &Change::drop(*drop), policy).0
                                })
                                .count()
                        })
                        .collect();
                    (alarms, confirms, detected)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a simulation thread panicked"))
            .collect()
    });
    let alarms: usize = parts.iter().map(|p| p.0).sum();
    let confirms: usize = parts.iter().map(|p| p.1).sum();
    let detected: Vec<usize> = (0..drops.len())
        .map(|d| parts.iter().map(|p| p.2[d]).sum())
        .collect();
    writeln!(
        out,
        "\n### A/B mode: per-process sd 4%, night-to-night drift sd 5%, 3% drift within a \
         session\n"
    )?;
    writeln!(
        out,
        "{SESSIONS} sessions of {CASES} unchanged cases; {} ABBA pairs per case, suspects \
         re-measured in {} more pairs; detection: {} trials per cell.\n",
        plan.pairs,
        policy.confirm_repeats,
        trials()
    )?;
    writeln!(
        out,
        "| rule | false-alarm sessions | re-measured per session | 3% drop | 5% drop | 10% drop |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
    writeln!(
        out,
        "| `utilgate ab` (paired, Huber, grid-corrected) | {} | {:.2} | {} | {} | {} |",
        wilson(alarms, SESSIONS),
        confirms as f64 / SESSIONS as f64,
        wilson(detected[0], trials()),
        wilson(detected[1], trials()),
        wilson(detected[2], trials())
    )
}
