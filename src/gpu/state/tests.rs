//! Tests of `state`.

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
            energy_mj: None,
            timed_steps: None,
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
            energy_mj: None,
            timed_steps: None,
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
