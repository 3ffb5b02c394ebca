//! HolisticTraceAnalysis-equivalent breakdowns (pure): the temporal breakdown, the kernel-type
//! breakdown with memory kernels, the idle-time breakdown and the ops comparison of
//! `TraceDiff.compare_traces`, computed the way HTA 0.5.0 computes them so the numbers can be
//! checked against its golden outputs (`tests/fixtures/torch_traces_hta/`).
//!
//! What HTA does that this module reproduces, from its source (`hta/common/trace_parser.py`,
//! `trace.py`, `analyzers/breakdown_analysis.py`, `trace_diff.py` at v0.5.0):
//! - fractional timestamps are rounded: `ts = ceil(ts)`, `end = floor(ts + dur)`;
//! - an event is on the GPU when `args.stream` is an integer; a GPU kernel has a correlation;
//! - with two or more `ProfilerStep` names, host events starting at or after the last step's start
//!   are dropped and so is GPU work not launched by a kept host event (the last step is partial);
//! - kernel types: `^nccl.*Kernel` communication, `^(Memcpy|Memset|dma)` memory, names matching
//!   `.*Memcpy`, `Memset` or `.*Sync` neither (so syncs count as non-compute time), else compute;
//! - idle gaps on a stream are host wait when the next kernel's launch began after the previous
//!   kernel ended, kernel wait when shorter than `consecutive_kernel_delay` (30, compared with
//!   microsecond gaps, as HTA applies it), other otherwise.
//!
//! One difference: a kernel whose launch is not in the trace has, in HTA, the launch time of the
//! trace's first event (pandas joins on index 0); here it is never host wait. The samples have none.

use std::collections::{BTreeMap, HashMap};

use super::model::{CpuKind, GpuKind, NameId, Trace};

/// HTA's default `consecutive_kernel_delay`.
pub const CONSECUTIVE_KERNEL_DELAY: f64 = 30.0;

#[derive(Debug, Clone, Copy)]
struct Row {
    ts: f64,
    dur: f64,
    name: NameId,
    /// -1 on the host.
    stream: i64,
    correlation: i64,
    gpu_kind: Option<GpuKind>,
    iteration: Option<i64>,
}

impl Row {
    fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// A trace as HTA holds it after loading: rounded, with iterations, filtered.
pub struct Frame<'t> {
    trace: &'t Trace,
    rows: Vec<Row>,
    /// Each row's launch time (the correlated host event's start), where there is one.
    launch_ts: HashMap<i64, f64>,
}

/// HTA's `get_kernel_type`.
#[must_use]
pub fn kernel_type(name: &str) -> KernelType {
    if name.starts_with("nccl") && name.contains("Kernel") {
        KernelType::Communication
    } else if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        KernelType::Memory
    } else if name.contains("Memcpy") || name.contains("Sync") {
        KernelType::Other
    } else {
        KernelType::Computation
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelType {
    Computation,
    Communication,
    Memory,
    Other,
}

impl KernelType {
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            KernelType::Computation => "COMPUTATION",
            KernelType::Communication => "COMMUNICATION",
            KernelType::Memory => "MEMORY",
            KernelType::Other => "OTHER",
        }
    }
}

fn is_sync_name(name: &str) -> bool {
    name == "Event Sync" || name == "Context Sync"
}

impl<'t> Frame<'t> {
    /// Loads `trace` the way HTA's `TraceAnalysis` does (rounding, iterations, filter).
    #[must_use]
    pub fn new(trace: &'t Trace) -> Self {
        let round = trace.float_timestamps;
        let fix = |ts: f64, dur: f64| {
            if round {
                let start = ts.ceil();
                (start, (ts + dur).floor() - start)
            } else {
                (ts, dur)
            }
        };
        let mut rows = Vec::with_capacity(trace.gpu.len() + trace.cpu.len());
        for op in &trace.cpu {
            let (ts, dur) = fix(op.ts, op.dur);
            rows.push(Row {
                ts,
                dur,
                name: op.name,
                stream: -1,
                correlation: op.correlation,
                gpu_kind: None,
                iteration: None,
            });
        }
        for op in &trace.gpu {
            let (ts, dur) = fix(op.ts, op.dur);
            rows.push(Row {
                ts,
                dur,
                name: op.name,
                stream: op.stream,
                correlation: op.correlation,
                gpu_kind: Some(op.kind),
                iteration: None,
            });
        }
        let mut frame = Frame {
            trace,
            rows,
            launch_ts: HashMap::new(),
        };
        frame.assign_iterations();
        frame.filter_last_step();
        frame
    }

    fn name(&self, id: NameId) -> &str {
        self.trace.names.get(id)
    }

    /// HTA's GPU-kernel filter: a stream and a correlation, or a device-wide sync.
    fn is_gpu_kernel(&self, r: &Row) -> bool {
        (r.stream >= 0 && r.correlation >= 0) || is_sync_name(self.name(r.name))
    }

    fn assign_iterations(&mut self) {
        let mut steps: Vec<(f64, f64, i64)> = Vec::new();
        for r in &self.rows {
            let name = self.trace.names.get(r.name);
            if let Some(n) = step_number(name) {
                steps.push((r.ts, r.dur, n));
            }
        }
        let step_of = |ts: f64| {
            let mut it = None;
            for &(s, d, n) in &steps {
                if s <= ts && ts < s + d {
                    it = Some(n);
                }
            }
            it
        };
        for r in &mut self.rows {
            if r.stream < 0 {
                r.iteration = step_of(r.ts);
            }
        }
        // A GPU row takes the iteration of its host launch (the last host event with the same
        // correlation, as pandas' repeated assignment keeps the last).
        let mut host: HashMap<i64, (Option<i64>, f64)> = HashMap::new();
        for r in &self.rows {
            if r.correlation != -1 && !self.is_gpu_kernel(r) {
                host.insert(r.correlation, (r.iteration, r.ts));
            }
        }
        for r in &mut self.rows {
            if r.stream > 0 {
                r.iteration = host.get(&r.correlation).and_then(|h| h.0);
            }
        }
        self.launch_ts = host.into_iter().map(|(c, (_, ts))| (c, ts)).collect();
    }

    fn filter_last_step(&mut self) {
        let step_names = self
            .trace
            .names
            .iter()
            .filter(|(_, n)| n.contains("ProfilerStep"))
            .count();
        if step_names < 2 {
            return;
        }
        let trace = self.trace;
        let is_step = |r: &Row| trace.names.get(r.name).contains("ProfilerStep");
        let host: Vec<bool> = self.rows.iter().map(|r| !self.is_gpu_kernel(r)).collect();
        let last_start = self
            .rows
            .iter()
            .zip(&host)
            .filter(|(r, h)| **h && is_step(r))
            .map(|(r, _)| r.ts)
            .fold(f64::NEG_INFINITY, f64::max);
        let mut kept_corr: HashMap<i64, usize> = HashMap::new();
        for (r, h) in self.rows.iter().zip(&host) {
            if *h && r.ts < last_start {
                *kept_corr.entry(r.correlation).or_default() += 1;
            }
        }
        let mut out = Vec::with_capacity(self.rows.len());
        // GPU kernels first (an inner join: one copy per matching host event), then host events.
        for (r, h) in self.rows.iter().zip(&host) {
            if !*h {
                for _ in 0..kept_corr.get(&r.correlation).copied().unwrap_or(0) {
                    out.push(*r);
                }
            }
        }
        for (r, h) in self.rows.iter().zip(&host) {
            if *h && r.ts < last_start {
                out.push(*r);
            }
        }
        self.rows = out;
    }

    fn device_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.stream != -1)
    }

    /// HTA's temporal breakdown for this trace's rank.
    #[must_use]
    pub fn temporal(&self) -> Temporal {
        let all = merge(self.device_rows().map(|r| (r.ts, r.end())).collect());
        let (Some(first), Some(last)) = (all.first(), all.last()) else {
            return Temporal::default();
        };
        let kernel_time = last.1 - first.0;
        let idle = kernel_time - busy(&all);
        let compute = busy(&merge(
            self.device_rows()
                .filter(|r| kernel_type(self.name(r.name)) == KernelType::Computation)
                .map(|r| (r.ts, r.end()))
                .collect(),
        ));
        let non_compute = kernel_time - compute - idle;
        let pct = |x: f64| round_to(100.0 * x / kernel_time, 2);
        Temporal {
            idle_us: idle,
            compute_us: compute,
            non_compute_us: non_compute,
            kernel_time_us: kernel_time,
            idle_pct: pct(idle),
            compute_pct: pct(compute),
            non_compute_pct: pct(non_compute),
        }
    }

    /// HTA's kernel-type breakdown (`include_memory_kernels=True`), largest first.
    #[must_use]
    pub fn kernel_types(&self) -> Vec<KernelTypeRow> {
        const TYPES: [KernelType; 3] = [
            KernelType::Computation,
            KernelType::Communication,
            KernelType::Memory,
        ];
        let mut edges: Vec<(f64, i32)> = Vec::new();
        for (bit, ty) in TYPES.iter().enumerate() {
            let value = 1 << bit;
            let merged = merge(
                self.device_rows()
                    .filter(|r| kernel_type(self.name(r.name)) == *ty)
                    .map(|r| (r.ts, r.end()))
                    .collect(),
            );
            for (s, e) in merged {
                edges.push((s, value));
                edges.push((e, -value));
            }
        }
        edges.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut by_mask: BTreeMap<i32, f64> = BTreeMap::new();
        let mut running = 0;
        for w in edges.windows(2) {
            running += w[0].1;
            if running > 0 {
                *by_mask.entry(running).or_default() += w[1].0 - w[0].0;
            }
        }
        let mut rows: Vec<KernelTypeRow> = by_mask
            .into_iter()
            .map(|(mask, sum)| KernelTypeRow {
                kernel_type: TYPES
                    .iter()
                    .enumerate()
                    .filter(|(bit, _)| mask & (1 << bit) != 0)
                    .map(|(_, t)| t.label())
                    .collect::<Vec<_>>()
                    .join(" overlapping "),
                sum_us: sum,
                percentage: 0.0,
            })
            .collect();
        let total: f64 = rows.iter().map(|r| r.sum_us).sum();
        for r in &mut rows {
            r.percentage = round_to(100.0 * r.sum_us / total, 1);
        }
        rows.sort_by(|a, b| b.sum_us.total_cmp(&a.sum_us));
        rows
    }

    /// HTA's idle-time breakdown per stream, streams in order of first appearance.
    #[must_use]
    pub fn idle(&self, consecutive_kernel_delay: f64) -> Vec<IdleRow> {
        let kernels: Vec<&Row> = self
            .device_rows()
            .filter(|r| r.gpu_kind.is_some_and(GpuKind::is_work))
            .collect();
        let mut streams: Vec<i64> = Vec::new();
        for r in &kernels {
            if !streams.contains(&r.stream) {
                streams.push(r.stream);
            }
        }
        let mut out = Vec::new();
        for stream in streams {
            let mut on: Vec<&Row> = kernels
                .iter()
                .copied()
                .filter(|r| r.stream == stream)
                .collect();
            on.sort_by(|a, b| a.ts.total_cmp(&b.ts));
            let mut sums: BTreeMap<IdleCategory, f64> = BTreeMap::new();
            sums.insert(IdleCategory::Other, 0.0); // the first kernel's gap is "other" (NaN)
            for w in on.windows(2) {
                let prev_end = w[0].end();
                let gap = w[1].ts - prev_end;
                let launch = self.launch_ts.get(&w[1].correlation).copied();
                let cat = if launch.is_some_and(|l| l > prev_end) {
                    IdleCategory::HostWait
                } else if gap < consecutive_kernel_delay {
                    IdleCategory::KernelWait
                } else {
                    IdleCategory::Other
                };
                *sums.entry(cat).or_default() += gap;
            }
            let total: f64 = sums.values().sum();
            for (category, idle) in sums {
                out.push(IdleRow {
                    stream,
                    category,
                    idle_us: round_to(idle, 2),
                    ratio: (total != 0.0).then(|| round_to(idle / total, 2)),
                });
            }
        }
        out
    }

    /// The iterations (profiler step numbers) that kept events fall in, ascending (the last,
    /// partial step is filtered out when the trace holds several).
    #[must_use]
    pub fn iterations(&self) -> Vec<i64> {
        let mut its: Vec<i64> = self.rows.iter().filter_map(|r| r.iteration).collect();
        its.sort_unstable();
        its.dedup();
        its
    }

    /// Count and total duration per name over `iterations` (default: the first), as
    /// `TraceDiff.get_ops_summary` grouped by name or by HTA's short name.
    #[must_use]
    pub fn ops_summary(
        &self,
        iterations: Option<&[i64]>,
        short_names: bool,
    ) -> BTreeMap<String, (u64, f64)> {
        let first = self.iterations().first().copied();
        let wanted: Vec<i64> =
            iterations.map_or_else(|| first.into_iter().collect(), <[i64]>::to_vec);
        let mut out: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for r in &self.rows {
            if !r.iteration.is_some_and(|i| wanted.contains(&i)) {
                continue;
            }
            let name = self.name(r.name);
            let key = if short_names {
                shorten_name(name)
            } else {
                name.to_owned()
            };
            let e = out.entry(key).or_default();
            e.0 += 1;
            e.1 += r.dur;
        }
        out
    }
}

/// The step number of a `ProfilerStep#N` name.
fn step_number(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("ProfilerStep")?.trim_start();
    rest.strip_prefix('#')?.trim_start().parse().ok()
}

/// Merges intervals that overlap or touch (HTA's `merge_kernel_intervals`).
#[must_use]
pub fn merge(mut iv: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(iv.len());
    for (s, e) in iv {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Total length of merged intervals.
#[must_use]
pub fn busy(merged: &[(f64, f64)]) -> f64 {
    merged.iter().map(|(s, e)| e - s).sum()
}

fn round_to(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// HTA's `shorten_name`: drops template and argument lists and the return type.
#[must_use]
pub fn shorten_name(name: &str) -> String {
    if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        return name.to_owned();
    }
    if !name.contains('<') && !name.contains('(') {
        return name.to_owned();
    }
    let s = name.replace("->", "");
    let mut stack: Vec<char> = Vec::new();
    for c in s.chars() {
        match c {
            '>' | ')' => {
                let open = if c == '>' { '<' } else { '(' };
                while stack.last().is_some_and(|&t| t != open) {
                    stack.pop();
                }
                if stack.last() == Some(&open) {
                    stack.pop();
                }
            }
            _ => stack.push(c),
        }
    }
    let joined: String = stack.into_iter().collect();
    joined.rsplit(' ').next().unwrap_or("").to_owned()
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Temporal {
    pub idle_us: f64,
    pub compute_us: f64,
    pub non_compute_us: f64,
    /// HTA's `kernel_time`: from the first GPU operation's start to the last one's end.
    pub kernel_time_us: f64,
    pub idle_pct: f64,
    pub compute_pct: f64,
    pub non_compute_pct: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KernelTypeRow {
    pub kernel_type: String,
    pub sum_us: f64,
    pub percentage: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IdleCategory {
    HostWait,
    KernelWait,
    Other,
}

impl IdleCategory {
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            IdleCategory::HostWait => "host_wait",
            IdleCategory::KernelWait => "kernel_wait",
            IdleCategory::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct IdleRow {
    pub stream: i64,
    pub category: IdleCategory,
    pub idle_us: f64,
    /// Share of the stream's idle time; `None` where the stream has no idle time (HTA: NaN).
    pub ratio: Option<f64>,
}

/// Whether a host event kind can launch GPU work (for documentation of the filter).
#[must_use]
pub fn launches(kind: CpuKind) -> bool {
    matches!(kind, CpuKind::Runtime | CpuKind::Driver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_templates_and_arguments() {
        assert_eq!(
            shorten_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
            ),
            "at::native::vectorized_elementwise_kernel"
        );
        assert_eq!(
            shorten_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            "ncclKernel_AllReduce_RING_LL_Sum_float"
        );
        assert_eq!(
            shorten_name("Memcpy DtoD (Device -> Device)"),
            "Memcpy DtoD (Device -> Device)"
        );
        assert_eq!(shorten_name("aten::mm"), "aten::mm");
    }

    #[test]
    fn kernel_types_follow_hta() {
        assert_eq!(
            kernel_type("ncclKernel_AllReduce"),
            KernelType::Communication
        );
        assert_eq!(
            kernel_type("Memcpy HtoD (Pageable -> Device)"),
            KernelType::Memory
        );
        assert_eq!(kernel_type("Stream Sync"), KernelType::Other);
        assert_eq!(kernel_type("ampere_sgemm_32x32"), KernelType::Computation);
    }

    #[test]
    fn merging_joins_touching_intervals() {
        let m = merge(vec![(5.0, 6.0), (0.0, 2.0), (2.0, 3.0), (1.0, 2.5)]);
        assert_eq!(m, vec![(0.0, 3.0), (5.0, 6.0)]);
        assert!((busy(&m) - 4.0).abs() < 1e-12);
        assert!(merge(Vec::new()).is_empty());
    }
}
