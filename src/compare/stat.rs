//! The statistics a case can be gated on, each reduced per process (the unit of evidence) to
//! one log figure. Pure.
//!
//! * `median`: the median step of each process: what a typical step costs, blind to stalls.
//! * `mean`: the mean step of each process without its slowest 2% (isolated outlier steps):
//!   the throughput a user sees, stalls included (a 4x stall on one step in 20 raises it by
//!   about 9% while the median does not move).
//! * `p99`: the 99th percentile step of each process: the tail itself. Needs many steps per
//!   process to be steady (with 100 steps it is the second-slowest step).
//! * `stall`: the time each process lost to stalls, steps slower than [`STALL_FACTOR`] times
//!   its own median: `1 + sum(step - median) / (n x median)` over those steps, so a fall of
//!   the figure's level reads as the throughput a user loses to them. Measured against the
//!   process's own median it carries no process-to-process offset (the median gates that),
//!   and it keeps every stalled step: a 4x stall on one step in 20 costs 15% of the
//!   throughput, all of which it sees, while the `mean` trims the slowest 2% of steps (two of
//!   the five stalls of a 100-step process) and adds the 2% process noise on top
//!   (docs/verdict.md has the measured power of both).
//!
//! Every statistic goes through the same two-level rule in [`super::decide_against`], with
//! its own threshold.

use std::f64::consts::FRAC_PI_2;

use super::Evidence;
use super::decide::{Run, RunProblem, summarise};
use super::gate_stat::{GateStat, STALL_FACTOR};

/// The share of a process's slowest steps the mean leaves out.
const MEAN_TRIM: f64 = 0.02;
/// Scales a MAD to a normal standard deviation.
const MAD_TO_SIGMA: f64 = 1.4826;
/// Asymptotic variance of the 0.99 sample quantile of n normal draws, in units of sigma^2 / n:
/// `q (1 - q) / phi(z_q)^2` with `z_0.99 = 2.326` (the Bahadur representation).
const P99_VAR_FACTOR: f64 = 13.9;

fn relative_mad(sorted: &[f64], centre: f64) -> f64 {
    let mut dev: Vec<f64> = sorted.iter().map(|x| (x - centre).abs() / centre).collect();
    dev.sort_by(f64::total_cmp);
    crate::stats::quantile(&dev, 0.5)
}

/// One result reduced to per-process log figures of `stat`.
pub(super) fn units(e: &Evidence<'_>, stat: GateStat) -> Result<Run, RunProblem> {
    // The median path also validates the samples and the floor.
    let run = summarise(e)?;
    if stat == GateStat::Median {
        return Ok(run);
    }
    if stat == GateStat::JoulesPerToken {
        // `Policy::stats` leaves it out: the joules are `compare::energy`'s evidence.
        return Err(RunProblem::Steps(
            "joules per token is not a statistic of the step times".to_owned(),
        ));
    }
    let mut units = Vec::with_capacity(run.units.len());
    let mut jitter = 0.0;
    for rep in e.repeats_ms.iter().filter(|r| !r.is_empty()) {
        let n = rep.len() as f64;
        let (value, var) = match stat {
            GateStat::Mean => {
                // The slowest 2% of steps are left out: an isolated outlier step (a preemption)
                // is not throughput, while a stall on one step in 20 still moves the rest.
                let mut sorted = rep.clone();
                sorted.sort_by(f64::total_cmp);
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "2% of a length is a valid count"
                )]
                let trim = (n * MEAN_TRIM).floor() as usize;
                let kept = &sorted[..sorted.len() - trim.min(sorted.len() - 1)];
                let k = kept.len() as f64;
                let mean = kept.iter().sum::<f64>() / k;
                let ss = kept.iter().map(|x| (x / mean - 1.0).powi(2)).sum::<f64>();
                let var = if kept.len() > 1 { ss / (k - 1.0) } else { 0.0 };
                (mean, var / k)
            }
            GateStat::Stall => {
                let median = {
                    let mut sorted = rep.clone();
                    sorted.sort_by(f64::total_cmp);
                    crate::stats::quantile(&sorted, 0.5)
                };
                // Time lost beyond the median by the stalled steps, in medians, per step; its
                // variance treats the stalls as the rare events they are (a Poisson sum).
                let (mut lost, mut sq) = (0.0, 0.0);
                for x in rep.iter().filter(|x| **x > STALL_FACTOR * median) {
                    let excess = x / median - 1.0;
                    lost += excess;
                    sq += excess * excess;
                }
                let value = 1.0 + lost / n;
                (value, sq / (n * n) / (value * value))
            }
            GateStat::P99 | GateStat::Median | GateStat::JoulesPerToken => {
                let mut sorted = rep.clone();
                sorted.sort_by(f64::total_cmp);
                let median = crate::stats::quantile(&sorted, 0.5);
                let sd = MAD_TO_SIGMA * relative_mad(&sorted, median);
                let q = if stat == GateStat::P99 { 0.99 } else { 0.5 };
                let factor = if stat == GateStat::P99 {
                    P99_VAR_FACTOR
                } else {
                    FRAC_PI_2
                };
                (crate::stats::quantile(&sorted, q), factor * sd * sd / n)
            }
        };
        units.push(value.ln());
        jitter += var;
    }
    jitter /= units.len().max(1) as f64;
    Ok(Run {
        units,
        jitter_var: jitter,
        samples: run.samples,
        floor_ms: run.floor_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_moves_the_mean_and_p99_but_not_the_median() {
        let steady: Vec<Vec<f64>> =
            vec![(0..100).map(|i| 6.0 + 0.01 * f64::from(i % 7)).collect(); 3];
        let stalled: Vec<Vec<f64>> = steady
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(i, v)| if i % 20 == 0 { v * 4.0 } else { *v })
                    .collect()
            })
            .collect();
        let ev = |r: &[Vec<f64>]| {
            let e = Evidence {
                repeats_ms: r,
                floor_ms: 3.0,
            };
            GateStat::ALL.map(|s| units(&e, s).ok().map_or(f64::NAN, |u| u.units[0]))
        };
        let (a, b) = (ev(&steady), ev(&stalled));
        assert!((b[0] - a[0]).abs() < 0.01, "median moved");
        assert!(
            (b[1] - a[1]).exp() > 1.08,
            "mean +9% without the slowest 2%"
        );
        assert!((b[2] - a[2]).exp() > 3.0, "p99 is a stall");
        // The stall figure sees all five stalls (3 medians lost each, per 100 steps) and is
        // exactly 1 without them.
        assert!(a[3].abs() < 1e-12, "no stall, no loss: {}", a[3]);
        assert!(
            ((b[3] - a[3]).exp() - 1.15).abs() < 0.01,
            "stall loss {}",
            b[3].exp()
        );
    }

    #[test]
    fn the_stall_figure_ignores_the_process_offset_and_a_slow_start() {
        let base: Vec<f64> = (0..100).map(|i| 6.0 + 0.01 * f64::from(i % 7)).collect();
        let slow: Vec<Vec<f64>> = vec![base.clone(), base.iter().map(|v| v * 1.08).collect()];
        let e = Evidence {
            repeats_ms: &slow,
            floor_ms: 3.0,
        };
        let Ok(u) = units(&e, GateStat::Stall) else {
            panic!("valid steps");
        };
        assert!(u.units.iter().all(|x| x.abs() < 1e-12), "{:?}", u.units);
        assert!(u.jitter_var.abs() < 1e-18);
    }
}
