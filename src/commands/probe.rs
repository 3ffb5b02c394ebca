//! `utilgate probe`: measure this GPU's achievable peaks (DESIGN.md §2) — a large
//! device-to-device copy (bytes read plus bytes written over its event time) and a large bf16
//! GEMM on random data (2·n³ FLOPs over its event time) — store them per GPU SKU and print
//! them beside the datasheet figures. Sequences I/O (CUDA, NVML, the store, stdout).

use std::fmt::Write as _;

use serde::Serialize;

use crate::catalog::{ComputeDtype, GpuSpec};
use crate::cli::{Format, ProbeArgs};
use crate::commands::{Outcome, env_lookup, open_store};
use crate::error::Error;
use crate::gpu::nvml::GpuMonitor;
use crate::gpu::state::select_device;
use crate::measure::cuda::CudaDevice;
use crate::stats;
use crate::store::NewProbe;

/// Kind names of the stored figures.
pub const COPY_KIND: &str = "copy_bytes_per_s";
pub const GEMM_KIND: &str = "gemm_bf16_flops_per_s";

const MIB: u64 = 1 << 20;

/// One measured figure beside its datasheet peak.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeFigure {
    pub kind: &'static str,
    /// Bytes/s or FLOP/s: the median over the timed repetitions.
    pub value: f64,
    pub datasheet: Option<f64>,
    /// value / datasheet.
    pub share: Option<f64>,
    pub median_ms: f64,
    pub min_ms: f64,
    pub n: usize,
    /// Bytes counted per copy (read + written), or FLOPs per GEMM.
    pub work: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeReport {
    pub schema_version: u32,
    pub device: String,
    pub gpu_sku: String,
    pub figures: Vec<ProbeFigure>,
}

/// A figure from per-repetition times. Pure.
#[must_use]
pub fn figure(
    kind: &'static str,
    work: f64,
    times_ms: &[f64],
    datasheet: Option<f64>,
) -> Option<ProbeFigure> {
    let median_ms = stats::median(times_ms)?;
    let min_ms = times_ms.iter().copied().reduce(f64::min)?;
    let value = work / (median_ms / 1e3);
    Some(ProbeFigure {
        kind,
        value,
        datasheet,
        share: datasheet.map(|d| value / d),
        median_ms,
        min_ms,
        n: times_ms.len(),
        work,
    })
}

/// The human table. Pure.
#[must_use]
pub fn render_human(report: &ProbeReport) -> String {
    let mut out = format!("GPU: {} ({})\n", report.device, report.gpu_sku);
    let _ = writeln!(
        out,
        "{:<22} {:>16} {:>16} {:>7}",
        "measurement", "achievable", "datasheet", "share"
    );
    for f in &report.figures {
        let (label, scale, unit) = if f.kind == COPY_KIND {
            ("copy (read + write)", 1e9, "GB/s")
        } else {
            ("bf16 dense GEMM", 1e12, "TFLOP/s")
        };
        let sheet = f.datasheet.map_or_else(
            || "unknown".to_owned(),
            |d| format!("{:.0} {unit}", d / scale),
        );
        let share = f
            .share
            .map_or_else(|| "-".to_owned(), |s| format!("{:.0}%", s * 100.0));
        let _ = writeln!(
            out,
            "{label:<22} {:>16} {sheet:>16} {share:>7}",
            format!("{:.0} {unit}", f.value / scale)
        );
    }
    out.push_str("achievable: median over the timed repetitions, CUDA events\n");
    out
}

/// The datasheet spec: `--gpu`, else the config's `[gpu] name`, else the device name.
fn datasheet(args: &ProbeArgs, device_name: &str) -> Result<Option<GpuSpec>, Error> {
    if let Some(name) = &args.gpu {
        return Ok(Some(crate::catalog::gpu::resolve_gpu(name)?));
    }
    if let Ok(loaded) = crate::config::load(&args.config.config)
        && let Some(name) = loaded.config.gpu.as_ref().and_then(|g| g.name.as_ref())
        && let Some(spec) = crate::catalog::gpu_by_name(name)
    {
        return Ok(Some(spec));
    }
    Ok(crate::catalog::gpu_from_nvml_name(device_name))
}

pub fn probe(args: &ProbeArgs) -> Result<Outcome, Error> {
    let device = CudaDevice::open(0)?;
    let env = env_lookup();
    let nvml_name = GpuMonitor::open(&select_device(env("CUDA_VISIBLE_DEVICES").as_deref()))
        .and_then(|m| m.name())
        .ok();
    let versions = device.versions()?;
    let device_name = nvml_name.unwrap_or_else(|| versions.device.clone());
    let spec = datasheet(args, &device_name)?;
    let gpu_sku = spec
        .as_ref()
        .map_or_else(|| device_name.clone(), |s| s.name.clone());

    let (free, _) = device.memory()?;
    let copy_bytes = match args.copy_mib {
        Some(mib) => mib * MIB,
        None => (4096 * MIB).min(free as u64 / 4 / MIB * MIB),
    }
    .max(MIB);
    let copy_times = device.probe_copy(copy_bytes, args.iters)?;
    let n = args.gemm_n;
    let gemm_times = device.probe_gemm(n, args.iters)?;
    let figures: Vec<ProbeFigure> = [
        figure(
            COPY_KIND,
            2.0 * copy_bytes as f64,
            &copy_times,
            spec.as_ref().map(|s| s.mem_bandwidth_bytes_per_s),
        ),
        figure(
            GEMM_KIND,
            2.0 * (n as f64).powi(3),
            &gemm_times,
            spec.as_ref().and_then(|s| s.peak_flops(ComputeDtype::Bf16)),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let report = ProbeReport {
        schema_version: 1,
        device: device_name,
        gpu_sku,
        figures,
    };

    if !args.no_store {
        let store_path = match &args.config.db {
            Some(p) => p.clone(),
            None => crate::config::load(&args.config.config)?.store_path(None),
        };
        let mut store = open_store(&store_path, 10.0)?;
        #[expect(clippy::disallowed_methods, reason = "edge: a command reads the clock")]
        let now = jiff::Timestamp::now();
        for f in &report.figures {
            store.insert_probe(&NewProbe {
                gpu_sku: report.gpu_sku.clone(),
                measured_at: now,
                kind: f.kind.to_owned(),
                value: f.value,
                json: serde_json::to_value(serde_json::json!({
                    "figure": f,
                    "device": report.device,
                    "versions": versions.env(),
                }))
                .ok(),
            })?;
        }
    }
    match args.format.format {
        Format::Human => crate::output::emit(&render_human(&report))?,
        Format::Json => crate::output::emit(&(serde_json::to_string_pretty(&report)? + "\n"))?,
    }
    Ok(Outcome::Passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_work_over_the_median_time() {
        // Four copies of 2 x 4 GiB at 2.9 ms median.
        let f = figure(
            COPY_KIND,
            8.0 * 1024.0 * 1024.0 * 1024.0,
            &[2.95, 2.9, 2.85, 3.4],
            Some(3.35e12),
        )
        .expect("figure");
        assert!((f.median_ms - 2.925).abs() < 1e-12);
        assert!((f.min_ms - 2.85).abs() < 1e-12);
        assert!((f.value - 8.0 * 1024f64.powi(3) / 2.925e-3).abs() < 1.0);
        assert!((f.share.expect("share") - f.value / 3.35e12).abs() < 1e-12);
        assert_eq!(figure(GEMM_KIND, 1.0, &[], None), None);
    }

    #[test]
    fn human_table_shows_achievable_beside_datasheet() {
        let report = ProbeReport {
            schema_version: 1,
            device: "NVIDIA H100 80GB HBM3".into(),
            gpu_sku: "h100-sxm".into(),
            figures: vec![
                figure(COPY_KIND, 2.9e9, &[1.0], Some(3.35e12)).expect("copy"),
                figure(GEMM_KIND, 7.2e11, &[1.0], None).expect("gemm"),
            ],
        };
        let text = render_human(&report);
        assert!(
            text.contains("GPU: NVIDIA H100 80GB HBM3 (h100-sxm)"),
            "{text}"
        );
        assert!(text.contains("2900 GB/s"), "{text}");
        assert!(text.contains("3350 GB/s"), "{text}");
        assert!(text.contains("87%"), "{text}");
        assert!(
            text.contains("720 TFLOP/s") && text.contains("unknown"),
            "{text}"
        );
    }
}
