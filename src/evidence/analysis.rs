//! Per-step analysis of a trace (pure): steps from `ProfilerStep#N` or a user annotation, GPU
//! work assigned to the step whose host code launched it, and per step the wall time, GPU busy
//! time (merged intervals), idle share and HTA's idle split, kernels and launches, time by
//! category, syncs, pageable copies, graph launches; host operators for CPU-only traces.
//! The result is a small serialisable summary: it is what the store keeps and baselines carry.

use std::collections::BTreeMap;

// Keys are names' ids, correlations, streams and threads from the trace: a fast hash, no
// hashing-flood concern (a hostile trace only slows its own analysis).
use rustc_hash::FxHashMap as HashMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::classify::{Category, Classifier};
use super::hta::{CONSECUTIVE_KERNEL_DELAY, merge};
use super::kineto::Record;
use super::model::{CpuKind, CpuOp, GpuKind, GpuOp, NameId, Names, Trace};

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
    /// 1 - busy / wall, busy being the time within the step's window during which any GPU work
    /// runs, wherever it was launched.
    pub gpu_idle_share: f64,
    pub kernels: f64,
    pub launches: f64,
    pub graph_launches: f64,
    /// Host synchronisation calls: device, stream and event synchronize and blocking copies
    /// (`cudaMemcpy`); a `.item()` is one (its copy is counted in `dtoh_copies`, not again).
    /// The four kinds below add up to it.
    pub syncs: f64,
    /// `cudaDeviceSynchronize`, `cuCtxSynchronize`, `hipDeviceSynchronize` calls.
    #[serde(default)]
    pub device_syncs: f64,
    /// `cudaStreamSynchronize`, `cuStreamSynchronize`, `hipStreamSynchronize` calls.
    #[serde(default)]
    pub stream_syncs: f64,
    /// `cudaEventSynchronize`, `hipEventSynchronize` calls.
    #[serde(default)]
    pub event_syncs: f64,
    /// Blocking `cudaMemcpy`/`hipMemcpy` calls (the host waits for the copy).
    #[serde(default)]
    pub blocking_copies: f64,
    /// Device-to-host copies (each a sync point only when the host waits on it: see `syncs`).
    #[serde(default)]
    pub dtoh_copies: f64,
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
    /// Host operators only: the time in the operator's own code, its duration less that of
    /// the operators and annotations directly inside it on the same thread (see
    /// [`SelfTimes`]). Absent for kernels and in analyses stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_us: Option<f64>,
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
    /// Host operators (`cpu_op`) and annotations other than the steps, per step, most self
    /// time first.
    pub operators: Vec<NameStat>,
    /// Each analysed step's wall time, microseconds.
    pub step_walls_us: Vec<f64>,
}

impl Analysis {
    /// The self time of every host operator per step, summed (the operator table's rows add up
    /// to it); `None` for an analysis stored before self time was measured.
    #[must_use]
    pub fn operators_self_us(&self) -> Option<f64> {
        self.operators.iter().map(|o| o.self_us).sum()
    }
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

/// A device-to-host copy, as torch.profiler (`Memcpy DtoH`) and Nsight Systems
/// (`[CUDA memcpy Device-to-Host]`) name it.
fn is_dtoh(name: &str) -> bool {
    name.contains("DtoH") || name.contains("Device-to-Host")
}

/// Which kind of host sync call `name` is, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SyncCall {
    Device,
    Stream,
    Event,
    BlockingCopy,
}

fn sync_call(name: &str) -> Option<SyncCall> {
    Some(match name {
        "cudaDeviceSynchronize" | "cuCtxSynchronize" | "hipDeviceSynchronize" => SyncCall::Device,
        "cudaStreamSynchronize" | "cuStreamSynchronize" | "hipStreamSynchronize" => {
            SyncCall::Stream
        }
        "cudaEventSynchronize" | "hipEventSynchronize" => SyncCall::Event,
        "cudaMemcpy" | "hipMemcpy" => SyncCall::BlockingCopy,
        _ => return None,
    })
}

impl StepSummary {
    /// What `syncs` counts, per kind, in words: `0.4 stream synchronize, 0.4 blocking
    /// cudaMemcpy` (the kinds present, in this order; "none" without a sync call). An
    /// analysis stored before the kinds were counted says only the total.
    #[must_use]
    pub fn sync_kinds(&self) -> String {
        let parts: Vec<String> = [
            (self.device_syncs, "device synchronize"),
            (self.stream_syncs, "stream synchronize"),
            (self.event_syncs, "event synchronize"),
            (self.blocking_copies, "blocking cudaMemcpy"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0.0)
        .map(|(n, what)| format!("{n:.1} {what}"))
        .collect();
        if !parts.is_empty() {
            parts.join(", ")
        } else if self.syncs > 0.0 {
            "kinds not recorded in this stored analysis".to_owned()
        } else {
            "none".to_owned()
        }
    }
}

/// Pass 1 of an analysis: finds the step spans (and whether the trace has GPU work) from every
/// record, keeping only the candidate spans: memory grows with the number of steps, not events.
#[derive(Debug)]
pub struct StepFinder {
    profiler: Vec<Step>,
    /// Each step annotation's name (before `#`, `[` or `(`) and its spans, in first-seen order.
    annotated: Vec<(String, Vec<Step>)>,
    /// What each interned name is, decided once per name (the regex runs once per name, not
    /// once per event): [`UNSEEN`], [`NOT_A_STEP`], [`PROFILER_STEP`] or an index into
    /// `annotated`.
    kinds: Vec<u32>,
    first_ts: f64,
    last_end: f64,
    has_gpu: bool,
}

/// [`Classifier::classify`] of the GPU operation `op` (named `name`), remembered per name in
/// `known` (indexed by [`NameId`]): copies and memsets are sorted by kind, everything else by
/// its name alone, so the classifier's regexes run once per distinct kernel, not per launch.
fn category(
    known: &mut Vec<Option<Category>>,
    classifier: &Classifier,
    op: &GpuOp,
    name: &str,
) -> Category {
    if matches!(op.kind, GpuKind::Memcpy | GpuKind::Memset) {
        return classifier.classify(op.kind, name);
    }
    let at = op.name as usize;
    if at >= known.len() {
        known.resize(at + 1, None);
    }
    *known[at].get_or_insert_with(|| classifier.classify(op.kind, name))
}

const UNSEEN: u32 = u32::MAX;
const NOT_A_STEP: u32 = u32::MAX - 1;
const PROFILER_STEP: u32 = u32::MAX - 2;

impl Default for StepFinder {
    fn default() -> Self {
        StepFinder {
            profiler: Vec::new(),
            annotated: Vec::new(),
            kinds: Vec::new(),
            first_ts: f64::INFINITY,
            last_end: f64::NEG_INFINITY,
            has_gpu: false,
        }
    }
}

impl StepFinder {
    /// Takes one record, in any order.
    pub fn record(&mut self, names: &Names, record: &Record, opts: &Options) {
        let (ts, end) = match record {
            Record::Gpu(op) => {
                self.has_gpu |= op.kind.is_work();
                (op.ts, op.end())
            }
            Record::Cpu(op) => {
                if matches!(
                    op.kind,
                    CpuKind::Annotation | CpuKind::Operator | CpuKind::Other
                ) {
                    self.candidate(names, op, opts);
                }
                (op.ts, op.end())
            }
        };
        self.first_ts = self.first_ts.min(ts);
        self.last_end = self.last_end.max(end);
    }

    fn candidate(&mut self, names: &Names, op: &CpuOp, opts: &Options) {
        let step = Step {
            ts: op.ts,
            end: op.end(),
        };
        match self.kind_of(names, op.name, opts) {
            NOT_A_STEP => {}
            PROFILER_STEP => self.profiler.push(step),
            at => self.annotated[at as usize].1.push(step),
        }
    }

    /// What the name `id` is as a step, decided on its first event and kept.
    fn kind_of(&mut self, names: &Names, id: NameId, opts: &Options) -> u32 {
        let at = id as usize;
        if let Some(&kind) = self.kinds.get(at)
            && kind != UNSEEN
        {
            return kind;
        }
        let name = names.get(id);
        let kind = if name.starts_with("ProfilerStep#") {
            PROFILER_STEP
        } else if opts.step_annotation.is_match(name) {
            let key = name.split(['#', '[', '(']).next().unwrap_or(name).trim();
            let at = if let Some(i) = self.annotated.iter().position(|(k, _)| k == key) {
                i
            } else {
                self.annotated.push((key.to_owned(), Vec::new()));
                self.annotated.len() - 1
            };
            u32::try_from(at).unwrap_or(NOT_A_STEP)
        } else {
            NOT_A_STEP
        };
        if self.kinds.len() <= at {
            self.kinds.resize(at + 1, UNSEEN);
        }
        self.kinds[at] = kind;
        kind
    }

    /// The steps: `ProfilerStep#N` when present, else the annotation seen most often, else the
    /// whole trace as one step; the first `warmup_steps` dropped when more remain.
    #[must_use]
    pub fn plan(self, opts: &Options) -> Plan {
        let (step_source, mut steps) = if self.profiler.is_empty() {
            // In name order, as the most frequent annotation's ties were always broken.
            let annotated: BTreeMap<String, Vec<Step>> = self.annotated.into_iter().collect();
            if let Some((name, v)) = annotated.into_iter().max_by_key(|(_, v)| v.len()) {
                (name, v)
            } else {
                let (ts, end) = (self.first_ts, self.last_end);
                let whole = (ts.is_finite() && end >= ts).then_some(Step { ts, end });
                ("whole trace".to_owned(), whole.into_iter().collect())
            }
        } else {
            ("ProfilerStep".to_owned(), self.profiler)
        };
        steps.sort_by(|a, b| a.ts.total_cmp(&b.ts));
        let steps_found = steps.len();
        let drop = if steps_found > opts.warmup_steps + 1 {
            opts.warmup_steps
        } else {
            0
        };
        steps.drain(..drop);
        Plan {
            step_source,
            steps_found,
            steps,
            has_gpu: self.has_gpu,
        }
    }
}

/// The steps an analysis uses (after warm-up), from pass 1.
#[derive(Debug, Clone)]
pub struct Plan {
    step_source: String,
    steps_found: usize,
    steps: Vec<Step>,
    has_gpu: bool,
}

impl Plan {
    /// Steps analysed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The step whose span holds `t`.
    fn step_of(&self, t: f64) -> Option<usize> {
        let i = self.slot_of(t).checked_sub(1)?;
        (t < self.steps[i].end).then_some(i)
    }

    /// How many steps start at or before `t`: slot `k` runs from step `k - 1`'s start to step
    /// `k`'s (slot 0 is before the first step).
    fn slot_of(&self, t: f64) -> usize {
        self.steps.partition_point(|s| s.ts <= t)
    }
}

/// How many steps pass 2 keeps open at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// At most this many steps' GPU work and launch records are held: a step is analysed and
    /// dropped as soon as GPU work of a step this many places later arrives. Exact when the file
    /// delivers each step's GPU work within the window (as torch.profiler writes, in time order);
    /// any record that arrives later makes the pass report [`Overflow`] instead of a number.
    Steps(usize),
    /// Every GPU record and launch is held to the end (the in-memory analysis; never overflows).
    All,
}

/// A windowed pass met a record its window had already dropped; the numbers would be wrong, so
/// the caller reruns with a wider window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow(pub &'static str);

/// What a pass 2 held at most, to check the memory bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retained {
    /// Most GPU-work and launch records held at once (each about 80 bytes).
    pub high_water: usize,
    /// Records fed to the pass.
    pub records: u64,
}

#[derive(Debug, Clone, Copy)]
struct Launch {
    ts: f64,
    slot: usize,
    /// Whether a GPU record has taken this launch's time (a later record with the same
    /// correlation would then change an answer already given).
    used: bool,
}

#[derive(Debug, Clone, Copy)]
struct GpuRec {
    op: GpuOp,
    /// Position among the trace's GPU work, so a step's records are analysed in file order
    /// whatever order they were resolved in.
    seq: u64,
    launch: Option<f64>,
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

/// Pass 2 of an analysis: takes every record in file order, counts host events into their step
/// at once, and holds GPU work only until its step is complete (see [`Window`]). Per-name
/// aggregates grow with the number of distinct names; per-step scalars with the number of steps.
pub struct Analyser<'o> {
    opts: &'o Options,
    plan: Plan,
    window: Window,
    summaries: Vec<StepSummary>,
    operators: HashMap<NameId, Stat>,
    kernels: HashMap<NameId, Stat>,
    categories: BTreeMap<Category, f64>,
    launches: HashMap<i64, Launch>,
    /// GPU work of steps not yet analysed, by step.
    open: BTreeMap<usize, Vec<GpuRec>>,
    /// GPU work whose launch has not been seen yet, by correlation (`Window::All`: all of it).
    pending: HashMap<i64, Vec<GpuRec>>,
    /// Steps `0..finalized` are analysed and their records dropped.
    finalized: usize,
    /// Lowest and highest correlation of the launch records dropped so far.
    dropped: Option<(i64, i64)>,
    seq: u64,
    held: usize,
    retained: Retained,
    overflow: Option<Overflow>,
    /// Merged GPU busy intervals that reach past the start of the next step to analyse: work
    /// of steps analysed already, or launched before the analysed steps. A step's window counts
    /// whatever GPU work runs in it, wherever that work was launched (a graphed decode step's
    /// window starts while the GPU still runs the previous step's graph).
    carry: Vec<(f64, f64)>,
    /// Where the last GPU work on each stream ended (work analysed already, or launched before
    /// the analysed steps): a step's first gap on a stream starts there, as HTA's idle split
    /// sees it, so the host wait between two steps is counted in the later one.
    stream_end: HashMap<i64, f64>,
    /// Host operators' self time.
    self_times: SelfTimes,
    /// Each GPU operation name's category, decided once per name (the classifier's regexes run
    /// once per distinct kernel, not once per kernel launch); indexed by [`NameId`].
    name_categories: Vec<Option<Category>>,
}

impl<'o> Analyser<'o> {
    #[must_use]
    pub fn new(opts: &'o Options, plan: Plan, window: Window) -> Self {
        let n = plan.len();
        Analyser {
            opts,
            plan,
            window,
            summaries: vec![StepSummary::default(); n],
            operators: HashMap::default(),
            kernels: HashMap::default(),
            categories: BTreeMap::new(),
            launches: HashMap::default(),
            open: BTreeMap::new(),
            pending: HashMap::default(),
            finalized: 0,
            dropped: None,
            seq: 0,
            held: 0,
            retained: Retained::default(),
            overflow: None,
            carry: Vec::new(),
            stream_end: HashMap::default(),
            self_times: SelfTimes::new(window),
            name_categories: Vec::new(),
        }
    }

    /// Takes the next record in file order.
    pub fn record(&mut self, names: &Names, record: &Record) {
        self.retained.records += 1;
        if self.overflow.is_some() {
            return;
        }
        match record {
            Record::Cpu(op) => self.cpu(names, op),
            Record::Gpu(op) => self.gpu(names, op),
        }
        self.retained.high_water = self.retained.high_water.max(self.held);
    }

    fn overflow(&mut self, why: &'static str) {
        self.overflow.get_or_insert(Overflow(why));
    }

    fn cpu(&mut self, names: &Names, op: &CpuOp) {
        let step = self.plan.step_of(op.ts);
        match op.kind {
            CpuKind::Runtime | CpuKind::Driver => {
                if op.correlation >= 0 {
                    self.launch(names, op.correlation, op.ts);
                }
                if let Some(i) = step {
                    let name = names.get(op.name);
                    let s = &mut self.summaries[i];
                    if is_launch(name) {
                        s.launches += 1.0;
                        if name.contains("GraphLaunch") {
                            s.graph_launches += 1.0;
                        }
                    }
                    if let Some(kind) = sync_call(name) {
                        s.syncs += 1.0;
                        *match kind {
                            SyncCall::Device => &mut s.device_syncs,
                            SyncCall::Stream => &mut s.stream_syncs,
                            SyncCall::Event => &mut s.event_syncs,
                            SyncCall::BlockingCopy => &mut s.blocking_copies,
                        } += 1.0;
                    }
                }
            }
            CpuKind::Operator | CpuKind::Annotation => {
                let counted = step.is_some() && !names.get(op.name).starts_with("ProfilerStep#");
                if counted {
                    self.operators.entry(op.name).or_default().add(Stat {
                        count: 1,
                        total: op.dur,
                        category: None,
                    });
                }
                if let Err(o) = self.self_times.record(op, counted) {
                    self.overflow(o.0);
                }
            }
            _ => {}
        }
    }

    /// A host record with a correlation: the launch time of the GPU work it links to (the last
    /// such record in the file wins, as in the in-memory analysis).
    fn launch(&mut self, names: &Names, correlation: i64, ts: f64) {
        let slot = self.plan.slot_of(ts);
        if self.window != Window::All {
            if self.finalized > 0 && slot <= self.finalized {
                return self.overflow("a launch arrived after its step was analysed");
            }
            if self
                .dropped
                .is_some_and(|(lo, hi)| (lo..=hi).contains(&correlation))
            {
                return self.overflow("a correlation id arrived out of order");
            }
        }
        let new = Launch {
            ts,
            slot,
            used: false,
        };
        match self.launches.insert(correlation, new) {
            Some(old) if old.used => {
                return self.overflow("a second launch record for a correlation already used");
            }
            Some(_) => {}
            None => self.held += 1,
        }
        if self.window != Window::All
            && let Some(waiting) = self.pending.remove(&correlation)
        {
            self.held -= waiting.len();
            if let Some(l) = self.launches.get_mut(&correlation) {
                l.used = true;
            }
            for mut rec in waiting {
                rec.launch = Some(ts);
                self.place(names, rec, ts);
            }
        }
    }

    fn gpu(&mut self, names: &Names, op: &GpuOp) {
        if !op.kind.is_work() {
            return;
        }
        let rec = GpuRec {
            op: *op,
            seq: self.seq,
            launch: None,
        };
        self.seq += 1;
        if self.window == Window::All {
            self.pending.entry(op.correlation).or_default().push(rec);
            self.held += 1;
            return;
        }
        if op.correlation < 0 {
            return self.place(names, rec, op.ts);
        }
        if let Some(l) = self.launches.get_mut(&op.correlation) {
            l.used = true;
            let ts = l.ts;
            self.place(
                names,
                GpuRec {
                    launch: Some(ts),
                    ..rec
                },
                ts,
            );
        } else {
            // Its launch may come later in the file (torch.profiler often writes the kernel
            // first), or never (then its own start places it, at the end).
            self.pending.entry(op.correlation).or_default().push(rec);
            self.held += 1;
        }
    }

    /// Puts GPU work into the step whose span holds `t` (its launch's time, else its own).
    fn place(&mut self, names: &Names, rec: GpuRec, t: f64) {
        let Some(i) = self.plan.step_of(t) else {
            return self.outside(&rec, t); // launched outside the analysed steps
        };
        if i < self.finalized {
            return self.overflow("GPU work arrived after its step was analysed");
        }
        self.open.entry(i).or_default().push(rec);
        self.held += 1;
        if let Window::Steps(lag) = self.window
            && i + 1 > self.finalized + lag
        {
            self.finalize_until(names, i + 1 - lag);
        }
    }

    /// GPU work launched outside the analysed steps (before the first, or between two) is no
    /// step's work, but the GPU is busy with it in any later step window it reaches.
    fn outside(&mut self, rec: &GpuRec, t: f64) {
        let next = self.plan.slot_of(t);
        let Some(step) = self.plan.steps.get(next) else {
            return; // after the last analysed step
        };
        if next < self.finalized {
            if rec.op.end() > step.ts {
                self.overflow("GPU work arrived after the step it reaches was analysed");
            }
            return;
        }
        if rec.op.end() > step.ts {
            self.carry.push((rec.op.ts, rec.op.end()));
        }
        let end = self.stream_end.entry(rec.op.stream).or_insert(rec.op.end());
        *end = end.max(rec.op.end());
    }

    /// Analyses steps `finalized..k` and drops their records and launches.
    fn finalize_until(&mut self, names: &Names, k: usize) {
        for i in self.finalized..k {
            let mut ops = self.open.remove(&i).unwrap_or_default();
            self.held -= ops.len();
            ops.sort_by_key(|r| r.seq);
            self.step_gpu(names, i, &ops);
        }
        self.finalized = self.finalized.max(k);
        let before = self.launches.len();
        let mut dropped = self.dropped;
        self.launches.retain(|&corr, l| {
            let keep = l.slot > k;
            if !keep {
                dropped =
                    Some(dropped.map_or((corr, corr), |(lo, hi)| (lo.min(corr), hi.max(corr))));
            }
            keep
        });
        self.dropped = dropped;
        self.held -= before - self.launches.len();
    }

    fn step_gpu(&mut self, names: &Names, i: usize, ops: &[GpuRec]) {
        let step = self.plan.steps[i];
        let options = self.opts;
        // The step's window holds its own work and whatever earlier work still runs in it.
        let mut intervals = std::mem::take(&mut self.carry);
        intervals.extend(ops.iter().map(|r| (r.op.ts, r.op.end())));
        let merged = merge(intervals);
        let busy: f64 = merged
            .iter()
            .map(|&(start, end)| (end.min(step.end) - start.max(step.ts)).max(0.0))
            .sum();
        if let Some(next) = self.plan.steps.get(i + 1) {
            self.carry = merged.into_iter().filter(|iv| iv.1 > next.ts).collect();
        }
        let s = &mut self.summaries[i];
        let wall = step.end - step.ts;
        s.wall_us = wall;
        s.gpu_busy_us = busy;
        s.gpu_idle_share = if wall > 0.0 {
            (1.0 - busy / wall).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let mut categories: BTreeMap<Category, f64> = BTreeMap::new();
        let mut kernels: HashMap<NameId, Stat> = HashMap::default();
        let mut by_stream: BTreeMap<i64, Vec<&GpuRec>> = BTreeMap::new();
        for rec in ops {
            let op = &rec.op;
            let name = names.get(op.name);
            match op.kind {
                GpuKind::Kernel => s.kernels += 1.0,
                GpuKind::Memcpy if is_dtoh(name) => s.dtoh_copies += 1.0,
                GpuKind::Memcpy if name.contains("HtoD") && name.contains("Pageable") => {
                    s.pageable_htod_copies += 1.0;
                }
                _ => {}
            }
            let cat = category(&mut self.name_categories, &options.classifier, op, name);
            *categories.entry(cat).or_default() += op.dur;
            kernels.entry(op.name).or_default().add(Stat {
                count: 1,
                total: op.dur,
                category: Some(cat),
            });
            by_stream.entry(op.stream).or_default().push(rec);
        }
        // HTA's idle split per stream: each gap before a kernel, the first one from where the
        // stream's previous work ended (in an earlier step: the wait between two steps).
        for (stream, list) in &mut by_stream {
            list.sort_by(|a, b| a.op.ts.total_cmp(&b.op.ts));
            let mut prev_end = self.stream_end.get(stream).copied();
            for rec in list.iter() {
                if let Some(prev_end) = prev_end {
                    let gap = (rec.op.ts - prev_end).max(0.0);
                    if rec.launch.is_some_and(|l| l > prev_end) {
                        s.host_wait_us += gap;
                    } else if gap < options.kernel_wait_us {
                        s.kernel_wait_us += gap;
                    } else {
                        s.other_idle_us += gap;
                    }
                }
                prev_end = Some(rec.op.end());
            }
            if let Some(end) = prev_end {
                self.stream_end.insert(*stream, end);
            }
        }
        let n = self.plan.len().max(1) as f64;
        for (c, t) in categories {
            *self.categories.entry(c).or_default() += t / n;
        }
        for (k, st) in kernels {
            self.kernels.entry(k).or_default().add(st);
        }
    }

    /// Ends the pass: places GPU work whose launch never came by its own start, analyses the
    /// steps still open and summarises. `Err` when the window was too narrow for this file.
    pub fn finish(mut self, names: &Names) -> Result<(Analysis, Retained), Overflow> {
        let pending: Vec<(i64, Vec<GpuRec>)> = self.pending.drain().collect();
        for (correlation, recs) in pending {
            self.held -= recs.len();
            let launch = match self.window {
                Window::All => self.launches.get(&correlation).map(|l| l.ts),
                Window::Steps(_) => {
                    if self
                        .dropped
                        .is_some_and(|(lo, hi)| (lo..=hi).contains(&correlation))
                    {
                        self.overflow("GPU work arrived after its launch was dropped");
                    }
                    None
                }
            };
            for rec in recs {
                let t = launch.unwrap_or(rec.op.ts);
                self.place(names, GpuRec { launch, ..rec }, t);
            }
        }
        if let Some(o) = self.overflow {
            return Err(o);
        }
        self.finalize_until(names, self.plan.len());
        let retained = self.retained;
        Ok((self.summarise(names), retained))
    }

    fn summarise(mut self, names: &Names) -> Analysis {
        let n = self.plan.len().max(1) as f64;
        let own = std::mem::take(&mut self.self_times).finish();
        let mut step = StepSummary::default();
        for s in &self.summaries {
            step.wall_us += s.wall_us / n;
            step.gpu_busy_us += s.gpu_busy_us / n;
            step.gpu_idle_share += s.gpu_idle_share / n;
            step.kernels += s.kernels / n;
            step.launches += s.launches / n;
            step.graph_launches += s.graph_launches / n;
            step.syncs += s.syncs / n;
            step.device_syncs += s.device_syncs / n;
            step.stream_syncs += s.stream_syncs / n;
            step.event_syncs += s.event_syncs / n;
            step.blocking_copies += s.blocking_copies / n;
            step.dtoh_copies += s.dtoh_copies / n;
            step.pageable_htod_copies += s.pageable_htod_copies / n;
            step.host_wait_us += s.host_wait_us / n;
            step.kernel_wait_us += s.kernel_wait_us / n;
            step.other_idle_us += s.other_idle_us / n;
        }
        Analysis {
            schema_version: ANALYSIS_SCHEMA,
            step_source: self.plan.step_source,
            steps_found: self.plan.steps_found,
            steps_used: self.plan.steps.len(),
            has_gpu: self.plan.has_gpu,
            step,
            categories: self.categories,
            kernels: top(names, self.kernels, None, n),
            operators: top(names, self.operators, Some(&own), n),
            step_walls_us: self.plan.steps.iter().map(|s| s.end - s.ts).collect(),
        }
    }
}

/// Analyses `trace` in memory. Never fails: a trace without steps is analysed as one step, a
/// trace without GPU rows reports `has_gpu = false` and its host operators. A trace on disk is
/// better analysed with `source::analyse_file`, which streams it in bounded memory.
#[must_use]
pub fn analyse(trace: &Trace, opts: &Options) -> Analysis {
    let records = || {
        trace
            .cpu
            .iter()
            .map(|op| Record::Cpu(*op))
            .chain(trace.gpu.iter().map(|op| Record::Gpu(*op)))
    };
    let mut finder = StepFinder::default();
    for r in records() {
        finder.record(&trace.names, &r, opts);
    }
    let mut analyser = Analyser::new(opts, finder.plan(opts), Window::All);
    for r in records() {
        analyser.record(&trace.names, &r);
    }
    // Invariant: `Window::All` holds every record to the end, so nothing overflows.
    analyser
        .finish(&trace.names)
        .expect("an unwindowed pass never overflows")
        .0
}

/// The rows of a name table, per step: most time first, or most self time first when `own`
/// holds the self times (host operators); past [`KEEP_NAMES`] the rest summed into one row.
fn top(
    names: &Names,
    map: HashMap<NameId, Stat>,
    own: Option<&HashMap<NameId, f64>>,
    n: f64,
) -> Vec<NameStat> {
    let mut rows: Vec<NameStat> = map
        .into_iter()
        .map(|(id, st)| NameStat {
            name: names.get(id).to_owned(),
            category: st.category,
            count: f64::from(st.count) / n,
            total_us: st.total / n,
            self_us: own.map(|own| own.get(&id).copied().unwrap_or(0.0) / n),
        })
        .collect();
    let key = |r: &NameStat| r.self_us.unwrap_or(r.total_us);
    rows.sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
    if rows.len() > KEEP_NAMES {
        let rest = rows.split_off(KEEP_NAMES - 1);
        rows.push(NameStat {
            name: format!("({} others)", rest.len()),
            category: None,
            count: rest.iter().map(|r| r.count).sum(),
            total_us: rest.iter().map(|r| r.total_us).sum(),
            self_us: own.map(|_| rest.iter().filter_map(|r| r.self_us).sum()),
        });
    }
    rows
}

/// An operator or annotation open on a host thread, collecting the time of those inside it.
#[derive(Debug, Clone, Copy)]
struct HostNode {
    ts: f64,
    dur: f64,
    name: NameId,
    /// Whether its self time goes into the operator table (an operator or annotation in an
    /// analysed step, not the `ProfilerStep` itself).
    counted: bool,
    /// Time of the nodes directly inside it, each clipped to it.
    children: f64,
}

impl HostNode {
    fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// Self time of host operators: an operator's duration less that of the operators and
/// annotations directly inside it on the same thread (`torch.profiler`'s "Self CPU" over the
/// same tree, except that runtime calls such as `cudaLaunchKernel` count as their operator's
/// own time). A child that outlasts its parent (clock jitter) counts only its part inside, so
/// self time is never negative and the self times of one thread's operators add up to at most
/// the time that thread spent in them.
///
/// The nesting is a stack per thread, which needs each thread's operators in order of start
/// (the longer first at one start), as Kineto writes them. A streaming pass checks that order
/// and gives up on a file that breaks it ([`Overflow`]); the unwindowed pass holds every
/// operator and sorts them first. Times are summed in picoseconds as integers, so the totals do
/// not depend on the order in which operators close.
#[derive(Debug, Default)]
struct SelfTimes {
    stacks: HashMap<u32, Vec<HostNode>>,
    /// The order key (start, -duration) of each thread's last operator, in a streaming pass.
    last: HashMap<u32, (f64, f64)>,
    /// Every operator in file order (the unwindowed pass), nested at the end.
    held: Option<Vec<(u32, HostNode)>>,
    /// Self time per name, picoseconds.
    totals: HashMap<NameId, i128>,
}

impl SelfTimes {
    fn new(window: Window) -> Self {
        SelfTimes {
            held: (window == Window::All).then(Vec::new),
            ..SelfTimes::default()
        }
    }

    fn record(&mut self, op: &CpuOp, counted: bool) -> Result<(), Overflow> {
        let node = HostNode {
            ts: op.ts,
            dur: op.dur,
            name: op.name,
            counted,
            children: 0.0,
        };
        if let Some(held) = &mut self.held {
            held.push((op.thread, node));
            return Ok(());
        }
        let key = (op.ts, -op.dur);
        if let Some(last) = self.last.insert(op.thread, key)
            && key
                .0
                .total_cmp(&last.0)
                .then(key.1.total_cmp(&last.1))
                .is_lt()
        {
            return Err(Overflow("host operators out of order on a thread"));
        }
        self.nest(op.thread, node);
        Ok(())
    }

    /// Closes the operators on `thread` that ended by `node`'s start, gives `node`'s time to
    /// the one it starts in, and opens it.
    fn nest(&mut self, thread: u32, node: HostNode) {
        let stack = self.stacks.entry(thread).or_default();
        while stack.last().is_some_and(|top| top.end() <= node.ts) {
            if let Some(done) = stack.pop() {
                close(&mut self.totals, &done);
            }
        }
        if let Some(parent) = stack.last_mut() {
            parent.children += node.end().min(parent.end()) - node.ts;
        }
        stack.push(node);
    }

    /// Self time per name, microseconds, once every operator is in.
    fn finish(mut self) -> HashMap<NameId, f64> {
        if let Some(mut held) = self.held.take() {
            // A stable sort: operators with one start and duration keep their file order, as
            // a streaming pass meets them.
            held.sort_by(|a, b| {
                a.0.cmp(&b.0)
                    .then(a.1.ts.total_cmp(&b.1.ts))
                    .then(b.1.dur.total_cmp(&a.1.dur))
            });
            for (thread, node) in held {
                self.nest(thread, node);
            }
        }
        for stack in self.stacks.into_values() {
            for node in stack {
                close(&mut self.totals, &node);
            }
        }
        self.totals
            .into_iter()
            .map(|(id, ps)| (id, picos_to_us(ps)))
            .collect()
    }
}

fn close(totals: &mut HashMap<NameId, i128>, node: &HostNode) {
    if node.counted {
        *totals.entry(node.name).or_default() += us_to_picos((node.dur - node.children).max(0.0));
    }
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "a duration is at most 2^53 µs (the reader refuses more): 2^53 * 1e6 < 2^127"
)]
fn us_to_picos(us: f64) -> i128 {
    (us * 1e6).round() as i128
}

#[expect(
    clippy::cast_precision_loss,
    reason = "a total of picoseconds shown in microseconds"
)]
fn picos_to_us(ps: i128) -> f64 {
    ps as f64 / 1e6
}
