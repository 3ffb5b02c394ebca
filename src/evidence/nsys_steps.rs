//! Per-step breakdown of an Nsight Systems export (pure): the export in the one evidence model
//! (kernels, copies and memsets as GPU operations, CUDA runtime calls and NVTX ranges as host
//! events, microseconds), analysed by the same per-step analysis as a torch.profiler trace, with
//! steps from NVTX ranges (`decode_step`, `prefill_step`, `step`: `nvtx.annotate("decode_step")`
//! or `torch.cuda.nvtx.range_push`); plus, per step, NCCL time and how much of it overlaps
//! compute on another stream, which a single-stream trace analysis does not say.

use serde::{Deserialize, Serialize};

use super::analysis::{Analysis, Options, analyse};
use super::classify::Category;
use super::hta::merge;
use super::model::{CpuKind, CpuOp, GpuKind, GpuOp, Trace};
use super::nsys::{Export, Span};

#[expect(
    clippy::cast_precision_loss,
    reason = "ns timestamps of a profile fit in 2^52"
)]
fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

/// A runtime call's name without nsys's API version suffix (`cudaLaunchKernel_v7000` ->
/// `cudaLaunchKernel`), so that it reads as the CUDA call the analysis recognises.
#[must_use]
pub fn runtime_name(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((base, v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

/// The torch.profiler name of a copy, so that device-to-host copies count as syncs and pageable
/// host-to-device copies as such (`nsys stats` names them `[CUDA memcpy Host-to-Device]`).
fn copy_name(s: &Span) -> String {
    let n = s.name.as_str();
    if n.contains("Unified") {
        n.to_owned()
    } else if n.contains("Host-to-Device") {
        if s.pageable {
            "Memcpy HtoD (Pageable -> Device)".into()
        } else {
            "Memcpy HtoD (Pinned -> Device)".into()
        }
    } else if n.contains("Device-to-Host") {
        "Memcpy DtoH (Device -> Host)".into()
    } else if n.contains("Device-to-Device") {
        "Memcpy DtoD (Device -> Device)".into()
    } else if n.contains("Peer-to-Peer") {
        "Memcpy PtoP (Device -> Device)".into()
    } else if n == "[CUDA memset]" {
        "Memset (Device)".into()
    } else {
        n.to_owned()
    }
}

/// The export in the evidence model.
#[must_use]
pub fn to_trace(e: &Export) -> Trace {
    let mut t = Trace {
        float_timestamps: true,
        ..Trace::default()
    };
    for k in &e.kernels {
        let name = t.names.intern(&k.demangled_name);
        t.gpu.push(GpuOp {
            ts: us(k.start_ns),
            dur: us(k.end_ns - k.start_ns),
            name,
            kind: GpuKind::Kernel,
            stream: k.stream,
            device: k.device,
            correlation: k.correlation.unwrap_or(-1),
            bytes: None,
        });
    }
    for (spans, memory) in [(&e.memory, true), (&e.syncs, false)] {
        for s in spans {
            let kind = match (memory, s.name.as_str()) {
                (false, _) => GpuKind::Sync,
                (true, "[CUDA memset]") => GpuKind::Memset,
                (true, _) => GpuKind::Memcpy,
            };
            let name = t.names.intern(&copy_name(s));
            t.gpu.push(GpuOp {
                ts: us(s.start_ns),
                dur: us(s.end_ns - s.start_ns),
                name,
                kind,
                stream: s.stream.unwrap_or(-1),
                device: -1,
                correlation: s.correlation.unwrap_or(-1),
                bytes: s.bytes.and_then(|b| u64::try_from(b).ok()),
            });
        }
    }
    for (spans, kind) in [
        (&e.runtime, CpuKind::Runtime),
        (&e.nvtx, CpuKind::Annotation),
    ] {
        for s in spans {
            let name = t.names.intern(runtime_name(&s.name));
            t.cpu.push(CpuOp {
                ts: us(s.start_ns),
                dur: us(s.end_ns - s.start_ns),
                name,
                kind,
                correlation: s.correlation.unwrap_or(-1),
                // The export's spans carry no thread here: one host thread.
                thread: 0,
            });
        }
    }
    t.gpu.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    t.cpu.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    t.events_seen = (t.gpu.len() + t.cpu.len()) as u64;
    t
}

/// NCCL (communication) kernels per step and their overlap with compute kernels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclOverlap {
    /// Union of the communication kernels' intervals, µs per step.
    pub nccl_us: f64,
    /// The part of it during which a compute kernel ran too (another stream), µs per step.
    pub overlapped_us: f64,
}

impl NcclOverlap {
    /// Share of NCCL time hidden behind compute (None without NCCL).
    #[must_use]
    pub fn overlap_share(&self) -> Option<f64> {
        (self.nccl_us > 0.0).then(|| self.overlapped_us / self.nccl_us)
    }
}

/// Length of the intersection of two sorted, merged interval lists.
fn intersection(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let (mut i, mut j, mut total) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += hi - lo;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// What an export says per step: the shared analysis and the NCCL overlap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NsysSteps {
    pub analysis: Analysis,
    pub nccl: NcclOverlap,
}

/// Analyses `e` per NVTX step range (the whole export as one step without one).
#[must_use]
pub fn analyse_export(e: &Export, opts: &Options) -> NsysSteps {
    let trace = to_trace(e);
    let analysis = analyse(&trace, opts);
    let nccl = nccl_overlap(&trace, &analysis, opts);
    NsysSteps { analysis, nccl }
}

/// NCCL time per step over the steps the analysis used (the same NVTX ranges, warm-up dropped
/// the same way), GPU work assigned to the step whose launch call it followed, else its start.
fn nccl_overlap(trace: &Trace, a: &Analysis, opts: &Options) -> NcclOverlap {
    let step_ranges: Vec<(f64, f64)> = if a.step_source == "whole trace" {
        // As the analysis's whole-trace step: from the first host or GPU event to the last end.
        let starts = trace
            .cpu
            .iter()
            .map(|o| o.ts)
            .chain(trace.gpu.iter().map(|o| o.ts));
        let ends = trace
            .cpu
            .iter()
            .map(CpuOp::end)
            .chain(trace.gpu.iter().map(GpuOp::end));
        let ts = starts.fold(f64::INFINITY, f64::min);
        let end = ends.fold(f64::NEG_INFINITY, f64::max);
        if ts.is_finite() {
            vec![(ts, end + f64::EPSILON.max(end.abs() * 1e-12))]
        } else {
            Vec::new()
        }
    } else {
        let mut v: Vec<(f64, f64)> = trace
            .cpu
            .iter()
            .filter(|o| o.kind == CpuKind::Annotation)
            .filter(|o| {
                let n = trace.cpu_name(o);
                n.split(['#', '[', '('])
                    .next()
                    .is_some_and(|k| k.trim() == a.step_source)
                    && opts.step_annotation.is_match(n)
            })
            .map(|o| (o.ts, o.end()))
            .collect();
        v.sort_by(|x, y| x.0.total_cmp(&y.0));
        let drop = v.len().saturating_sub(a.steps_used);
        v.split_off(drop)
    };
    if step_ranges.is_empty() {
        return NcclOverlap::default();
    }
    let launch: std::collections::HashMap<i64, f64> = trace
        .cpu
        .iter()
        .filter(|o| o.correlation >= 0)
        .map(|o| (o.correlation, o.ts))
        .collect();
    let mut comm: Vec<Vec<(f64, f64)>> = vec![Vec::new(); step_ranges.len()];
    let mut compute: Vec<Vec<(f64, f64)>> = vec![Vec::new(); step_ranges.len()];
    for op in trace.gpu.iter().filter(|o| o.kind == GpuKind::Kernel) {
        let at = launch.get(&op.correlation).copied().unwrap_or(op.ts);
        let i = step_ranges.partition_point(|s| s.0 <= at);
        let Some(i) = i.checked_sub(1).filter(|&i| at < step_ranges[i].1) else {
            continue;
        };
        let cat = opts.classifier.classify(op.kind, trace.gpu_name(op));
        let into = if cat == Category::Communication {
            &mut comm[i]
        } else {
            &mut compute[i]
        };
        into.push((op.ts, op.end()));
    }
    #[expect(clippy::cast_precision_loss, reason = "step counts are small")]
    let n = step_ranges.len() as f64;
    let mut out = NcclOverlap::default();
    for (c, k) in comm.into_iter().zip(compute) {
        let (c, k) = (merge(c), merge(k));
        out.nccl_us += c.iter().map(|(s, e)| e - s).sum::<f64>() / n;
        out.overlapped_us += intersection(&c, &k) / n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::nsys::Kernel;

    fn kernel(name: &str, stream: i64, start: i64, end: i64, corr: i64) -> Kernel {
        Kernel {
            short_name: name.into(),
            demangled_name: name.into(),
            start_ns: start,
            end_ns: end,
            device: 0,
            stream,
            correlation: Some(corr),
        }
    }

    fn span(name: &str, start: i64, end: i64, corr: Option<i64>) -> Span {
        Span {
            name: name.into(),
            start_ns: start,
            end_ns: end,
            bytes: None,
            stream: None,
            correlation: corr,
            pageable: false,
        }
    }

    /// Three `decode_step` ranges of 100 µs; in each a GEMM (40 µs) on stream 7 and an NCCL
    /// all-reduce (30 µs) on stream 9 of which 10 µs run beside the GEMM; one stream sync.
    fn export() -> Export {
        let mut e = Export::default();
        let mut corr = 1;
        for s in 0..3_i64 {
            let t0 = 1_000_000 + s * 100_000;
            e.nvtx.push(span("decode_step", t0, t0 + 100_000, None));
            e.runtime.push(span(
                "cudaLaunchKernel_v7000",
                t0 + 1_000,
                t0 + 3_000,
                Some(corr),
            ));
            e.kernels
                .push(kernel("ampere_bf16_gemm", 7, t0 + 5_000, t0 + 45_000, corr));
            corr += 1;
            e.runtime.push(span(
                "cudaLaunchKernel_v7000",
                t0 + 4_000,
                t0 + 4_500,
                Some(corr),
            ));
            e.kernels.push(kernel(
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                9,
                t0 + 35_000,
                t0 + 65_000,
                corr,
            ));
            corr += 1;
            e.runtime.push(span(
                "cudaStreamSynchronize_v3020",
                t0 + 66_000,
                t0 + 70_000,
                Some(corr),
            ));
            corr += 1;
        }
        e
    }

    #[test]
    fn nvtx_steps_get_the_trace_analysis_and_the_nccl_overlap() {
        let steps = analyse_export(&export(), &Options::default());
        let a = &steps.analysis;
        assert_eq!(a.step_source, "decode_step");
        assert_eq!((a.steps_found, a.steps_used), (3, 2));
        assert!((a.step.wall_us - 100.0).abs() < 1e-9, "{:?}", a.step);
        // GEMM 5..45 and NCCL 35..65 merge to 60 µs busy.
        assert!((a.step.gpu_busy_us - 60.0).abs() < 1e-9, "{:?}", a.step);
        assert!((a.step.launches - 2.0).abs() < 1e-9);
        assert!(
            (a.step.syncs - 1.0).abs() < 1e-9,
            "versioned sync call counted"
        );
        assert!((a.categories[&Category::Gemm] - 40.0).abs() < 1e-9);
        assert!((a.categories[&Category::Communication] - 30.0).abs() < 1e-9);
        assert!((steps.nccl.nccl_us - 30.0).abs() < 1e-9, "{:?}", steps.nccl);
        assert!((steps.nccl.overlapped_us - 10.0).abs() < 1e-9);
        let share = steps.nccl.overlap_share().expect("nccl");
        assert!((share - 1.0 / 3.0).abs() < 1e-9);
    }

    /// Five analysed `decode_step` ranges: two with a `cudaStreamSynchronize`, two others with a
    /// blocking `cudaMemcpy` of a device-to-host copy. The sync calls per step (0.8) say what
    /// they count: 0.4 stream synchronisations and 0.4 blocking copies, the copy itself counted
    /// as a device-to-host copy and never as a third kind of sync.
    #[test]
    fn host_sync_calls_per_step_name_what_they_count() {
        let mut e = Export::default();
        for s in 0..6_i64 {
            let t0 = 1_000_000 + s * 100_000;
            e.nvtx.push(span("decode_step", t0, t0 + 100_000, None));
            e.kernels.push(kernel(
                "ampere_bf16_gemm",
                7,
                t0 + 5_000,
                t0 + 45_000,
                100 + s,
            ));
            e.runtime.push(span(
                "cudaLaunchKernel_v7000",
                t0 + 1_000,
                t0 + 2_000,
                Some(100 + s),
            ));
            match s {
                1 | 3 => e.runtime.push(span(
                    "cudaStreamSynchronize_v3020",
                    t0 + 50_000,
                    t0 + 51_000,
                    None,
                )),
                2 | 4 => {
                    e.runtime.push(span(
                        "cudaMemcpy_v3020",
                        t0 + 50_000,
                        t0 + 52_000,
                        Some(200 + s),
                    ));
                    let mut copy = span(
                        "[CUDA memcpy Device-to-Host]",
                        t0 + 50_500,
                        t0 + 51_500,
                        Some(200 + s),
                    );
                    copy.stream = Some(7);
                    e.memory.push(copy);
                }
                _ => {}
            }
        }
        let a = analyse_export(&e, &Options::default()).analysis;
        assert_eq!((a.steps_found, a.steps_used), (6, 5));
        let s = &a.step;
        assert!((s.syncs - 0.8).abs() < 1e-9, "{s:?}");
        assert!((s.stream_syncs - 0.4).abs() < 1e-9, "{s:?}");
        assert!((s.blocking_copies - 0.4).abs() < 1e-9, "{s:?}");
        assert!(s.device_syncs.abs() + s.event_syncs.abs() < 1e-12, "{s:?}");
        assert!((s.dtoh_copies - 0.4).abs() < 1e-9, "{s:?}");
        assert_eq!(
            s.sync_kinds(),
            "0.4 stream synchronize, 0.4 blocking cudaMemcpy"
        );
        let said = crate::evidence::diagnose(&a, None);
        assert!(
            said.iter().all(|d| !d.starts_with("synchronisation")),
            "under one sync call per step: {said:?}"
        );
    }

    #[test]
    fn without_nvtx_the_export_is_one_step_and_copies_keep_their_meaning() {
        let mut e = export();
        e.nvtx.clear();
        let mut dtoh = span("[CUDA memcpy Device-to-Host]", 1_500_000, 1_501_000, None);
        dtoh.stream = Some(7);
        let mut htod = span("[CUDA memcpy Host-to-Device]", 1_502_000, 1_503_000, None);
        htod.pageable = true;
        htod.stream = Some(7);
        e.memory.extend([dtoh, htod]);
        let steps = analyse_export(&e, &Options::default());
        assert_eq!(steps.analysis.step_source, "whole trace");
        assert!((steps.analysis.step.pageable_htod_copies - 1.0).abs() < 1e-9);
        // 3 stream syncs; the device-to-host copy is counted as a copy, not a fourth sync.
        assert!((steps.analysis.step.syncs - 3.0).abs() < 1e-9);
        assert!((steps.analysis.step.dtoh_copies - 1.0).abs() < 1e-9);
        assert!((steps.nccl.nccl_us - 90.0).abs() < 1e-9);
        assert_eq!(runtime_name("cudaMalloc_v3020"), "cudaMalloc");
        assert_eq!(runtime_name("cuda_vx"), "cuda_vx");
    }
}
