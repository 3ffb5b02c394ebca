//! The GPU's state as utilgate records it (DESIGN.md §2, §7): the per-run fingerprint, the
//! samples taken during each case's timed window, their per-case summary, and the guard that
//! turns an untrustworthy state into an `inconclusive` verdict with the reason in words. Pure:
//! readings arrive as values (from `gpu::nvml`, or recorded fixtures in tests).
//!
//! # The guard's rules
//!
//! A case is guarded (verdict `inconclusive`, never `regressed`) when any of these holds:
//!
//! * **Power cap**: the enforced power limit is more than [`POWER_LIMIT_TOLERANCE`] below the
//!   default limit ("power cap 450 W of 700 W"). Someone lowered it; the machine, not the code,
//!   is slower.
//! * **Machine clock-event reasons**: hardware slowdown, hardware or software thermal slowdown,
//!   or the hardware power brake active in more than [`REASON_SHARE`] of the busy samples.
//! * **Load clock-event reasons** (the software power cap, sync boost, display clocks, and bits
//!   this build does not know) active in more than [`REASON_SHARE`] of the busy samples *and*
//!   in at least [`REASON_SHARE`] more of them than in the baseline's window. A compute-bound
//!   step on an H100 at its default limit runs against the software power cap as a matter of
//!   course; flagging that absolutely would make such a case inconclusive on every run, so it
//!   would never get a baseline. Relative to the baseline it still catches a card that now
//!   hits its cap where it did not (a hotter room, a failing fan, a neighbour's load).
//! * **Clocks**: the median SM clock of the busy samples is below [`SM_CLOCK_RATIO`] of the
//!   baseline's.
//!
//! Idle (`GpuIdle`) and the applications-clocks setting are never reasons. Samples with the
//! idle bit set are left out of every statistic: a harness process spends its start-up (model
//! construction, compilation) with the GPU idle at low clocks, which says nothing about the
//! timed steps. Share and clock rules need at least [`MIN_BUSY_SAMPLES`] busy samples.

use serde::{Deserialize, Serialize};

/// Enforced power limit this far below the default (as a fraction) counts as a cap.
pub const POWER_LIMIT_TOLERANCE: f64 = 0.01;
/// A clock-event reason active in more than this share of busy samples counts.
pub const REASON_SHARE: f64 = 0.05;
/// A median SM clock below this fraction of the baseline's counts.
pub const SM_CLOCK_RATIO: f64 = 0.90;
/// Fewer busy samples than this say nothing about shares or clocks.
pub const MIN_BUSY_SAMPLES: usize = 3;

/// How a clock-event reason bears on the trust in a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasonKind {
    /// Never a reason to distrust (idle, applications clocks set by the operator).
    Benign,
    /// The machine's fault wherever it appears (thermal, hardware slowdown, power brake).
    Machine,
    /// Normal under some loads; counts only when it rises against the baseline.
    Load,
}

/// One NVML clock-event ("throttle") reason bit, as `nvml.h` defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockReason {
    pub bit: u64,
    /// Stable name used in stored summaries.
    pub name: &'static str,
    /// How a report says it.
    pub words: &'static str,
    pub kind: ReasonKind,
}

/// Every reason bit NVML defines (`nvmlClocksEventReason*`, formerly `nvmlClocksThrottleReason*`).
pub const CLOCK_REASONS: [ClockReason; 9] = [
    ClockReason {
        bit: 0x1,
        name: "gpu_idle",
        words: "GPU idle",
        kind: ReasonKind::Benign,
    },
    ClockReason {
        bit: 0x2,
        name: "applications_clocks_setting",
        words: "applications clocks setting",
        kind: ReasonKind::Benign,
    },
    ClockReason {
        bit: 0x4,
        name: "sw_power_cap",
        words: "SW power cap",
        kind: ReasonKind::Load,
    },
    ClockReason {
        bit: 0x8,
        name: "hw_slowdown",
        words: "HW slowdown",
        kind: ReasonKind::Machine,
    },
    ClockReason {
        bit: 0x10,
        name: "sync_boost",
        words: "sync boost",
        kind: ReasonKind::Load,
    },
    ClockReason {
        bit: 0x20,
        name: "sw_thermal_slowdown",
        words: "SW thermal slowdown",
        kind: ReasonKind::Machine,
    },
    ClockReason {
        bit: 0x40,
        name: "hw_thermal_slowdown",
        words: "HW thermal slowdown",
        kind: ReasonKind::Machine,
    },
    ClockReason {
        bit: 0x80,
        name: "hw_power_brake_slowdown",
        words: "HW power brake",
        kind: ReasonKind::Machine,
    },
    ClockReason {
        bit: 0x100,
        name: "display_clock_setting",
        words: "display clock setting",
        kind: ReasonKind::Load,
    },
];

pub(crate) const GPU_IDLE: u64 = 0x1;
const UNKNOWN_REASON: &str = "unknown";

/// The reason of a stored name, if this build knows it.
#[must_use]
pub fn reason_by_name(name: &str) -> Option<&'static ClockReason> {
    CLOCK_REASONS.iter().find(|r| r.name == name)
}

/// The names of the reasons set in a bitmask; bits this build does not know become "unknown".
#[must_use]
pub fn reason_names(bits: u64) -> Vec<&'static str> {
    let known: u64 = CLOCK_REASONS.iter().map(|r| r.bit).fold(0, |a, b| a | b);
    let mut out: Vec<&'static str> = CLOCK_REASONS
        .iter()
        .filter(|r| bits & r.bit != 0)
        .map(|r| r.name)
        .collect();
    if bits & !known != 0 {
        out.push(UNKNOWN_REASON);
    }
    out
}

/// What a run records about its GPU once, at the start. Every field NVML may decline
/// (`NotSupported` on some boards) is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuFingerprint {
    /// NVML's device name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    pub index: u32,
    pub uuid: Option<String>,
    pub driver_version: Option<String>,
    /// The CUDA version the driver supports, e.g. "12.8".
    pub cuda_driver_version: Option<String>,
    pub vbios_version: Option<String>,
    pub compute_capability: Option<String>,
    pub memory_total_bytes: Option<u64>,
    pub enforced_power_limit_w: Option<f64>,
    pub default_power_limit_w: Option<f64>,
    pub persistence_mode: Option<bool>,
    pub mig_mode: Option<bool>,
    pub ecc_enabled: Option<bool>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    pub pcie_max_gen: Option<u32>,
    pub pcie_max_width: Option<u32>,
    pub applications_sm_clock_mhz: Option<u32>,
    pub applications_mem_clock_mhz: Option<u32>,
    pub max_sm_clock_mhz: Option<u32>,
    pub max_mem_clock_mhz: Option<u32>,
}

/// One reading of the GPU, `t_ms` after sampling began.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub t_ms: f64,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temp_c: Option<u32>,
    /// NVML clock-event reason bits (see [`CLOCK_REASONS`]).
    pub reasons: u64,
    pub gpu_util_pct: Option<u32>,
    pub mem_util_pct: Option<u32>,
    /// NVML's energy counter (`nvmlDeviceGetTotalEnergyConsumption`, millijoules since the
    /// driver loaded; Volta and later), `None` where the board has none.
    #[serde(default)]
    pub energy_mj: Option<u64>,
    /// Timed steps the harness had reported when the reading was taken (complete step lines in
    /// its results file), `None` where the file could not be read: what places the reading in
    /// the timed window (`gpu::energy`).
    #[serde(default)]
    pub timed_steps: Option<u64>,
}

/// The share of busy samples in which one clock-event reason was active.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasonShare {
    pub reason: String,
    /// 0..=1.
    pub share: f64,
}

/// A case's GPU state over its timed windows (all repeats together). Statistics are over the
/// busy samples (idle bit clear); `None` where no busy sample carried the reading.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuStateSummary {
    pub samples: usize,
    pub busy_samples: usize,
    pub sm_clock_median_mhz: Option<f64>,
    pub sm_clock_min_mhz: Option<f64>,
    pub mem_clock_median_mhz: Option<f64>,
    pub power_median_w: Option<f64>,
    pub power_max_w: Option<f64>,
    pub temp_max_c: Option<f64>,
    pub gpu_util_median_pct: Option<f64>,
    /// Reasons active in at least one busy sample, in `CLOCK_REASONS` order.
    pub reasons: Vec<ReasonShare>,
    /// The lowest enforced limit seen (samples, else the fingerprint).
    pub enforced_power_limit_w: Option<f64>,
    pub default_power_limit_w: Option<f64>,
    pub max_sm_clock_mhz: Option<f64>,
}

impl GpuStateSummary {
    /// The share of busy samples a reason was active in (0 when absent).
    #[must_use]
    pub fn share(&self, reason: &str) -> f64 {
        self.reasons
            .iter()
            .find(|r| r.reason == reason)
            .map_or(0.0, |r| r.share)
    }

    /// One line for a report: "SM 1980 MHz median (min 1755), 71 °C max, 512 W median".
    #[must_use]
    pub fn describe(&self) -> String {
        if self.busy_samples == 0 {
            return format!("no busy samples ({} idle)", self.samples);
        }
        let mut parts = Vec::new();
        if let (Some(med), Some(min)) = (self.sm_clock_median_mhz, self.sm_clock_min_mhz) {
            parts.push(format!("SM {med:.0} MHz median (min {min:.0})"));
        }
        if let Some(t) = self.temp_max_c {
            parts.push(format!("{t:.0} °C max"));
        }
        if let Some(p) = self.power_median_w {
            parts.push(format!("{p:.0} W median"));
        }
        for r in &self.reasons {
            let words = reason_by_name(&r.reason).map_or("unknown reason", |c| c.words);
            parts.push(format!("{words} {:.0}%", r.share * 100.0));
        }
        parts.join(", ")
    }
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        f64::midpoint(values[n / 2 - 1], values[n / 2])
    })
}

fn fmin(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::min)
}

fn fmax(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::max)
}

/// Summarise a case's samples. `fingerprint` supplies the power limits and maximum clock when
/// the samples lack them.
#[must_use]
pub fn summarise(samples: &[GpuSample], fingerprint: Option<&GpuFingerprint>) -> GpuStateSummary {
    let busy: Vec<&GpuSample> = samples
        .iter()
        .filter(|s| s.reasons & GPU_IDLE == 0)
        .collect();
    let collect = |f: &dyn Fn(&GpuSample) -> Option<f64>| -> Vec<f64> {
        busy.iter()
            .filter_map(|s| f(s))
            .filter(|v| v.is_finite())
            .collect()
    };
    let mut sm = collect(&|s| s.sm_clock_mhz.map(f64::from));
    let mut mem = collect(&|s| s.mem_clock_mhz.map(f64::from));
    let mut power = collect(&|s| s.power_w);
    let temp = collect(&|s| s.temp_c.map(f64::from));
    let mut util = collect(&|s| s.gpu_util_pct.map(f64::from));
    let limits: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.power_limit_w)
        .filter(|v| v.is_finite())
        .collect();

    let mut reasons = Vec::new();
    if !busy.is_empty() {
        let n = busy.len() as f64;
        for r in CLOCK_REASONS.iter().filter(|r| r.bit != GPU_IDLE) {
            let count = busy.iter().filter(|s| s.reasons & r.bit != 0).count();
            if count > 0 {
                reasons.push(ReasonShare {
                    reason: r.name.to_owned(),
                    share: count as f64 / n,
                });
            }
        }
        let known: u64 = CLOCK_REASONS.iter().map(|r| r.bit).fold(0, |a, b| a | b);
        let unknown = busy.iter().filter(|s| s.reasons & !known != 0).count();
        if unknown > 0 {
            reasons.push(ReasonShare {
                reason: UNKNOWN_REASON.to_owned(),
                share: unknown as f64 / n,
            });
        }
    }

    GpuStateSummary {
        samples: samples.len(),
        busy_samples: busy.len(),
        sm_clock_min_mhz: fmin(&sm),
        sm_clock_median_mhz: median(&mut sm),
        mem_clock_median_mhz: median(&mut mem),
        power_max_w: fmax(&power),
        power_median_w: median(&mut power),
        temp_max_c: fmax(&temp),
        gpu_util_median_pct: median(&mut util),
        reasons,
        enforced_power_limit_w: fmin(&limits)
            .or_else(|| fingerprint.and_then(|f| f.enforced_power_limit_w)),
        default_power_limit_w: fingerprint.and_then(|f| f.default_power_limit_w),
        max_sm_clock_mhz: fingerprint.and_then(|f| f.max_sm_clock_mhz.map(f64::from)),
    }
}

/// Why this case's GPU state makes its measurement untrustworthy, in words, or `None`. See the
/// module documentation for the rules.
#[must_use]
pub fn guard(now: &GpuStateSummary, baseline: Option<&GpuStateSummary>) -> Option<String> {
    let mut why = Vec::new();
    if let (Some(enforced), Some(default)) = (now.enforced_power_limit_w, now.default_power_limit_w)
        && enforced < default * (1.0 - POWER_LIMIT_TOLERANCE)
    {
        why.push(format!("power cap {enforced:.0} W of {default:.0} W"));
    }
    if now.busy_samples >= MIN_BUSY_SAMPLES {
        let base = baseline.filter(|b| b.busy_samples >= MIN_BUSY_SAMPLES);
        for r in &now.reasons {
            if r.share <= REASON_SHARE {
                continue;
            }
            let known = reason_by_name(&r.reason);
            let kind = known.map_or(ReasonKind::Load, |c| c.kind);
            let words = known.map_or("unknown clock-event reason", |c| c.words);
            let pct = r.share * 100.0;
            match kind {
                ReasonKind::Benign => {}
                ReasonKind::Machine => {
                    why.push(format!("{words} active in {pct:.0}% of samples"));
                }
                ReasonKind::Load => {
                    if let Some(b) = base {
                        let then = b.share(&r.reason);
                        if r.share - then >= REASON_SHARE {
                            why.push(format!(
                                "{words} active in {pct:.0}% of samples (baseline {:.0}%)",
                                then * 100.0
                            ));
                        }
                    }
                }
            }
        }
        if let (Some(now_mhz), Some(then_mhz)) = (
            now.sm_clock_median_mhz,
            base.and_then(|b| b.sm_clock_median_mhz),
        ) && now_mhz < SM_CLOCK_RATIO * then_mhz
        {
            why.push(format!(
                "median SM clock {now_mhz:.0} MHz vs {then_mhz:.0} MHz in the baseline ({:.0}%)",
                now_mhz / then_mhz * 100.0
            ));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// [`guard`] over stored JSON summaries (`results.gpu_state_json`). A summary that does not
/// parse counts as absent: an old or foreign record never guards a case.
#[must_use]
pub fn guard_json(
    now: Option<&serde_json::Value>,
    baseline: Option<&serde_json::Value>,
) -> Option<String> {
    let parse = |v: &serde_json::Value| serde_json::from_value::<GpuStateSummary>(v.clone()).ok();
    let now = parse(now?)?;
    let baseline = baseline.and_then(parse);
    guard(&now, baseline.as_ref())
}

/// Which GPU NVML should watch: the first entry of `CUDA_VISIBLE_DEVICES` when it names one (an
/// index or a `GPU-...` UUID), else device 0. A MIG instance (`MIG-...`) is watched through
/// its parent's index 0, as NVML's device-level readings are the parent's anyway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSelector {
    Index(u32),
    Uuid(String),
}

#[must_use]
pub fn select_device(cuda_visible_devices: Option<&str>) -> DeviceSelector {
    let first = cuda_visible_devices
        .and_then(|v| v.split(',').next())
        .map(str::trim)
        .unwrap_or_default();
    if let Ok(i) = first.parse::<u32>() {
        DeviceSelector::Index(i)
    } else if first.starts_with("GPU-") {
        DeviceSelector::Uuid(first.to_owned())
    } else {
        DeviceSelector::Index(0)
    }
}

#[cfg(test)]
mod tests;
