//! Renderings of Nsight evidence (pure): an Nsight Compute file's per-kernel table with the
//! reading guide, an Nsight Systems export's `nsys stats` summaries, and the per-kernel
//! then-vs-now of two files of one kind, as terminal text and as JSON (`"schema_version": 1`).

use std::fmt::Write as _;

use serde_json::json;

use crate::evidence::hta::shorten_name;
use crate::evidence::ncu::{NcuKernel, NcuReport};
use crate::evidence::nsight::{KernelChange, reading};
use crate::evidence::nsys::{Stat, Summary};

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "missing".into(), |v| format!("{v:.1}%"))
}

fn us(v: Option<f64>) -> String {
    v.map_or_else(|| "missing".into(), |v| format!("{:.2} µs", v / 1e3))
}

fn rate(v: Option<f64>) -> String {
    v.map_or_else(|| "missing".into(), |v| format!("{:.2} GB/s", v / 1e9))
}

fn kernel_line(k: &NcuKernel) -> String {
    format!(
        "#{} {}: duration {}, DRAM {}, memory {}, DRAM bandwidth {}, SM {}, tensor pipes {}, achieved occupancy {}, registers/thread {}, grid {}, block {}",
        k.id,
        shorten_name(&k.name),
        us(k.duration_ns),
        pct(k.dram_pct),
        pct(k.memory_pct),
        rate(k.dram_bytes_per_s),
        pct(k.sm_pct),
        pct(k.tensor_pct),
        pct(k.occupancy_pct),
        k.registers_per_thread
            .map_or_else(|| "missing".into(), |r| format!("{r}")),
        k.grid.as_deref().unwrap_or("missing"),
        k.block.as_deref().unwrap_or("missing"),
    )
}

/// The terminal text of one Nsight Compute file.
#[must_use]
pub fn ncu_text(source: &str, r: &NcuReport, top: usize) -> String {
    let mut out = String::new();
    let page = match r.page {
        crate::evidence::ncu::Page::Raw => "raw",
        crate::evidence::ncu::Page::Details => "details",
    };
    let _ = writeln!(
        out,
        "ncu {source} ({page} page, {} kernel launches)",
        r.kernels.len()
    );
    for k in r.kernels.iter().take(top) {
        let _ = writeln!(out, "  {}", kernel_line(k));
        for line in reading(k) {
            let _ = writeln!(out, "    reading: {line}");
        }
    }
    if r.kernels.len() > top {
        let _ = writeln!(out, "  ... {} more (--top)", r.kernels.len() - top);
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// JSON of one Nsight Compute file, with the reading of each kernel.
#[must_use]
pub fn ncu_json(source: &str, r: &NcuReport) -> serde_json::Value {
    let readings: Vec<Vec<String>> = r.kernels.iter().map(reading).collect();
    json!({"schema_version": 1, "kind": "ncu", "file": source, "report": r, "readings": readings})
}

fn table(out: &mut String, title: &str, rows: &[Stat], top: usize, scale: f64, unit: &str) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{title} (count, total, avg, median, min, max, stddev in {unit}; share):"
    );
    for s in rows.iter().take(top) {
        let _ = writeln!(
            out,
            "  {:>7} {:>12.1} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>5.1}%  {}",
            s.count,
            s.total / scale,
            s.avg / scale,
            s.median / scale,
            s.min / scale,
            s.max / scale,
            s.stddev / scale,
            s.share_pct,
            shorten_name(&s.name)
        );
    }
}

/// The terminal text of one Nsight Systems export's summaries.
#[must_use]
pub fn nsys_text(source: &str, s: &Summary, top: usize) -> String {
    let mut out = String::new();
    let launches: u64 = s.kernels.iter().map(|k| k.count).sum();
    #[expect(
        clippy::cast_precision_loss,
        reason = "ns spans of a profile fit in 2^52"
    )]
    let span_ms = s.kernel_span_ns as f64 / 1e6;
    let _ = writeln!(
        out,
        "nsys {source}: {launches} kernel launches of {} kernels over {span_ms:.1} ms",
        s.kernels.len()
    );
    table(
        &mut out,
        "kernels (cuda_gpu_kern_sum)",
        &s.kernels,
        top,
        1e3,
        "µs",
    );
    table(
        &mut out,
        "memory time (cuda_gpu_mem_time_sum)",
        &s.mem_time,
        top,
        1e3,
        "µs",
    );
    table(
        &mut out,
        "memory size (cuda_gpu_mem_size_sum)",
        &s.mem_size,
        top,
        1e6,
        "MB",
    );
    table(&mut out, "CUDA API (cuda_api_sum)", &s.api, top, 1e3, "µs");
    table(&mut out, "synchronisation", &s.syncs, top, 1e3, "µs");
    table(&mut out, "NVTX ranges (nvtx_sum)", &s.nvtx, top, 1e3, "µs");
    for n in &s.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// JSON of one Nsight Systems export's summaries.
#[must_use]
pub fn nsys_json(source: &str, s: &Summary) -> serde_json::Value {
    json!({"schema_version": 1, "kind": "nsys", "file": source, "summary": s})
}

fn change(c: &KernelChange) -> String {
    let ratio = c
        .duration_change_ratio()
        .map_or_else(String::new, |r| format!(" ({:+.1}%)", 100.0 * r));
    let mut line = format!(
        "{} -> {}{ratio}, launches {} -> {}",
        us(c.duration_then_ns),
        us(c.duration_now_ns),
        c.count_then,
        c.count_now
    );
    if c.dram_then_pct.is_some() || c.dram_now_pct.is_some() {
        let _ = write!(
            line,
            ", DRAM {} -> {}",
            pct(c.dram_then_pct),
            pct(c.dram_now_pct)
        );
    }
    if c.sm_then_pct.is_some() || c.sm_now_pct.is_some() {
        let _ = write!(line, ", SM {} -> {}", pct(c.sm_then_pct), pct(c.sm_now_pct));
    }
    line
}

/// The terminal text of a per-kernel then-vs-now (`kind` is "ncu" or "nsys").
#[must_use]
pub fn kernel_diff_text(
    kind: &str,
    then: &str,
    now: &str,
    d: &[KernelChange],
    top: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{kind} diff {then} -> {now}");
    let _ = writeln!(
        out,
        "per kernel (mean duration per launch), largest time change first:"
    );
    for c in d.iter().take(top) {
        let _ = writeln!(out, "  {}  {}", change(c), shorten_name(&c.name));
    }
    out
}

/// JSON of a per-kernel then-vs-now.
#[must_use]
pub fn kernel_diff_json(
    kind: &str,
    then: &str,
    now: &str,
    d: &[KernelChange],
) -> serde_json::Value {
    json!({"schema_version": 1, "kind": kind, "then": then, "now": now, "kernels": d})
}
