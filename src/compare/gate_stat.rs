//! The statistics a case can be gated on, by name, and the result of one that a decision does
//! not show; how each is computed is `stat`'s. Pure.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A gated statistic of a case's steps.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum GateStat {
    #[default]
    Median,
    Mean,
    P99,
    Stall,
    /// Energy per token (`compare::energy`): not a statistic of the steps, judged by the same
    /// rule from each repeat's joules.
    #[serde(rename = "joules_per_token")]
    JoulesPerToken,
}

impl GateStat {
    pub const ALL: [GateStat; 5] = [
        GateStat::Median,
        GateStat::Mean,
        GateStat::P99,
        GateStat::Stall,
        GateStat::JoulesPerToken,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            GateStat::Median => "median",
            GateStat::Mean => "mean",
            GateStat::P99 => "p99",
            GateStat::Stall => "stall",
            GateStat::JoulesPerToken => "joules_per_token",
        }
    }
}

impl fmt::Display for GateStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of a gated statistic other than the one a decision shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailDecision {
    pub stat: GateStat,
    pub verdict: crate::case::Verdict,
    pub threshold_pct: f64,
    pub step_then_ms: Option<f64>,
    pub step_now_ms: Option<f64>,
    /// Positive: the statistic got slower (a utilisation drop of this many percent).
    pub drop_pct: Option<f64>,
    pub interval_pct: Option<(f64, f64)>,
    pub p_value: Option<f64>,
}

/// A step slower than this many times its process's median is a stall (`stall`): twice the
/// typical step is far beyond the step jitter and a slow process start (+8%), and an isolated
/// outlier step counts for what it cost.
pub const STALL_FACTOR: f64 = 2.0;
