//! Change points over a case's nightly history: where the level of a series shifted, how far, and
//! how sure we are. Pure: the series and the permutation seed arrive as arguments.
//!
//! The detector is E-divisive means (Matteson and James, "A nonparametric approach for multiple
//! change point analysis of multivariate data", JASA 2014), the method behind Apache Otava and
//! `MongoDB`'s `signal-processing-algorithms`, written here from the paper:
//!
//! - For a window `Z[a..b)` split at `tau` into `X = Z[a..tau)` (n values) and `Y = Z[tau..b)`
//!   (m values), the divergence is `Q = n·m/(n+m) · (2·mean|X−Y| − mean|X−X'| − mean|Y−Y'|)`, the
//!   within-means taken over distinct pairs (U-statistics; a one-value side has within-mean 0).
//!   The best split of a window maximises `Q`.
//! - Bisection: the best split over all windows between the change points found so far is a
//!   candidate; it is kept when significant, and the search repeats until a candidate is not.
//! - Significance, default [`Significance::Permutation`]: each window's values are shuffled
//!   within the window and the best `Q` recomputed, `R` times; the p-value is
//!   `(1 + #{permuted best Q >= observed}) / (R + 1)`, which is exact under exchangeability, so
//!   on a series without a change the chance of reporting one is at most `max_pvalue` (the
//!   documented false-alarm level; tested on generated noise below). The smallest reachable
//!   p-value is `1/(R+1)`, and a short series has few distinct orderings: ten nights cannot show
//!   a change at p < 0.005 whatever `R` is.
//! - [`Significance::WelchT`] tests the candidate with Welch's t-test between its two sides, as
//!   Otava does. It reaches tiny p-values on short series, but the split was chosen as the best
//!   of many, so its p-value is nominal, not a false-alarm level; it is here to compare with
//!   Otava's published results.
//!
//! Each change point carries its magnitude: the mean after against the mean before (the segments
//! between neighbouring change points) with a 95% Welch interval.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// How a candidate split is judged significant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub enum Significance {
    /// Permutation test within windows (exact false-alarm level); `seed` makes it reproducible.
    Permutation { permutations: u32, seed: u64 },
    /// Welch's t-test between the two sides of the split (nominal p-value; Otava's choice).
    WelchT,
}

/// Detector settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Detector {
    pub significance: Significance,
    /// A candidate is a change point when its p-value is at most this.
    pub max_pvalue: f64,
}

impl Default for Detector {
    /// 199 permutations at p <= 0.01: the default of `utilgate changes`.
    fn default() -> Self {
        Detector {
            significance: Significance::Permutation {
                permutations: 199,
                seed: 0x5eed,
            },
            max_pvalue: 0.01,
        }
    }
}

/// The mean level on both sides of a change point and the relative change, in percent of the
/// level before, with a 95% interval (`None` when neither side has two values).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Magnitude {
    pub before_mean: f64,
    pub after_mean: f64,
    pub before_n: usize,
    pub after_n: usize,
    pub change_pct: f64,
    pub ci_pct: Option<(f64, f64)>,
}

/// One detected shift: the new level starts at `index`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChangePoint {
    pub index: usize,
    pub pvalue: f64,
    /// The divergence `Q` of the split (larger is a clearer shift).
    pub q: f64,
    pub magnitude: Magnitude,
}

/// A series the detector cannot read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChangePointError {
    #[error("value {index} of the series is {value}, not a finite number")]
    NotFinite { index: usize, value: f64 },
    #[error("max_pvalue {0} is not in (0, 1)")]
    PValue(f64),
}

/// Change points of `series`, sorted by index.
pub fn change_points(
    series: &[f64],
    detector: &Detector,
) -> Result<Vec<ChangePoint>, ChangePointError> {
    if let Some((index, &value)) = series.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(ChangePointError::NotFinite { index, value });
    }
    if !(detector.max_pvalue > 0.0 && detector.max_pvalue < 1.0) {
        return Err(ChangePointError::PValue(detector.max_pvalue));
    }
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    let mut rng = match detector.significance {
        Significance::Permutation { seed, .. } => Some(StdRng::seed_from_u64(seed)),
        Significance::WelchT => None,
    };
    // Best split per window, kept until the window is split.
    let mut memo: Vec<((usize, usize), Option<Split>)> = Vec::new();
    loop {
        let windows = windows(series.len(), &found);
        let mut candidates = Vec::new();
        for &(a, b) in &windows {
            let split = if let Some((_, s)) = memo.iter().find(|(w, _)| *w == (a, b)) {
                *s
            } else {
                let s = best_split(&series[a..b]).map(|s| Split {
                    tau: s.tau + a,
                    q: s.q,
                });
                memo.push(((a, b), s));
                s
            };
            if let Some(s) = split {
                candidates.push((s, (a, b)));
            }
        }
        let next = match (&mut rng, detector.significance) {
            (Some(rng), Significance::Permutation { permutations, .. }) => {
                permutation_pick(series, &windows, &candidates, permutations, detector, rng)
            }
            _ => welch_pick(series, &candidates, detector.max_pvalue),
        };
        match next {
            Some((split, p)) => found.push((split.tau, p, split.q)),
            None => break,
        }
    }
    found.sort_by_key(|&(i, _, _)| i);
    let bounds: Vec<usize> = found.iter().map(|&(i, _, _)| i).collect();
    Ok(found
        .iter()
        .enumerate()
        .map(|(k, &(index, pvalue, q))| {
            let lo = if k == 0 { 0 } else { bounds[k - 1] };
            let hi = bounds.get(k + 1).copied().unwrap_or(series.len());
            ChangePoint {
                index,
                pvalue,
                q,
                magnitude: magnitude(&series[lo..index], &series[index..hi]),
            }
        })
        .collect())
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Split {
    tau: usize,
    q: f64,
}

/// The windows between consecutive change points (and the ends of the series).
fn windows(len: usize, found: &[(usize, f64, f64)]) -> Vec<(usize, usize)> {
    let mut cuts: Vec<usize> = found.iter().map(|&(i, _, _)| i).collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut a = 0;
    for c in cuts.into_iter().chain(std::iter::once(len)) {
        out.push((a, c));
        a = c;
    }
    out
}

/// The split of `w` with the largest divergence `Q`, or `None` for fewer than two values or a
/// window without any divergence (all values equal).
fn best_split(w: &[f64]) -> Option<Split> {
    let mut best: Option<Split> = None;
    for (tau, q) in divergence_profile(w).into_iter().enumerate() {
        if q > 0.0 && best.is_none_or(|b| q > b.q) {
            best = Some(Split { tau, q });
        }
    }
    best
}

/// `Q` of every split `tau` of `w` (index 0 is the empty split, 0), in O(len^2).
pub(crate) fn divergence_profile(w: &[f64]) -> Vec<f64> {
    let len = w.len();
    let mut out = vec![0.0; len];
    // Sums of |Zi - Zj| over pairs: within X = w[..tau], within Y = w[tau..], and across.
    let mut x = 0.0;
    let mut xy = 0.0;
    let mut y: f64 = (0..len)
        .map(|i| w[i + 1..].iter().map(|v| (w[i] - v).abs()).sum::<f64>())
        .sum();
    for tau in 1..len {
        // Move w[tau-1] from Y to X.
        let moved = w[tau - 1];
        let to_x: f64 = w[..tau - 1].iter().map(|v| (moved - v).abs()).sum();
        let to_y: f64 = w[tau..].iter().map(|v| (moved - v).abs()).sum();
        xy += to_y - to_x;
        x += to_x;
        y -= to_y;
        out[tau] = divergence(x, y, xy, tau, len - tau);
    }
    out
}

/// `Q` from the pair sums (see the module documentation).
fn divergence(within_x: f64, within_y: f64, across: f64, nx: usize, ny: usize) -> f64 {
    let (nxf, nyf) = (nx as f64, ny as f64);
    let pairs = |k: f64| k * (k - 1.0) / 2.0;
    let x_mean = if nx > 1 { within_x / pairs(nxf) } else { 0.0 };
    let y_mean = if ny > 1 { within_y / pairs(nyf) } else { 0.0 };
    let energy = 2.0 * across / (nxf * nyf) - x_mean - y_mean;
    nxf * nyf / (nxf + nyf) * energy
}

fn best_candidate(candidates: &[(Split, (usize, usize))]) -> Option<(Split, (usize, usize))> {
    candidates.iter().copied().fold(None, |best, c| match best {
        Some(b) if b.0.q >= c.0.q => Some(b),
        _ => Some(c),
    })
}

/// The best candidate when the permutation test finds it significant.
fn permutation_pick(
    series: &[f64],
    windows: &[(usize, usize)],
    candidates: &[(Split, (usize, usize))],
    permutations: u32,
    detector: &Detector,
    rng: &mut StdRng,
) -> Option<(Split, f64)> {
    let (best, _) = best_candidate(candidates)?;
    let total = f64::from(permutations) + 1.0;
    // More exceedances than this and the p-value is above the level: stop shuffling early.
    let allowed = (detector.max_pvalue * total - 1.0).floor();
    let mut exceed = 0.0;
    let mut buf = Vec::new();
    for _ in 0..permutations {
        let mut top = 0.0f64;
        for &(a, b) in windows {
            buf.clear();
            buf.extend_from_slice(&series[a..b]);
            buf.shuffle(rng);
            if let Some(s) = best_split(&buf) {
                top = top.max(s.q);
            }
        }
        if top >= best.q {
            exceed += 1.0;
            if exceed > allowed {
                return None;
            }
        }
    }
    let p = (1.0 + exceed) / total;
    (p <= detector.max_pvalue).then_some((best, p))
}

/// The strongest candidate whose two sides differ by Welch's t-test at `max_pvalue`.
fn welch_pick(
    series: &[f64],
    candidates: &[(Split, (usize, usize))],
    max_pvalue: f64,
) -> Option<(Split, f64)> {
    let mut ranked = candidates.to_vec();
    ranked.sort_by(|l, r| r.0.q.total_cmp(&l.0.q));
    ranked.into_iter().find_map(|(s, (a, b))| {
        let p = welch_pvalue(&series[a..s.tau], &series[s.tau..b])?;
        (p <= max_pvalue).then_some((s, p))
    })
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// Welch's standard error of the difference of means and its degrees of freedom
/// (Welch-Satterthwaite). A one-value side borrows the other side's variance.
fn welch_se(before: &[f64], after: &[f64]) -> Option<(f64, f64)> {
    let (nb, na) = (before.len(), after.len());
    if nb == 0 || na == 0 || nb + na < 3 {
        return None;
    }
    let (_, mut vb) = mean_var(before);
    let (_, mut va) = mean_var(after);
    let (nbf, naf) = (nb as f64, na as f64);
    if nb == 1 {
        vb = va;
    }
    if na == 1 {
        va = vb;
    }
    let (sb, sa) = (vb / nbf, va / naf);
    let se2 = sb + sa;
    let df = match (nb, na) {
        (1, _) => naf - 1.0,
        (_, 1) => nbf - 1.0,
        _ if se2 > 0.0 => se2 * se2 / (sb * sb / (nbf - 1.0) + sa * sa / (naf - 1.0)),
        _ => nbf + naf - 2.0,
    };
    Some((se2.sqrt(), df.max(1.0)))
}

/// Two-sided p-value of Welch's t-test; zero spread on both sides with different means is 0.
fn welch_pvalue(before: &[f64], after: &[f64]) -> Option<f64> {
    if before.len() < 2 || after.len() < 2 {
        return None;
    }
    let (se, df) = welch_se(before, after)?;
    let diff = mean_var(after).0 - mean_var(before).0;
    if se == 0.0 {
        return Some(if diff == 0.0 { 1.0 } else { 0.0 });
    }
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(2.0 * t.sf((diff / se).abs()))
}

/// Relative change of the mean, after against before, with a 95% Welch interval.
fn magnitude(before: &[f64], after: &[f64]) -> Magnitude {
    let (bm, _) = mean_var(before);
    let (am, _) = mean_var(after);
    let pct = |d: f64| 100.0 * d / bm.abs();
    let ci_pct = welch_se(before, after).and_then(|(se, df)| {
        let t = StudentsT::new(0.0, 1.0, df).ok()?;
        let half = t.inverse_cdf(0.975) * se;
        let d = am - bm;
        Some((pct(d - half), pct(d + half)))
    });
    Magnitude {
        before_mean: bm,
        after_mean: am,
        before_n: before.len(),
        after_n: after.len(),
        change_pct: pct(am - bm),
        ci_pct,
    }
}

#[cfg(test)]
mod tests;
