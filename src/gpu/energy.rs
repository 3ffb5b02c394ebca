//! One repeat's energy over its timed steps, from the NVML readings taken while it ran (#33
//! item 4). Pure: the readings arrive as values.
//!
//! # The window
//!
//! The sampler runs for the whole harness process (start-up, warm-up, timed steps, exit), and
//! tags each reading with the timed steps the harness had written to its results file by then
//! (`GpuSample::timed_steps`). The window opens at the first reading that saw a timed step
//! (`k_a` of them) and closes at the first reading that saw the last one (`k_b`); the
//! `k_b - k_a` steps that ended between them are the window's steps. Start-up, warm-up and
//! exit fall outside it. At each end the window may hold part of one more step (the one
//! running at the reading), so its joules per step are exact to within about one step in
//! `k_b - k_a`: a window of 100 steps is good to 1%.
//!
//! # The joules
//!
//! * **Counter** (NVML's total energy, millijoules since the driver loaded; Volta and later):
//!   the reading at the window's end minus the one at its start, when both have it.
//! * **Integral** otherwise: the power readings of the window integrated by the trapezoid
//!   rule on their own times (`sum (t_i+1 - t_i) (P_i + P_i+1) / 2`), which needs a power
//!   reading on every sample of the window.
//!
//! A window that cannot be measured has no figure, with the reason, never a guess: no reading
//! counted steps (no results file, a harness that buffers its lines), all the timed steps
//! appeared between two readings (fewer than two readings in the window: a harness writing
//! its steps at the end, or steps shorter than the sampling interval in all), a power reading
//! missing inside the window, or a counter that went backwards (the driver reloaded).

use super::state::GpuSample;
use crate::compare::energy::{EnergySource, EnergyWindow};

/// The energy of one repeat's timed window, or why it has none. `total_steps` is the count
/// the harness reported for the repeat (the window closes where the readings first saw it).
pub fn repeat_energy(samples: &[GpuSample], total_steps: u64) -> Result<EnergyWindow, String> {
    if total_steps == 0 {
        return Err("the repeat counted no timed steps".to_owned());
    }
    if samples.iter().all(|s| s.timed_steps.is_none()) {
        return Err(
            "no GPU reading could count the timed steps (the harness's results file was not \
             readable while it ran)"
                .to_owned(),
        );
    }
    let start = samples
        .iter()
        .position(|s| s.timed_steps.is_some_and(|k| k >= 1));
    let end = samples
        .iter()
        .position(|s| s.timed_steps.is_some_and(|k| k >= total_steps));
    let (Some(a), Some(b)) = (start, end) else {
        return Err(format!(
            "no GPU reading saw all {total_steps} timed steps written (the harness wrote them \
             after the last reading, or buffers its results file: flush one step_ms line per \
             step)"
        ));
    };
    let window = &samples[a..=b];
    if window.len() < 2 {
        return Err(format!(
            "all {total_steps} timed steps appeared between two GPU readings, so no reading \
             falls inside the timed window (write one step_ms line per step as it ends, or \
             time more steps: the readings are about 100 ms apart)"
        ));
    }
    let (first, last) = (&window[0], &window[window.len() - 1]);
    let k_a = first.timed_steps.unwrap_or(0);
    let k_b = last.timed_steps.unwrap_or(0);
    let steps = k_b.saturating_sub(k_a);
    let window_ms = last.t_ms - first.t_ms;
    if steps == 0 || !(window_ms.is_finite() && window_ms > 0.0) {
        return Err(format!(
            "the timed window holds no whole step ({steps} steps over {window_ms:.0} ms)"
        ));
    }
    let power_limit_w = window
        .iter()
        .filter_map(|s| s.power_limit_w)
        .filter(|w| w.is_finite())
        .reduce(f64::min);
    let (joules, source) = match (first.energy_mj, last.energy_mj) {
        (Some(e_a), Some(e_b)) => {
            if e_b < e_a {
                return Err(format!(
                    "the energy counter went backwards ({e_a} mJ to {e_b} mJ: the driver \
                     reloaded during the repeat)"
                ));
            }
            #[expect(
                clippy::cast_precision_loss,
                reason = "a window's millijoules are far below 2^52"
            )]
            let j = (e_b - e_a) as f64 / 1e3;
            (j, EnergySource::Counter)
        }
        _ => (trapezoid(window)?, EnergySource::Integral),
    };
    if !(joules.is_finite() && joules > 0.0) {
        return Err(format!(
            "the GPU used {joules} J over the timed window, which is no energy figure"
        ));
    }
    Ok(EnergyWindow {
        joules,
        steps,
        window_ms,
        source,
        power_limit_w,
    })
}

/// The trapezoid integral of the window's power readings (J = W x s).
fn trapezoid(window: &[GpuSample]) -> Result<f64, String> {
    let mut joules = 0.0;
    for pair in window.windows(2) {
        let (p0, p1) = match (pair[0].power_w, pair[1].power_w) {
            (Some(p0), Some(p1)) if p0.is_finite() && p1.is_finite() => (p0, p1),
            _ => {
                return Err(format!(
                    "a GPU reading inside the timed window has no power figure (at {:.0} ms), \
                     and the board has no energy counter",
                    if pair[0].power_w.is_none() {
                        pair[0].t_ms
                    } else {
                        pair[1].t_ms
                    }
                ));
            }
        };
        joules += (pair[1].t_ms - pair[0].t_ms) / 1e3 * (p0 + p1) / 2.0;
    }
    Ok(joules)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reading at `t_ms` of `power_w` watts, `steps` timed steps written by then.
    fn at(t_ms: f64, power_w: f64, steps: Option<u64>) -> GpuSample {
        GpuSample {
            t_ms,
            power_w: Some(power_w),
            power_limit_w: Some(700.0),
            timed_steps: steps,
            ..GpuSample::default()
        }
    }

    #[test]
    fn the_trapezoid_covers_only_the_timed_window() {
        // Start-up at 100 W and exit at 90 W fall outside; inside, 600, 700 and 650 W at 0,
        // 100 and 200 ms of the window: 0.1 x (600 + 700) / 2 + 0.1 x (700 + 650) / 2 =
        // 65 + 67.5 = 132.5 J over 0.2 s, for the 40 steps written from 10 to 50.
        let samples = vec![
            at(0.0, 100.0, Some(0)),
            at(100.0, 100.0, Some(0)),
            at(200.0, 600.0, Some(10)),
            at(300.0, 700.0, Some(30)),
            at(400.0, 650.0, Some(50)),
            at(500.0, 90.0, Some(50)),
        ];
        let w = repeat_energy(&samples, 50).expect("a window");
        assert!((w.joules - 132.5).abs() < 1e-9, "{}", w.joules);
        assert_eq!(w.steps, 40);
        assert!((w.window_ms - 200.0).abs() < 1e-9);
        assert_eq!(w.source, EnergySource::Integral);
        assert_eq!(w.power_limit_w, Some(700.0));
        assert!((w.joules_per_step() - 3.3125).abs() < 1e-12);
    }

    #[test]
    fn the_counter_wins_where_the_board_has_one() {
        // 1_000_000 mJ at the window's start, 1_132_000 at its end: 132 J, whatever the power
        // readings integrate to.
        let mut samples = vec![
            at(0.0, 100.0, Some(0)),
            at(200.0, 600.0, Some(10)),
            at(300.0, 700.0, Some(30)),
            at(400.0, 650.0, Some(50)),
        ];
        for (s, mj) in samples
            .iter_mut()
            .zip([990_000, 1_000_000, 1_070_000, 1_132_000])
        {
            s.energy_mj = Some(mj);
        }
        let w = repeat_energy(&samples, 50).expect("a window");
        assert!((w.joules - 132.0).abs() < 1e-9, "{}", w.joules);
        assert_eq!(w.source, EnergySource::Counter);
        assert_eq!(w.steps, 40);
        // A counter that went backwards is refused, not integrated.
        samples[3].energy_mj = Some(5);
        let why = repeat_energy(&samples, 50).expect_err("refused");
        assert!(why.contains("went backwards"), "{why}");
    }

    #[test]
    fn sparse_or_untagged_readings_give_no_figure_with_the_reason() {
        // Every step appeared between two readings: one reading in the window.
        let all_at_once = vec![at(0.0, 100.0, Some(0)), at(100.0, 650.0, Some(50))];
        let why = repeat_energy(&all_at_once, 50).expect_err("too sparse");
        assert!(why.contains("between two GPU readings"), "{why}");
        // No reading could count the steps.
        let untagged = vec![at(0.0, 600.0, None), at(100.0, 650.0, None)];
        let why = repeat_energy(&untagged, 50).expect_err("untagged");
        assert!(why.contains("results file"), "{why}");
        // The last step was written after the last reading.
        let cut = vec![at(0.0, 600.0, Some(10)), at(100.0, 650.0, Some(30))];
        let why = repeat_energy(&cut, 50).expect_err("cut");
        assert!(why.contains("all 50 timed steps"), "{why}");
        // A reading without power inside the window, on a board without a counter.
        let mut gap = vec![
            at(0.0, 600.0, Some(10)),
            at(100.0, 650.0, Some(30)),
            at(200.0, 650.0, Some(50)),
        ];
        gap[1].power_w = None;
        let why = repeat_energy(&gap, 50).expect_err("gap");
        assert!(why.contains("no power figure (at 100 ms)"), "{why}");
        assert!(repeat_energy(&[], 0).is_err());
    }
}
