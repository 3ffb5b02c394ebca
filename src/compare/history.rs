//! A case's nightly history read for change: where its utilisation shifted (change points), what
//! arrived between that night and the one before (commits, environment, GPU), and whether a
//! slow slide is under way. Pure: the nights arrive as values, the permutation seed with the
//! detector.

use std::collections::BTreeMap;

use serde::Serialize;

use super::changepoint::{ChangePoint, ChangePointError, Detector, change_points};
use super::env::{EnvChange, env_diff};
use super::trend::{Trend, trend};

/// One night of a case on the baseline branch, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Night {
    pub run_id: i64,
    /// RFC 3339 time of the run's start.
    pub started_at: String,
    pub git_sha: Option<String>,
    /// Utilisation (floor / step), a fraction; the series the detector reads.
    pub utilisation: f64,
    pub median_ms: Option<f64>,
    /// The harness's versions and the GPU fingerprint (`gpu.*`, see [`gpu_env`]).
    pub env: BTreeMap<String, String>,
}

/// A change point placed on its night, with what arrived since the night before.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NightChange {
    /// The first night at the new level.
    pub night: Night,
    /// The last night at the old level.
    pub before: Night,
    #[serde(flatten)]
    pub change: ChangePoint,
    /// `before.git_sha..night.git_sha` when both are known and differ.
    pub commits: Option<(String, String)>,
    /// The commits of that range with their subjects, oldest first, where a git checkout
    /// knows them (filled in by the reader of the store; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<Commit>,
    pub env_changes: Vec<EnvChange>,
    /// A utilisation drop beyond the gate's threshold (percent).
    pub regression: bool,
    /// The change point is a step of a slide (a line fits its window better than steps do).
    pub in_slide: bool,
}

/// One commit of a range, with its subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commit {
    pub sha: String,
    pub subject: String,
}

/// A slide over the last nights, and whether it has added up past the gate's threshold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slide {
    #[serde(flatten)]
    pub trend: Trend,
    /// The total drop exceeds the threshold (the gate judges it against the baseline anyway);
    /// otherwise the slide is a warning, never a failure.
    pub past_threshold: bool,
}

/// The settings of a history read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HistoryPolicy {
    pub detector: Detector,
    /// The gate's practical threshold (percent utilisation drop).
    pub max_drop_pct: f64,
    /// Nights the slide test looks back over.
    pub trend_nights: usize,
    pub trend_pvalue: f64,
}

impl HistoryPolicy {
    #[must_use]
    pub fn new(max_drop_pct: f64) -> Self {
        HistoryPolicy {
            detector: Detector::default(),
            max_drop_pct,
            trend_nights: 14,
            trend_pvalue: 0.01,
        }
    }
}

/// What the history says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryRead {
    pub nights: usize,
    pub changes: Vec<NightChange>,
    /// A falling slide since the last change point (rising ones are not warned about).
    pub slide: Option<Slide>,
}

/// Read `nights` (oldest first) for change points and a slide.
pub fn read_history(
    nights: &[Night],
    policy: &HistoryPolicy,
) -> Result<HistoryRead, ChangePointError> {
    let series: Vec<f64> = nights.iter().map(|n| n.utilisation).collect();
    let found = change_points(&series, &policy.detector)?;
    let start = series.len().saturating_sub(policy.trend_nights);
    let window = &series[start..];
    let cuts: Vec<usize> = found
        .iter()
        .filter(|c| c.index > start)
        .map(|c| c.index - start)
        .collect();
    // A slide, when the window falls and a line explains it at least as well as the steps the
    // detector found in it (a step is not a slide).
    let slide = trend(window, policy.trend_pvalue)
        .filter(|t| t.slope_pct_per_night < 0.0)
        .filter(|_| cuts.is_empty() || line_rss(window) <= steps_rss(window, &cuts))
        .map(|t| Slide {
            trend: t,
            past_threshold: -t.total_pct > policy.max_drop_pct,
        });
    let changes = found
        .iter()
        .map(|c| {
            let night = &nights[c.index];
            let before = &nights[c.index - 1];
            let commits = match (&before.git_sha, &night.git_sha) {
                (Some(a), Some(b)) if a != b => Some((a.clone(), b.clone())),
                _ => None,
            };
            NightChange {
                night: night.clone(),
                before: before.clone(),
                change: *c,
                commits,
                subjects: Vec::new(),
                env_changes: env_diff(&before.env, &night.env),
                regression: -c.magnitude.change_pct > policy.max_drop_pct,
                in_slide: slide.is_some() && c.index > start,
            }
        })
        .collect();
    Ok(HistoryRead {
        nights: nights.len(),
        changes,
        slide,
    })
}

/// Residual sum of squares of a least-squares line through `ys`.
fn line_rss(ys: &[f64]) -> f64 {
    let n = ys.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (y - my);
        sxx += dx * dx;
    }
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    ys.iter()
        .enumerate()
        .map(|(i, y)| (y - my - b * (i as f64 - mx)).powi(2))
        .sum()
}

/// Residual sum of squares of segment means, the segments cut at `cuts` (ascending).
fn steps_rss(ys: &[f64], cuts: &[usize]) -> f64 {
    let mut total = 0.0;
    let mut a = 0;
    for &b in cuts.iter().chain(std::iter::once(&ys.len())) {
        let seg = &ys[a..b];
        if !seg.is_empty() {
            let m = seg.iter().sum::<f64>() / seg.len() as f64;
            total += seg.iter().map(|y| (y - m).powi(2)).sum::<f64>();
        }
        a = b;
    }
    total
}

/// The GPU fingerprint of a stored result (`gpu_state_json.fingerprint`) as `gpu.*` entries for
/// the environment diff: the part, driver, CUDA driver, VBIOS and the board's UUID.
#[must_use]
pub fn gpu_env(gpu_state_json: Option<&serde_json::Value>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(fp) = gpu_state_json.and_then(|v| v.get("fingerprint")) else {
        return out;
    };
    for (field, key) in [
        ("name", "gpu"),
        ("driver_version", "driver"),
        ("cuda_driver_version", "cuda_driver"),
        ("vbios_version", "gpu.vbios"),
        ("uuid", "gpu.uuid"),
    ] {
        if let Some(v) = fp.get(field).and_then(serde_json::Value::as_str) {
            out.insert(key.to_owned(), v.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Significance;

    fn night(i: usize, util: f64, torch: &str) -> Night {
        Night {
            run_id: i64::try_from(i).expect("small") + 1,
            started_at: format!("2026-11-{:02}T03:00:00Z", i + 1),
            git_sha: Some(format!("sha{i:03}")),
            utilisation: util,
            median_ms: Some(1.0 / util),
            env: BTreeMap::from([("torch".to_owned(), torch.to_owned())]),
        }
    }

    fn policy() -> HistoryPolicy {
        let mut p = HistoryPolicy::new(3.0);
        p.detector = Detector {
            significance: Significance::Permutation {
                permutations: 199,
                seed: 11,
            },
            max_pvalue: 0.01,
        };
        p
    }

    #[test]
    fn a_step_names_its_night_and_what_arrived() {
        let wiggle = [0.0, 0.003, -0.002, 0.001, -0.003, 0.002];
        let nights: Vec<Night> = (0..24)
            .map(|i| {
                let base = if i < 15 { 0.60 } else { 0.55 };
                let torch = if i < 15 { "2.5.1" } else { "2.6.0" };
                night(i, base + wiggle[i % 6], torch)
            })
            .collect();
        let read = read_history(&nights, &policy()).expect("finite");
        assert_eq!(read.changes.len(), 1, "{read:#?}");
        let c = &read.changes[0];
        assert_eq!(c.night.run_id, 16);
        assert_eq!(c.before.run_id, 15);
        assert_eq!(c.commits, Some(("sha014".into(), "sha015".into())));
        assert_eq!(c.env_changes[0].to_string(), "torch 2.5.1 -> 2.6.0");
        assert!(
            c.regression && (c.change.magnitude.change_pct - -8.3).abs() < 0.5,
            "{c:?}"
        );
        assert_eq!(read.slide, None);
        assert!(!c.in_slide);
    }

    #[test]
    fn a_slide_under_the_threshold_is_a_warning_and_past_it_is_flagged() {
        // 0.15% a night for 14 nights: about 2% in all, under the 3% threshold.
        let wiggle = [0.0, 0.0005, -0.0005];
        let slow: Vec<Night> = (0..14)
            .map(|i| night(i, 0.6 * (1.0 - 0.0015 * i as f64) + wiggle[i % 3], "2.5.1"))
            .collect();
        let read = read_history(&slow, &policy()).expect("finite");
        let slide = read.slide.expect("a slide");
        assert!(
            !slide.past_threshold && slide.trend.total_pct < -1.0,
            "{slide:?}"
        );
        let steep: Vec<Night> = (0..14)
            .map(|i| night(i, 0.6 * (1.0 - 0.005 * i as f64) + wiggle[i % 3], "2.5.1"))
            .collect();
        let read = read_history(&steep, &policy()).expect("finite");
        assert!(read.slide.is_some_and(|s| s.past_threshold), "{read:#?}");
    }

    #[test]
    fn flat_history_has_nothing_to_say() {
        let nights: Vec<Night> = (0..20)
            .map(|i| night(i, 0.6 + [0.0, 0.002, -0.002][i % 3], "x"))
            .collect();
        let read = read_history(&nights, &policy()).expect("finite");
        assert!(read.changes.is_empty() && read.slide.is_none(), "{read:#?}");
        assert_eq!(read_history(&[], &policy()).expect("empty").nights, 0);
    }

    #[test]
    fn gpu_fingerprint_becomes_environment() {
        let v = serde_json::json!({"fingerprint": {"name": "NVIDIA H200", "driver_version": "555.42", "uuid": "GPU-1"}});
        let env = gpu_env(Some(&v));
        assert_eq!(env["driver"], "555.42");
        assert_eq!(env["gpu"], "NVIDIA H200");
        assert_eq!(env["gpu.uuid"], "GPU-1");
        assert!(gpu_env(None).is_empty());
    }
}
