//! The records of energy per token (#33 item 4): a repeat's window, the case's figures and the
//! gate's result as the decision keeps it, apart from their computation (`energy`), which
//! needs `decide`, so that `Decision` can hold the result without an import circle. Pure.

use serde::{Deserialize, Serialize};

use crate::case::Verdict;

/// Where a repeat's joules came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnergySource {
    /// NVML's energy counter (millijoules since the driver loaded), read at both ends of the
    /// window.
    Counter,
    /// The power readings integrated over the window (trapezoid rule on their own times).
    Integral,
}

impl EnergySource {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EnergySource::Counter => "counter",
            EnergySource::Integral => "integral",
        }
    }

    /// Parses a stored name.
    #[must_use]
    pub fn from_name(name: &str) -> Option<EnergySource> {
        match name {
            "counter" => Some(EnergySource::Counter),
            "integral" => Some(EnergySource::Integral),
            _ => None,
        }
    }
}

/// What one repeat's window measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyWindow {
    /// Joules the GPU used over the window.
    pub joules: f64,
    /// Timed steps that ended inside the window.
    pub steps: u64,
    /// The window's length (ms, on the sampler's clock).
    pub window_ms: f64,
    pub source: EnergySource,
    /// The lowest enforced power limit read in the window (W), where NVML reported one.
    pub power_limit_w: Option<f64>,
}

impl EnergyWindow {
    /// Joules per step of this window.
    #[must_use]
    pub fn joules_per_step(&self) -> f64 {
        self.joules / self.steps as f64
    }
}

/// One repeat's energy: its window's figures, or why it has none (never a guess).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatEnergy {
    /// The repeat's number (0-based, as `UTILGATE_REPEAT`).
    pub repeat: u32,
    pub measured: Result<EnergyWindow, String>,
}

/// A case's energy figures over the repeats that measured one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyFigures {
    pub joules_per_step: f64,
    pub joules_per_token: f64,
    /// Tokens per second per watt (= tokens per joule).
    pub tokens_per_s_per_w: f64,
    /// The mean power over the windows: their joules over their time (W).
    pub mean_power_w: f64,
    /// The lowest enforced power limit of the windows (W).
    pub power_limit_w: Option<f64>,
    /// "counter", "integral", or "counter and integral" when the repeats differ.
    pub source: String,
    /// Repeats with a figure, and of how many.
    pub repeats: usize,
    pub repeats_of: usize,
    /// Steps inside the windows.
    pub steps: u64,
    /// Why repeats have no figure (one line each, "repeat 2: ...").
    pub refused: Vec<String>,
}

/// Energy per token against the baseline's: the gate's result, kept in the decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyCheck {
    /// `pass`, `regressed`, `improved`, `inconclusive`, or `new` (the baseline has no figure).
    pub verdict: Verdict,
    pub now: EnergyFigures,
    pub then: Option<EnergyFigures>,
    /// The levels the test compared (J/token; the repeats' geometric level, not the pooled
    /// figure above).
    pub level_now_j: Option<f64>,
    pub level_then_j: Option<f64>,
    /// Tokens per joule lost, percent (`1 - J_then / J_now`); negative when they rose.
    pub drop_pct: Option<f64>,
    /// The range of the drop the noise allows at the grid-corrected level.
    pub interval_pct: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub threshold_pct: f64,
    /// Whether `gate_on` lists `joules_per_token` (else the check is shown, never folded in).
    pub gated: bool,
    /// Whether this check set the case's verdict (a step time that held while energy fell).
    pub decides: bool,
}

impl EnergyCheck {
    /// "joules per token rose 10.0% (from 1.000 to 1.100 J/token; tokens per joule fell 9.1%)".
    #[must_use]
    pub fn change(&self) -> String {
        match (self.level_then_j, self.level_now_j, self.drop_pct) {
            (Some(then), Some(now), Some(drop)) => {
                let rise = (now / then - 1.0) * 100.0;
                let (way, by) = if rise >= 0.0 {
                    ("rose", rise)
                } else {
                    ("fell", -rise)
                };
                let (tpj_way, tpj_by) = if drop >= 0.0 {
                    ("fell", drop)
                } else {
                    ("rose", -drop)
                };
                format!(
                    "joules per token {way} {by:.1}% (from {} to {} J/token; tokens per \
                     joule {tpj_way} {tpj_by:.1}%)",
                    joules(then),
                    joules(now)
                )
            }
            _ => format!("{} J/token", joules(self.now.joules_per_token)),
        }
    }
}

/// A joules figure with four significant digits ("1.100", "0.01234", "412.3").
#[must_use]
pub fn joules(j: f64) -> String {
    if !j.is_finite() || j == 0.0 {
        return format!("{j}");
    }
    // The magnitude of the value as rounded to four digits (0.99999 prints as 1.000).
    let rounded: f64 = format!("{j:.3e}").parse().unwrap_or(j);
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the decimal exponent of a finite f64 is within i32"
    )]
    let magnitude = rounded.abs().log10().floor() as i32;
    let decimals = usize::try_from((3 - magnitude).max(0)).unwrap_or(0);
    format!("{j:.decimals$}")
}
