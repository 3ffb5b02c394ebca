//! The `utilgate probe` report: one measured achievable peak beside its datasheet figure, and
//! the terminal table. Pure: the command measures, stores and prints.

use std::fmt::Write as _;

use serde::Serialize;

use crate::stats;

/// Kind names of the stored figures.
pub const COPY_KIND: &str = "copy_bytes_per_s";
pub const GEMM_KIND: &str = "gemm_bf16_flops_per_s";

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
