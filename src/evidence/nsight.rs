//! Nsight evidence, read and compared (pure, no I/O): the method's reading guide for one Nsight
//! Compute kernel, in words with its numbers, and the per-kernel then-vs-now of two Nsight
//! Compute files or two Nsight Systems exports.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ncu::{NcuKernel, NcuReport};
use super::nsys::{Stat, Summary};
use super::nsys_steps::NsysSteps;

/// DRAM throughput (% of peak) from which a kernel counts as at the memory roof.
pub const NEAR_PEAK_PCT: f64 = 80.0;
/// Below this (DRAM and SM % of peak both), throughput is low.
pub const LOW_THROUGHPUT_PCT: f64 = 40.0;
/// Achieved occupancy (%) below which it is low, and from which it is high.
pub const LOW_OCCUPANCY_PCT: f64 = 30.0;
pub const HIGH_OCCUPANCY_PCT: f64 = 50.0;

fn show(v: Option<f64>) -> String {
    v.map_or_else(|| "missing".into(), |v| format!("{v:.1}%"))
}

/// What one kernel's numbers say, following the method's reading guide.
#[must_use]
pub fn reading(k: &NcuKernel) -> Vec<String> {
    let mut out = Vec::new();
    let (dram, sm, occ) = (k.dram_pct, k.sm_pct, k.occupancy_pct);
    if let Some(d) = dram.filter(|d| *d >= NEAR_PEAK_PCT) {
        out.push(format!(
            "DRAM throughput {d:.1}% of peak: at the memory roof; the kernel is done, read fewer bytes (quantise weights or KV, or batch more tokens per weight read)"
        ));
    }
    let low = match (dram, sm) {
        (Some(d), Some(s)) => d < LOW_THROUGHPUT_PCT && s < LOW_THROUGHPUT_PCT,
        (Some(x), None) | (None, Some(x)) => x < LOW_THROUGHPUT_PCT,
        (None, None) => false,
    };
    if low {
        let shape = format!(
            "grid {}, block {}",
            k.grid.as_deref().unwrap_or("missing"),
            k.block.as_deref().unwrap_or("missing")
        );
        match occ {
            Some(o) if o < LOW_OCCUPANCY_PCT => out.push(format!(
                "low throughput (DRAM {}, SM {}) with low occupancy {o:.1}%: launch configuration or tiny shapes ({shape}); more blocks, a larger batch, or a fused kernel",
                show(dram),
                show(sm)
            )),
            Some(o) if o >= HIGH_OCCUPANCY_PCT => out.push(format!(
                "low throughput (DRAM {}, SM {}) with high occupancy {o:.1}%: warps are resident but stalled; look at access patterns (uncoalesced loads, bank conflicts: the memory workload and warp-stall sections)",
                show(dram),
                show(sm)
            )),
            Some(o) => out.push(format!(
                "low throughput (DRAM {}, SM {}), occupancy {o:.1}%: neither bound; check the launch shape ({shape}) and the warp stalls",
                show(dram),
                show(sm)
            )),
            None => out.push(format!(
                "low throughput (DRAM {}, SM {}); achieved occupancy missing (profile with --section Occupancy or --set full) to tell launch shape from access patterns",
                show(dram),
                show(sm)
            )),
        }
    }
    let compute_side =
        sm.is_some_and(|s| s >= HIGH_OCCUPANCY_PCT) && !dram.is_some_and(|d| d >= NEAR_PEAK_PCT);
    match k.tensor_pct {
        Some(t) if compute_side => out.push(format!(
            "compute-bound (SM {}): for a prefill GEMM the headline is tensor-core utilisation, {t:.1}% of peak; a dimension that is not a multiple of the tile wastes a partial tile",
            show(sm)
        )),
        None if compute_side => out.push(format!(
            "compute-bound (SM {}): for a prefill GEMM the headline is tensor-core utilisation, missing here (profile with --set full)",
            show(sm)
        )),
        _ => {}
    }
    out
}

/// One kernel name in both files (or in one only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelChange {
    pub name: String,
    pub count_then: u64,
    pub count_now: u64,
    /// Mean duration per launch, ns.
    pub duration_then_ns: Option<f64>,
    pub duration_now_ns: Option<f64>,
    /// ncu only: mean DRAM and SM throughput, % of peak.
    pub dram_then_pct: Option<f64>,
    pub dram_now_pct: Option<f64>,
    pub sm_then_pct: Option<f64>,
    pub sm_now_pct: Option<f64>,
}

impl KernelChange {
    /// Duration change, now minus then, ns per launch.
    #[must_use]
    pub fn duration_change_ns(&self) -> Option<f64> {
        Some(self.duration_now_ns? - self.duration_then_ns?)
    }

    /// Relative duration change (0.1 = 10 % slower).
    #[must_use]
    pub fn duration_change_ratio(&self) -> Option<f64> {
        let then = self.duration_then_ns.filter(|t| *t > 0.0)?;
        Some(self.duration_now_ns? / then - 1.0)
    }
}

/// The mean of the values present, None when none is.
fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    #[expect(clippy::cast_precision_loss, reason = "launch counts are small")]
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

#[derive(Default)]
struct Side {
    count: u64,
    duration: Option<f64>,
    dram: Option<f64>,
    sm: Option<f64>,
}

fn ncu_sides(r: &NcuReport) -> BTreeMap<String, Side> {
    let mut by: BTreeMap<&str, Vec<&NcuKernel>> = BTreeMap::new();
    for k in &r.kernels {
        by.entry(k.name.as_str()).or_default().push(k);
    }
    by.into_iter()
        .map(|(name, ks)| {
            let side = Side {
                count: ks.len() as u64,
                duration: mean(ks.iter().map(|k| k.duration_ns)),
                dram: mean(ks.iter().map(|k| k.dram_pct)),
                sm: mean(ks.iter().map(|k| k.sm_pct)),
            };
            (name.to_owned(), side)
        })
        .collect()
}

fn join(then: &BTreeMap<String, Side>, now: &BTreeMap<String, Side>) -> Vec<KernelChange> {
    let empty = Side::default();
    let mut names: Vec<&String> = then.keys().chain(now.keys()).collect();
    names.sort_unstable();
    names.dedup();
    let mut out: Vec<KernelChange> = names
        .into_iter()
        .map(|n| {
            let (t, w) = (then.get(n).unwrap_or(&empty), now.get(n).unwrap_or(&empty));
            KernelChange {
                name: n.clone(),
                count_then: t.count,
                count_now: w.count,
                duration_then_ns: t.duration,
                duration_now_ns: w.duration,
                dram_then_pct: t.dram,
                dram_now_pct: w.dram,
                sm_then_pct: t.sm,
                sm_now_pct: w.sm,
            }
        })
        .collect();
    // Largest time change first: total time per kernel name, then vs now.
    #[expect(clippy::cast_precision_loss, reason = "launch counts are small")]
    let total = |c: &KernelChange| {
        c.duration_now_ns.unwrap_or(0.0) * c.count_now as f64
            - c.duration_then_ns.unwrap_or(0.0) * c.count_then as f64
    };
    out.sort_by(|a, b| {
        total(b)
            .abs()
            .total_cmp(&total(a).abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

/// Per kernel name, then vs now, of two Nsight Compute files.
#[must_use]
pub fn ncu_diff(then: &NcuReport, now: &NcuReport) -> Vec<KernelChange> {
    join(&ncu_sides(then), &ncu_sides(now))
}

/// Per kernel name, then vs now, of two Nsight Systems kernel summaries.
#[must_use]
pub fn nsys_diff(then: &[Stat], now: &[Stat]) -> Vec<KernelChange> {
    let side = |s: &[Stat]| -> BTreeMap<String, Side> {
        s.iter()
            .map(|k| {
                let side = Side {
                    count: k.count,
                    duration: Some(k.avg),
                    dram: None,
                    sm: None,
                };
                (k.name.clone(), side)
            })
            .collect()
    };
    join(&side(then), &side(now))
}

/// Version of the serialised [`NsightSummary`].
pub const NSIGHT_SCHEMA: u32 = 1;

/// Rows kept per `nsys stats` table in a stored summary (largest total first), and kernel
/// launches kept of an ncu file.
pub const KEEP_ROWS: usize = 200;

/// What the store keeps of one Nsight file with its result (small: the per-step analysis, the
/// `nsys stats` tables cut to [`KEEP_ROWS`] rows, or the ncu per-kernel table): the "then" a
/// later run is diffed against once the raw file is pruned.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per stored file, built once and serialised"
)]
pub enum NsightSummary {
    Nsys {
        schema_version: u32,
        summary: Summary,
        steps: NsysSteps,
    },
    Ncu {
        schema_version: u32,
        report: NcuReport,
    },
}

impl NsightSummary {
    /// An export's summary, its tables cut to [`KEEP_ROWS`] rows.
    #[must_use]
    pub fn nsys(mut summary: Summary, steps: NsysSteps) -> Self {
        for rows in [
            &mut summary.kernels,
            &mut summary.api,
            &mut summary.mem_time,
            &mut summary.mem_size,
            &mut summary.nvtx,
            &mut summary.syncs,
        ] {
            rows.truncate(KEEP_ROWS);
        }
        NsightSummary::Nsys {
            schema_version: NSIGHT_SCHEMA,
            summary,
            steps,
        }
    }

    #[must_use]
    pub fn ncu(mut report: NcuReport) -> Self {
        report.kernels.truncate(KEEP_ROWS);
        NsightSummary::Ncu {
            schema_version: NSIGHT_SCHEMA,
            report,
        }
    }

    /// "nsys" or "ncu": the evidence kind it is stored under.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            NsightSummary::Nsys { .. } => "nsys",
            NsightSummary::Ncu { .. } => "ncu",
        }
    }
}

#[cfg(test)]
#[path = "nsight_tests.rs"]
mod tests;
