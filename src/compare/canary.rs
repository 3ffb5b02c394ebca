//! The machine canary against the reference's: did the host itself get slower or faster since
//! the runs the reference came from? Pure.
//!
//! A canary is a fixed, short piece of work utilgate times itself before and after every run
//! (on a host: a memory stream and a spin loop; on a GPU: the probe's copy and a small GEMM), so
//! its figures change only when the machine does. Each figure is compared on the log scale:
//! the mean log reading of this run against the mean over the reference's runs. Its noise has
//! two parts: the spread of the readings inside a run, and (with three or more reference runs)
//! the canary's own run-to-run spread beyond that, which a quiet night of a real host still
//! shows. A shift counts when it is beyond three standard errors *and* beyond 2%, so a
//! canary with few readings, or a steady host, never triggers it by itself.

use serde::{Deserialize, Serialize};

use super::Canary;

/// Standard errors a canary shift must exceed to count.
const CANARY_Z: f64 = 3.0;
/// ... and the least shift that counts (2%), on the log scale.
const CANARY_MIN_SHIFT: f64 = 0.019_802_627;

/// How far the machine moved, by the canary figure that moved most clearly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CanaryShift {
    /// The canary figure (e.g. `stream_ms`).
    pub figure: String,
    /// Its typical reading in the reference's runs and in this run (geometric means, ms).
    pub then_ms: f64,
    pub now_ms: f64,
    /// Log of now / then: positive = the host is slower now.
    pub shift: f64,
    /// Standard error of `shift`.
    pub se: f64,
    /// Beyond its noise (three standard errors and 2%).
    pub beyond_noise: bool,
}

impl CanaryShift {
    /// The host's slowdown in percent of its reference speed (negative: faster).
    #[must_use]
    pub fn slower_pct(&self) -> f64 {
        100.0 * self.shift.exp_m1()
    }

    /// "host 11.0% slower than in the reference's runs: canary `stream_ms` 12.00 -> 13.32 ms".
    #[must_use]
    pub fn describe(&self) -> String {
        let pct = self.slower_pct();
        format!(
            "host {:.1}% {} than in the reference's runs: canary {} {:.3} -> {:.3} ms",
            pct.abs(),
            if pct >= 0.0 { "slower" } else { "faster" },
            self.figure,
            self.then_ms,
            self.now_ms
        )
    }
}

/// Mean and sum of squared deviations of the logs of the usable readings.
fn log_stats(readings: &[f64]) -> Option<(f64, f64, usize)> {
    let logs: Vec<f64> = readings
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .map(|v| v.ln())
        .collect();
    if logs.is_empty() {
        return None;
    }
    let n = logs.len();
    let mean = logs.iter().sum::<f64>() / n as f64;
    let ss = logs.iter().map(|l| (l - mean).powi(2)).sum();
    Some((mean, ss, n))
}

fn figure_shift(name: &str, now: &[f64], reference: &[&[f64]]) -> Option<CanaryShift> {
    let (now_mean, now_ss, now_n) = log_stats(now)?;
    let refs: Vec<(f64, f64, usize)> = reference.iter().filter_map(|r| log_stats(r)).collect();
    if refs.is_empty() {
        return None;
    }
    let ref_mean = refs.iter().map(|r| r.0).sum::<f64>() / refs.len() as f64;
    let ss = now_ss + refs.iter().map(|r| r.1).sum::<f64>();
    let df = (now_n - 1) + refs.iter().map(|r| r.2 - 1).sum::<usize>();
    let within = if df > 0 { ss / df as f64 } else { 0.0 };
    let runs = refs.len() as f64;
    let mean_inv_n = refs.iter().map(|r| 1.0 / r.2 as f64).sum::<f64>() / runs;
    // The canary's own run-to-run variance beyond its readings' spread (method of moments).
    let between = if refs.len() >= 3 {
        let var_means = refs.iter().map(|r| (r.0 - ref_mean).powi(2)).sum::<f64>() / (runs - 1.0);
        (var_means - within * mean_inv_n).max(0.0)
    } else {
        0.0
    };
    let var_now = between + within / now_n as f64;
    let var_ref = (between + within * mean_inv_n) / runs;
    let se = (var_now + var_ref).sqrt();
    let shift = now_mean - ref_mean;
    Some(CanaryShift {
        figure: name.to_owned(),
        then_ms: ref_mean.exp(),
        now_ms: now_mean.exp(),
        shift,
        se,
        beyond_noise: shift.abs() > CANARY_MIN_SHIFT && shift.abs() > CANARY_Z * se,
    })
}

/// The clearest canary shift of this run against the reference's runs: the figure with the
/// largest shift in standard errors among those beyond their noise, else the largest shift
/// (for the record). `None` when no figure can be compared.
#[must_use]
pub fn canary_shift(now: &Canary, reference: &[&Canary]) -> Option<CanaryShift> {
    let mut shifts: Vec<CanaryShift> = now
        .figures
        .iter()
        .filter_map(|(name, readings)| {
            let refs: Vec<&[f64]> = reference
                .iter()
                .filter_map(|c| c.figures.get(name).map(Vec::as_slice))
                .collect();
            figure_shift(name, readings, &refs)
        })
        .collect();
    let score = |s: &CanaryShift| {
        let z = if s.se > 0.0 {
            s.shift.abs() / s.se
        } else {
            f64::INFINITY
        };
        (s.beyond_noise, z, s.shift.abs())
    };
    shifts.sort_by(|a, b| {
        let (ba, za, sa) = score(a);
        let (bb, zb, sb) = score(b);
        ba.cmp(&bb).then(za.total_cmp(&zb)).then(sa.total_cmp(&sb))
    });
    shifts.pop()
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on a missing figure"
)]
mod tests {
    use super::*;

    fn canary(stream: &[f64], spin: &[f64]) -> Canary {
        Canary {
            figures: [
                ("stream_ms".to_owned(), stream.to_vec()),
                ("spin_ms".to_owned(), spin.to_vec()),
            ]
            .into_iter()
            .collect(),
        }
    }

    fn around(ms: f64) -> Vec<f64> {
        [0.99, 1.0, 1.01, 1.005, 0.995]
            .iter()
            .map(|f| f * ms)
            .collect()
    }

    #[test]
    fn an_eleven_percent_slower_host_is_beyond_noise() {
        let then = canary(&around(12.0), &around(8.0));
        let now = canary(&around(13.32), &around(8.0));
        let s = canary_shift(&now, &[&then]).unwrap();
        assert_eq!(s.figure, "stream_ms");
        assert!(s.beyond_noise);
        assert!((s.slower_pct() - 11.0).abs() < 0.1, "{s:?}");
        assert!(
            s.describe().starts_with("host 11.0% slower"),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn a_steady_host_is_not_a_shift() {
        let then = canary(&around(12.0), &around(8.0));
        let now = canary(&around(12.1), &around(7.95));
        let s = canary_shift(&now, &[&then, &then, &then]).unwrap();
        assert!(!s.beyond_noise, "{s:?}");
        // Identical readings: zero noise, and still no shift below 2%.
        let flat = canary(&[12.0; 5], &[8.0; 5]);
        let slightly = canary(&[12.1; 5], &[8.0; 5]);
        assert!(!canary_shift(&slightly, &[&flat]).unwrap().beyond_noise);
    }

    #[test]
    fn run_to_run_spread_of_the_canary_widens_its_noise() {
        // Reference runs whose canary itself wanders by about 3% from run to run.
        let refs: Vec<Canary> = [11.6, 12.4, 12.0, 11.7, 12.3]
            .iter()
            .map(|&ms| canary(&around(ms), &around(8.0)))
            .collect();
        let refs: Vec<&Canary> = refs.iter().collect();
        let now = canary(&around(12.6), &around(8.0));
        assert!(!canary_shift(&now, &refs).unwrap().beyond_noise);
        let far = canary(&around(14.0), &around(8.0));
        assert!(canary_shift(&far, &refs).unwrap().beyond_noise);
    }

    #[test]
    fn nothing_to_compare() {
        let now = canary(&around(12.0), &around(8.0));
        assert!(canary_shift(&now, &[]).is_none());
        let other = Canary {
            figures: [("copy_gb_s".to_owned(), vec![1.0])].into_iter().collect(),
        };
        assert!(canary_shift(&now, &[&other]).is_none());
        let bad = canary(&[f64::NAN, -1.0], &[0.0]);
        assert!(canary_shift(&bad, &[&now]).is_none());
    }
}
