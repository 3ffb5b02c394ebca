//! The evidence model every reader produces (pure, no I/O): interned names, GPU-side operations
//! (kernels, copies, memsets, syncs on a device stream) and host-side operations (operators,
//! annotations, runtime calls), with times in microseconds as the profiler wrote them.
//!
//! Records are compact (about 40 bytes); the JSON text itself is never kept. A whole [`Trace`] grows
//! with the file; the analysis of a file on disk streams its records instead
//! (`source::analyse_file`) and holds about one step of them.

use rustc_hash::FxHashMap as HashMap;

/// Index of a name in [`Names`].
pub type NameId = u32;

/// Interned operation names: each distinct name is stored once.
#[derive(Debug, Default, Clone)]
pub struct Names {
    list: Vec<String>,
    index: HashMap<String, NameId>,
}

impl Names {
    /// The id of `name`, adding it when new.
    pub fn intern(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = NameId::try_from(self.list.len()).unwrap_or(NameId::MAX);
        self.list.push(name.to_owned());
        self.index.insert(name.to_owned(), id);
        id
    }

    /// The name of `id` ("" for an id this table never issued).
    #[must_use]
    pub fn get(&self, id: NameId) -> &str {
        self.list.get(id as usize).map_or("", String::as_str)
    }

    /// The id of `name`, when it occurs.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<NameId> {
        self.index.get(name).copied()
    }

    /// Every interned name with its id.
    pub fn iter(&self) -> impl Iterator<Item = (NameId, &str)> {
        self.list
            .iter()
            .enumerate()
            .map(|(i, s)| (NameId::try_from(i).unwrap_or(NameId::MAX), s.as_str()))
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What a GPU-side record is, from its category (Kineto `cat`, Nsight table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
    /// A synchronisation seen on the device row (`cuda_sync`: stream, event or context sync).
    Sync,
    /// Anything else that carries a stream (kept so HTA-equivalent totals stay exact).
    Other,
}

impl GpuKind {
    /// Kernels, copies and memsets: the work that occupies a stream (syncs do not).
    #[must_use]
    pub fn is_work(self) -> bool {
        matches!(self, GpuKind::Kernel | GpuKind::Memcpy | GpuKind::Memset)
    }
}

/// One operation on a device stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuOp {
    /// Start, microseconds (the profiler's clock).
    pub ts: f64,
    /// Duration, microseconds.
    pub dur: f64,
    pub name: NameId,
    pub kind: GpuKind,
    pub stream: i64,
    /// Device index (-1 when the trace does not say).
    pub device: i64,
    /// Links the operation to its host-side launch (-1 when absent).
    pub correlation: i64,
    /// Bytes moved, for copies and memsets.
    pub bytes: Option<u64>,
}

impl GpuOp {
    #[must_use]
    pub fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// What a host-side record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpuKind {
    /// An `ATen` or framework operator (`cpu_op`).
    Operator,
    /// A `record_function` range or profiler step (`user_annotation`).
    Annotation,
    /// A user annotation drawn on the GPU row (`gpu_user_annotation`), which carries no stream.
    GpuAnnotation,
    /// A CUDA/HIP runtime call (`cuda_runtime`).
    Runtime,
    /// A CUDA driver call (`cuda_driver`).
    Driver,
    /// A Python frame (`python_function`).
    Python,
    Other,
}

/// One host-side complete event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuOp {
    pub ts: f64,
    pub dur: f64,
    pub name: NameId,
    pub kind: CpuKind,
    /// Links a runtime call to the GPU work it launched (-1 when absent).
    pub correlation: i64,
    /// The host thread (`pid`, `tid`) it ran on, numbered in the order threads first appear in
    /// the file (0 when the source does not say): operators nest only within one thread.
    pub thread: u32,
}

impl CpuOp {
    #[must_use]
    pub fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// A whole trace in the evidence model.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub names: Names,
    pub gpu: Vec<GpuOp>,
    pub cpu: Vec<CpuOp>,
    /// Whether any timestamp was written with a fraction (newer Kineto writes nanosecond
    /// precision as fractional microseconds); HTA rounds such traces, see `hta.rs`.
    pub float_timestamps: bool,
    /// `distributedInfo.rank`, when present.
    pub rank: Option<i64>,
    /// Events seen in `traceEvents`, including those the model does not keep (flows, metadata).
    pub events_seen: u64,
}

impl Trace {
    /// The name of a GPU op.
    #[must_use]
    pub fn gpu_name(&self, op: &GpuOp) -> &str {
        self.names.get(op.name)
    }

    /// The name of a host op.
    #[must_use]
    pub fn cpu_name(&self, op: &CpuOp) -> &str {
        self.names.get(op.name)
    }
}
