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

const GPU_IDLE: u64 = 0x1;
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
mod tests {
    use super::*;

    const SW_POWER_CAP: u64 = 0x4;
    const HW_THERMAL: u64 = 0x40;

    /// An H100 SXM (700 W default) as NVML reports it; the limits vary per test.
    fn h100(enforced_w: f64) -> GpuFingerprint {
        GpuFingerprint {
            name: "NVIDIA H100 80GB HBM3".into(),
            uuid: Some("GPU-5c1e0b2a-0d4f-4a77-9a1e-3b8f2c6d7e10".into()),
            driver_version: Some("570.124.06".into()),
            cuda_driver_version: Some("12.8".into()),
            enforced_power_limit_w: Some(enforced_w),
            default_power_limit_w: Some(700.0),
            max_sm_clock_mhz: Some(1980),
            max_mem_clock_mhz: Some(2619),
            ..GpuFingerprint::default()
        }
    }

    /// A window of decode steps sampled every 100 ms: `idle` samples of harness start-up
    /// first (idle bit, 345 MHz), then busy samples at `sm_mhz` with `reasons` set in every
    /// `every`-th one.
    fn window(idle: usize, busy: usize, sm_mhz: u32, reasons: u64, every: usize) -> Vec<GpuSample> {
        let mut out = Vec::new();
        for i in 0..idle {
            out.push(GpuSample {
                t_ms: i as f64 * 100.0,
                sm_clock_mhz: Some(345),
                mem_clock_mhz: Some(2619),
                power_w: Some(71.5),
                power_limit_w: None,
                temp_c: Some(33),
                reasons: GPU_IDLE,
                gpu_util_pct: Some(0),
                mem_util_pct: Some(0),
            });
        }
        for i in 0..busy {
            out.push(GpuSample {
                t_ms: (idle + i) as f64 * 100.0,
                sm_clock_mhz: Some(sm_mhz - u32::try_from(i % 3).expect("small") * 15),
                mem_clock_mhz: Some(2619),
                power_w: Some(430.0 + (i % 5) as f64 * 12.0),
                power_limit_w: None,
                temp_c: Some(58 + u32::try_from(i % 7).expect("small")),
                reasons: if every > 0 && i % every == 0 {
                    reasons
                } else {
                    0
                },
                gpu_util_pct: Some(100),
                mem_util_pct: Some(87),
            });
        }
        out
    }

    #[test]
    #[expect(
        clippy::float_cmp,
        reason = "medians and shares of whole numbers are exact"
    )]
    fn summary_leaves_idle_start_up_out_and_counts_reason_shares() {
        let samples = window(10, 40, 1980, SW_POWER_CAP | HW_THERMAL, 4);
        let s = summarise(&samples, Some(&h100(700.0)));
        assert_eq!(s.samples, 50);
        assert_eq!(s.busy_samples, 40);
        assert_eq!(s.sm_clock_median_mhz, Some(1965.0));
        assert_eq!(s.sm_clock_min_mhz, Some(1950.0));
        assert_eq!(s.temp_max_c, Some(64.0));
        assert_eq!(s.power_max_w, Some(478.0));
        assert_eq!(s.share("sw_power_cap"), 0.25);
        assert_eq!(s.share("hw_thermal_slowdown"), 0.25);
        assert_eq!(s.share("gpu_idle"), 0.0, "idle is never a listed reason");
        assert_eq!(s.enforced_power_limit_w, Some(700.0));
        assert_eq!(s.max_sm_clock_mhz, Some(1980.0));
    }

    #[test]
    fn summary_of_nothing_or_only_idle_has_no_statistics() {
        for samples in [Vec::new(), window(5, 0, 1980, 0, 0)] {
            let s = summarise(&samples, None);
            assert_eq!(s.busy_samples, 0);
            assert_eq!(s.sm_clock_median_mhz, None);
            assert!(s.reasons.is_empty());
            assert_eq!(guard(&s, None), None);
        }
    }

    #[test]
    #[expect(clippy::float_cmp, reason = "a share of 10 in 10 is exactly 1")]
    fn unknown_reason_bits_are_kept_as_unknown() {
        let samples = window(0, 10, 1980, 0x1000, 1);
        let s = summarise(&samples, None);
        assert_eq!(s.share("unknown"), 1.0);
        assert_eq!(reason_names(0x1004), vec!["sw_power_cap", "unknown"]);
    }

    #[test]
    fn power_capped_window_is_guarded_with_the_reason_in_words() {
        // Recorded shape: enforced limit lowered to 450 W, SW power cap in most samples, SM
        // clock held near 1,410 MHz against a healthy 1,980 MHz baseline.
        let healthy = summarise(&window(8, 60, 1980, 0, 0), Some(&h100(700.0)));
        let capped = summarise(&window(8, 60, 1410, SW_POWER_CAP, 1), Some(&h100(450.0)));
        let why = guard(&capped, Some(&healthy)).expect("guarded");
        assert!(why.contains("power cap 450 W of 700 W"), "{why}");
        assert!(
            why.contains("SW power cap active in 100% of samples (baseline 0%)"),
            "{why}"
        );
        assert!(
            why.contains("median SM clock 1395 MHz vs 1965 MHz in the baseline (71%)"),
            "{why}"
        );
        assert_eq!(guard(&healthy, Some(&healthy)), None);
    }

    #[test]
    fn guard_decisions_table() {
        type Case<'a> = (
            &'a str,
            Vec<GpuSample>,
            f64,
            Option<&'a GpuStateSummary>,
            bool,
        );
        let base = summarise(&window(0, 50, 1980, 0, 0), Some(&h100(700.0)));
        let base_capping = summarise(&window(0, 50, 1980, SW_POWER_CAP, 1), Some(&h100(700.0)));
        // (case, samples now, limit now, baseline, guarded?)
        let cases: Vec<Case<'_>> = vec![
            (
                "healthy, no baseline",
                window(0, 50, 1980, 0, 0),
                700.0,
                None,
                false,
            ),
            (
                "limit lowered, no baseline",
                window(0, 50, 1980, 0, 0),
                600.0,
                None,
                true,
            ),
            (
                "limit 0.5% low is noise",
                window(0, 50, 1980, 0, 0),
                696.5,
                None,
                false,
            ),
            (
                "thermal in 10%, no baseline",
                window(0, 50, 1980, HW_THERMAL, 10),
                700.0,
                None,
                true,
            ),
            (
                "thermal in 4% only",
                window(0, 50, 1980, HW_THERMAL, 25),
                700.0,
                None,
                false,
            ),
            (
                "power cap, no baseline",
                window(0, 50, 1980, SW_POWER_CAP, 1),
                700.0,
                None,
                false,
            ),
            (
                "power cap, baseline had none",
                window(0, 50, 1980, SW_POWER_CAP, 2),
                700.0,
                Some(&base),
                true,
            ),
            (
                "power cap, baseline capped too",
                window(0, 50, 1980, SW_POWER_CAP, 1),
                700.0,
                Some(&base_capping),
                false,
            ),
            (
                "clock 92% of baseline",
                window(0, 50, 1830, 0, 0),
                700.0,
                Some(&base),
                false,
            ),
            (
                "clock 85% of baseline",
                window(0, 50, 1690, 0, 0),
                700.0,
                Some(&base),
                true,
            ),
            (
                "clock low but 2 busy samples",
                window(10, 2, 1000, 0, 0),
                700.0,
                Some(&base),
                false,
            ),
            (
                "applications clocks always on",
                window(0, 50, 1980, 0x2, 1),
                700.0,
                Some(&base),
                false,
            ),
        ];
        for (name, samples, limit, baseline, guarded) in cases {
            let now = summarise(&samples, Some(&h100(limit)));
            let why = guard(&now, baseline);
            assert_eq!(why.is_some(), guarded, "{name}: {why:?}");
        }
    }

    #[test]
    fn guard_json_reads_stored_summaries_and_ignores_foreign_ones() {
        let healthy = summarise(&window(0, 50, 1980, 0, 0), Some(&h100(700.0)));
        let slow = summarise(&window(0, 50, 1500, 0, 0), Some(&h100(700.0)));
        let now = serde_json::to_value(&slow).expect("json");
        let then = serde_json::to_value(&healthy).expect("json");
        assert!(guard_json(Some(&now), Some(&then)).is_some());
        assert_eq!(guard_json(None, Some(&then)), None);
        let foreign = serde_json::json!({"clocks": "fast"});
        assert_eq!(guard_json(Some(&foreign), Some(&then)), None);
        assert_eq!(
            guard_json(Some(&now), Some(&foreign)),
            None,
            "no baseline clock to compare"
        );
    }

    #[test]
    fn describe_names_clocks_temperature_and_reasons() {
        let s = summarise(&window(2, 20, 1980, SW_POWER_CAP, 2), None);
        let line = s.describe();
        assert!(line.starts_with("SM 1965 MHz median (min 1950)"), "{line}");
        assert!(line.contains("SW power cap 50%"), "{line}");
    }

    #[test]
    fn device_selection_follows_cuda_visible_devices() {
        assert_eq!(select_device(None), DeviceSelector::Index(0));
        assert_eq!(select_device(Some("3,1")), DeviceSelector::Index(3));
        assert_eq!(
            select_device(Some("GPU-5c1e0b2a")),
            DeviceSelector::Uuid("GPU-5c1e0b2a".into())
        );
        assert_eq!(select_device(Some("MIG-abc")), DeviceSelector::Index(0));
        assert_eq!(select_device(Some("")), DeviceSelector::Index(0));
    }
}
