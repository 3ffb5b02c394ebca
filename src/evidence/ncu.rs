//! Nsight Compute reader (pure, no I/O): `ncu --csv` output, in both layouts, to one row of
//! verdict-relevant numbers per profiled kernel launch.
//!
//! - `--page raw`: a header of metric names, a units row, then one row per launch.
//! - the default details page: one row per (launch, section, metric) with `Section Name`,
//!   `Metric Name`, `Metric Unit`, `Metric Value`.
//!
//! Whatever the program printed before the header (its own output, `==PROF==` lines) is skipped.
//! Values carry thousands separators ("2,720.00") and are scaled by their unit (ns/us/ms/s,
//! byte/s with K/M/G/T prefixes). A metric the file does not hold is `None`, shown as missing,
//! never zero. Both the current metric names and the older (Pascal-era) ones are read.

use serde::Serialize;

/// Which `ncu --csv` layout a file used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Page {
    Raw,
    Details,
}

/// One profiled kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct NcuKernel {
    /// The launch's `ID` column (ncu numbers the profiled launches from 0).
    pub id: String,
    pub name: String,
    pub duration_ns: Option<f64>,
    /// DRAM throughput, % of peak sustained.
    pub dram_pct: Option<f64>,
    /// Memory (compute-memory) throughput, % of peak: the Speed-of-Light memory figure.
    pub memory_pct: Option<f64>,
    /// DRAM bytes per second.
    pub dram_bytes_per_s: Option<f64>,
    /// Compute (SM) throughput, % of peak.
    pub sm_pct: Option<f64>,
    /// Tensor-pipe utilisation, % of peak.
    pub tensor_pct: Option<f64>,
    /// Achieved occupancy, % of the maximum warps.
    pub occupancy_pct: Option<f64>,
    pub registers_per_thread: Option<f64>,
    /// Grid size as ncu printed it: "(x, y, z)" or a total thread-block count.
    pub grid: Option<String>,
    /// Block size as ncu printed it: "(x, y, z)" or a total thread count.
    pub block: Option<String>,
}

/// The kernels of one `ncu --csv` file, in file order.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct NcuReport {
    pub page: Page,
    pub kernels: Vec<NcuKernel>,
    /// Values that were present but could not be used (an unknown unit, an unparsable number).
    pub notes: Vec<String>,
}

/// Why a text is not a usable `ncu --csv` output.
#[derive(Debug, thiserror::Error)]
pub enum NcuError {
    #[error("no ncu CSV header (a line starting with \"ID\",) was found")]
    NoHeader,
    #[error("the CSV header has no {column:?} column")]
    MissingColumn { column: &'static str },
    #[error(
        "unknown ncu CSV layout: neither the details page (Metric Name/Metric Value) nor a raw page with known metrics"
    )]
    UnknownLayout,
    #[error("malformed CSV at record {record}: {message}")]
    Csv { record: u64, message: String },
}

impl NcuError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            NcuError::NoHeader | NcuError::MissingColumn { .. } => {
                "write it with `ncu --csv [--page raw] ... > out.csv` (stdout holds the CSV after any program output)".into()
            }
            NcuError::UnknownLayout => "use the default details page or `--page raw` with `--set full` (or `--metrics` naming the throughput metrics)".into(),
            NcuError::Csv { .. } => "the file looks cut short or edited; capture it again".into(),
        })
    }
}

/// The fields read, with the metric names that carry each: current names first, then older ones.
#[derive(Clone, Copy)]
enum Field {
    Duration,
    Dram,
    Memory,
    DramRate,
    Sm,
    Tensor,
    Occupancy,
    Registers,
    Grid,
    Block,
}

const RAW_NAMES: &[(Field, &[&str])] = &[
    (
        Field::Duration,
        &["gpu__time_duration.sum", "gpu__time_duration"],
    ),
    (
        Field::Dram,
        &[
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "fbpa__sol_pct",
        ],
    ),
    (
        Field::Memory,
        &[
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__compute_memory_sol_pct",
        ],
    ),
    (
        Field::DramRate,
        &["dram__bytes.sum.per_second", "dram__bytes_per_sec"],
    ),
    (
        Field::Sm,
        &[
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__sol_pct",
        ],
    ),
    (
        Field::Tensor,
        &[
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        ],
    ),
    (
        Field::Occupancy,
        &["sm__warps_active.avg.pct_of_peak_sustained_active"],
    ),
    (Field::Registers, &["launch__registers_per_thread"]),
    (Field::Grid, &["Grid Size", "launch__grid_size"]),
    (Field::Block, &["Block Size", "launch__block_size"]),
];

/// The details page's display names (`Metric Name`), by field.
fn details_field(metric: &str, unit: &str) -> Option<Field> {
    Some(match metric {
        "Duration" => Field::Duration,
        "DRAM Throughput" => Field::Dram,
        "Memory Throughput" | "Memory [%]" if unit == "%" => Field::Memory,
        "Memory Throughput" | "DRAM Bandwidth" => Field::DramRate,
        "Compute (SM) Throughput" | "Compute (SM) [%]" | "SM [%]" => Field::Sm,
        "Achieved Occupancy" => Field::Occupancy,
        "Registers Per Thread" => Field::Registers,
        "Grid Size" => Field::Grid,
        "Block Size" => Field::Block,
        _ => return None,
    })
}

/// A number as ncu prints it: thousands separators, maybe "n/a".
fn number(text: &str) -> Option<f64> {
    let t: String = text.trim().chars().filter(|c| *c != ',').collect();
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The factor that takes a value in `unit` to the field's base unit (ns, byte/s, %), if known.
fn scale(field: Field, unit: &str) -> Option<f64> {
    let unit = unit.trim();
    match field {
        Field::Duration => match unit {
            "nsecond" | "ns" | "" => Some(1.0),
            "usecond" | "us" | "µs" => Some(1e3),
            "msecond" | "ms" => Some(1e6),
            "second" | "s" => Some(1e9),
            _ => None,
        },
        Field::DramRate => {
            let prefix = unit
                .strip_suffix("byte/second")
                .or_else(|| unit.strip_suffix("B/s"))?;
            match prefix {
                "" => Some(1.0),
                "K" | "k" => Some(1e3),
                "M" => Some(1e6),
                "G" => Some(1e9),
                "T" => Some(1e12),
                _ => None,
            }
        }
        Field::Dram | Field::Memory | Field::Sm | Field::Tensor | Field::Occupancy => {
            matches!(unit, "%" | "").then_some(1.0)
        }
        Field::Registers | Field::Grid | Field::Block => Some(1.0),
    }
}

impl NcuKernel {
    fn new(id: String, name: String) -> Self {
        NcuKernel {
            id,
            name,
            duration_ns: None,
            dram_pct: None,
            memory_pct: None,
            dram_bytes_per_s: None,
            sm_pct: None,
            tensor_pct: None,
            occupancy_pct: None,
            registers_per_thread: None,
            grid: None,
            block: None,
        }
    }

    /// Sets a field from a cell, unless an earlier (preferred) name already set it.
    fn set(
        &mut self,
        field: Field,
        metric: &str,
        unit: &str,
        value: &str,
        notes: &mut Vec<String>,
    ) {
        let text_slot = match field {
            Field::Grid => Some(&mut self.grid),
            Field::Block => Some(&mut self.block),
            _ => None,
        };
        if let Some(slot) = text_slot {
            let v = value.trim();
            if slot.is_none() && !v.is_empty() && v != "n/a" {
                *slot = Some(number(v).map_or_else(|| v.to_owned(), |n| format!("{n}")));
            }
            return;
        }
        let slot = match field {
            Field::Duration => &mut self.duration_ns,
            Field::Dram => &mut self.dram_pct,
            Field::Memory => &mut self.memory_pct,
            Field::DramRate => &mut self.dram_bytes_per_s,
            Field::Sm => &mut self.sm_pct,
            Field::Tensor => &mut self.tensor_pct,
            Field::Occupancy => &mut self.occupancy_pct,
            Field::Registers | Field::Grid | Field::Block => &mut self.registers_per_thread,
        };
        if slot.is_some() || value.trim().is_empty() {
            return;
        }
        match (number(value), scale(field, unit)) {
            (Some(v), Some(f)) => *slot = Some(v * f),
            (None, _) => notes.push(format!(
                "kernel {} {metric}: {value:?} is not a number; left missing",
                self.id
            )),
            (_, None) => notes.push(format!(
                "kernel {} {metric}: unknown unit {unit:?}; left missing",
                self.id
            )),
        }
    }
}

/// Reads `ncu --csv` output (either page), skipping anything before the header.
pub fn parse(text: &str) -> Result<NcuReport, NcuError> {
    let start = header_offset(text).ok_or(NcuError::NoHeader)?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(&text.as_bytes()[start..]);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(&e))?
        .iter()
        .map(str::to_owned)
        .collect();
    let col = |name: &'static str| header.iter().position(|h| h == name);
    let id = col("ID").ok_or(NcuError::MissingColumn { column: "ID" })?;
    let kname = col("Kernel Name").ok_or(NcuError::MissingColumn {
        column: "Kernel Name",
    })?;
    let mut records = Vec::new();
    for r in reader.records() {
        records.push(r.map_err(|e| csv_error(&e))?);
    }
    let cell = |r: &csv::StringRecord, i: usize| r.get(i).unwrap_or("").to_owned();
    let mut notes = Vec::new();
    if let (Some(mname), Some(munit), Some(mvalue)) =
        (col("Metric Name"), col("Metric Unit"), col("Metric Value"))
    {
        let mut kernels: Vec<NcuKernel> = Vec::new();
        for r in &records {
            let rid = cell(r, id);
            if kernels.last().is_none_or(|k| k.id != rid) {
                let mut k = NcuKernel::new(rid.clone(), cell(r, kname));
                for (field, column) in [(Field::Grid, "Grid Size"), (Field::Block, "Block Size")] {
                    if let Some(i) = col(column) {
                        k.set(field, column, "", &cell(r, i), &mut notes);
                    }
                }
                kernels.push(k);
            }
            let (metric, unit) = (cell(r, mname), cell(r, munit));
            if let (Some(field), Some(k)) = (details_field(&metric, &unit), kernels.last_mut()) {
                k.set(field, &metric, &unit, &cell(r, mvalue), &mut notes);
            }
        }
        return Ok(NcuReport {
            page: Page::Details,
            kernels,
            notes,
        });
    }
    // Raw page: the first record is the units row (its ID cell is empty).
    let known: Vec<(Field, &str, usize)> = RAW_NAMES
        .iter()
        .flat_map(|(f, names)| names.iter().filter_map(|n| col(n).map(|i| (*f, *n, i))))
        .collect();
    if !known
        .iter()
        .any(|(f, _, _)| matches!(f, Field::Duration | Field::Dram | Field::Sm))
    {
        return Err(NcuError::UnknownLayout);
    }
    let (units, rows) = match records.split_first() {
        Some((first, rest)) if first.get(id).is_some_and(|c| c.trim().is_empty()) => {
            (Some(first), rest)
        }
        _ => (None, records.as_slice()),
    };
    let mut kernels = Vec::with_capacity(rows.len());
    for r in rows {
        let mut k = NcuKernel::new(cell(r, id), cell(r, kname));
        for (field, name, i) in &known {
            let unit = units.map_or_else(String::new, |u| cell(u, *i));
            k.set(*field, name, &unit, &cell(r, *i), &mut notes);
        }
        kernels.push(k);
    }
    Ok(NcuReport {
        page: Page::Raw,
        kernels,
        notes,
    })
}

fn csv_error(e: &csv::Error) -> NcuError {
    NcuError::Csv {
        record: e.position().map_or(0, csv::Position::record),
        message: e.to_string(),
    }
}

/// The byte offset of the header line: the first line that starts with the `ID` column.
fn header_offset(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start_matches('\u{feff}');
        if t.starts_with("\"ID\",") || t.starts_with("ID,") {
            return Some(offset + (line.len() - t.len()));
        }
        offset += line.len();
    }
    None
}

/// Whether a text looks like `ncu --csv` output (for recognising a file by its content).
#[must_use]
pub fn looks_like(text: &str) -> bool {
    header_offset(text).is_some_and(|o| {
        let line = text[o..].lines().next().unwrap_or("");
        line.contains("Kernel Name")
    })
}

#[cfg(test)]
#[path = "ncu_tests.rs"]
mod tests;
