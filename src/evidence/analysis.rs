//! Per-step analysis of a trace (pure): steps from `ProfilerStep#N` or a user annotation, GPU
//! work assigned to the step whose host code launched it, and per step the wall time, GPU busy
//! time (merged intervals), idle share and HTA's idle split, kernels and launches, time by
//! category, syncs, pageable copies, graph launches; host operators for CPU-only traces.
//! The result is a small serialisable summary: it is what the store keeps and baselines carry.

use std::collections::{BTreeMap, HashMap};

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::classify::{Category, Classifier};
use super::hta::{CONSECUTIVE_KERNEL_DELAY, merge};
use super::model::{CpuKind, CpuOp, GpuKind, GpuOp, Trace};

/// Version of the serialised [`Analysis`].
pub const ANALYSIS_SCHEMA: u32 = 1;

/// Kernels and operators kept per analysis (by time); the rest are summed into one row.
pub const KEEP_NAMES: usize = 200;

/// How steps are found and how many are dropped as warm-up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Host annotations taken as steps when the trace has no `ProfilerStep#N`.
    pub step_annotation: Regex,
    /// Steps dropped from the start as warm-up, when more than this many plus one remain.
    pub warmup_steps: usize,
    /// HTA's `consecutive_kernel_delay`, microseconds.
    pub kernel_wait_us: f64,
    pub classifier: Classifier,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            // Invariant: a constant pattern (exercised by every test that analyses a trace).
            step_annotation: Regex::new(DEFAULT_STEP_ANNOTATION)
                .expect("constant pattern compiles"),
            warmup_steps: 1,
            kernel_wait_us: CONSECUTIVE_KERNEL_DELAY,
            classifier: Classifier::default(),
        }
    }
}

/// The default step annotations: `decode_step`, `prefill_step`, `step`, alone or followed by
/// `#N`, `[...]` or `_...`.
pub const DEFAULT_STEP_ANNOTATION: &str = r"^(decode_step|prefill_step|step)(\b|#|\[|_)";

/// Per-step means over the steps analysed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub wall_us: f64,
    /// Union of kernel, copy and memset intervals.
    pub gpu_busy_us: f64,
    /// 1 - busy / window, where the window runs from the step's start to the later of its end and
    /// its last GPU work's end.
    pub gpu_idle_share: f64,
    pub kernels: f64,
    pub launches: f64,
    pub graph_launches: f64,
    /// Host-device synchronisations: device/stream/event synchronize calls, blocking copies and
    /// device-to-host copies.
    pub syncs: f64,
    pub pageable_htod_copies: f64,
    /// HTA's idle split summed over streams.
    pub host_wait_us: f64,
    pub kernel_wait_us: f64,
    pub other_idle_us: f64,
}

/// One kernel or operator name, per step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameStat {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    pub count: f64,
    pub total_us: f64,
}

impl NameStat {
    #[must_use]
    pub fn mean_us(&self) -> f64 {
        if self.count > 0.0 {
            self.total_us / self.count
        } else {
            0.0
        }
    }
}

/// What a trace says, per step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub schema_version: u32,
    /// `ProfilerStep`, the annotation's name, or "whole trace".
    pub step_source: String,
    pub steps_found: usize,
    pub steps_used: usize,
    pub has_gpu: bool,
    pub step: StepSummary,
    /// GPU time per step by category (sum of durations, not merged), microseconds.
    pub categories: BTreeMap<Category, f64>,
    /// Kernels, copies and memsets per step, most time first.
    pub kernels: Vec<NameStat>,
    /// Host operators (`cpu_op`) and annotations other than the steps, per step, most time first.
    pub operators: Vec<NameStat>,
    /// Each analysed step's wall time, microseconds.
    pub step_walls_us: Vec<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Step {
    ts: f64,
    end: f64,
}

fn is_launch(name: &str) -> bool {
    name.contains("LaunchKernel")
        || name.starts_with("cuLaunch")
        || name.contains("LaunchCooperative")
        || name.contains("ModuleLaunch")
        || name.contains("GraphLaunch")
}

fn is_sync_call(name: &str) -> bool {
    matches!(
        name,
        "cudaDeviceSynchronize"
            | "cudaStreamSynchronize"
            | "cudaEventSynchronize"
            | "cudaMemcpy"
            | "cuCtxSynchronize"
            | "cuStreamSynchronize"
            | "hipDeviceSynchronize"
            | "hipStreamSynchronize"
            | "hipEventSynchronize"
            | "hipMemcpy"
    )
}

fn find_steps(trace: &Trace, opts: &Options) -> (String, Vec<Step>) {
    let mut profiler: Vec<Step> = Vec::new();
    let mut annotated: BTreeMap<String, Vec<Step>> = BTreeMap::new();
    for op in &trace.cpu {
        if !matches!(
            op.kind,
            CpuKind::Annotation | CpuKind::Operator | CpuKind::Other
        ) {
            continue;
        }
        let name = trace.cpu_name(op);
        let step = Step {
            ts: op.ts,
            end: op.end(),
        };
        if name.starts_with("ProfilerStep#") {
            profiler.push(step);
        } else if opts.step_annotation.is_match(name) {
            let key = name
                .split(['#', '[', '('])
                .next()
                .unwrap_or(name)
                .trim()
                .to_owned();
            annotated.entry(key).or_default().push(step);
        }
    }
    let (source, mut steps) = if profiler.is_empty() {
        match annotated.into_iter().max_by_key(|(_, v)| v.len()) {
            Some((name, v)) => (name, v),
            None => (
                "whole trace".to_owned(),
                whole_trace(trace).into_iter().collect(),
            ),
        }
    } else {
        ("ProfilerStep".to_owned(), profiler)
    };
    steps.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    (source, steps)
}

fn whole_trace(trace: &Trace) -> Option<Step> {
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
    (ts.is_finite() && end >= ts).then_some(Step { ts, end })
}

fn step_index(steps: &[Step], t: f64) -> Option<usize> {
    let i = steps.partition_point(|s| s.ts <= t).checked_sub(1)?;
    (t < steps[i].end).then_some(i)
}

#[derive(Default, Clone, Copy)]
struct Stat {
    count: u32,
    total: f64,
    category: Option<Category>,
}

impl Stat {
    fn add(&mut self, other: Stat) {
        self.count += other.count;
        self.total += other.total;
        self.category = self.category.or(other.category);
    }
}

#[derive(Default)]
struct Acc {
    summary: StepSummary,
    categories: BTreeMap<Category, f64>,
    kernels: HashMap<u32, Stat>,
    operators: HashMap<u32, Stat>,
}

/// Analyses `trace`. Never fails: a trace without steps is analysed as one step, a trace without
/// GPU rows reports `has_gpu = false` and its host operators.
#[must_use]
pub fn analyse(trace: &Trace, opts: &Options) -> Analysis {
    let (step_source, all_steps) = find_steps(trace, opts);
    let steps_found = all_steps.len();
    let drop = if steps_found > opts.warmup_steps + 1 {
        opts.warmup_steps
    } else {
        0
    };
    let steps: Vec<Step> = all_steps[drop..].to_vec();
    let mut acc: Vec<Acc> = (0..steps.len()).map(|_| Acc::default()).collect();

    let mut launch_ts: HashMap<i64, f64> = HashMap::new();
    for op in &trace.cpu {
        let step = step_index(&steps, op.ts);
        match op.kind {
            CpuKind::Runtime | CpuKind::Driver => {
                if op.correlation >= 0 {
                    launch_ts.insert(op.correlation, op.ts);
                }
                if let Some(i) = step {
                    let name = trace.cpu_name(op);
                    let s = &mut acc[i].summary;
                    if is_launch(name) {
                        s.launches += 1.0;
                        if name.contains("GraphLaunch") {
                            s.graph_launches += 1.0;
                        }
                    }
                    if is_sync_call(name) {
                        s.syncs += 1.0;
                    }
                }
            }
            CpuKind::Operator | CpuKind::Annotation => {
                if let Some(i) = step
                    && !trace.cpu_name(op).starts_with("ProfilerStep#")
                {
                    acc[i].operators.entry(op.name).or_default().add(Stat {
                        count: 1,
                        total: op.dur,
                        category: None,
                    });
                }
            }
            _ => {}
        }
    }

    let mut per_step_ops: Vec<Vec<(&GpuOp, Option<f64>)>> = vec![Vec::new(); steps.len()];
    for op in &trace.gpu {
        if !op.kind.is_work() {
            continue;
        }
        let launch = launch_ts.get(&op.correlation).copied();
        if let Some(i) = step_index(&steps, launch.unwrap_or(op.ts)) {
            per_step_ops[i].push((op, launch));
        }
    }
    for (i, ops) in per_step_ops.iter().enumerate() {
        step_gpu(trace, opts, steps[i], ops, &mut acc[i]);
    }
    summarise(trace, step_source, steps_found, &steps, acc)
}

fn step_gpu(
    trace: &Trace,
    options: &Options,
    step: Step,
    ops: &[(&GpuOp, Option<f64>)],
    acc: &mut Acc,
) {
    let s = &mut acc.summary;
    let merged = merge(ops.iter().map(|(o, _)| (o.ts, o.end())).collect());
    let busy: f64 = merged.iter().map(|(start, end)| end - start).sum();
    let window_end = merged.last().map_or(step.end, |m| m.1.max(step.end));
    let window = window_end - step.ts;
    s.wall_us = step.end - step.ts;
    s.gpu_busy_us = busy;
    s.gpu_idle_share = if window > 0.0 {
        (1.0 - busy / window).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut by_stream: BTreeMap<i64, Vec<(&GpuOp, Option<f64>)>> = BTreeMap::new();
    for &(op, launch) in ops {
        let name = trace.gpu_name(op);
        match op.kind {
            GpuKind::Kernel => s.kernels += 1.0,
            GpuKind::Memcpy if name.contains("DtoH") => s.syncs += 1.0,
            GpuKind::Memcpy if name.contains("HtoD") && name.contains("Pageable") => {
                s.pageable_htod_copies += 1.0;
            }
            _ => {}
        }
        let cat = options.classifier.classify(op.kind, name);
        *acc.categories.entry(cat).or_default() += op.dur;
        acc.kernels.entry(op.name).or_default().add(Stat {
            count: 1,
            total: op.dur,
            category: Some(cat),
        });
        by_stream.entry(op.stream).or_default().push((op, launch));
    }
    for list in by_stream.values_mut() {
        list.sort_by(|a, b| a.0.ts.total_cmp(&b.0.ts));
        for w in list.windows(2) {
            let prev_end = w[0].0.end();
            let gap = (w[1].0.ts - prev_end).max(0.0);
            if w[1].1.is_some_and(|l| l > prev_end) {
                s.host_wait_us += gap;
            } else if gap < options.kernel_wait_us {
                s.kernel_wait_us += gap;
            } else {
                s.other_idle_us += gap;
            }
        }
    }
}

fn top(trace: &Trace, map: HashMap<u32, Stat>, n: f64) -> Vec<NameStat> {
    let mut rows: Vec<NameStat> = map
        .into_iter()
        .map(|(id, st)| NameStat {
            name: trace.names.get(id).to_owned(),
            category: st.category,
            count: f64::from(st.count) / n,
            total_us: st.total / n,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.name.cmp(&b.name))
    });
    if rows.len() > KEEP_NAMES {
        let rest = rows.split_off(KEEP_NAMES - 1);
        rows.push(NameStat {
            name: format!("({} others)", rest.len()),
            category: None,
            count: rest.iter().map(|r| r.count).sum(),
            total_us: rest.iter().map(|r| r.total_us).sum(),
        });
    }
    rows
}

fn summarise(
    trace: &Trace,
    step_source: String,
    steps_found: usize,
    steps: &[Step],
    acc: Vec<Acc>,
) -> Analysis {
    let n = steps.len().max(1) as f64;
    let mut step = StepSummary::default();
    let mut categories: BTreeMap<Category, f64> = BTreeMap::new();
    let mut kernels: HashMap<u32, Stat> = HashMap::new();
    let mut operators: HashMap<u32, Stat> = HashMap::new();
    for a in acc {
        let s = a.summary;
        step.wall_us += s.wall_us / n;
        step.gpu_busy_us += s.gpu_busy_us / n;
        step.gpu_idle_share += s.gpu_idle_share / n;
        step.kernels += s.kernels / n;
        step.launches += s.launches / n;
        step.graph_launches += s.graph_launches / n;
        step.syncs += s.syncs / n;
        step.pageable_htod_copies += s.pageable_htod_copies / n;
        step.host_wait_us += s.host_wait_us / n;
        step.kernel_wait_us += s.kernel_wait_us / n;
        step.other_idle_us += s.other_idle_us / n;
        for (c, t) in a.categories {
            *categories.entry(c).or_default() += t / n;
        }
        for (k, st) in a.kernels {
            kernels.entry(k).or_default().add(st);
        }
        for (k, st) in a.operators {
            operators.entry(k).or_default().add(st);
        }
    }
    Analysis {
        schema_version: ANALYSIS_SCHEMA,
        step_source,
        steps_found,
        steps_used: steps.len(),
        has_gpu: trace.gpu.iter().any(|o| o.kind.is_work()),
        step,
        categories,
        kernels: top(trace, kernels, n),
        operators: top(trace, operators, n),
        step_walls_us: steps.iter().map(|s| s.end - s.ts).collect(),
    }
}
