//! Nsight Systems evidence (pure, no I/O): the activity an `nsys export --type sqlite` holds
//! (kernels, memcpy/memset, CUDA runtime calls, synchronisation, NVTX ranges; read by
//! `nsys_sqlite.rs`) and the summaries the `nsys stats` reports compute from it:
//! `cuda_gpu_kern_sum`, `cuda_api_sum`, `cuda_gpu_mem_time_sum`, `cuda_gpu_mem_size_sum` and `nvtx_sum`
//! (count, total, average, median, minimum, maximum and sample standard deviation per name).
//! Also the reader of `nsys stats --report nvtx_pushpop_trace --format csv`.

use std::collections::BTreeMap;

use serde::Serialize;

/// One GPU kernel execution (`CUPTI_ACTIVITY_KIND_KERNEL`), names resolved through `StringIds`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kernel {
    pub short_name: String,
    pub demangled_name: String,
    pub start_ns: i64,
    pub end_ns: i64,
    pub device: i64,
    pub stream: i64,
    /// Links the kernel to its runtime launch call (`correlationId`).
    pub correlation: Option<i64>,
}

/// A named interval: a memory operation, a runtime call, a synchronisation or an NVTX range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    pub name: String,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Bytes moved or set (memory operations only).
    pub bytes: Option<i64>,
    /// The device stream (memory operations and synchronisation).
    pub stream: Option<i64>,
    /// Links a runtime call and the GPU work it started (`correlationId`).
    pub correlation: Option<i64>,
    /// A copy from pageable host memory (`srcKind` 1, `ENUM_CUDA_MEM_KIND`).
    pub pageable: bool,
}

/// What one export holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Export {
    pub kernels: Vec<Kernel>,
    /// memcpy and memset operations, named as `nsys stats` does ("[CUDA memcpy Host-to-Device]").
    pub memory: Vec<Span>,
    pub runtime: Vec<Span>,
    pub syncs: Vec<Span>,
    pub nvtx: Vec<Span>,
    /// Tables the export lacks (nsys writes no table for an activity it did not see).
    pub notes: Vec<String>,
}

/// One row of an `nsys stats` summary: the statistics of one name's durations (or sizes).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Stat {
    pub name: String,
    pub count: u64,
    pub total: f64,
    pub avg: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n - 1), 0 for a single value, as `nsys stats` reports it.
    pub stddev: f64,
    /// Share of the table's total, in percent.
    pub share_pct: f64,
}

/// The `nsys stats` summaries of one export; times in ns, sizes in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Summary {
    pub kernels: Vec<Stat>,
    pub api: Vec<Stat>,
    pub mem_time: Vec<Stat>,
    pub mem_size: Vec<Stat>,
    pub nvtx: Vec<Stat>,
    pub syncs: Vec<Stat>,
    /// From the first kernel start to the last kernel end.
    pub kernel_span_ns: i64,
    /// Total kernel time: the sum of every kernel's duration (overlaps counted twice, as
    /// `cuda_gpu_kern_sum`'s `Total Time` column adds up), over all rows even when a stored
    /// summary keeps only the largest. Absent in summaries stored before it was kept.
    #[serde(default)]
    pub kernel_total_ns: Option<f64>,
    pub notes: Vec<String>,
}

/// Which kernel name to group by: `nsys stats` uses the demangled name, `:base` the short one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelName {
    Short,
    Demangled,
}

/// Statistics per name over `(name, value)` pairs, largest total first (ties by name).
#[must_use]
pub fn stats<'a>(values: impl IntoIterator<Item = (&'a str, f64)>) -> Vec<Stat> {
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (name, v) in values {
        by.entry(name).or_default().push(v);
    }
    let grand: f64 = by.values().flatten().sum();
    let mut out: Vec<Stat> = by
        .into_iter()
        .map(|(name, mut v)| {
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let total: f64 = v.iter().sum();
            #[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
            let avg = total / n as f64;
            let median = if n % 2 == 1 {
                v[n / 2]
            } else {
                f64::midpoint(v[n / 2 - 1], v[n / 2])
            };
            #[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
            let stddev = if n > 1 {
                (v.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
            } else {
                0.0
            };
            Stat {
                name: name.to_owned(),
                count: n as u64,
                total,
                avg,
                median,
                min: v[0],
                max: v[n - 1],
                stddev,
                share_pct: if grand > 0.0 {
                    100.0 * total / grand
                } else {
                    0.0
                },
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.total
            .total_cmp(&a.total)
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

#[expect(
    clippy::cast_precision_loss,
    reason = "ns durations of a profile fit in 2^52"
)]
fn dur(start: i64, end: i64) -> f64 {
    (end - start) as f64
}

/// `cuda_gpu_kern_sum`: per kernel name.
#[must_use]
pub fn kernel_sum(e: &Export, by: KernelName) -> Vec<Stat> {
    stats(e.kernels.iter().map(|k| {
        let name = match by {
            KernelName::Short => k.short_name.as_str(),
            KernelName::Demangled => k.demangled_name.as_str(),
        };
        (name, dur(k.start_ns, k.end_ns))
    }))
}

fn span_sum(spans: &[Span]) -> Vec<Stat> {
    stats(
        spans
            .iter()
            .map(|s| (s.name.as_str(), dur(s.start_ns, s.end_ns))),
    )
}

/// All the summaries of one export.
#[must_use]
pub fn summarise(e: &Export) -> Summary {
    #[expect(
        clippy::cast_precision_loss,
        reason = "byte counts of one profile fit in 2^52"
    )]
    let mem_size = stats(
        e.memory
            .iter()
            .filter_map(|s| Some((s.name.as_str(), s.bytes? as f64))),
    );
    let first = e.kernels.iter().map(|k| k.start_ns).min();
    let last = e.kernels.iter().map(|k| k.end_ns).max();
    let kernels = kernel_sum(e, KernelName::Demangled);
    Summary {
        kernel_total_ns: Some(kernels.iter().map(|k| k.total).sum()),
        kernels,
        api: span_sum(&e.runtime),
        mem_time: span_sum(&e.memory),
        mem_size,
        nvtx: span_sum(&e.nvtx),
        syncs: span_sum(&e.syncs),
        kernel_span_ns: first.zip(last).map_or(0, |(a, b)| b - a),
        notes: e.notes.clone(),
    }
}

/// The label `nsys stats` gives a memcpy kind (`ENUM_CUDA_MEMCPY_OPER`).
#[must_use]
pub fn memcpy_label(kind: i64) -> String {
    let what = match kind {
        1 => "Host-to-Device",
        2 => "Device-to-Host",
        3 => "Host-to-Array",
        4 => "Array-to-Host",
        5 => "Array-to-Array",
        6 => "Array-to-Device",
        7 => "Device-to-Array",
        8 => "Device-to-Device",
        9 => "Host-to-Host",
        10 => "Peer-to-Peer",
        11 => "Unified Host-to-Device",
        12 => "Unified Device-to-Host",
        13 => "Unified Device-to-Device",
        _ => "Unknown",
    };
    format!("[CUDA memcpy {what}]")
}

/// One range of an `nvtx_pushpop_trace` report, with its place in the nesting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PushPopRange {
    pub name: String,
    pub start_ns: i64,
    pub end_ns: i64,
    pub level: u32,
    pub range_id: i64,
    pub parent_id: Option<i64>,
    pub num_child: u32,
}

/// Why an `nsys stats` CSV could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatsCsvError {
    #[error("the CSV header has no {column:?} column (not an nvtx_pushpop_trace report?)")]
    MissingColumn { column: &'static str },
    #[error("row {row}: {column} {value:?} is not a number")]
    BadNumber {
        row: usize,
        column: &'static str,
        value: String,
    },
    #[error("malformed CSV: {0}")]
    Csv(String),
}

/// Reads `nsys stats --report nvtx_pushpop_trace --format csv` output.
pub fn parse_pushpop_csv(text: &str) -> Result<Vec<PushPopRange>, StatsCsvError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| StatsCsvError::Csv(e.to_string()))?
        .clone();
    let col = |column: &'static str| {
        header
            .iter()
            .position(|h| h == column)
            .ok_or(StatsCsvError::MissingColumn { column })
    };
    let (start, end, name) = (col("Start (ns)")?, col("End (ns)")?, col("Name")?);
    let (lvl, id, parent, nchild) = (
        col("Lvl")?,
        col("RangeId")?,
        col("ParentId")?,
        col("NumChild")?,
    );
    let mut out = Vec::new();
    for (row, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| StatsCsvError::Csv(e.to_string()))?;
        let num = |i: usize, column: &'static str| -> Result<i64, StatsCsvError> {
            let v = rec.get(i).unwrap_or("").trim();
            v.parse().map_err(|_| StatsCsvError::BadNumber {
                row: row + 1,
                column,
                value: v.to_owned(),
            })
        };
        let parent_id = match rec.get(parent).unwrap_or("").trim() {
            "" => None,
            _ => Some(num(parent, "ParentId")?),
        };
        out.push(PushPopRange {
            name: rec.get(name).unwrap_or("").to_owned(),
            start_ns: num(start, "Start (ns)")?,
            end_ns: num(end, "End (ns)")?,
            level: u32::try_from(num(lvl, "Lvl")?).unwrap_or(u32::MAX),
            range_id: num(id, "RangeId")?,
            parent_id,
            num_child: u32::try_from(num(nchild, "NumChild")?).unwrap_or(u32::MAX),
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "nsys_tests.rs"]
mod tests;
