//! The throughput-interactivity frontier of a serving sweep: each point of a sweep (one request
//! rate or one concurrency limit) as output throughput per GPU against interactivity (tokens per
//! second one user sees, `1000 / TPOT ms`), the non-dominated (Pareto) points among them, and the
//! throughput the frontier reaches at a given interactivity. Pure.
//!
//! The frontier is read as the *dominated hull*: at interactivity `x` the deployment can serve
//! the throughput of any point with at least that interactivity, and between two frontier points
//! the linear interpolation (running either point part of the time). So left of the lowest
//! interactivity measured the frontier is flat at the highest throughput, and right of the
//! highest it is not known at all. This is how `vllm bench sweep`'s Pareto plot and the
//! `InferenceX` dashboard draw it.

use serde::{Deserialize, Serialize};

use super::key::SweepAxis;
use super::model::ServeResult;

/// Where one file of a sweep lies (stored in table `serve_sweep_points`): its point on the
/// swept axis, which run of the whole sweep it belongs to, the GPUs it ran on and its place on
/// the frontier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The point on the swept axis as the key writes it (`"4"`, `"inf"`, `"64"`).
    pub point: String,
    /// Which run of the whole sweep (0 first) the file belongs to.
    pub sweep_repeat: u32,
    pub gpus: u32,
    /// `1000 / TPOT ms`; `None` where the file has no TPOT.
    pub interactivity_tok_s_user: Option<f64>,
    /// `output_throughput / gpus`; `None` where the file has no throughput.
    pub throughput_tok_s_gpu: Option<f64>,
}

/// The keys of a result file that may state the server's GPU count (vLLM's `--metadata
/// num_gpus=8` writes a string).
pub const GPU_COUNT_FIELDS: [&str; 3] = ["num_gpus", "gpu_count", "gpus"];

/// The GPU count a file states, if any.
#[must_use]
pub fn gpus_of_file(result: &ServeResult) -> Option<u32> {
    GPU_COUNT_FIELDS.iter().find_map(|k| {
        let v = result.fields.get(*k)?;
        let n = v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse::<u64>().ok()))?;
        u32::try_from(n).ok().filter(|n| *n > 0)
    })
}

/// Places the files of a sweep: the point each is on (from the file itself), the run of the
/// sweep it belongs to (the n-th file of a point belongs to the n-th run, in the order given),
/// its GPUs (`gpus` where set, else the file's own count, else 1) and its frontier coordinates.
#[must_use]
pub fn place_files(
    axis: SweepAxis,
    results: &[&ServeResult],
    gpus: Option<u32>,
) -> Vec<SweepPoint> {
    let mut seen: Vec<(String, u32)> = Vec::new();
    results
        .iter()
        .map(|r| {
            let point = axis.point_of(r);
            let sweep_repeat = if let Some((_, n)) = seen.iter_mut().find(|(p, _)| *p == point) {
                *n += 1;
                *n
            } else {
                seen.push((point.clone(), 0));
                0
            };
            let gpus = gpus.or_else(|| gpus_of_file(r)).unwrap_or(1);
            let placed = FrontierPoint::of_result(point.clone(), r, gpus).ok();
            SweepPoint {
                point,
                sweep_repeat,
                gpus,
                interactivity_tok_s_user: placed.as_ref().map(|p| p.interactivity_tok_s_user),
                throughput_tok_s_gpu: placed.map(|p| p.throughput_tok_s_gpu),
            }
        })
        .collect()
}

/// One point of a sweep on the frontier's axes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierPoint {
    /// The point's value on the sweep's axis, as the key writes it.
    pub point: String,
    /// Tokens per second one user sees: `1000 / TPOT ms`.
    pub interactivity_tok_s_user: f64,
    /// Output tokens per second per GPU: `output_throughput / gpus`.
    pub throughput_tok_s_gpu: f64,
}

/// The time per output token a point's interactivity is read from: the median TPOT, else the
/// mean TPOT, else the median inter-token latency (`SGLang`'s older files have no TPOT).
pub const TPOT_METRICS: [&str; 3] = ["median_tpot_ms", "mean_tpot_ms", "median_itl_ms"];

/// Why a result has no place on the frontier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointError {
    /// No `output_throughput` in the file.
    NoThroughput,
    /// None of [`TPOT_METRICS`] in the file.
    NoTpot,
}

/// The time per output token of a result (ms) and the metric it came from.
#[must_use]
pub fn tpot_ms(result: &ServeResult) -> Option<(&'static str, f64)> {
    TPOT_METRICS.iter().find_map(|m| {
        result
            .metrics
            .get(*m)
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| (*m, v))
    })
}

impl FrontierPoint {
    /// A result as a frontier point, its throughput divided among `gpus` GPUs.
    ///
    /// # Errors
    /// The metric the result lacks.
    pub fn of_result(
        point: String,
        result: &ServeResult,
        gpus: u32,
    ) -> Result<FrontierPoint, PointError> {
        let throughput = result
            .metrics
            .get("output_throughput")
            .copied()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or(PointError::NoThroughput)?;
        let (_, tpot) = tpot_ms(result).ok_or(PointError::NoTpot)?;
        Ok(FrontierPoint {
            point,
            interactivity_tok_s_user: 1000.0 / tpot,
            throughput_tok_s_gpu: throughput / f64::from(gpus.max(1)),
        })
    }
}

/// The non-dominated points of a sweep, in increasing interactivity (so decreasing throughput).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frontier {
    pub points: Vec<FrontierPoint>,
}

impl Frontier {
    /// The Pareto frontier of `points`: each point no other point beats on both axes.
    #[must_use]
    pub fn of_points(points: &[FrontierPoint]) -> Frontier {
        let mut sorted: Vec<&FrontierPoint> = points
            .iter()
            .filter(|p| {
                p.interactivity_tok_s_user.is_finite()
                    && p.interactivity_tok_s_user > 0.0
                    && p.throughput_tok_s_gpu.is_finite()
            })
            .collect();
        // Highest interactivity first; a point survives when it has more throughput than
        // every point of higher interactivity.
        sorted.sort_by(|a, b| {
            b.interactivity_tok_s_user
                .total_cmp(&a.interactivity_tok_s_user)
                .then(b.throughput_tok_s_gpu.total_cmp(&a.throughput_tok_s_gpu))
        });
        let mut kept: Vec<FrontierPoint> = Vec::new();
        let mut best = f64::NEG_INFINITY;
        for p in sorted {
            if p.throughput_tok_s_gpu > best {
                best = p.throughput_tok_s_gpu;
                kept.push(p.clone());
            }
        }
        kept.reverse();
        Frontier { points: kept }
    }

    /// The interactivity the frontier spans (lowest, highest); `None` when empty.
    #[must_use]
    pub fn span(&self) -> Option<(f64, f64)> {
        Some((
            self.points.first()?.interactivity_tok_s_user,
            self.points.last()?.interactivity_tok_s_user,
        ))
    }

    /// The throughput per GPU the frontier reaches at interactivity `level`: linear between
    /// frontier points, flat at the highest throughput below the lowest interactivity measured,
    /// `None` above the highest (nothing measured serves a user that fast).
    #[must_use]
    pub fn throughput_at(&self, level: f64) -> Option<f64> {
        let (lo, hi) = self.span()?;
        if level > hi {
            return None;
        }
        if level <= lo {
            return Some(self.points[0].throughput_tok_s_gpu);
        }
        self.points.windows(2).find_map(|w| {
            let (a, b) = (&w[0], &w[1]);
            (level <= b.interactivity_tok_s_user).then(|| {
                let t = (level - a.interactivity_tok_s_user)
                    / (b.interactivity_tok_s_user - a.interactivity_tok_s_user);
                a.throughput_tok_s_gpu + t * (b.throughput_tok_s_gpu - a.throughput_tok_s_gpu)
            })
        })
    }
}

/// The area between two frontiers over an interactivity range, in (tokens/s/GPU) x
/// (tokens/s/user): where the baseline's lies above tonight's (`loss`), where below (`gain`), and
/// the baseline's own area for scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AreaBetween {
    pub loss: f64,
    pub gain: f64,
    pub baseline: f64,
}

impl AreaBetween {
    /// The loss net of the gain, as a percentage of the baseline's area.
    #[must_use]
    pub fn net_loss_pct(&self) -> f64 {
        if self.baseline > 0.0 {
            100.0 * (self.loss - self.gain) / self.baseline
        } else {
            0.0
        }
    }
}

/// The area between `then` and `now` over `[lo, hi]` (trapezoids on 256 even steps).
#[must_use]
pub fn area_between(then: &Frontier, now: &Frontier, lo: f64, hi: f64) -> Option<AreaBetween> {
    const STEPS: u32 = 256;
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let width = (hi - lo) / f64::from(STEPS);
    let mut out = AreaBetween {
        loss: 0.0,
        gain: 0.0,
        baseline: 0.0,
    };
    let at = |i: u32| {
        let x = lo + width * f64::from(i);
        Some((then.throughput_at(x)?, now.throughput_at(x)?))
    };
    for i in 0..STEPS {
        let (b0, n0) = at(i)?;
        let (b1, n1) = at(i + 1)?;
        let d = 0.5 * ((b0 - n0) + (b1 - n1)) * width;
        if d > 0.0 {
            out.loss += d;
        } else {
            out.gain -= d;
        }
        out.baseline += 0.5 * (b0 + b1) * width;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(x: f64, y: f64) -> FrontierPoint {
        FrontierPoint {
            point: format!("{x}"),
            interactivity_tok_s_user: x,
            throughput_tok_s_gpu: y,
        }
    }

    #[test]
    fn dominated_points_leave_the_frontier() {
        let f = Frontier::of_points(&[p(10.0, 100.0), p(20.0, 60.0), p(15.0, 50.0), p(30.0, 10.0)]);
        let xs: Vec<f64> = f
            .points
            .iter()
            .map(|p| p.interactivity_tok_s_user)
            .collect();
        assert_eq!(xs, [10.0, 20.0, 30.0], "(15, 50) is beaten by (20, 60)");
        assert!(Frontier::of_points(&[]).span().is_none());
    }

    #[test]
    fn throughput_is_interpolated_flat_below_and_unknown_above() {
        let f = Frontier::of_points(&[p(10.0, 100.0), p(20.0, 60.0), p(30.0, 10.0)]);
        assert_eq!(f.throughput_at(5.0), Some(100.0));
        assert_eq!(f.throughput_at(10.0), Some(100.0));
        let mid = f.throughput_at(15.0).expect("inside");
        assert!((mid - 80.0).abs() < 1e-12, "{mid}");
        assert_eq!(f.throughput_at(30.0), Some(10.0));
        assert_eq!(f.throughput_at(30.5), None);
    }

    #[test]
    fn the_area_between_counts_loss_and_gain_apart() {
        let then = Frontier::of_points(&[p(10.0, 100.0), p(30.0, 100.0)]);
        let same = area_between(&then, &then, 10.0, 30.0).expect("area");
        assert!(same.loss.abs() < 1e-9 && same.gain.abs() < 1e-9);
        assert!((same.baseline - 2000.0).abs() < 1e-6);
        let lower = Frontier::of_points(&[p(10.0, 90.0), p(30.0, 90.0)]);
        let a = area_between(&then, &lower, 10.0, 30.0).expect("area");
        assert!((a.net_loss_pct() - 10.0).abs() < 1e-9, "{a:?}");
        assert!(area_between(&then, &lower, 30.0, 10.0).is_none());
    }
}
