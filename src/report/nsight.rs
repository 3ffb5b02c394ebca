//! Renderings of Nsight evidence (pure): an Nsight Compute file's per-kernel table with the
//! reading guide, an Nsight Systems export's `nsys stats` summaries and per-step breakdown, the
//! per-kernel then-vs-now of two files of one kind, as terminal text and as JSON
//! (`"schema_version": 1`), and a case's Nsight evidence as the run reports show it.

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
    // Older `nsys stats` CSVs lack the median and standard deviation (NaN): shown as missing.
    let cell = |v: f64| {
        if v.is_finite() {
            format!("{:>10.2}", v / scale)
        } else {
            format!("{:>10}", "missing")
        }
    };
    for s in rows.iter().take(top) {
        let _ = writeln!(
            out,
            "  {:>7} {:>12.1} {} {} {} {} {} {:>5.1}%  {}",
            s.count,
            s.total / scale,
            cell(s.avg),
            cell(s.median),
            cell(s.min),
            cell(s.max),
            cell(s.stddev),
            s.share_pct,
            shorten_name(&s.name)
        );
    }
}

/// The kernels of an export in one line: launches, distinct kernels, total kernel time and the
/// span the kernels ran over (each when known).
fn kernel_headline(s: &Summary) -> String {
    let launches: u64 = s.kernels.iter().map(|k| k.count).sum();
    let mut line = format!("{launches} kernel launches of {} kernels", s.kernels.len());
    if let Some(total) = s.kernel_total_ns {
        let _ = write!(
            line,
            ", total kernel time {:.3} ms (the sum of their durations)",
            total / 1e6
        );
    } else {
        // A summary stored before the total was kept: what its rows hold, said as such.
        let kept: f64 = s.kernels.iter().map(|k| k.total).sum();
        let _ = write!(
            line,
            ", kernel time of the {} kernels kept {:.3} ms",
            s.kernels.len(),
            kept / 1e6
        );
    }
    if s.kernel_span_ns > 0 {
        #[expect(
            clippy::cast_precision_loss,
            reason = "ns spans of a profile fit in 2^52"
        )]
        let span_ms = s.kernel_span_ns as f64 / 1e6;
        let _ = write!(
            line,
            " over {span_ms:.1} ms (first kernel start to last kernel end)"
        );
    }
    line
}

/// The terminal text of one Nsight Systems export: the `nsys stats` summaries and, for an
/// export (not an `nsys stats` CSV, which has no timeline), the per-NVTX-step analysis, as a
/// run's report shows it for its stored copy.
#[must_use]
pub fn nsys_text(
    source: &str,
    s: &Summary,
    steps: Option<&crate::evidence::nsys_steps::NsysSteps>,
    top: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "nsys {source}: {}", kernel_headline(s));
    if let Some(steps) = steps {
        let ranges = if steps.analysis.step_source == "whole trace" {
            "no NVTX step range: the whole export as one step"
        } else {
            "NVTX step ranges"
        };
        let _ = writeln!(out, "step analysis ({ranges}, as a run stores it):");
        for line in step_lines(steps) {
            let _ = writeln!(out, "  {line}");
        }
    }
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

/// JSON of one Nsight Systems export: its summaries and, for an export, the per-step analysis
/// (`steps`: `null` for an `nsys stats` CSV).
#[must_use]
pub fn nsys_json(
    source: &str,
    s: &Summary,
    steps: Option<&crate::evidence::nsys_steps::NsysSteps>,
) -> serde_json::Value {
    json!({"schema_version": 1, "kind": "nsys", "file": source, "summary": s, "steps": steps})
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

/// What a case's Nsight file says, as every report shows it (`cases[].nsight[]` in JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NsightCaseEvidence {
    /// "nsys" or "ncu".
    pub kind: String,
    /// The file's name.
    pub file: String,
    /// Why the evidence is partial or missing (the verdict stands regardless).
    pub warning: Option<String>,
    /// This run's headline figures: per step for nsys, per kernel with the reading guide for ncu.
    pub lines: Vec<String>,
    /// Then vs now against the baseline result's file of the same kind (empty without one).
    pub diff_lines: Vec<String>,
    /// The whole comparison, for JSON readers: the per-step diff and per-kernel changes.
    pub diff: Option<serde_json::Value>,
}

fn nccl_line(n: &crate::evidence::nsys_steps::NcclOverlap) -> Option<String> {
    let share = n.overlap_share()?;
    Some(format!(
        "NCCL {:.1} µs per step, {:.0}% of it overlapped with compute",
        n.nccl_us,
        100.0 * share
    ))
}

/// The per-step figures of an export, one line each: what a run's report and `trace show` print.
fn step_lines(steps: &crate::evidence::nsys_steps::NsysSteps) -> Vec<String> {
    let a = &steps.analysis;
    let s = &a.step;
    let mut out = vec![format!(
        "per step ({}, {} of {} ranges): wall {:.1} µs, GPU busy {:.1} µs, idle {:.1}% (host wait {:.1} µs, kernel wait {:.1} µs, other {:.1} µs), kernels {:.1}, launches {:.1}, host sync calls {:.1} ({}), DtoH copies {:.1}",
        a.step_source,
        a.steps_used,
        a.steps_found,
        s.wall_us,
        s.gpu_busy_us,
        100.0 * s.gpu_idle_share,
        s.host_wait_us,
        s.kernel_wait_us,
        s.other_idle_us,
        s.kernels,
        s.launches,
        s.syncs,
        s.sync_kinds(),
        s.dtoh_copies
    )];
    let total: f64 = a.categories.values().sum();
    if total > 0.0 {
        let cats: Vec<String> = a
            .categories
            .iter()
            .map(|(c, t)| format!("{} {:.0}%", c.label(), 100.0 * t / total))
            .collect();
        out.push(format!("GPU time by category: {}", cats.join(", ")));
    }
    out.extend(nccl_line(&steps.nccl));
    out
}

fn nsys_lines(summary: &Summary, steps: &crate::evidence::nsys_steps::NsysSteps) -> Vec<String> {
    let mut out = step_lines(steps);
    out.push(kernel_headline(summary));
    for k in summary.kernels.iter().take(3) {
        out.push(format!(
            "{} launches of {}: avg {:.2} µs, median {:.2} µs, {:.1}% of kernel time",
            k.count,
            shorten_name(&k.name),
            k.avg / 1e3,
            k.median / 1e3,
            k.share_pct
        ));
    }
    out
}

/// The evidence of one Nsight file of a case: `now` is this run's summary, `then` the baseline
/// result's of the same kind.
#[must_use]
pub fn case_nsight(
    kind: &str,
    file: &str,
    warning: Option<String>,
    now: Option<&crate::evidence::nsight::NsightSummary>,
    then: Option<&crate::evidence::nsight::NsightSummary>,
) -> NsightCaseEvidence {
    use crate::evidence::nsight::{NsightSummary, ncu_diff, nsys_diff};
    let mut ev = NsightCaseEvidence {
        kind: kind.to_owned(),
        file: file.to_owned(),
        warning,
        lines: Vec::new(),
        diff_lines: Vec::new(),
        diff: None,
    };
    match (now, then) {
        (Some(NsightSummary::Nsys { summary, steps, .. }), then) => {
            ev.lines = nsys_lines(summary, steps);
            if let Some(NsightSummary::Nsys {
                summary: ts,
                steps: tsteps,
                ..
            }) = then
            {
                let d = crate::evidence::diff(&tsteps.analysis, &steps.analysis);
                ev.diff_lines = d.lines(crate::report::evidence::DIFF_LINES);
                if tsteps.nccl.nccl_us > 0.0 || steps.nccl.nccl_us > 0.0 {
                    ev.diff_lines.push(format!(
                        "NCCL per step {:.1} -> {:.1} µs, overlapped with compute {} -> {}",
                        tsteps.nccl.nccl_us,
                        steps.nccl.nccl_us,
                        tsteps
                            .nccl
                            .overlap_share()
                            .map_or_else(|| "-".into(), |x| format!("{:.0}%", 100.0 * x)),
                        steps
                            .nccl
                            .overlap_share()
                            .map_or_else(|| "-".into(), |x| format!("{:.0}%", 100.0 * x))
                    ));
                }
                ev.diff = Some(json!({
                    "steps": d,
                    "kernels": nsys_diff(&ts.kernels, &summary.kernels),
                }));
            }
        }
        (Some(NsightSummary::Ncu { report, .. }), then) => {
            let mut by_time: Vec<&NcuKernel> = report.kernels.iter().collect();
            by_time.sort_by(|a, b| {
                b.duration_ns
                    .unwrap_or(0.0)
                    .total_cmp(&a.duration_ns.unwrap_or(0.0))
            });
            for k in by_time.into_iter().take(3) {
                ev.lines.push(kernel_line(k));
                ev.lines
                    .extend(reading(k).into_iter().map(|r| format!("reading: {r}")));
            }
            if let Some(NsightSummary::Ncu { report: tr, .. }) = then {
                let d = ncu_diff(tr, report);
                ev.diff_lines = d
                    .iter()
                    .take(crate::report::evidence::DIFF_LINES)
                    .map(|c| format!("{}: {}", shorten_name(&c.name), change(c)))
                    .collect();
                ev.diff = Some(json!({ "kernels": d }));
            }
        }
        (None, _) => {}
    }
    ev
}
